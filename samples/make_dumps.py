"""Regenerate the dumps in samples/dumps from the samples (run from the repository root).

    .venv/bin/python samples/make_dumps.py

Each dump is what JAX or XLA writes for a sample: StableHLO text (with locations),
MLIR bytecode, a portable VHLO artifact, a serialized jax.export.Exported, HLO
text before and after XLA's optimizations, and an optimized HLO module proto.
Source paths are made relative to the repository root so the files do not depend
on where they were made.
"""

import os
import sys
from pathlib import Path

import jax

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "samples" / "dumps"

# Locations name samples/x.py rather than /home/someone/.../samples/x.py.
jax.config.update("jax_hlo_source_file_canonicalization_regex", r".*/(?=samples/)")
sys.path.insert(0, str(ROOT))

from samples import compute_on, nested_jits  # noqa: E402


def write(name: str, data: str | bytes) -> None:
    path = OUT / name
    if isinstance(data, str):
        path.write_text(data)
    else:
        path.write_bytes(data)
    print(f"wrote {path.relative_to(ROOT)} ({len(data)} bytes)")


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    args = nested_jits.example_args()
    lowered = nested_jits.mlp.lower(*args)
    write("mlp.stablehlo.mlir", lowered.as_text(debug_info=True))
    module = lowered.compiler_ir("stablehlo")
    import io

    buffer = io.BytesIO()
    module.operation.write_bytecode(file=buffer)
    write("mlp.mlirbc", buffer.getvalue())
    write("mlp.before_optimizations.hlo", lowered.as_text(dialect="hlo", debug_info=True))
    compiled = lowered.compile()
    write("mlp.after_optimizations.hlo", compiled.as_text())
    hlo_module = compiled.runtime_executable().hlo_modules()[0]
    write("mlp.after_optimizations.hlo.pb", hlo_module.as_serialized_hlo_module_proto())
    exported = jax.export.export(nested_jits.mlp)(*args)
    write("mlp.vhlo.mlirbc", bytes(exported.mlir_module_serialized))
    write("mlp.exported.bin", bytes(exported.serialize()))

    host = compute_on.host_call_inside_jit.lower(*compute_on.example_args())
    write("host_call.stablehlo.mlir", host.as_text(debug_info=True))
    write("host_call.after_optimizations.hlo", host.compile().as_text())


if __name__ == "__main__":
    os.chdir(ROOT)
    main()

"""The floor: a bare process that parses a module with jaxlib's MLIR bindings and
walks every op once. Neither jax nor hloscope is imported: the context is made
from jaxlib's dialects as `jax._src.interpreters.mlir.make_ir_context` makes it.

    python bench/floor.py FILE

A portable StableHLO artifact (VHLO bytecode) is read with StableHLO's
deserializer. For HLO text the floor is XLA's parser, jaxlib's `hlo_to_stablehlo` and the MLIR
parse of its output: the least anything must do to see HLO as MLIR.
"""

import sys
from pathlib import Path

from jaxlib.mlir import ir
from jaxlib.mlir._mlir_libs import _jax_mlir_ext
from jaxlib.mlir.dialects import chlo, mhlo, mpmd, sdy, stablehlo


def make_context() -> ir.Context:
    registry = ir.DialectRegistry()
    _jax_mlir_ext.register_dialects(registry)
    context = ir.Context()
    context.append_dialect_registry(registry)
    context.load_all_available_dialects()
    sdy.register_dialect(context)
    mpmd.register_dialect(context)
    mhlo.register_mhlo_dialect(context)
    chlo.register_dialect(context)
    stablehlo.register_dialect(context)
    return context


def main(path: str) -> int:
    context = make_context()
    data = Path(path).read_bytes()
    if path.endswith(".hlo"):
        import jaxlib._hlo as hlo
        import jaxlib._jax as jax_ext

        module_proto = hlo.hlo_module_from_text(data.decode()).as_serialized_hlo_module_proto()
        data = jax_ext.mlir.hlo_to_stablehlo(module_proto)
    if data[4:40].find(b"StableHLO_v") >= 0:
        # A portable artifact: StableHLO's deserializer, as hloscope reads one.
        module = stablehlo.deserialize_portable_artifact(context, data)
    else:
        with context:
            module = ir.Module.parse(data)
    count = 0

    def visit(op: ir.Operation) -> ir.WalkResult:
        nonlocal count
        count += 1
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    print(count)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1]))

"""Deterministic large modules for the benchmark, lowered with JAX.

An unrolled transformer-like model (RMS norm, single-head attention, GELU MLP,
residuals) repeated until it reaches about 10k, 100k or 1M ops, lowered with JAX
and saved as StableHLO text (with locations), MLIR bytecode, a portable StableHLO
artifact (VHLO bytecode) and HLO text. Files
are cached in bench/cache under a key of the JAX version and this generator's
version, so a second `make bench` does not regenerate them.

    .venv/bin/python bench/generate.py 10k 100k
"""

from __future__ import annotations

import io
import json
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp

GENERATOR_VERSION = 1
CACHE = Path(__file__).resolve().parent / "cache"
SIZES = {"10k": 10_000, "100k": 100_000, "1m": 1_000_000}
WIDTH = 64
TOKENS = 16

jax.config.update("jax_hlo_source_file_canonicalization_regex", r".*/(?=bench/)")


def block(x, p):
    """One transformer-like layer: about 50 ops once lowered."""
    h = x * jax.lax.rsqrt(jnp.mean(x * x, axis=-1, keepdims=True) + 1e-6) * p["g"]
    q, k, v = h @ p["wq"], h @ p["wk"], h @ p["wv"]
    scores = (q @ k.T) / jnp.sqrt(jnp.float32(WIDTH))
    attention = jax.nn.softmax(scores, axis=-1) @ v
    x = x + attention @ p["wo"]
    h = x * jax.lax.rsqrt(jnp.mean(x * x, axis=-1, keepdims=True) + 1e-6) * p["g"]
    return x + jax.nn.gelu(h @ p["w1"]) @ p["w2"]


def model(layers: int):
    def run(x, p):
        for _ in range(layers):
            x = block(x, p)
        return x

    return run


def example_args():
    f32 = jnp.float32
    shapes = {
        "g": (WIDTH,),
        "wq": (WIDTH, WIDTH),
        "wk": (WIDTH, WIDTH),
        "wv": (WIDTH, WIDTH),
        "wo": (WIDTH, WIDTH),
        "w1": (WIDTH, 4 * WIDTH),
        "w2": (4 * WIDTH, WIDTH),
    }
    params = {k: jax.ShapeDtypeStruct(s, f32) for k, s in shapes.items()}
    return (jax.ShapeDtypeStruct((TOKENS, WIDTH), f32), params)


def ops_per_layer() -> float:
    text = jax.jit(model(10)).lower(*example_args()).as_text()
    return _count_ops(text) / 10


def _count_ops(text: str) -> int:
    return sum(1 for line in text.splitlines() if " = " in line and not line.startswith("#"))


def paths(size: str) -> dict[str, Path]:
    key = f"{size}-jax{jax.__version__}-g{GENERATOR_VERSION}"
    return {
        "mlir": CACHE / f"model-{key}.mlir",
        "mlirbc": CACHE / f"model-{key}.mlirbc",
        "hlo": CACHE / f"model-{key}.hlo",
        "meta": CACHE / f"model-{key}.json",
        "vhlo": CACHE / f"model-{key}.vhlo.mlirbc",
    }


def generate(size: str) -> dict[str, Path]:
    """The module files for `size` (10k, 100k, 1m), generating them if needed."""
    out = paths(size)
    if all(p.exists() for name, p in out.items() if name != "vhlo"):
        if not out["vhlo"].exists():
            write_portable(out["mlirbc"], out["vhlo"])
        return out
    CACHE.mkdir(parents=True, exist_ok=True)
    layers = max(1, round(SIZES[size] / ops_per_layer()))
    start = time.perf_counter()
    lowered = jax.jit(model(layers)).lower(*example_args())
    lower_seconds = time.perf_counter() - start
    text = lowered.as_text(debug_info=True)
    out["mlir"].write_text(text)
    buffer = io.BytesIO()
    lowered.compiler_ir("stablehlo").operation.write_bytecode(file=buffer)
    out["mlirbc"].write_bytes(buffer.getvalue())
    out["hlo"].write_text(lowered.as_text(dialect="hlo", debug_info=True))
    meta = {"layers": layers, "ops": _count_ops(text), "lower_seconds": lower_seconds}
    out["meta"].write_text(json.dumps(meta))
    write_portable(out["mlirbc"], out["vhlo"])
    return out


def write_portable(bytecode: Path, portable: Path) -> None:
    """The module as a portable StableHLO artifact (VHLO bytecode, what
    `jax.export` serializes), at the current StableHLO version."""
    from jaxlib.mlir import ir
    from jaxlib.mlir.dialects import stablehlo

    from bench.floor import make_context

    with make_context():
        module = ir.Module.parse(bytecode.read_bytes())
        text = module.operation.get_asm(enable_debug_info=True)
    portable.write_bytes(
        stablehlo.serialize_portable_artifact_str(text, stablehlo.get_current_version())
    )


if __name__ == "__main__":
    # `python bench/generate.py` puts bench/ on the path, not the root write_portable
    # imports bench.floor from.
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    for name in sys.argv[1:] or list(SIZES):
        files = generate(name)
        print(name, json.loads(files["meta"].read_text()), *(str(p) for p in files.values()))


# The entrypoint of the entrypoint benchmark: the 10k-op model as a function.
entrypoint = model(128)

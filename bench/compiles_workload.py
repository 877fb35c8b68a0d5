"""The program `make bench` runs plainly and under `hloscope compiles`: a jitted
training-like step, compiled for a few batch sizes, then called many times on
them. It writes the CPU seconds of its steady loop (every call after the compilations,
so none of them compiles; CPU time, steadier than wall time on a busy
machine) to the file named by its first argument.

    python bench/compiles_workload.py OUT.txt [CALLS]
"""

import sys
import time

import jax
import jax.numpy as jnp


@jax.jit
def step(w, x):
    return w - 0.01 * jnp.tanh(x @ w).mean() * w


def main() -> None:
    out, calls = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 3000
    w = jnp.ones((64, 64))
    batches = [jnp.ones((n, 64)) for n in (8, 16, 32)]
    for x in batches:  # the compilations
        w = step(w, x)
    w.block_until_ready()
    start = time.process_time()
    for i in range(calls):
        w = step(w, batches[i % len(batches)])
    w.block_until_ready()
    with open(out, "w") as f:
        f.write(f"{time.process_time() - start}\n")


if __name__ == "__main__":
    main()

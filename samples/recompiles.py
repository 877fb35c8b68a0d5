"""Why does my program keep compiling? A training-like loop with known recompilations,
for `hloscope compiles`.

- `predict` is called on batches of 3 sizes: it compiles once per size (a leading
  dimension that takes many values);
- `scale` is called with a Python float, then a float32 array: the weak type flips
  and it compiles again; then with a bfloat16 array: the dtype changes;
- `power` takes its exponent as a static argument that changes at every call;
- `loss` is called with a dict that gains a key (the pytree structure changes);
- `jnp.tanh` on the host array outside any jit is an op run eagerly.

Run it as a plain script, or under hloscope:

    python samples/recompiles.py --steps 3
    hloscope compiles samples/recompiles.py --steps 3 --print
    hloscope compiles samples/recompiles.py --json --fail-on recompiles

`--steps N` (default 3) is the number of batch sizes, and of static exponents.
"""

import argparse
import functools

import jax
import jax.numpy as jnp


@jax.jit
def predict(w, x):
    return jnp.tanh(x @ w)


@jax.jit
def scale(x, factor):
    return x * factor


@functools.partial(jax.jit, static_argnames=("exponent",))
def power(x, exponent):
    return x**exponent


@jax.jit
def loss(batch):
    return sum(jnp.sum(v) for v in batch.values())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=3)
    steps = parser.parse_args().steps
    w = jnp.ones((4, 2))
    for step in range(steps):
        x = jnp.ones((8 * (step + 1), 4))
        predict(w, x)
    x = jnp.ones((8, 4))
    scale(x, 2.0)
    scale(x, jnp.float32(2.0))
    scale(x.astype(jnp.bfloat16), jnp.float32(2.0))
    for exponent in range(2, 2 + steps):
        power(x, exponent=exponent)
    loss({"x": x})
    loss({"x": x, "y": x})
    total = jnp.tanh(x).sum()
    print(f"done: {float(total):.3f}")


if __name__ == "__main__":
    main()

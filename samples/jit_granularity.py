"""How big should a jit be? What XLA fuses with and without the outer jit

XLA fuses only within one program. Under an outer jit, the jits it calls are
inlined into one XLA program, and XLA fuses across their boundaries: the end of
one layer with the start of the next. Called without an outer jit, each inner jit
is compiled and run as a program of its own: every intermediate result goes to
memory between programs and nothing fuses across them.

- `mlp`: the outer jit, calling the jitted `layer` twice and `head` once.
- `mlp_without_outer_jit`: the same computation without the outer jit; calling it
  runs `layer`, `layer`, `head`: three XLA programs.
- `layer`, `head`: the inner jits alone, which are the programs XLA compiles for
  `mlp_without_outer_jit` (hloscope jits whatever function it is given, so point it
  at the inner jits to see those programs).

Each layer spreads its work over several lines so that the fusions map to lines:

    hloscope fusions samples/jit_granularity.py:mlp --args samples/jit_granularity.py:example_args
    hloscope fusions samples/jit_granularity.py:layer --args samples/jit_granularity.py:layer_args
    hloscope fusions samples/jit_granularity.py:head --args samples/jit_granularity.py:head_args
"""

import jax
import jax.numpy as jnp

BATCH = 16
WIDTH = 128


@jax.jit
def layer(x, w, b):
    y = x @ w  # the matmul
    y = y + b  # the bias
    return jax.nn.gelu(y)  # the activation


@jax.jit
def head(h, scale):
    h = jnp.tanh(h * scale)  # the scaling and squashing
    return h.sum(axis=-1)  # the reduction


@jax.jit
def mlp(params, x):
    for w, b in params["layers"]:
        x = layer(x, w, b)
    return head(x, params["scale"])


def mlp_without_outer_jit(params, x):
    for w, b in params["layers"]:
        x = layer(x, w, b)
    return head(x, params["scale"])


def example_args():
    """Two 128x128 layers, a scale and a batch of 16."""
    w = jax.ShapeDtypeStruct((WIDTH, WIDTH), jnp.float32)
    b = jax.ShapeDtypeStruct((WIDTH,), jnp.float32)
    params = {"layers": [(w, b), (w, b)], "scale": jax.ShapeDtypeStruct((WIDTH,), jnp.float32)}
    return (params, jax.ShapeDtypeStruct((BATCH, WIDTH), jnp.float32))


def layer_args():
    """The arguments of one `layer` call inside `mlp`."""
    params, x = example_args()
    w, b = params["layers"][0]
    return (x, w, b)


def head_args():
    """The arguments of the `head` call inside `mlp`."""
    params, x = example_args()
    return (x, params["scale"])


def run_both(steps):
    """Question 3's two choices side by side, each called `steps` times on the same
    concrete inputs: `mlp` (one outer jit: one program a call) and
    `mlp_without_outer_jit` (its inner jits called from Python: three programs a
    call, `layer` twice and `head`), then one op outside any jit (`jnp.tanh`).

        hloscope profile samples/jit_granularity.py 20
    """
    import numpy as np

    rng = np.random.default_rng(0)
    params = {
        "layers": [
            (rng.standard_normal((WIDTH, WIDTH), np.float32), np.zeros(WIDTH, np.float32))
            for _ in range(2)
        ],
        "scale": np.ones(WIDTH, np.float32),
    }
    params = jax.device_put(params)
    x = jax.device_put(rng.standard_normal((BATCH, WIDTH), np.float32))
    for _ in range(steps):
        mlp(params, x).block_until_ready()
    for _ in range(steps):
        mlp_without_outer_jit(params, x).block_until_ready()
    return jnp.tanh(x).block_until_ready()


if __name__ == "__main__":
    import sys

    run_both(int(sys.argv[1]) if len(sys.argv) > 1 else 20)

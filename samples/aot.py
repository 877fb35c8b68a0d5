"""Does `.lower()` compile what my call runs? More cases for `hloscope aot-check`

`hloscope aot-check` calls a function as user code would and runs its AOT path
(`.lower(...).compile()`) on the same inputs, then compares the two. These
entrypoints complete `compute_on.py` and `wrapped.py`:

- `step_on_host`: a `compute_on("device_host")` context around a call of the
  jitted `step`. Its own AOT path, `jax.jit(step_on_host)`, traces the context
  too (same); `--aot samples/aot.py:step` lowers `step` alone, as a user holding
  the jitted function would, and that runs on the device (different placement).
- `normalize`: a jitted function with a keyword argument (`eps`), a static keyword
  (`axis`) and a pytree output (a dict holding a tuple): the paths agree.
- `prescaled`: a `functools.wraps` wrapper that doubles the first argument
  (eagerly, a program of its own) before calling the jitted `difference`; the AOT
  path, `prescaled.__wrapped__`, bypasses it (an extra program, other results).
- `two_jits`: a plain function calling two jits: called, they are two XLA
  programs; `jax.jit(two_jits)` compiles one.

    hloscope aot-check samples/aot.py:step_on_host --args samples/aot.py:example_args \
        --aot samples/aot.py:step
"""

import functools

import jax
import jax.numpy as jnp
from jax.experimental.compute_on import compute_on


@jax.jit
def step(x):
    return jnp.tanh(x * 2.0 + 1.0)


def step_on_host(x):
    with compute_on("device_host"):
        return step(x)


@functools.partial(jax.jit, static_argnames=("axis",))
def normalize(x, *, eps, axis=0):
    mean = x.mean(axis=axis, keepdims=True)
    var = x.var(axis=axis, keepdims=True)
    return {"y": (x - mean) / jnp.sqrt(var + eps), "stats": (mean, var)}


def doubling_first(fn):
    @functools.wraps(fn)
    def wrapper(a, b):
        return fn(a * 2.0, b)

    return wrapper


@doubling_first
@jax.jit
def prescaled(a, b):
    return a - b


@jax.jit
def layer(x, w):
    return jax.nn.relu(x @ w)


@jax.jit
def head(h):
    return h.sum(axis=-1)


def two_jits(x, w):
    return head(layer(x, w))


def example_args():
    """One f32[8,128] array (as a shape: hloscope makes the values)."""
    return (jax.ShapeDtypeStruct((8, 128), jnp.float32),)


def normalize_args():
    """An f32[16,8] batch, and the keywords eps (an array) and axis (static)."""
    return (jax.ShapeDtypeStruct((16, 8), jnp.float32),), {"eps": jnp.float32(1e-5), "axis": 0}


def prescaled_args():
    """Two f32[4] arrays."""
    return (jnp.arange(4.0, dtype=jnp.float32), jnp.ones(4, dtype=jnp.float32))


def two_jits_args():
    """x: f32[8,16], w: f32[16,32]."""
    return (
        jax.ShapeDtypeStruct((8, 16), jnp.float32),
        jax.ShapeDtypeStruct((16, 32), jnp.float32),
    )

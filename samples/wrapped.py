"""Why does `.lower()` not compile what my call runs? A `functools.wraps` wrapper

A decorator written with `functools.wraps` around a jitted function changes what
a call computes, but the AOT path can bypass it: `functools.wraps` leaves the
jitted function reachable as `__wrapped__` (and older JAX copied its `.lower` onto
the wrapper), so `.lower(...).compile()` compiles the inner function on the
arguments as given, not as the wrapper passes them.

- `difference`: `swap_args` around `jax.jit(a - b)`: calling it computes `b - a`;
  the AOT path lowers `a - b`.
- `plain_difference`: the same jit with no wrapper (no mismatch).

    hloscope inspect samples/wrapped.py:difference --args samples/wrapped.py:example_args
"""

import functools

import jax
import jax.numpy as jnp


def swap_args(fn):
    @functools.wraps(fn)
    def wrapper(a, b):
        return fn(b, a)

    return wrapper


@jax.jit
def plain_difference(a, b):
    return a - b


@swap_args
@jax.jit
def difference(a, b):
    return a - b


def example_args():
    """Two f32[4] arrays with different values, so a swap shows in the result."""
    return (jnp.arange(4.0, dtype=jnp.float32), jnp.ones(4, dtype=jnp.float32))

r"""Arguments that are not parameters, and parameters that are not arguments.

- `static_args`: `n` is static by position (`static_argnums=1`) and `mode` by name
  (`static_argnames`): they are baked into the trace and have no HLO parameter;
  `hloscope params` lists them as static, with their values.
- `ordered_print`: an ordered `io_callback` makes JAX thread a token through the
  computation: the entry gets a leading `!stablehlo.token` parameter that is no
  Python argument, so HLO parameter 1 is the first argument, not parameter 0.

    hloscope params samples/params_static.py:static_args \
        --args samples/params_static.py:static_args_example
"""

from functools import partial

import jax
import jax.numpy as jnp
from jax.experimental import io_callback


@partial(jax.jit, static_argnums=1, static_argnames="mode")
def static_args(x, n, scale, *, mode="sum"):
    y = x * scale
    for _ in range(n):
        y = jnp.tanh(y)
    return y.sum() if mode == "sum" else y.max()


def static_args_example():
    """x, n=3 (static), scale, and the static keyword mode='max'."""
    x = jax.ShapeDtypeStruct((8,), jnp.float32)
    scale = jax.ShapeDtypeStruct((), jnp.float32)
    return (x, 3, scale), {"mode": "max"}


def _log(value):
    return None


@jax.jit
def ordered_print(x, y):
    io_callback(_log, None, x, ordered=True)
    return y * 2.0


def ordered_print_example():
    spec = jax.ShapeDtypeStruct((4,), jnp.float32)
    return (spec, spec)

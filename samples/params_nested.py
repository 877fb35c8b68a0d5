r"""Arguments that reach the HLO but feed nothing: through nested jits and loops.

`jax.jit` prunes what it can see is unused, but not everything: a `custom_jvp`
keeps its inputs, a loop keeps what it carries, and an embedded `jax.export`
artifact keeps its own parameters. The module then has parameters, even of private
functions, that contribute to no result; a caller that binds one HLO parameter per
argument (PyTorch/XLA's `call_jax`) passes them for nothing.

- `ignored_by_callee`: the outer jit calls a nested jit (a private function) whose
  `custom_jvp` ignores its second argument, so `y` is an HLO parameter that feeds
  nothing, and the private function `scaled` has an unused parameter.
- `callee_used_twice`: calls `scaled(x, y)` and `scaled(y, x)`; `scaled` ignores its
  second parameter, but both arguments reach its first one, so both are used.
- `carried_through_loop`: a `while_loop` carries `y` unchanged and never reads it:
  unused; `z` only reaches the result through the loop: used.
- `exported_call`: calls a `jax.export` artifact (lowered with `keep_unused=True`)
  that ignores its second argument: the embedded private function keeps it.

    hloscope params samples/params_nested.py:ignored_by_callee \
        --args samples/params_nested.py:example_args
"""

import jax
import jax.numpy as jnp


@jax.custom_jvp
def _double_first(a, b):
    return a * 2.0


_double_first.defjvp(lambda primals, tangents: (_double_first(*primals), tangents[0] * 2.0))


@jax.jit
def scaled(a, b):
    return _double_first(a, b) + 1.0


@jax.jit
def ignored_by_callee(x, y):
    return scaled(x, y) * 3.0


@jax.jit
def callee_used_twice(x, y):
    return scaled(x, y) * scaled(y, x)


@jax.jit
def carried_through_loop(x, y, z):
    def body(carry):
        i, acc, kept = carry
        return i + 1, acc * 2.0 + z, kept

    _, acc, _ = jax.lax.while_loop(lambda c: c[0] < 3, body, (0, x, y))
    return acc


def _ignores_second(a, b):
    return jnp.sin(a)


def _exported():
    spec = jax.ShapeDtypeStruct((4,), jnp.float32)
    return jax.export.export(jax.jit(_ignores_second, keep_unused=True))(spec, spec)


@jax.jit
def exported_call(x, y):
    return _exported().call(x, y) + 1.0


def example_args():
    """Two (or three) f32[4] vectors: enough for every function here."""
    spec = jax.ShapeDtypeStruct((4,), jnp.float32)
    return (spec, spec)


def loop_args():
    spec = jax.ShapeDtypeStruct((4,), jnp.float32)
    return (spec, spec, spec)

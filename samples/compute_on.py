"""Where does this computation run? The decorator order of `compute_on` and `jax.jit`

`jax.experimental.compute_on.compute_on("device_host")` marks a computation for
the host CPU. The mark reaches the IR as
`mhlo.frontend_attributes = {_xla_compute_type = "host"}` on the marked ops, and
on the `func.call` of a jitted function called under it.

- `host_inside_jit`: compute_on inside the jit (the fix from the bug report): the
  host ops are in the module that `.lower()` produces.
- `host_call_inside_jit`: a jitted helper called under compute_on inside a jit:
  the `func.call` carries the mark and the callee's ops inherit it.
- `host_outside_jit`: the decorator order of the bug report, compute_on outside
  jax.jit. A direct call runs under the host context, but the object has no
  `.lower` of its own, and the jit it wraps (`host_outside_jit.__wrapped__`)
  lowers to device code: the AOT path computes elsewhere than the call.

    hloscope inspect samples/compute_on.py:host_inside_jit --args samples/compute_on.py:example_args
"""

import jax
import jax.numpy as jnp
from jax.experimental.compute_on import compute_on


def scale_and_shift(x):
    return x * 2.0 + 1.0


@jax.jit
def host_inside_jit(x):
    with compute_on("device_host"):
        y = scale_and_shift(x)
    return jnp.tanh(y)


@jax.jit
def host_helper(x):
    return jnp.sin(x) * 3.0


@jax.jit
def host_call_inside_jit(x):
    with compute_on("device_host"):
        y = host_helper(x)
    return jnp.tanh(y) + x


@compute_on("device_host")
@jax.jit
def host_outside_jit(x):
    return jnp.tanh(scale_and_shift(x))


@jax.jit
def device_only(x):
    return jnp.tanh(scale_and_shift(x))


def example_args():
    """One f32[8,128] array."""
    return (jax.ShapeDtypeStruct((8, 128), jnp.float32),)

r"""Arguments sharded over eight devices, one of them donated, one in host memory.

Importing this module asks XLA for eight CPU devices (it must happen before JAX
starts a backend, which hloscope arranges by importing the target first).

- `sharded_step`: `x` is split over the `data` axis of a 4×2 mesh, `w` over
  `model`, `b` is replicated, `w` is donated (its buffer becomes the updated
  weights), and `step` is kept (`keep_unused=True`) but unused.
- `host_offloaded`: `cache` lives in pinned host memory (`memory_kind`) and is
  copied to the device and read; `scratch` is in host memory too but ignored, so
  jit prunes it.

    hloscope params samples/params_sharded.py:sharded_step \
        --args samples/params_sharded.py:sharded_step_args
"""

import os

if "--xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (
        os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8"
    ).strip()

from functools import partial

import jax
import jax.numpy as jnp
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P


@partial(jax.jit, donate_argnums=1, keep_unused=True)
def sharded_step(x, w, b, step):
    hidden = jnp.tanh(x @ w + b)
    grad = x.T @ hidden
    return hidden.sum(), w - 0.1 * grad


@jax.jit
def host_offloaded(x, cache, scratch):
    on_device = jax.device_put(cache, NamedSharding(_mesh(), P("data"), memory_kind="device"))
    return x + on_device


def _mesh():
    # Auto axes: shardings are hints the partitioner propagates (the classic mode).
    return jax.make_mesh((4, 2), ("data", "model"), axis_types=(AxisType.Auto,) * 2)


def sharded_step_args():
    """x f32[16,8] over data, w f32[8,8] over model, b f32[8] replicated, step i32[]."""
    mesh = _mesh()

    def spec(shape, dtype, *axes):
        return jax.ShapeDtypeStruct(shape, dtype, sharding=NamedSharding(mesh, P(*axes)))

    return (
        spec((16, 8), jnp.float32, "data", None),
        spec((8, 8), jnp.float32, None, "model"),
        spec((8,), jnp.float32),
        spec((), jnp.int32),
    )


def host_offloaded_args():
    """x on the device, cache and scratch in pinned host memory."""
    mesh = _mesh()
    device = NamedSharding(mesh, P("data"))
    host = NamedSharding(mesh, P("data"), memory_kind="pinned_host")
    return (
        jax.ShapeDtypeStruct((16,), jnp.float32, sharding=device),
        jax.ShapeDtypeStruct((16,), jnp.float32, sharding=host),
        jax.ShapeDtypeStruct((16,), jnp.float32, sharding=host),
    )

"""Programs that tests/platforms compiles twice for each platform: through hloscope
(`--for SPEC`) and with JAX directly (`topologies.get_topology_desc`).

Nothing here makes a mesh at import: `mesh()` is built when a function is traced or
its arguments are made, from `jax.devices()` (the host devices hloscope gives the
program, as many as the platform has), or from `DEVICES` where the JAX-side truth
sets the topology's own devices there.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import AxisType, Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

BATCH, FEATURES, HIDDEN = 64, 256, 512

DEVICES: Any = None
"""The devices the mesh is made of: `jax.devices()` unless set (the JAX-side truth
sets a topology's devices here)."""


def mesh() -> Mesh:
    """A (n/2) x 2 mesh (`data`, `model`) over the devices, in their order."""
    devices = list(DEVICES if DEVICES is not None else jax.devices())
    grid = np.array(devices, dtype=object).reshape(len(devices) // 2, 2)
    return Mesh(grid, ("data", "model"), axis_types=(AxisType.Auto, AxisType.Auto))


def _sharded(*spec: Any) -> NamedSharding:
    return NamedSharding(mesh(), P(*spec))


def _layer_norm(y: jax.Array) -> jax.Array:
    mean = y.mean(axis=-1, keepdims=True)
    var = ((y - mean) ** 2).mean(axis=-1, keepdims=True)
    return (y - mean) * jax.lax.rsqrt(var + 1e-5)


@jax.jit
def sharded_block(x, w1, w2):
    """A Megatron-style MLP block over the mesh: the hidden layer split over `model`
    (an all-reduce of the second matmul's partial sums), a layer norm and a softmax
    gathered to every device (an all-gather over `data`), and the loss summed over
    `data` (an all-reduce)."""
    h = jax.nn.gelu(x @ w1)
    h = jax.lax.with_sharding_constraint(h, _sharded("data", "model"))
    y = _layer_norm(h @ w2 + x)
    probs = jax.nn.softmax(y, axis=-1)
    loss = jax.lax.with_sharding_constraint((probs * y).sum(), _sharded())
    return jax.lax.with_sharding_constraint(probs, _sharded()), loss


def sharded_args():
    """x f32[64,256] over `data`, w1 f32[256,512] over `model` by columns, w2
    f32[512,256] over `model` by rows."""
    return (
        jax.ShapeDtypeStruct((BATCH, FEATURES), jnp.float32, sharding=_sharded("data", None)),
        jax.ShapeDtypeStruct((FEATURES, HIDDEN), jnp.float32, sharding=_sharded(None, "model")),
        jax.ShapeDtypeStruct((HIDDEN, FEATURES), jnp.float32, sharding=_sharded("model", None)),
    )


@jax.jit
def block(x, w1, w2):
    """The same block on one device."""
    h = jax.nn.gelu(x @ w1)
    y = _layer_norm(h @ w2 + x)
    probs = jax.nn.softmax(y, axis=-1)
    return probs, (probs * y).sum()


def block_args():
    return (
        jax.ShapeDtypeStruct((BATCH, FEATURES), jnp.float32),
        jax.ShapeDtypeStruct((FEATURES, HIDDEN), jnp.float32),
        jax.ShapeDtypeStruct((HIDDEN, FEATURES), jnp.float32),
    )


@jax.jit
def too_big(x, w):
    """Some 30 GiB of f32 for one device: more than a TPU v5e's 16 GiB of HBM."""
    h = jnp.tanh(x @ w)
    g = jnp.exp(h) @ w.T
    return (g * h.sum()).mean()


def too_big_args():
    """x f32[65536,32768] (8 GiB), w f32[32768,32768] (4 GiB): shapes only."""
    return (
        jax.ShapeDtypeStruct((65536, 32768), jnp.float32),
        jax.ShapeDtypeStruct((32768, 32768), jnp.float32),
    )

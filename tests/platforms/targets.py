"""Programs that tests/platforms compiles twice for each platform: through hloscope
(`--for SPEC`) and with JAX directly (`topologies.get_topology_desc`).

Nothing here makes a mesh at import: `mesh()` (from a device list, in its order) and
`made_mesh()` (by `jax.make_mesh`) are built when a function is traced or its
arguments are made, from `jax.devices()` (the host devices hloscope gives the
program, as many as the platform has), or from `DEVICES` where the JAX-side truth
sets the topology's own devices there.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import mesh_utils
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


def made_mesh() -> Mesh:
    """A (n/2) x 2 mesh (`data`, `model`) as `jax.make_mesh` makes it: over `DEVICES`
    where set (the JAX-side truth gives the topology's devices, as on the slice), else
    over `jax.devices()`. On a TPU slice it orders the devices for the torus."""
    count = len(DEVICES) if DEVICES is not None else jax.device_count()
    return jax.make_mesh(
        (count // 2, 2),
        ("data", "model"),
        axis_types=(AxisType.Auto, AxisType.Auto),
        devices=DEVICES,
    )


def _on_made_mesh(*spec: Any) -> NamedSharding:
    return NamedSharding(made_mesh(), P(*spec))


@jax.jit
def made_mesh_block(x, w1, w2):
    """`sharded_block` over `made_mesh()`: the mesh made while it is traced."""
    h = jax.nn.gelu(x @ w1)
    h = jax.lax.with_sharding_constraint(h, _on_made_mesh("data", "model"))
    y = _layer_norm(h @ w2 + x)
    probs = jax.nn.softmax(y, axis=-1)
    loss = jax.lax.with_sharding_constraint((probs * y).sum(), _on_made_mesh())
    return jax.lax.with_sharding_constraint(probs, _on_made_mesh()), loss


def made_mesh_loss(x, w1, w2):
    """`made_mesh_block`'s loss, for `remat`."""
    return made_mesh_block(x, w1, w2)[1]


def made_mesh_args():
    """`sharded_args`' shapes and specs, on `made_mesh()`."""
    f32 = jnp.float32
    return (
        jax.ShapeDtypeStruct((BATCH, FEATURES), f32, sharding=_on_made_mesh("data", None)),
        jax.ShapeDtypeStruct((FEATURES, HIDDEN), f32, sharding=_on_made_mesh(None, "model")),
        jax.ShapeDtypeStruct((HIDDEN, FEATURES), f32, sharding=_on_made_mesh("model", None)),
    )


@jax.jit
def sharded_sum(x):
    """A sum over the rows of an argument sharded over both axes of its mesh."""
    return (jax.nn.relu(x) * 2.0).sum(axis=0)


def _sum_args(mesh: Mesh) -> tuple[jax.ShapeDtypeStruct]:
    sharding = NamedSharding(mesh, P("data", "model"))
    return (jax.ShapeDtypeStruct((BATCH, FEATURES), jnp.float32, sharding=sharding),)


def hybrid_mesh_args():
    """`sharded_sum`'s argument on a mesh `mesh_utils.create_hybrid_device_mesh`
    makes for two slices, `data` across them (over `DEVICES` where set)."""
    count = len(DEVICES) if DEVICES is not None else jax.device_count()
    grid = mesh_utils.create_hybrid_device_mesh((count // 4, 2), (2, 1), devices=DEVICES)
    return _sum_args(Mesh(grid, ("data", "model"), axis_types=(AxisType.Auto, AxisType.Auto)))


def reversed_mesh_args():
    """`sharded_sum`'s argument on a mesh `jax.make_mesh` makes over the devices given
    in reverse (`DEVICES` where set, else `jax.devices()`)."""
    devices = list(DEVICES if DEVICES is not None else jax.devices())[::-1]
    mesh = jax.make_mesh(
        (len(devices) // 2, 2),
        ("data", "model"),
        axis_types=(AxisType.Auto, AxisType.Auto),
        devices=devices,
    )
    return _sum_args(mesh)


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


def _bf16_block(x):
    y = x * 1.0 + 0.0
    return jnp.tanh(jnp.sin(y) * 2.0 + 1.0) @ x.T


bf16_block = jax.jit(_bf16_block)
exact_bf16_block = jax.jit(_bf16_block, compiler_options={"xla_allow_excess_precision": False})
"""XLA may keep a bf16 value in f32 between ops unless told not to: told, it rounds
them to bf16 (reduce-precision), on the TPU too."""
unknown_option_block = jax.jit(_bf16_block, compiler_options={"xla_no_such_option": "1"})


def bf16_block_args():
    return (jax.ShapeDtypeStruct((256, 256), jnp.bfloat16),)

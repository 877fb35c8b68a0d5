"""Where does each piece run? An MLP sharded over 8 CPU devices.

A 4 x 2 mesh (`data`, `model`): the batch is split over `data`, the hidden layer
over `model` (Megatron style: the first weight by columns, the second by rows).
Before compilation the module carries the shardings (`sdy.mesh`, `sdy.sharding`
on arguments and results, `sdy.sharding_constraint`); after `--compile` XLA's
partitioner has turned them into per-device shapes and collectives (the second
matmul's partial sums are all-reduced over `model`).

- `mlp`: `jax.jit` with `in_shardings`/`out_shardings` and a sharding constraint
  on the hidden activations.
- `mlp_shard_map`: the same MLP written per device with `jax.shard_map`: a manual
  computation (`sdy.manual_computation`) whose `psum` is an explicit all-reduce
  already in the lowered module.

Importing this module asks JAX for 8 CPU devices (`jax_num_cpu_devices`) unless a
backend already exists; hloscope imports a target before JAX starts a backend.

    hloscope placement samples/sharded_mlp.py:mlp --args samples/sharded_mlp.py:example_args
    hloscope placement samples/sharded_mlp.py:mlp --args samples/sharded_mlp.py:example_args \
        --compile
"""

import contextlib

import jax
import jax.numpy as jnp
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

# The update raises when a backend exists already (XLA_FLAGS may have asked for the
# devices then).
with contextlib.suppress(RuntimeError):
    jax.config.update("jax_num_cpu_devices", 8)

BATCH, FEATURES, HIDDEN = 32, 64, 256

# Auto axes: the compiler propagates shardings (the classic GSPMD/Shardy style);
# JAX's default for make_mesh is Explicit (sharding in types).
mesh = jax.make_mesh((4, 2), ("data", "model"), axis_types=(AxisType.Auto, AxisType.Auto))


def sharding(*spec):
    return NamedSharding(mesh, P(*spec))


def _mlp(x, w1, w2):
    h = jax.nn.relu(x @ w1)
    h = jax.lax.with_sharding_constraint(h, sharding("data", "model"))
    return h @ w2


mlp = jax.jit(
    _mlp,
    in_shardings=(sharding("data", None), sharding(None, "model"), sharding("model", None)),
    out_shardings=sharding("data", None),
)


def _mlp_per_device(x, w1, w2):
    h = jax.nn.relu(x @ w1)
    return jax.lax.psum(h @ w2, "model")


mlp_shard_map = jax.jit(
    jax.shard_map(
        _mlp_per_device,
        mesh=mesh,
        in_specs=(P("data", None), P(None, "model"), P("model", None)),
        out_specs=P("data", None),
    )
)


def example_args():
    """x f32[32,64], w1 f32[64,256], w2 f32[256,64]."""
    return (
        jax.ShapeDtypeStruct((BATCH, FEATURES), jnp.float32),
        jax.ShapeDtypeStruct((FEATURES, HIDDEN), jnp.float32),
        jax.ShapeDtypeStruct((HIDDEN, FEATURES), jnp.float32),
    )

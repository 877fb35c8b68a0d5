"""How often does a collective run? Layers stacked by `jax.lax.scan` over 8 CPU devices.

The MLP block of `sharded_mlp.mlp_shard_map` (its second matmul's partial sums
all-reduced over `model` with `psum`) repeated for `LAYERS` layers by `jax.lax.scan`:
the module holds one all-reduce, inside the loop, and it runs once per layer: `LAYERS`
times per call. The lowered module's loop counts a carried index from 0 to `LAYERS`;
after `--compile`, XLA writes the trip count on the while loop (`known_trip_count`).

Importing this module asks JAX for 8 CPU devices (`jax_num_cpu_devices`) unless a
backend already exists; hloscope imports a target before JAX starts a backend.

    hloscope placement samples/scanned_layers.py:deep_mlp \
        --args samples/scanned_layers.py:example_args
"""

import contextlib

import jax
import jax.numpy as jnp
from jax.sharding import AxisType
from jax.sharding import PartitionSpec as P

with contextlib.suppress(RuntimeError):
    jax.config.update("jax_num_cpu_devices", 8)

BATCH, FEATURES, HIDDEN, LAYERS = 32, 64, 256, 4

mesh = jax.make_mesh((4, 2), ("data", "model"), axis_types=(AxisType.Auto, AxisType.Auto))


def _block(h, weights):
    w1, w2 = weights
    partial = jax.nn.relu(h @ w1) @ w2
    return h + jax.lax.psum(partial, "model"), None


def _deep_mlp_per_device(x, w1s, w2s):
    h, _ = jax.lax.scan(_block, x, (w1s, w2s))
    return h


deep_mlp = jax.jit(
    jax.shard_map(
        _deep_mlp_per_device,
        mesh=mesh,
        in_specs=(P("data", None), P(None, None, "model"), P(None, "model", None)),
        out_specs=P("data", None),
    )
)


def example_args():
    """x f32[32,64], w1s f32[LAYERS,64,256], w2s f32[LAYERS,256,64]."""
    return (
        jax.ShapeDtypeStruct((BATCH, FEATURES), jnp.float32),
        jax.ShapeDtypeStruct((LAYERS, FEATURES, HIDDEN), jnp.float32),
        jax.ShapeDtypeStruct((LAYERS, HIDDEN, FEATURES), jnp.float32),
    )

"""Why is this collective here? Three small programs on 8 CPU devices whose
collectives come from somewhere else than the line XLA puts them at.

- `constrained`: `w1` is sharded by columns over `model`, but a sharding constraint
  on `h` asks for it unsharded along `model`: XLA all-gathers `w1` at the matmul.
- `contracting`: both arguments are sharded over `model` along the dimension the
  matmul contracts: each device sums a part, and an all-reduce adds them.
- `replicated_out`: the input is split by rows over `data`, and `out_shardings`
  asks for a replicated result: an all-gather at the end.

Importing this module asks JAX for 8 CPU devices (`jax_num_cpu_devices`) unless a
backend already exists; hloscope imports a target before JAX starts a backend.

    hloscope placement samples/why_collectives.py:constrained \
        --args samples/why_collectives.py:constrained_args --why
"""

import contextlib

import jax
import jax.numpy as jnp
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

with contextlib.suppress(RuntimeError):
    jax.config.update("jax_num_cpu_devices", 8)

mesh = jax.make_mesh((4, 2), ("data", "model"), axis_types=(AxisType.Auto, AxisType.Auto))


def sharding(*spec):
    return NamedSharding(mesh, P(*spec))


def _constrained(x, w1, w2):
    h = x @ w1
    h = jax.lax.with_sharding_constraint(h, sharding("data", None))
    return h @ w2


constrained = jax.jit(
    _constrained,
    in_shardings=(sharding("data", None), sharding(None, "model"), sharding()),
    out_shardings=sharding("data", None),
)


def constrained_args():
    return (
        jax.ShapeDtypeStruct((32, 64), jnp.float32),
        jax.ShapeDtypeStruct((64, 256), jnp.float32),
        jax.ShapeDtypeStruct((256, 16), jnp.float32),
    )


def _contracting(x, w):
    return x @ w


contracting = jax.jit(_contracting, in_shardings=(sharding(None, "model"), sharding("model", None)))


def contracting_args():
    return (
        jax.ShapeDtypeStruct((32, 64), jnp.float32),
        jax.ShapeDtypeStruct((64, 16), jnp.float32),
    )


def _replicated_out(x):
    return jnp.sin(x) * 2


replicated_out = jax.jit(
    _replicated_out, in_shardings=(sharding("data", None),), out_shardings=sharding()
)


def replicated_out_args():
    return (jax.ShapeDtypeStruct((32, 64), jnp.float32),)

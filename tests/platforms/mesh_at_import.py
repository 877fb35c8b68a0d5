"""A program that makes its mesh when it is imported, from `jax.devices()`, and sets no
device count of its own: under `--for`, hloscope gives it as many host devices as the
platform has before importing it, so the mesh is the platform's size.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

DEVICES_AT_IMPORT = len(jax.devices())

# (n/2) x 2, or n x 1 for an odd count (one GPU).
SHAPE = (DEVICES_AT_IMPORT // 2, 2) if DEVICES_AT_IMPORT % 2 == 0 else (DEVICES_AT_IMPORT, 1)
mesh = jax.make_mesh(SHAPE, ("data", "model"), axis_types=(AxisType.Auto, AxisType.Auto))


@jax.jit
def scale(x):
    return jax.nn.relu(x) * 2.0


def example_args():
    """x f32[32,64] split over both axes of the mesh."""
    return (
        jax.ShapeDtypeStruct(
            (16, 64), jnp.float32, sharding=NamedSharding(mesh, P("data", "model"))
        ),
    )

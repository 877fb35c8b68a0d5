"""Why is this collective here, in a Flax NNX model? An MLP block whose weights are
sharded where they are declared, by `nnx.with_partitioning`, on 8 CPU devices.

- `MLP`: two blocks in a loop, each `up` (64 -> 256, its kernel split by columns
  over `model`) and `down` (256 -> 64, split by rows over `model`): Megatron style.
- `forward`: `nnx.jit` of the model on a batch split by rows over `data`. Each
  block's second matmul contracts the dimension `model` splits, so each device sums
  a part and XLA all-reduces them over `model`: `placement --why` names that
  block's `blocks[1].down.kernel` and `blocks[1].up.kernel` (the paths `params`
  shows) as what sharded it. Both blocks' ops have the same lines and names (the
  innermost frame is Flax's `Linear`, the user's is the loop), so they are told
  apart by their order.
- `example_args`: the model (Flax places each parameter on the mesh its
  partitioning names when it is made) and a batch `x` f32[32,64] split over `data`.

Importing this module asks JAX for 8 CPU devices (`jax_num_cpu_devices`) unless a
backend already exists; hloscope imports a target before JAX starts a backend.

    hloscope placement samples/why_nnx.py:forward --args samples/why_nnx.py:example_args --why
"""

import contextlib

import jax
import jax.numpy as jnp
from flax import nnx
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

with contextlib.suppress(RuntimeError):
    jax.config.update("jax_num_cpu_devices", 8)

FEATURES, HIDDEN, BATCH = 64, 256, 32

mesh = jax.make_mesh((4, 2), ("data", "model"), axis_types=(AxisType.Auto, AxisType.Auto))

_init = nnx.initializers.lecun_normal()


class Block(nnx.Module):
    def __init__(self, features: int, hidden: int, rngs: nnx.Rngs):
        self.up = nnx.Linear(
            features,
            hidden,
            use_bias=False,
            kernel_init=nnx.with_partitioning(_init, (None, "model"), mesh=mesh),
            rngs=rngs,
        )
        self.down = nnx.Linear(
            hidden,
            features,
            use_bias=False,
            kernel_init=nnx.with_partitioning(_init, ("model", None), mesh=mesh),
            rngs=rngs,
        )

    def __call__(self, x):
        return self.down(nnx.relu(self.up(x)))


class MLP(nnx.Module):
    def __init__(self, rngs: nnx.Rngs):
        self.blocks = nnx.List([Block(FEATURES, HIDDEN, rngs) for _ in range(2)])

    def __call__(self, x):
        for block in self.blocks:
            x = block(x)
        return x


@nnx.jit
def forward(model, x):
    return model(x)


def make_model():
    """The model; Flax places each parameter as its partitioning says when it is made."""
    return MLP(nnx.Rngs(0))


def example_args():
    """The sharded model and a batch split by rows over `data`."""
    x = jax.device_put(jnp.ones((BATCH, FEATURES), jnp.float32), NamedSharding(mesh, P("data")))
    return (make_model(), x)

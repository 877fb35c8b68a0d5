"""One training step, two ways to shard it: for `diff --args-a/--args-b` and `--env-a`.

A two-layer MLP's step (loss, gradient, SGD update) over 8 devices arranged as the
mesh `MESH` in the environment says (`data` x `model`, `4x2` by default), read when
the module is imported. The step is the same; its arguments' shardings choose the
parallelism, and with them the collectives XLA's partitioner places:

- `fsdp_args`: fully sharded data parallel: the batch and each weight's first
  dimension over every device (`data` and `model` together); each weight is gathered
  for its matmul and its gradient reduce-scattered.
- `tp_args`: tensor parallel (Megatron): the batch over `data`, the first weight by
  columns and the second by rows over `model`; the second matmul's partial sums are
  all-reduced.

Importing this module asks JAX for 8 CPU devices (`jax_num_cpu_devices`) unless a
backend already exists.

    hloscope diff samples/sharding_choice.py:train_step samples/sharding_choice.py:train_step \
        --args-a samples/sharding_choice.py:fsdp_args \
        --args-b samples/sharding_choice.py:tp_args --compile
"""

import contextlib
import os

import jax
import jax.numpy as jnp
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

# The update raises when a backend exists already.
with contextlib.suppress(RuntimeError):
    jax.config.update("jax_num_cpu_devices", 8)

DATA, MODEL = (int(n) for n in os.environ.get("MESH", "4x2").split("x"))
BATCH, FEATURES, HIDDEN = 32, 64, 256


def loss(params, x, y):
    hidden = jax.nn.relu(x @ params["w1"])
    return jnp.mean((hidden @ params["w2"] - y) ** 2)


@jax.jit
def train_step(params, x, y):
    grads = jax.grad(loss)(params, x, y)
    return jax.tree.map(lambda p, g: p - 0.01 * g, params, grads)


def _arguments(batch, w1, w2):
    mesh = jax.make_mesh((DATA, MODEL), ("data", "model"), axis_types=(AxisType.Auto,) * 2)

    def spec(shape, partition):
        return jax.ShapeDtypeStruct(shape, jnp.float32, sharding=NamedSharding(mesh, partition))

    params = {"w1": spec((FEATURES, HIDDEN), w1), "w2": spec((HIDDEN, FEATURES), w2)}
    return params, spec((BATCH, FEATURES), batch), spec((BATCH, FEATURES), batch)


def fsdp_args():
    """params {w1 f32[64,256], w2 f32[256,64]}, x and y f32[32,64]: all over every device."""
    every = ("data", "model")
    return _arguments(P(every, None), P(every, None), P(every, None))


def tp_args():
    """The same shapes: the batch over `data`, w1 by columns and w2 by rows over `model`."""
    return _arguments(P("data", None), P(None, "model"), P("model", None))

r"""A Flax NNX model trained with an Optax optimizer: what `nnx.jit` hands XLA.

`nnx.jit` splits its arguments (an `nnx.Module`, an `nnx.Optimizer`, arrays) into
state pytrees before `jax.jit` sees them, so the lowered module's parameters are the
leaves of those states. hloscope names each leaf as the user wrote it
(`model.blocks[0].linear.kernel`, `optimizer.opt_state[0].trace.head.bias`),
without the wrapper levels Flax adds (`.value`, the split states).

- `Block`, `Model`: a residual block (a `Linear`, a `LayerNorm`, and a `scale`
  parameter the forward pass never reads) in an `nnx.List`, and a head.
- `train_step`: one step of SGD with momentum (Optax) on a mean squared error,
  `nnx.jit` with the model and optimizer donated (`donate_argnums=(0, 1)`): their
  state buffers are reused for the updated state.
- `forward`: the model applied to a batch (`nnx.jit`, no donation).
- `example_args`: a model, its optimizer and a batch (`x` f32[8,16], `y` f32[8,4]).

    hloscope params samples/flax_nnx.py:train_step --args samples/flax_nnx.py:example_args
"""

import jax.numpy as jnp
import optax
from flax import nnx


class Block(nnx.Module):
    def __init__(self, features: int, rngs: nnx.Rngs):
        self.linear = nnx.Linear(features, features, rngs=rngs)
        self.norm = nnx.LayerNorm(features, rngs=rngs)
        self.scale = nnx.Param(jnp.ones((features,)))

    def __call__(self, x):
        return x + nnx.relu(self.norm(self.linear(x)))


class Model(nnx.Module):
    def __init__(self, din: int, dout: int, rngs: nnx.Rngs):
        self.blocks = nnx.List([Block(din, rngs)])
        self.head = nnx.Linear(din, dout, rngs=rngs)

    def __call__(self, x):
        for block in self.blocks:
            x = block(x)
        return self.head(x)


def _loss(model, x, y):
    return jnp.mean((model(x) - y) ** 2)


@nnx.jit(donate_argnums=(0, 1))
def train_step(model, optimizer, x, y):
    loss, grads = nnx.value_and_grad(_loss)(model, x, y)
    optimizer.update(model, grads)
    return loss


@nnx.jit
def forward(model, x):
    return model(x)


def make_model():
    return Model(16, 4, nnx.Rngs(0))


def example_args():
    """A model, an SGD-with-momentum optimizer over its parameters, and one batch."""
    model = make_model()
    optimizer = nnx.Optimizer(model, optax.sgd(0.1, momentum=0.9), wrt=nnx.Param)
    x = jnp.ones((8, 16), jnp.float32)
    y = jnp.zeros((8, 4), jnp.float32)
    return (model, optimizer, x, y)


def forward_args():
    """A model and a batch for `forward`."""
    return (make_model(), jnp.ones((8, 16), jnp.float32))

r"""Randomness in a model: typed PRNG keys as arguments, in Flax NNX and Equinox.

A Flax NNX model that holds `nnx.Rngs` and an `nnx.Dropout` carries its random
state as typed PRNG keys (`jax.random.key`, dtype `key<fry>`): `nnx.jit` passes
the key to XLA as its key data, a `u32[2]` array, and the count of keys drawn so
far as a `u32[]`. hloscope shows such a leaf as JAX types it, `key<fry>[]`, with
the HLO parameter it became beside it (`u32[2]`), and its bytes are what XLA is
passed (8 B).

- `Model`: a `Linear`, a `Dropout` (rate 0.5) with its own `nnx.Rngs`, and a
  head; `nnx.Rngs(dropout=...)` stores a key and a counter.
- `train_step`: one step of SGD (Optax) on a mean squared error, in train mode
  (dropout on), `nnx.jit`, the model and optimizer donated; the dropout key and
  its counter are read, advanced and written back.
- `forward`: the model on a batch in train mode (`nnx.jit`, no donation).
- `noisy`: `jax.jit` of a function taking a key argument (`key<fry>[]`).
- `EqxModel`, `eqx_forward`: an Equinox MLP with `eqx.nn.Dropout`, called on a
  batch with a key argument split per example (`eqx.filter_jit`).
- `example_args`: a model, an SGD optimizer and a batch (`x` f32[8,16],
  `y` f32[8,4]); `forward_args`: a model and `x`; `noisy_args`: a key and `x`;
  `eqx_args`: an Equinox model, `x` and a key.

    hloscope params samples/dropout.py:train_step --args samples/dropout.py:example_args
"""

import equinox as eqx
import jax
import jax.numpy as jnp
import optax
from flax import nnx


class Model(nnx.Module):
    def __init__(self, din: int, dout: int, rngs: nnx.Rngs):
        self.linear = nnx.Linear(din, din, rngs=rngs)
        self.dropout = nnx.Dropout(0.5, rngs=nnx.Rngs(dropout=1))
        self.head = nnx.Linear(din, dout, rngs=rngs)

    def __call__(self, x):
        return self.head(self.dropout(nnx.relu(self.linear(x))))


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


@jax.jit
def noisy(key, x):
    return x + 0.1 * jax.random.normal(key, x.shape)


class EqxModel(eqx.Module):
    linear: eqx.nn.Linear
    dropout: eqx.nn.Dropout
    head: eqx.nn.Linear

    def __init__(self, key):
        first, second = jax.random.split(key)
        self.linear = eqx.nn.Linear(16, 16, key=first)
        self.dropout = eqx.nn.Dropout(0.5)
        self.head = eqx.nn.Linear(16, 4, key=second)

    def __call__(self, x, key):
        return self.head(self.dropout(jax.nn.relu(self.linear(x)), key=key))


@eqx.filter_jit
def eqx_forward(model, x, key):
    keys = jax.random.split(key, x.shape[0])
    return jax.vmap(model)(x, keys)


def make_model():
    model = Model(16, 4, nnx.Rngs(0))
    model.train()
    return model


def example_args():
    """A model in train mode, an SGD optimizer over its parameters, and one batch."""
    model = make_model()
    optimizer = nnx.Optimizer(model, optax.sgd(0.1), wrt=nnx.Param)
    return (model, optimizer, jnp.ones((8, 16), jnp.float32), jnp.zeros((8, 4), jnp.float32))


def forward_args():
    """A model in train mode and a batch for `forward`."""
    return (make_model(), jnp.ones((8, 16), jnp.float32))


def noisy_args():
    """A typed key and a batch for `noisy`."""
    return (jax.random.key(0), jnp.ones((8, 16), jnp.float32))


def eqx_args():
    """An Equinox model, a batch and a typed key for `eqx_forward`."""
    return (EqxModel(jax.random.key(1)), jnp.ones((8, 16), jnp.float32), jax.random.key(2))

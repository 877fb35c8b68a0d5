r"""An Equinox model with non-array fields, compiled with `eqx.filter_jit`.

An `eqx.Module` mixes arrays (the parameters) with other fields (an activation
function, a layer count, a name); `eqx.filter_jit` traces the arrays and keeps
everything else static, so the lowered module's parameters are the model's array
leaves. hloscope names each as the user wrote it (`model.layers[0].weight`), not
by the split `filter_jit` makes (`dynamic_nodonate['first']...`).

- `MLP`: two `eqx.nn.Linear` layers, an activation (a function field) and a
  `label` str, which `filter_jit` keeps static (they are listed as static
  arguments), and a `depth` int declared `eqx.field(static=True)` (part of the
  module's tree structure, not a leaf); `unused` is an array field the forward
  pass never reads, so jit prunes it.
- `forward`: the model applied to a batch, `eqx.filter_jit`.
- `loss`: the mean squared error of `forward` (`eqx.filter_jit`, with a keyword
  argument `weight`).
- `example_args`: the model and a batch `x` f32[8,16].

    hloscope params samples/equinox_model.py:forward --args samples/equinox_model.py:example_args
"""

from collections.abc import Callable

import equinox as eqx
import jax
import jax.numpy as jnp


class MLP(eqx.Module):
    layers: list[eqx.nn.Linear]
    activation: Callable
    label: str
    unused: jax.Array
    depth: int = eqx.field(static=True)

    def __init__(self, key):
        first, second = jax.random.split(key)
        self.layers = [eqx.nn.Linear(16, 32, key=first), eqx.nn.Linear(32, 4, key=second)]
        self.activation = jax.nn.gelu
        self.depth = 2
        self.label = "mlp"
        self.unused = jnp.zeros((3,))

    def __call__(self, x):
        x = self.activation(self.layers[0](x))
        return self.layers[1](x)


@eqx.filter_jit
def forward(model, x):
    return jax.vmap(model)(x)


@eqx.filter_jit
def loss(model, x, y, weight=1.0):
    return weight * jnp.mean((jax.vmap(model)(x) - y) ** 2)


def example_args():
    """The model and a batch of eight inputs."""
    return (MLP(jax.random.key(0)), jnp.ones((8, 16), jnp.float32))


def loss_args():
    """The model, a batch, targets, and the weight as a keyword."""
    model, x = example_args()
    return ((model, x, jnp.zeros((8, 4), jnp.float32)), {"weight": 0.5})

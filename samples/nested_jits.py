"""How big should a jit be? Nested jits are private functions of one program

XLA fuses and optimizes within one jitted computation. A jit called inside
another jit is not a separate program: it lowers to a private function reached
by `func.call`, which XLA inlines into the outer computation, so it can fuse
across the call.

- `mlp`: an outer jit calling the jitted `dense` three times (one private
  function, three call sites) and `head` once.
- `mlp_without_outer_jit`: the same computation with no outer jit: each `dense`
  is its own XLA program, and nothing fuses across layers.

    hloscope inspect samples/nested_jits.py:mlp --args samples/nested_jits.py:example_args
"""

import jax
import jax.numpy as jnp


@jax.jit
def dense(x, w, b):
    return jax.nn.relu(x @ w + b)


@jax.jit
def head(h):
    return jnp.tanh(h).sum(axis=-1)


@jax.jit
def mlp(params, x):
    for layer in params:
        x = dense(x, layer["w"], layer["b"])
    return head(x)


def mlp_without_outer_jit(params, x):
    for layer in params:
        x = dense(x, layer["w"], layer["b"])
    return head(x)


def example_args():
    """Three 64x64 layers and a batch of 8."""
    layer = {
        "w": jax.ShapeDtypeStruct((64, 64), jnp.float32),
        "b": jax.ShapeDtypeStruct((64,), jnp.float32),
    }
    return ([layer, layer, layer], jax.ShapeDtypeStruct((8, 64), jnp.float32))

"""A training step over a stack of residual MLP blocks, scanned, with each block
rematerialized (`jax.checkpoint`): the backward pass computes a block's wide hidden
activations again instead of keeping them for every layer, so fewer bytes are live
at the memory peak. `step_without_remat` is the same step with the checkpoint
removed: the change `hloscope check` catches in the README.

    hloscope check samples/check/train_step.py:step \\
        --args samples/check/train_step.py:example_args --baseline /tmp/step.json --update
    hloscope check samples/check/train_step.py:step_without_remat \\
        --args samples/check/train_step.py:example_args --baseline /tmp/step.json
"""

import jax
import jax.numpy as jnp

LAYERS = 8
WIDTH = 128
HIDDEN = 512
BATCH = 2048


def block(x, weights):
    w_in, w_out = weights
    hidden = jax.nn.gelu(x @ w_in)
    return x + hidden @ w_out, None


def loss(params, x, remat):
    body = jax.checkpoint(block) if remat else block
    x, _ = jax.lax.scan(body, x, params)
    return jnp.mean(x**2)


def train(params, x, remat):
    grads = jax.grad(loss)(params, x, remat)
    return jax.tree.map(lambda w, g: w - 0.01 * g, params, grads)


@jax.jit
def step(params, x):
    return train(params, x, remat=True)


@jax.jit
def step_without_remat(params, x):
    return train(params, x, remat=False)


def example_args():
    params = (
        jax.ShapeDtypeStruct((LAYERS, WIDTH, HIDDEN), jnp.float32),
        jax.ShapeDtypeStruct((LAYERS, HIDDEN, WIDTH), jnp.float32),
    )
    return params, jax.ShapeDtypeStruct((BATCH, WIDTH), jnp.float32)

"""Where does the run time go? A step whose time is nearly all one line's

`step` normalises a batch, multiplies it by a large weight matrix (the matmul is
nearly all of the work), then adds a bias and squashes the result: three cheap
lines around one expensive one. `hloscope profile` runs it under JAX's profiler and
puts the matmul's line first, with most of the share:

    hloscope profile samples/profile_step.py:step --args samples/profile_step.py:example_args

`failing_step` raises when it runs (its lowering is fine): profiling it fails with
one line naming the error.
"""

import jax
import jax.numpy as jnp
import numpy as np

BATCH = 256
WIDTH = 512


@jax.jit
def step(x, w, b):
    x = x / (jnp.linalg.norm(x, axis=-1, keepdims=True) + 1e-6)  # normalise
    y = x @ w @ w  # the matmuls: nearly all of the work
    y = y + b  # the bias
    return jnp.tanh(y).sum()  # squash and reduce


def example_args():
    """A batch of 256 rows, a 512x512 weight and a bias, as shapes (hloscope makes
    seeded random values for them)."""
    return (
        jax.ShapeDtypeStruct((BATCH, WIDTH), jnp.float32),
        jax.ShapeDtypeStruct((WIDTH, WIDTH), jnp.float32),
        jax.ShapeDtypeStruct((WIDTH,), jnp.float32),
    )


def _check_finite(y):
    if not np.isfinite(y).all():
        raise FloatingPointError("the step produced a non-finite value")
    raise ValueError("the host check rejects every batch")


@jax.jit
def failing_step(x):
    y = jnp.tanh(x)
    jax.debug.callback(_check_finite, y)
    return y


def failing_args():
    return (jax.ShapeDtypeStruct((8,), jnp.float32),)


def eight_times_args():
    """The same step on a batch eight times larger: eight times the work (`hloscope
    check --runtime` against a baseline recorded with `example_args` fails)."""
    _, w, b = example_args()
    return (jax.ShapeDtypeStruct((BATCH * 8, WIDTH), jnp.float32), w, b)

"""Which of my arguments did the compiler actually get? Pruned arguments

`jax.jit` prunes arguments the computation does not use (`keep_unused=False`),
so the HLO module has fewer parameters than the Python function has leaves:
PyTorch/XLA's `call_jax` assumed one parameter per argument and broke. `loss`
ignores `params['unused_scale']` and `batch['mask']`.

- `loss`: a plain function (hloscope jits it): two leaves are pruned.
- `loss_keep_unused`: `jax.jit(loss, keep_unused=True)`: every leaf is a
  parameter; the two ignored ones are there but unused.
- `grad_w`: the gradient with respect to `params` only; `batch['y']` still
  matters, `batch['mask']` does not.
- `train_step`: donates `params`, and takes `lr` as a keyword argument.
- `sgd_update`: asks to donate both arguments, but only `w` has a result of its
  shape and dtype to reuse: JAX drops the donation of `grads` (and warns), so
  `hloscope params` shows it `dropped`, not donated.

    hloscope inspect samples/params.py:loss --args samples/params.py:example_args
"""

import jax
import jax.numpy as jnp


def loss(params, batch):
    prediction = batch["x"] @ params["w"] + params["b"]
    return jnp.mean((prediction - batch["y"]) ** 2)


loss_keep_unused = jax.jit(loss, keep_unused=True)

grad_w = jax.jit(jax.grad(loss, argnums=0))


def _train_step(params, batch, *, lr):
    grads = jax.grad(loss)(params, batch)
    return jax.tree.map(lambda p, g: p - lr * g, params, grads)


train_step = jax.jit(_train_step, donate_argnums=0)


def _sgd_update(w, grads):
    return w - 0.1 * grads.sum(0)


sgd_update = jax.jit(_sgd_update, donate_argnums=(0, 1))


def example_params():
    return {
        "w": jax.ShapeDtypeStruct((16, 4), jnp.float32),
        "b": jax.ShapeDtypeStruct((4,), jnp.float32),
        "unused_scale": jax.ShapeDtypeStruct((), jnp.float32),
    }


def example_batch():
    return {
        "x": jax.ShapeDtypeStruct((8, 16), jnp.float32),
        "y": jax.ShapeDtypeStruct((8, 4), jnp.float32),
        "mask": jax.ShapeDtypeStruct((8,), jnp.bool_),
    }


def example_args():
    """(params, batch) as shapes."""
    return (example_params(), example_batch())


def train_step_args():
    """(params, batch) and the keyword argument lr."""
    return (example_params(), example_batch()), {"lr": jnp.float32(0.1)}


def sgd_args():
    """(w, per-example grads) as shapes."""
    return (
        jax.ShapeDtypeStruct((32,), jnp.float32),
        jax.ShapeDtypeStruct((4, 32), jnp.float32),
    )

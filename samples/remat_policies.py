"""What does the backward pass keep? A loss over stacked layers under `jax.checkpoint`.

Each layer names two values with `checkpoint_name`: `hidden` (the activation after the
first matmul) and `projected` (after the second). `loss` runs the layers with
`jax.lax.scan` under a policy that saves `hidden`, offloads `projected` to the host
(`pinned_host`) and recomputes the rest in the backward; `loss_typo` names the saved
value `hiden`, a name the program never gives, so its policy saves nothing and says
nothing (`hloscope remat --strict` exits 1 on it).

    hloscope remat samples/remat_policies.py:loss --args samples/remat_policies.py:example_args
    hloscope remat samples/remat_policies.py:loss_typo --args samples/remat_policies.py:example_args
"""

import jax
import jax.numpy as jnp
from jax.ad_checkpoint import checkpoint_name

BATCH, FEATURES, LAYERS = 64, 256, 4

offload_projected = jax.checkpoint_policies.save_and_offload_only_these_names(
    names_which_can_be_saved=["hidden"],
    names_which_can_be_offloaded=["projected"],
    offload_src="device",
    offload_dst="pinned_host",
)


def layer(x, w):
    hidden = checkpoint_name(jax.nn.gelu(x @ w), "hidden")
    projected = checkpoint_name(hidden @ w.T, "projected")
    return x + jnp.tanh(projected), None


def loss(ws, x):
    y, _ = jax.lax.scan(jax.checkpoint(layer, policy=offload_projected), x, ws)
    return jnp.mean(y**2)


def loss_typo(ws, x):
    policy = jax.checkpoint_policies.save_only_these_names("hiden")
    y, _ = jax.lax.scan(jax.checkpoint(layer, policy=policy), x, ws)
    return jnp.mean(y**2)


grad_step = jax.jit(jax.grad(loss))


def example_args():
    """ws f32[LAYERS,256,256], x f32[64,256]."""
    return (
        jax.ShapeDtypeStruct((LAYERS, FEATURES, FEATURES), jnp.float32),
        jax.ShapeDtypeStruct((BATCH, FEATURES), jnp.float32),
    )

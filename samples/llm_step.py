"""An LLM-shaped training step, for `--for` at the scale it exists for.

A decoder-only transformer: token embedding, `LAYERS` decoder layers stacked by
`jax.lax.scan`, each rematerialized by `jax.checkpoint` (its matmuls' outputs saved,
`dots_with_no_batch_dims_saveable`), attention and an MLP, RMS norms, tied output
head; a cross-entropy loss, its gradient and optax's AdamW, in one `jax.jit` that
donates the parameters and the optimizer state. Parameters are sharded FSDP-style
over `data` and Megatron-style over `model` (`fsdp_tp_spec`); the batch over `data`.
No `with_sharding_constraint`: every collective comes from the arguments' shardings.

The mesh is `jax.make_mesh((data, model), ...)` over `jax.devices()`, made when the
arguments are, with `model` = `MODEL` (or the device count, where smaller) and
`data` the rest: on a TPU slice, `jax.make_mesh` orders the devices for the torus,
so compiled `--for tpu:...` it is the mesh the slice would build.

The sizes are small by default (the tests' reduced step: its TPU program has tiled
layouts that do not convert to MLIR); `LLM_STEP=LAYERS,D_MODEL,SEQ,BATCH` in the
environment changes them (`LLM_STEP=8,2048,2048,16` for a 16-chip step).

    hloscope placement samples/llm_step.py:train_step --args samples/llm_step.py:example_args \
        --for tpu:v5e:2x2
"""

import os

import jax
import jax.numpy as jnp
import optax
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

LAYERS, D_MODEL, SEQ, BATCH = (int(v) for v in os.environ.get("LLM_STEP", "2,512,256,8").split(","))
HEADS = max(D_MODEL // 128, 1)
VOCAB = 4 * D_MODEL
FFN = 4 * D_MODEL
MODEL = 2
"""The size of the mesh's `model` axis where the devices allow it."""

optimizer = optax.adamw(learning_rate=1e-4, weight_decay=0.1)


def rms_norm(x, scale):
    x32 = x.astype(jnp.float32)
    normed = x32 * jax.lax.rsqrt(jnp.mean(x32 * x32, axis=-1, keepdims=True) + 1e-6)
    return (normed * scale).astype(x.dtype)


def attention(x, layer):
    batch, seq, _ = x.shape
    head_dim = D_MODEL // HEADS
    q = (x @ layer["wq"]).reshape(batch, seq, HEADS, head_dim)
    k = (x @ layer["wk"]).reshape(batch, seq, HEADS, head_dim)
    v = (x @ layer["wv"]).reshape(batch, seq, HEADS, head_dim)
    scores = jnp.einsum("bqhd,bkhd->bhqk", q, k) / jnp.sqrt(head_dim).astype(x.dtype)
    causal = jnp.tril(jnp.ones((seq, seq), dtype=bool))
    scores = jnp.where(causal, scores, jnp.finfo(scores.dtype).min)
    weights = jax.nn.softmax(scores.astype(jnp.float32), axis=-1).astype(x.dtype)
    out = jnp.einsum("bhqk,bkhd->bqhd", weights, v).reshape(batch, seq, D_MODEL)
    return out @ layer["wo"]


def decoder_layer(x, layer):
    x = x + attention(rms_norm(x, layer["ln1"]), layer)
    hidden = jax.nn.gelu(rms_norm(x, layer["ln2"]) @ layer["up"])
    return x + hidden @ layer["down"], None


def loss_fn(params, batch):
    x = params["embed"][batch["tokens"]]
    checkpointed = jax.checkpoint(decoder_layer, policy=REMAT_POLICIES.get(REMAT))
    # LLM_REMAT=none: the layers as they are, nothing recomputed.
    layer = decoder_layer if REMAT == "none" else checkpointed
    x, _ = jax.lax.scan(layer, x, params["layers"])
    logits = rms_norm(x, params["ln_f"]) @ params["embed"].T
    labels = jax.nn.one_hot(batch["targets"], VOCAB, dtype=logits.dtype)
    return -jnp.mean(jnp.sum(jax.nn.log_softmax(logits.astype(jnp.float32)) * labels, axis=-1))


def _train_step(params, opt_state, batch):
    loss, grads = jax.value_and_grad(loss_fn)(params, batch)
    updates, opt_state = optimizer.update(grads, opt_state, params)
    return optax.apply_updates(params, updates), opt_state, loss


train_step = jax.jit(_train_step, donate_argnums=(0, 1))


def param_shapes():
    """Each parameter's shape and its partition spec: FSDP over `data` on one
    dimension of every matrix, tensor parallelism over `model` on the other."""
    layers = {
        "ln1": ((LAYERS, D_MODEL), P(None, None)),
        "wq": ((LAYERS, D_MODEL, D_MODEL), P(None, "data", "model")),
        "wk": ((LAYERS, D_MODEL, D_MODEL), P(None, "data", "model")),
        "wv": ((LAYERS, D_MODEL, D_MODEL), P(None, "data", "model")),
        "wo": ((LAYERS, D_MODEL, D_MODEL), P(None, "model", "data")),
        "ln2": ((LAYERS, D_MODEL), P(None, None)),
        "up": ((LAYERS, D_MODEL, FFN), P(None, "data", "model")),
        "down": ((LAYERS, FFN, D_MODEL), P(None, "model", "data")),
    }
    return {
        "embed": ((VOCAB, D_MODEL), P("model", "data")),
        "layers": layers,
        "ln_f": ((D_MODEL,), P(None)),
    }


def make_mesh():
    """`jax.make_mesh` over every device: `model` of `MODEL` where the count allows."""
    count = jax.device_count()
    model = MODEL if count % MODEL == 0 else 1
    # The shape LLM_MESH gives, where it does (`compare --vary LLM_MESH=...`).
    shape = MESH_SHAPE or (count // model, model)
    return jax.make_mesh(shape, ("data", "model"), axis_types=(AxisType.Auto, AxisType.Auto))


def example_args():
    """(params, opt_state, batch) as shapes with their shardings on the mesh: params
    bf16, AdamW's moments as the params, tokens and targets i32[BATCH,SEQ] over
    `data`."""
    mesh = make_mesh()
    shapes = param_shapes()
    is_leaf = lambda leaf: isinstance(leaf, tuple) and isinstance(leaf[1], P)  # noqa: E731
    params = jax.tree.map(
        lambda leaf: jax.ShapeDtypeStruct(
            leaf[0], jnp.bfloat16, sharding=NamedSharding(mesh, leaf[1])
        ),
        shapes,
        is_leaf=is_leaf,
    )
    specs = jax.tree.map(lambda leaf: leaf[1], shapes, is_leaf=is_leaf)
    opt_shapes = jax.eval_shape(optimizer.init, params)

    def place(state):
        # AdamW's moments are sharded as the parameters they follow; the count is
        # replicated.
        if isinstance(state, optax.ScaleByAdamState):
            return optax.ScaleByAdamState(
                count=_replicated(state.count, mesh),
                mu=_like(state.mu, specs, mesh),
                nu=_like(state.nu, specs, mesh),
            )
        return jax.tree.map(lambda leaf: _replicated(leaf, mesh), state)

    opt_state = tuple(place(state) for state in opt_shapes)
    tokens = jax.ShapeDtypeStruct(
        (BATCH, SEQ), jnp.int32, sharding=NamedSharding(mesh, P("data", None))
    )
    return params, opt_state, {"tokens": tokens, "targets": tokens}


def _replicated(leaf, mesh):
    return jax.ShapeDtypeStruct(leaf.shape, leaf.dtype, sharding=NamedSharding(mesh, P()))


def _like(tree, specs, mesh):
    return jax.tree.map(
        lambda leaf, spec: jax.ShapeDtypeStruct(
            leaf.shape, leaf.dtype, sharding=NamedSharding(mesh, spec)
        ),
        tree,
        specs,
    )


# What `hloscope compare` varies, read when the module is imported (kept at the end, so
# that the lines above stay where the documentation's transcripts name them):
# `LLM_MESH=DATAxMODEL` (`2x8`) the mesh's shape (it must use every device); `LLM_REMAT`
# the layers' remat policy, `dots` (the default: matmuls' outputs saved), `full` (save
# nothing) or `none` (no `jax.checkpoint`); `TOKENS_PER_STEP`, the tokens a step trains
# on (all devices together), what `compare` divides for tokens per second per device.
MESH = os.environ.get("LLM_MESH")
MESH_SHAPE = tuple(int(size) for size in MESH.split("x")) if MESH else None
REMAT = os.environ.get("LLM_REMAT", "dots")
REMAT_POLICIES = {
    "dots": jax.checkpoint_policies.dots_with_no_batch_dims_saveable,
    "full": jax.checkpoint_policies.nothing_saveable,
}
if REMAT not in (*REMAT_POLICIES, "none"):
    raise ValueError(f"LLM_REMAT={REMAT}: expected dots, full or none")
TOKENS_PER_STEP = BATCH * SEQ

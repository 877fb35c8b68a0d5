"""A small real model in the shapes real models take, and the changes users make to
it, for the diff's tests: remat on and off, bf16 matmuls, one argument sharded, a
layer added, `compute_on` moved across a jit boundary, and one module compiled with
two XLA option settings.

The model: `LAYERS` dense layers, each a nested jit (a `func.call` at each call site,
as Flax and Equinox layers are), then a mean-square loss; trained by `jax.grad`.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
from jax.experimental.compute_on import compute_on
from jax.sharding import NamedSharding, PartitionSpec

from hloscope.ir import parse
from hloscope.ir.model import Module

LAYERS = 4
BATCH, WIDTH = 16, 32


def weights_and_input(
    layers: int = LAYERS,
) -> tuple[list[jax.ShapeDtypeStruct], jax.ShapeDtypeStruct]:
    return (
        [jax.ShapeDtypeStruct((WIDTH, WIDTH), jnp.float32) for _ in range(layers)],
        jax.ShapeDtypeStruct((BATCH, WIDTH), jnp.float32),
    )


def dense(x: jax.Array, w: jax.Array, dtype: jnp.dtype = jnp.float32) -> jax.Array:
    """`tanh(x @ w)`, the matmul in `dtype`, the rest in f32."""
    h = jnp.dot(x.astype(dtype), w.astype(dtype), preferred_element_type=dtype)
    return jnp.tanh(h.astype(jnp.float32))


def loss(
    ws: list[jax.Array],
    x: jax.Array,
    *,
    dtype: jnp.dtype = jnp.float32,
    remat: bool = False,
) -> jax.Array:
    layer = jax.jit(functools.partial(dense, dtype=dtype))
    if remat:
        layer = jax.checkpoint(layer)
    for w in ws:
        x = layer(x, w)
    return jnp.mean(x * x)


def lowered_grad(*, layers: int = LAYERS, **options: object) -> jax.stages.Lowered:
    """The lowered gradient of the loss with respect to the weights."""
    grad = jax.jit(jax.grad(functools.partial(loss, **options)))
    return grad.lower(*weights_and_input(layers))


def lowered_sharded(x_sharded: bool) -> jax.stages.Lowered:
    """The loss on 8 CPU devices, its input batch sharded over them or replicated."""
    mesh = jax.make_mesh((8,), ("batch",))
    spec = PartitionSpec("batch") if x_sharded else PartitionSpec()
    replicated = NamedSharding(mesh, PartitionSpec())
    ws, x = weights_and_input()
    step = jax.jit(loss, in_shardings=([replicated] * len(ws), NamedSharding(mesh, spec)))
    return step.lower(ws, x)


@jax.jit
def _host_layer_inside(x: jax.Array, w: jax.Array) -> jax.Array:
    with compute_on("device_host"):
        return dense(x, w)


def host_layer_loss(ws: list[jax.Array], x: jax.Array, *, mark_inside: bool) -> jax.Array:
    """The loss with its last layer on the host: `compute_on` around the call of the
    layer's jit (outside its boundary), or inside the layer's jit."""
    layer = jax.jit(dense)
    for w in ws[:-1]:
        x = layer(x, w)
    if mark_inside:
        x = _host_layer_inside(x, ws[-1])
    else:
        with compute_on("device_host"):
            x = layer(x, ws[-1])
    return jnp.mean(x * x)


def lowered_host_layer(*, mark_inside: bool) -> jax.stages.Lowered:
    step = jax.jit(functools.partial(host_layer_loss, mark_inside=mark_inside))
    return step.lower(*weights_and_input())


def stablehlo(lowered: jax.stages.Lowered) -> Module:
    return parse.parse_mlir(lowered.as_text(), "lowered.mlir").model


def optimized(lowered: jax.stages.Lowered, options: dict[str, str] | None = None) -> Module:
    """XLA's optimized HLO of `lowered` compiled for the CPU with `options` (fields of
    XLA's DebugOptions, for this compilation only)."""
    compiled = lowered.compile(compiler_options=options or {})
    return parse.parse_hlo_text(compiled.as_text(), "optimized.hlo").model

"""A model with a scan (a `while` loop), a nested jit and a softmax, lowered by JAX and
written two ways: StableHLO, and XLA's HLO text of the same lowering. XLA's printer
moves the loop counter first among the loop-carried values, merges equal constants,
writes unit-dimension broadcasts as reshapes and swaps commutative operands; the diff
must see one program."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest


@jax.jit
def layer(x, w):
    h = x @ w
    h = h - h.mean(-1, keepdims=True)
    h = h / jnp.sqrt((h * h).mean(-1, keepdims=True) + 1e-5)
    return jax.nn.softmax(h, axis=-1) * x


def model(ws, x):
    def body(carry, w):
        return layer(carry, w), carry.sum()

    y, sums = jax.lax.scan(body, x, ws)
    return jnp.where(y > 0, y, 0.1 * y).astype(jnp.bfloat16), sums


ARGS = (
    jax.ShapeDtypeStruct((4, 32, 32), jnp.float32),
    jax.ShapeDtypeStruct((8, 32), jnp.float32),
)


@pytest.fixture(scope="module")
def lowered():
    return jax.jit(model).lower(*ARGS)


def test_stablehlo_against_xla_hlo_of_one_lowering(cli, tmp_path, lowered):
    stablehlo = tmp_path / "model.mlir"
    stablehlo.write_text(lowered.as_text())
    hlo = tmp_path / "model.hlo"
    hlo.write_text(lowered.as_text(dialect="hlo"))
    run = cli("diff", str(stablehlo), str(hlo), "--json")
    doc = run.json()
    assert run.code == 0, [(c["kind"], c["op"], c["detail"]) for c in doc["changes"]]
    assert doc["verdict"] == "same"
    assert doc["summary"]["unchanged"] > 50
    assert doc["summary"]["normalized"] > 0


def test_a_change_inside_the_loop_body(cli, tmp_path, lowered):
    """The layer's softmax made a log-softmax: found inside the loop, in the nested
    jit's function, against XLA's HLO of the original."""
    changed = jax.jit(
        lambda ws, x: model_with(ws, x, jax.nn.log_softmax),
    ).lower(*ARGS)
    a = tmp_path / "model.hlo"
    a.write_text(lowered.as_text(dialect="hlo"))
    b = tmp_path / "changed.mlir"
    b.write_text(changed.as_text())
    run = cli("diff", str(a), str(b), "--json")
    assert run.code == 1
    doc = run.json()
    changes = {(c["kind"], c["op"]) for c in doc["changes"]}
    assert changes == {
        ("added", "func.call"),  # jax.nn.log_softmax is a jitted function of its own
        ("added", "stablehlo.log"),
        ("added", "stablehlo.subtract"),
        ("removed", "stablehlo.divide"),
        ("changed", "stablehlo.broadcast_in_dim"),  # now reads the log
        ("changed", "stablehlo.multiply"),  # now reads the subtract
    }
    assert doc["summary"]["unchanged"] > 50


def model_with(ws, x, normalize):
    @jax.jit
    def layer(x, w):
        h = x @ w
        h = h - h.mean(-1, keepdims=True)
        h = h / jnp.sqrt((h * h).mean(-1, keepdims=True) + 1e-5)
        return normalize(h, axis=-1) * x

    def body(carry, w):
        return layer(carry, w), carry.sum()

    y, sums = jax.lax.scan(body, x, ws)
    return jnp.where(y > 0, y, 0.1 * y).astype(jnp.bfloat16), sums

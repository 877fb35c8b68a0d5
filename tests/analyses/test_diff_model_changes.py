"""The diff on the changes users make to real models (`model_changes`): each reports
what changed, grouped (the same change in every layer or call site is one group with
its count), and nothing that did not change."""

from __future__ import annotations

from collections import Counter

import jax.numpy as jnp
import model_changes as mc
import pytest

from hloscope.analyses.diff import ModuleDiff, diff_modules


def groups_of(result: ModuleDiff) -> Counter[tuple[str, str, tuple[str, ...], int]]:
    return Counter((g.kind, g.op, g.aspects, g.count) for g in result.groups)


def kinds_of(result: ModuleDiff, kind: str) -> Counter[str]:
    """Op name -> how many ops of it are `kind` (added, removed, changed)."""
    found: Counter[str] = Counter()
    for group in result.groups:
        if group.kind == kind:
            found[group.op] += group.count
    return found


@pytest.fixture(scope="module")
def f32_grad():
    return mc.stablehlo(mc.lowered_grad())


def test_remat_on_against_off(f32_grad):
    """`jax.checkpoint` on every layer: the backward pass recomputes each layer's
    matmul and tanh behind an optimization barrier; the forward calls keep fewer
    residuals. Each is one group, once per layer."""
    result = diff_modules(f32_grad, mc.stablehlo(mc.lowered_grad(remat=True)))
    assert result.verdict == "different"
    assert kinds_of(result, "added") == {
        "stablehlo.optimization_barrier": mc.LAYERS,
        "func.call": mc.LAYERS,  # the recomputation, a call of the layer's jit
        "stablehlo.dot_general": mc.LAYERS,
        "stablehlo.tanh": mc.LAYERS,
    }
    assert kinds_of(result, "removed") == {}
    assert groups_of(result) == {
        ("added", "stablehlo.optimization_barrier", (), 4): 1,
        ("added", "func.call", (), 4): 1,
        ("added", "stablehlo.dot_general", (), 4): 1,
        ("added", "stablehlo.tanh", (), 4): 1,
        # the forward calls return fewer residuals
        ("changed", "func.call", ("shape",), 4): 1,
        # the backward pass reads the recomputed values
        ("changed", "stablehlo.subtract", ("operands",), 4): 1,
        ("changed", "stablehlo.multiply", ("operands",), 4): 2,
        ("changed", "stablehlo.dot_general", ("operands",), 7): 1,
    }
    barrier_reads = [g for g in result.groups if "optimization_barrier" in g.detail]
    assert {g.detail for g in barrier_reads} == {
        "operand 0 through an added optimization_barrier",
        "operand 1 through an added optimization_barrier",
    }
    assert result.parameters and all(p.status == "same" for p in result.parameters)


def test_bf16_against_f32_matmuls(f32_grad):
    """Matmuls in bf16: every dot_general (4 forward, 7 backward) changes dtype with
    its operands converted, one group each way; converts are added; nothing is
    removed and nothing but the matmuls' neighbours changes."""
    result = diff_modules(f32_grad, mc.stablehlo(mc.lowered_grad(dtype=jnp.bfloat16)))
    assert kinds_of(result, "removed") == {}
    assert set(kinds_of(result, "added")) == {"stablehlo.convert"}
    dots = [g for g in result.groups if g.op == "stablehlo.dot_general"]
    assert {(g.kind, g.detail, g.count) for g in dots} == {
        (
            "changed",
            "f32[16,32] → bf16[16,32]; operand 0 converted to bf16; operand 1 converted to bf16",
            7,
        ),
        (
            "changed",
            "f32[32,32] → bf16[32,32]; operand 0 converted to bf16; operand 1 converted to bf16",
            4,
        ),
    }
    changed = kinds_of(result, "changed")
    assert changed == {
        "stablehlo.dot_general": 11,
        "stablehlo.tanh": 4,  # reads the matmul converted back to f32
        "stablehlo.transpose": 4,  # of a bf16 weight gradient
        "stablehlo.multiply": 3,
        "func.call": 4,  # the forward calls hand bf16 residuals to the backward pass
    }
    tanh = next(g for g in result.groups if g.op == "stablehlo.tanh")
    assert tanh.detail == "operand 0 converted to f32"


def test_sharding_of_one_argument():
    """The input batch sharded over 8 devices instead of replicated: one parameter's
    sharding, and nothing else."""
    result = diff_modules(
        mc.stablehlo(mc.lowered_sharded(False)), mc.stablehlo(mc.lowered_sharded(True))
    )
    assert [(c.kind, c.op, c.aspects) for c in result.changes] == [
        ("changed", "parameter", ("parameter", "sharding"))
    ]
    assert '"batch"' in result.changes[0].detail
    assert result.summary.changed == result.summary.added == result.summary.removed == 0
    assert [p.status for p in result.parameters].count("changed") == 1


def test_a_layer_added(f32_grad):
    """A fifth layer: its forward and backward ops added once, its weight and its
    gradient added; the layers before it are the same, and only where the new layer
    joins the chain do ops read something else."""
    result = diff_modules(f32_grad, mc.stablehlo(mc.lowered_grad(layers=mc.LAYERS + 1)))
    assert kinds_of(result, "removed") == {}
    assert kinds_of(result, "added") == {
        "func.call": 2,  # the layer's forward and backward calls
        "stablehlo.dot_general": 3,
        "stablehlo.tanh": 1,
        "stablehlo.subtract": 1,
        "stablehlo.multiply": 2,
        "stablehlo.add": 1,
        "stablehlo.transpose": 1,
        "parameter": 1,
        "result": 1,
    }
    changed = [g for g in result.groups if g.kind == "changed"]
    assert all(g.aspects == ("operands",) for g in changed)
    assert sum(g.count for g in changed) <= 3
    # The weights before it are paired with themselves; the new one is the last.
    assert [(p.a, p.b, p.status) for p in result.parameters][-2:] == [
        (None, mc.LAYERS, "added"),
        (mc.LAYERS, mc.LAYERS + 1, "same"),
    ]


def test_compute_on_moved_across_a_jit_boundary():
    """`compute_on` around the call of the layer's jit, against inside the layer's
    jit: the call is no longer marked (its ops are, both ways); the layer's function,
    renamed by being another jit, is the same function."""
    result = diff_modules(
        mc.stablehlo(mc.lowered_host_layer(mark_inside=False)),
        mc.stablehlo(mc.lowered_host_layer(mark_inside=True)),
    )
    assert [(c.kind, c.op, c.detail, c.aspects) for c in result.changes] == [
        ("changed", "func.call", "compute type host → device", ("compute_type",))
    ]
    assert [(r.a, r.b) for r in result.renames] == [("dense_0", "_host_layer_inside")]
    assert any("dense_0 → _host_layer_inside" in note for note in result.notes)


def test_two_xla_option_settings_of_one_module(f32_grad):
    """One lowering compiled twice, XLA's loop fusion pass off for the second: the
    fusions differ (one group per fused-op set, with its count), the ops fused or not
    are the same ops."""
    lowered = mc.lowered_grad()
    result = diff_modules(
        mc.optimized(lowered), mc.optimized(lowered, {"xla_disable_hlo_passes": "fusion"})
    )
    assert result.verdict == "different"
    assert {g.op for g in result.groups} == {"mhlo.fusion"}
    assert {g.aspects for g in result.groups} <= {(), ("fusion",)}
    assert result.summary.removed == 0
    assert result.summary.changed == sum(g.count for g in result.groups if g.kind == "changed")
    assert max(g.count for g in result.groups) > 1
    assert result.a.fusions < result.b.fusions
    assert result.summary.unchanged > 40


def test_the_same_compiled_twice_is_the_same():
    """The control of the test above: one setting twice is no change."""
    lowered = mc.lowered_grad()
    result = diff_modules(mc.optimized(lowered), mc.optimized(lowered))
    assert result.verdict == "same"

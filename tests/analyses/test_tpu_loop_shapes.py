"""The TPU's optimized loops, in XLA's own form, on a module written as the TPU writes
them (tests/fixtures/tpu_loop.hlo; no TPU compiler needed): a `while` whose backend config has no
`known_trip_count` and whose counter the TPU copies between memory spaces, with the
collectives of the body inside fusions, and an async collective moved on by compute
fusions (`async_collective_fusion`) between a start and a done fusion.
tests/platforms/test_loop_collectives.py checks the same against XLA's text of a real
TPU compilation."""

from __future__ import annotations

from collections import Counter

import pytest

from conftest import ROOT
from hloscope.analyses.placement import analyze_placement
from hloscope.analyses.placement.loops import LOOP_CONDITION, trip_count
from hloscope.analyses.placement.why import explain_collectives
from hloscope.ir import parse
from hloscope.ir.context import xla_hlo
from hloscope.ir.hlo_native import build_hlo_native_model

FIXTURES = ROOT / "tests" / "fixtures"
TRIPS = 3
"""The bound of the fixture's loop condition."""

MODULE = (FIXTURES / "tpu_loop.hlo").read_text()


def native_module(text: str = MODULE):
    return build_hlo_native_model(xla_hlo().hlo_module_from_text(text))


def converted_module(text: str = MODULE):
    """The module converted to MLIR, as hloscope reads an optimized module whose
    conversion succeeds: the fused computations are regions of the fusions, and XLA's
    conversion leaves their copies beside them as private functions no one calls."""
    return parse.parse_hlo_text(text, "tpu_like.hlo").model


FORMS = pytest.mark.parametrize("build", [native_module, converted_module], ids=["native", "mlir"])


@FORMS
def test_a_tpu_while_without_known_trip_count_is_counted_from_its_condition(build):
    module = build()
    (loop,) = [op for op in module.ops if op.short_name == "while"]
    assert trip_count(module, loop) == (TRIPS, LOOP_CONDITION)


@FORMS
def test_collectives_in_fusions_a_loop_body_calls_are_in_the_loop(build):
    collectives = {c.op: c for c in analyze_placement(build()).collectives}
    gathers, reduces = collectives["all_gather"], collectives["all_reduce"]
    # The start's, the done's and the body's all-gather are one collective (their
    # channel): started and done outside the loop, it runs once, whatever the loop
    # body's fusion does to move it on.
    assert (gathers.count, gathers.in_loops, gathers.per_call) == (1, 0, 1)
    assert (reduces.count, reduces.in_loops, reduces.per_call) == (1, 1, TRIPS)
    assert reduces.trip_counts_from == (LOOP_CONDITION,) and gathers.trip_counts_from == ()


@FORMS
def test_the_tpus_async_collective_fusions_are_asynchronous(build):
    collectives = {c.op: c for c in analyze_placement(build()).collectives}
    # Started by the async collective start; the all-reduce is not async.
    assert collectives["all_gather"].async_count == 1
    assert collectives["all_reduce"].async_count == 0


@FORMS
def test_why_explains_each_collective_the_program_runs_once(build):
    module = build()
    why = explain_collectives(module, None, None, {}, {}, "no Shardy here")
    counts = Counter(site.op for site in why.sites)
    assert counts == {c.op: c.count for c in analyze_placement(module).collectives}
    assert counts == {"all_gather": 1, "all_reduce": 1}


@FORMS
def test_a_loop_of_another_shape_has_no_count(build):
    # The bound read from the carried tuple, not a constant: no count.
    module = build(MODULE.replace(f"constant({TRIPS})", "get-tuple-element(%state.1), index=0"))
    (loop,) = [op for op in module.ops if op.short_name == "while"]
    assert trip_count(module, loop) is None
    reduces = {c.op: c for c in analyze_placement(module).collectives}["all_reduce"]
    assert (reduces.in_loops, reduces.per_call, reduces.trip_counts_from) == (1, None, ())

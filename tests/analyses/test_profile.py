"""The profile analysis on events made here: self times of nested events, and a
coverage that one run slowed by the machine's load moves little."""

from __future__ import annotations

import pytest

from hloscope.analyses.fusions import FusionAnalysis
from hloscope.analyses.profile import analyze_profile, self_times
from hloscope.runs import ProfiledRuns, TraceEvent

NO_FUSIONS = FusionAnalysis(
    fusions=(),
    unfused=(),
    lines=(),
    by_kind={},
    unfused_by_category={},
    fused_ops=0,
    jits=(),
)


def event(name: str, run: int, start: float, duration: float, thread: int = 1) -> TraceEvent:
    return TraceEvent(name, run, 0, thread, start, duration)


def test_a_loops_event_keeps_only_what_its_body_did_not_take():
    events = [
        event("while.1", 0, 0, 100),
        event("body_fusion", 0, 10, 30),
        event("body_fusion", 0, 50, 30),
        # On another thread: not nested, whatever its times.
        event("other", 0, 20, 10, thread=2),
    ]
    assert self_times(events) == [40, 30, 30, 10]


def test_coverage_is_the_median_of_the_runs_not_moved_by_one_slow_run():
    # Five runs of 1 ms of instructions each; one run's wall time is ten times the
    # others' (the machine descheduled it).
    events = [event("dot", run, run * 1e7, 1e6) for run in range(5)]
    walls = (0.00125, 0.00125, 0.0125, 0.00125, 0.00125)
    runs = ProfiledRuns("jit_f", walls, 1, tuple(events), "given", None)
    analysis = analyze_profile(runs, NO_FUSIONS)
    assert analysis.coverage == pytest.approx(0.8)
    assert analysis.op_seconds == pytest.approx(0.001)
    (op,) = analysis.ops
    assert (op.name, op.kind, op.calls, op.share) == ("dot", "unknown", 1, 1.0)
    assert analysis.unknown_ops == ("dot",)

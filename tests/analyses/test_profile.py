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


def test_the_run_and_its_instructions_are_both_medians():
    # Four runs of 10 ms, whose instructions take 9.9 ms, and one slow run of 30 ms
    # whose instructions took 29 ms: the instructions' time is the median of the
    # runs' as the run time is, so it fits in the run, with 0.1 ms around it (their
    # mean, 13.7 ms, is more than the median run, and left no time around them).
    events = [event("conv", run, run * 1e8, 9.9e6) for run in range(4)]
    events.append(event("conv", 4, 4e8, 29e6))
    walls = (0.010, 0.010, 0.010, 0.010, 0.030)
    runs = ProfiledRuns("jit_f", walls, 1, tuple(events), "given", None)
    analysis = analyze_profile(runs, NO_FUSIONS)
    assert analysis.seconds_per_run.median == pytest.approx(0.010)
    assert analysis.op_seconds == pytest.approx(0.0099)
    assert analysis.overhead_seconds == pytest.approx(0.0001)
    assert analysis.coverage == pytest.approx(0.99)
    assert not analysis.overlapping
    # An instruction's time is its mean over the runs: the instructions' times add up.
    (op,) = analysis.ops
    assert op.seconds == pytest.approx((4 * 0.0099 + 0.029) / 5)


def test_instructions_run_in_parallel_are_said_to_overlap():
    # Each 1 ms run holds two 0.55 ms instructions on two threads at once (XLA's CPU
    # runtime runs independent instructions on its thread pool): their self times add
    # up to 110% of the run, and there is no time around them to tell.
    from hloscope.render.text.profile import coverage_text

    events = []
    for run in range(3):
        events += [
            event("conv.1", run, run * 1e7, 0.55e6, thread=1),
            event("conv.2", run, run * 1e7, 0.55e6, thread=2),
        ]
    runs = ProfiledRuns("jit_f", (0.001, 0.001, 0.001), 1, tuple(events), "given", None)
    analysis = analyze_profile(runs, NO_FUSIONS)
    assert analysis.coverage == pytest.approx(1.1)
    assert analysis.overlapping
    assert analysis.overhead_seconds == 0
    text = coverage_text(analysis)
    assert "they overlap: their self times add up to 110.0% of the run" in text
    assert "around them" not in text

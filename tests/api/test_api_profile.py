"""`insp.profile()`: the `profile` report from the Python API, for a function in hand
and for a dump, shown as the command prints it and agreeing with JAX's own trace."""

from __future__ import annotations

import importlib.util

import pytest

import hloscope
from conftest import DUMPS, SAMPLES, line_of


def _sample():
    spec = importlib.util.spec_from_file_location("profile_step_api", SAMPLES / "profile_step.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_profile_of_a_function_in_hand():
    module = _sample()
    insp = hloscope.inspect(module.step, *module.example_args())
    report = insp.profile(runs=2)
    assert report.analysis.runs == 2
    matmul = line_of(SAMPLES / "profile_step.py", "the matmuls: nearly all")
    assert report.analysis.lines[0].source == f"samples/profile_step.py:{matmul}"
    assert "Your lines by time" in str(report)
    doc = report.to_json()
    assert doc["command"] == "profile"
    assert sum(op["share"] for op in doc["ops"]) == pytest.approx(1.0)


def test_profile_of_a_dump():
    insp = hloscope.inspect(str(DUMPS / "mlp.before_optimizations.hlo"))
    report = insp.profile(runs=1)
    assert report.analysis.inputs == "generated"
    assert report.analysis.ops


def test_profile_of_an_optimized_dump_says_why_not():
    insp = hloscope.inspect(str(DUMPS / "mlp.after_optimizations.hlo"))
    with pytest.raises(hloscope.HloscopeError, match="before optimization"):
        insp.profile()


def test_a_bad_run_count_is_refused_before_anything_runs():
    module = _sample()
    insp = hloscope.inspect(module.failing_step, *module.failing_args())
    # The step raises when it runs: refusing the count first is what says so.
    with pytest.raises(hloscope.HloscopeError, match="--runs 0: expected at least 1"):
        insp.profile(runs=0)
    with pytest.raises(hloscope.HloscopeError, match="--warmup -1"):
        insp.profile(warmup=-1)

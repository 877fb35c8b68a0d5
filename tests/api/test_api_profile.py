"""`insp.profile()`: the `profile` report from the Python API, for a function in hand
and for a dump, shown as the command prints it and agreeing with JAX's own trace."""

from __future__ import annotations

import importlib.util

import pytest

import hloscope
from conftest import DUMPS, FIXTURES, SAMPLES, line_of


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


def test_a_lines_instructions_fill_one_line_in_the_text_and_the_browser():
    # An NNX CNN's train step: its convolution lines make many instructions each.
    # The text report and the browser show them the same way, on one line: whole
    # names, most time first, then `… N more` (the text in what its other columns
    # leave of the console, the browser in its column).
    from hloscope.render.text.profile import (
        INSTRUCTIONS_WIDTH,
        MIN_INSTRUCTIONS_WIDTH,
        instruction_names,
        percent,
    )
    from hloscope.tui.views.profile import profile_lines

    spec = importlib.util.spec_from_file_location("nnx_cnn_step", FIXTURES / "nnx_cnn_step.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    args, _ = module.example_args()
    insp = hloscope.inspect(module.train_step, *args)
    report = insp.profile(runs=2)
    lines = report.analysis.lines
    assert max(len(line.ops) for line in lines) > 5
    text_rows = str(report).splitlines()
    browser_rows = [line.text.plain for line in profile_lines(report, insp.module)]
    fitted = range(MIN_INSTRUCTIONS_WIDTH, INSTRUCTIONS_WIDTH + 1)
    for line in lines:
        first = line.ops[0]
        cells = [
            row[row.index(first) :].strip()
            for row in text_rows
            if percent(line.share) in row and f" {first}" in row
        ]
        assert any(
            cell in {instruction_names(line.ops, width) for width in fitted} for cell in cells
        ), (line.ops, cells)
        assert any(instruction_names(line.ops) in row for row in browser_rows)
    # One row a line: the names never wrap onto rows of their own.
    title = text_rows.index(next(row for row in text_rows if row.startswith("Your lines by time")))
    table = text_rows[title + 3 : title + 3 + len(lines)]
    assert all(row.split()[2].endswith("%") for row in table), table

"""`hloscope compare`'s command line before any configuration runs: bad `--for` and
`--vary` syntax is one line and exit 2, no child started; the rows are the product of
the targets, the specs and the values; the sort and the best are the report's."""

from __future__ import annotations

import pytest

from conftest import run_cli
from hloscope.reports.compare import (
    CompareConfig,
    CompareEstimate,
    comparison,
    failed_row,
)
from hloscope.sources.compare_run import configurations, parse_vary

STEP = "samples/llm_step.py:train_step"


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--for", "tpu:v9:2x2"], "--for"),
        (["--for", "cpu"], "compare foresees a TPU or GPU"),
        (["--for", "tpu:v5e:2x2", "--vary", "LLM_MESH"], "--vary LLM_MESH: expected NAME=V1,V2"),
        (["--for", "tpu:v5e:2x2", "--vary", "1X=a"], "--vary 1X=a"),
        (["--for", "tpu:v5e:2x2", "--vary", "X=a,,b"], "an empty value"),
        (["--for", "tpu:v5e:2x2", "--vary", "X=a", "--vary", "X=b"], "--vary X given twice"),
        (["--for", "tpu:v5e:2x2", "--json", "--format", "markdown"], "disagree"),
        (["--for", "tpu:v5e:2x2", "--env", "LLM_STEP"], "--env LLM_STEP: expected NAME=VALUE"),
        (["--for", "tpu:v5e:2x2", "--env", "X=1", "--vary", "X=2,3"], "X is given with --env"),
    ],
)
def test_bad_syntax_is_one_line_and_exit_2_before_any_child(argv, says):
    run = run_cli("compare", STEP, *argv)
    assert run.code == 2, run.stderr
    assert run.stdout == ""
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and says in lines[0], run.stderr
    assert "compare: [" not in run.stderr  # no configuration ran
    assert "Traceback" not in run.stderr


def test_a_missing_for_is_a_usage_error():
    run = run_cli("compare", STEP)
    assert run.code == 2 and "--for" in run.stderr
    assert len(run.stderr.strip().splitlines()) == 1


def test_a_target_that_names_nothing_is_refused_before_any_child():
    run = run_cli("compare", "no/such/file.py:step", "--for", "tpu:v5e:2x2")
    assert run.code == 2 and run.stdout == ""
    assert len(run.stderr.strip().splitlines()) == 1
    assert "compare: [" not in run.stderr


def test_the_rows_are_the_product_of_targets_specs_and_values():
    configs = configurations(
        ["samples/llm_step.py:train_step", "samples/params.py:loss"],
        ["tpu:v5e:4x4", "gpu:h100x8"],
        ["MESH=1x16,2x8", "REMAT=full,dots,full"],
    )
    assert len(configs) == 2 * 2 * 2 * 2
    first = configs[0]
    assert first == CompareConfig(
        STEP, "tpu:v5e:4x4", {"MESH": "1x16", "REMAT": "full"}, first.label
    )
    assert first.label == f"{STEP} MESH=1x16 REMAT=full @ tpu:v5e:4x4"
    alone = configurations([STEP], ["tpu:v5e:4x4"], ["MESH=2x8"])
    assert [c.label for c in alone] == ["MESH=2x8 @ tpu:v5e:4x4"]
    assert parse_vary(["X= a , b "]) == {"X": ("a", "b")}
    # What every configuration shares is in its environment, not in its label.
    shared = configurations([STEP], ["tpu:v5e:4x4"], ["MESH=2x8"], ["LLM_STEP=1,256,128,16"])
    assert shared[0].env == {"LLM_STEP": "1,256,128,16", "MESH": "2x8"}
    assert shared[0].label == "MESH=2x8 @ tpu:v5e:4x4"


def _row(label: str, seconds: float | None, fits: bool | None, peak: int | None):
    row = failed_row(CompareConfig("t.py:f", "tpu:v5e:2x2", {}, label), "failed")
    if seconds is None:
        return row
    import dataclasses

    estimate = CompareEstimate(seconds, seconds, 0.0, 0.0, None, None, 1.0)
    return dataclasses.replace(row, error=None, estimate=estimate, fits=fits, peak_bytes=peak)


def test_the_best_is_the_fastest_that_fits_and_failed_rows_go_last():
    rows = [
        _row("fast but too big", 1.0, False, 30),
        _row("slow", 3.0, True, 10),
        _row("broken", None, None, None),
        _row("quick", 2.0, True, 20),
    ]
    by_time = comparison(["t.py:f"], rows, "time")
    assert [r.config.label for r in by_time.rows] == ["fast but too big", "quick", "slow", "broken"]
    assert by_time.rows[by_time.best].config.label == "quick"
    by_memory = comparison(["t.py:f"], rows, "memory")
    assert [r.config.label for r in by_memory.rows] == [
        "slow",
        "quick",
        "fast but too big",
        "broken",
    ]
    assert by_memory.rows[by_memory.best].config.label == "quick"
    none_fits = comparison(["t.py:f"], rows[:1] + rows[2:3], "name")
    assert none_fits.best is None


def test_a_stopped_comparison_ends_its_child_and_starts_no_other():
    """The browser quit mid-run (`stop` set): the running child is ended, not waited
    for, and the configurations not started are not run."""
    import threading

    from hloscope.sources.compare_run import STOPPED, CompareOptions, run_comparison

    fixture = "tests/fixtures/compare_targets.py"
    configs = configurations([f"{fixture}:step"], ["tpu:v5e:2x2"], ["COMPARE_SIZE=small,big,raise"])
    stop = threading.Event()
    # Long before a child has imported JAX, let alone compiled.
    threading.Timer(0.3, stop.set).start()
    report = run_comparison(
        configs, CompareOptions(args_factory=f"{fixture}:step_args"), jobs=1, stop=stop
    )
    assert [row.error for row in report.rows] == [STOPPED] * 3


def test_diff_of_two_rows_names_a_row_that_is_not_there():
    """`--diff ROW ROW` takes a row's position or its label; anything else is one line
    naming the rows there are (the comparison runs first: its rows fail here at once)."""
    run = run_cli(
        "compare",
        "tests/fixtures/compare_targets.py:step",
        "--args",
        "tests/fixtures/compare_targets.py:step_args",
        "--for",
        "tpu:v5e:2x2",
        "--vary",
        "COMPARE_SIZE=raise",
        "--diff",
        "1",
        "7",
    )
    assert run.code == 2, run.stderr
    assert "--diff 1:" in run.stderr or "--diff 7:" in run.stderr
    assert "Traceback" not in run.stderr

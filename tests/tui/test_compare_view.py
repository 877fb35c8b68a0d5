"""The Compare view (`hloscope compare` on a terminal): rows come in as their child
processes finish, the best that fits is marked, and enter or d (with a row marked)
ask for a configuration's browser or the diff of two, only once the comparison has
finished and only on rows that compiled. The command lines they run are hloscope's
own (`tui --for`, `diff --for-a/--for-b --env-a/--env-b`)."""

from __future__ import annotations

import asyncio
import dataclasses
import sys
import threading

from hloscope.reports.compare import (
    CompareConfig,
    CompareEstimate,
    CompareRow,
    Comparison,
    comparison,
    failed_row,
)
from hloscope.sources.compare_run import CompareOptions
from hloscope.tui.compare_app import CompareApp, request_command
from hloscope.tui.views.compare import CompareView

TARGET = "tests/fixtures/compare_targets.py:step"


def _row(label: str, env: dict[str, str], seconds: float | None, fits: bool | None) -> CompareRow:
    row = failed_row(CompareConfig(TARGET, "tpu:v5e:2x2", env, label), "its program raised")
    if seconds is None:
        return row
    estimate = CompareEstimate(seconds, seconds, 0.0, 0.0, None, None, 1.0)
    return dataclasses.replace(row, error=None, estimate=estimate, fits=fits, peak_bytes=10)


ROWS = (
    _row("SIZE=slow", {"SIZE": "slow"}, 3.0, True),
    _row("SIZE=quick", {"SIZE": "quick"}, 2.0, True),
    _row("SIZE=broken", {"SIZE": "broken"}, None, None),
)


def _runner(release: threading.Event | None = None):
    """Runs the comparison as compare_run does, calling back row by row; with
    `release`, the last row waits for it (the comparison is still running)."""

    def run(on_row, _stop) -> Comparison:
        for done, row in enumerate(ROWS, start=1):
            if release is not None and done == len(ROWS):
                release.wait(30)
            on_row(row, done, len(ROWS))
        return comparison((TARGET,), ROWS, "time")

    return run


def _table_labels(app: CompareApp) -> list[str]:
    view = app.query_one(CompareView)
    return [row.config.label for row in view.report.rows]


def test_rows_fill_in_and_a_row_opens_only_once_the_comparison_finished():
    async def scenario() -> None:
        release = threading.Event()
        configs = [row.config for row in ROWS]
        app = CompareApp(configs, _runner(release), "time")
        async with app.run_test() as pilot:
            for _ in range(100):
                await pilot.pause(0.05)
                if len(_table_labels(app)) == 2:
                    break
            assert _table_labels(app) == ["SIZE=quick", "SIZE=slow"]
            await pilot.press("enter")
            assert app.request is None  # still running: nothing opens
            release.set()
            for _ in range(100):
                await pilot.pause(0.05)
                if app.report is not None:
                    break
            view = app.query_one(CompareView)
            assert app.report is not None and view.report is app.report
            assert _table_labels(app) == ["SIZE=quick", "SIZE=slow", "SIZE=broken"]
            assert app.report.best == 0
            await pilot.press("G", "enter")
            assert app.request is None  # a failed row has nothing to open
            await pilot.press("g", "enter")
            assert app.request == ("open", 0)

    asyncio.run(scenario())


def test_d_diffs_the_marked_row_against_the_one_under_the_cursor():
    async def scenario() -> None:
        report = comparison((TARGET,), ROWS, "time")
        configs = [row.config for row in ROWS]
        app = CompareApp(configs, _runner(), "time", report=report, cursor=1)
        async with app.run_test() as pilot:
            await pilot.press("d")
            assert app.request is None  # nothing marked yet
            await pilot.press("space", "k", "d")
            assert app.request == ("diff", 1, 0)

    asyncio.run(scenario())


def test_the_commands_a_request_runs_are_hloscopes_own():
    report = comparison((TARGET,), ROWS, "time")
    factory = "tests/fixtures/compare_targets.py:step_args"
    options = ["--args", factory]
    command, env = request_command(report, ("open", 1), CompareOptions(args_factory=factory))
    assert command == [
        sys.executable,
        "-m",
        "hloscope",
        "tui",
        TARGET,
        "--for",
        "tpu:v5e:2x2",
        *options,
    ]
    assert env["SIZE"] == "slow"
    command, env = request_command(report, ("diff", 1, 0), CompareOptions(args_factory=factory))
    assert command[3:] == [
        "diff",
        TARGET,
        TARGET,
        "--for-a",
        "tpu:v5e:2x2",
        "--for-b",
        "tpu:v5e:2x2",
        "--env-a",
        "SIZE=slow",
        "--env-b",
        "SIZE=quick",
        *options,
    ]
    assert "SIZE" not in env  # each side's own, through --env-a and --env-b


def test_the_docs_list_every_key_of_the_compare_view() -> None:
    # After a change to the keys, paste `markdown_table(compare_key_sections())` into
    # docs/commands/compare.md.
    from conftest import DOCS
    from hloscope.tui.compare_app import compare_key_sections
    from hloscope.tui.keys import markdown_table

    assert markdown_table(compare_key_sections()) in (DOCS / "commands" / "compare.md").read_text()

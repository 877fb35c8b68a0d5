"""The browser's Profile tab through `App.run_test()`: on a lowered module it offers to
compile; on the optimized one it runs the function under JAX's profiler when asked,
shows the matmul's line first, and enter on an instruction (or on a line) shows it in
the IR. Times vary run to run: the tests check what the rows name, never a time."""

from __future__ import annotations

from textual.widgets import TabbedContent

from conftest import DUMPS, ROOT
from hloscope.sources import loader
from hloscope.tui.app import HloscopeApp
from hloscope.tui.screens.message import ErrorScreen
from hloscope.tui.views.profile import ProfileView, can_profile
from hloscope.tui.widgets.pending import PendingView
from hloscope.tui.widgets.report_list import ReportList
from tui_support import SIZE, loaded, quiet, selected_name, status, sync, until

PROFILE_KEY = "8"
MATMUL = next(
    n
    for n, text in enumerate((ROOT / "samples/profile_step.py").read_text().splitlines(), 1)
    if "the matmuls: nearly all" in text
)


async def press(pilot, *keys: str) -> None:
    for key in keys:
        await pilot.press(key)
        await quiet(pilot)


def row_index(listing: ReportList, after: str) -> int:
    """The first row under the section titled `after`."""
    title = next(i for i, line in enumerate(listing.lines) if line.text.plain.startswith(after))
    return next(i for i, line in enumerate(listing.lines) if i > title and line.selectable)


async def profiled(app: HloscopeApp, pilot) -> None:
    """Compile (enter on the lowered module's tab), then run the profile (enter)."""
    await loaded(app, pilot)
    await press(pilot, PROFILE_KEY)
    pending = app.query_one("#tab-profile PendingView", PendingView)
    assert "tab reads the optimized module" in str(pending.content)
    await press(pilot, "enter")
    await loaded(app, pilot)
    assert app.session is not None and app.session.loaded.source.stage == "optimized"
    pending = app.query_one("#tab-profile PendingView", PendingView)
    assert "runs your code" in str(pending.content)
    await press(pilot, "enter")
    await until(pilot, lambda: app.job is None, "the profile")
    await quiet(pilot)


@sync
async def test_the_profile_tab_leads_from_the_matmul_to_its_fusion():
    app = HloscopeApp(
        "samples/profile_step.py:step",
        loader.LoadOptions(args_factory="samples/profile_step.py:example_args"),
    )
    async with app.run_test(size=SIZE) as pilot:
        await profiled(app, pilot)
        listing = app.query_one("#tab-profile ReportList", ReportList)
        report = app.on_demand["profile"]
        top = report.analysis.ops[0]
        header = str(app.query_one("#profile-view .report-header").content)
        assert header.startswith("time per run  median ")
        assert "instructions  " in header and "inputs        generated" in header
        # The matmul's line first, its fusion the top instruction.
        first_line = listing.lines[row_index(listing, "Your lines by time")].text.plain
        assert f"samples/profile_step.py:{MATMUL}" in first_line
        assert "x @ w @ w" in first_line
        assert report.analysis.lines[0].ops[0] == top.name
        top_row = row_index(listing, "Instructions by time")
        assert top.name in listing.lines[top_row].text.plain
        listing.highlighted = top_row
        await press(pilot, "enter")
        assert app.query_one(TabbedContent).active == "tab-ir"
        assert selected_name(app) == "mhlo.fusion"
        assert f"{top.name}: 1/1 lines" in status(app)
        # Enter on the line shows its instructions, the top one selected.
        await press(pilot, PROFILE_KEY)
        listing.highlighted = row_index(listing, "Your lines by time")
        await press(pilot, "enter")
        assert app.query_one(TabbedContent).active == "tab-ir"
        assert selected_name(app) == "mhlo.fusion"
        assert f"samples/profile_step.py:{MATMUL}: 1/" in status(app)
        # r runs the program again; the tab shows the new runs.
        await press(pilot, PROFILE_KEY, "r")
        await until(pilot, lambda: app.on_demand["profile"] is not report, "the second run")
        await until(pilot, lambda: app.job is None, "the second run's end")
        await quiet(pilot)
        assert app.query_one("#profile-view", ProfileView).report is app.on_demand["profile"]


@sync
async def test_a_function_that_raises_when_it_runs_says_why():
    app = HloscopeApp(
        "samples/profile_step.py:failing_step",
        loader.LoadOptions(args_factory="samples/profile_step.py:failing_args"),
    )
    async with app.run_test(size=SIZE) as pilot:
        await profiled(app, pilot)
        assert isinstance(app.screen, ErrorScreen)
        assert "the host check rejects every batch" in app.screen.message
        await press(pilot, "escape")
        pending = app.query_one("#tab-profile PendingView", PendingView)
        assert "The last run failed" in str(pending.content)


def test_only_what_can_run_has_a_profile_tab():
    # A dump's module before optimizations runs on inputs made for its parameters; an
    # optimized module read as it is has nothing to compile.
    assert can_profile(loader.load(str(DUMPS.relative_to(ROOT) / "mlp.stablehlo.mlir")))
    optimized = DUMPS.relative_to(ROOT) / "mlp.after_optimizations.hlo"
    assert not can_profile(loader.load(str(optimized)))

"""The browser's report tabs through `App.run_test()`: Parameters, Placement, Fusions
and AOT check, each row leading to its ops in the IR, and the keys of each tab."""

from __future__ import annotations

import pytest
from rich.text import Text
from textual.widgets import TabbedContent

from conftest import DUMPS, FIXTURES, ROOT, require_corpus
from hloscope.sources import loader
from hloscope.tui.app import HloscopeApp
from hloscope.tui.browser import BrowserPane
from hloscope.tui.screens.message import ErrorScreen
from hloscope.tui.views.aot import AotView
from hloscope.tui.widgets.ir_view import IRView
from hloscope.tui.widgets.pending import PendingView
from hloscope.tui.widgets.report_list import ReportList
from tui_support import (
    SIZE,
    cursor_text,
    details,
    loaded,
    quiet,
    selected_name,
    status,
    sync,
    until,
)

MLP = str(DUMPS.relative_to(ROOT) / "mlp.stablehlo.mlir")
MLP_OPTIMIZED = str(DUMPS.relative_to(ROOT) / "mlp.after_optimizations.hlo")
COLLECTIVES = "xla-cc-embedded-hlo/xla/hlo/transforms/simplifiers/all_reduce_folder_test.004.hlo"


def entrypoint(name: str, attr: str, factory: str = "example_args") -> HloscopeApp:
    return HloscopeApp(
        f"samples/{name}.py:{attr}", loader.LoadOptions(args_factory=f"samples/{name}.py:{factory}")
    )


async def press(pilot, *keys: str) -> None:
    for key in keys:
        await pilot.press(key)
        await quiet(pilot)


def listing(app: HloscopeApp, view: str) -> ReportList:
    return app.query_one(f"#{view}-list", ReportList)


def rows(app: HloscopeApp, view: str) -> list[str]:
    return [line.text.plain for line in listing(app, view).lines]


async def choose(pilot, app: HloscopeApp, view: str, starts: str) -> None:
    """Highlight the first row of `view` starting with `starts` (j from the top) and
    press enter on it."""
    found = listing(app, view)
    target = next(
        i
        for i, line in enumerate(found.lines)
        if line.selectable and line.text.plain.startswith(starts)
    )
    await press(pilot, "g")
    while found.highlighted != target:
        before = found.highlighted
        await press(pilot, "j")
        assert found.highlighted != before
    await press(pilot, "enter")


def active(app: HloscopeApp) -> str:
    return app.query_one(TabbedContent).active


def style_of(text: Text, word: str) -> str:
    """The style of the span covering the first `word` in `text`."""
    start = text.plain.index(word)
    return " ".join(str(span.style) for span in text.spans if span.start <= start < span.end)


# --------------------------------------------------------------------------- Parameters


@sync
async def test_parameters_tab_lists_every_argument_and_pruned_ones_stand_out():
    app = entrypoint("params", "train_step", "train_step_args")
    async with app.run_test(size=SIZE) as pilot:
        await loaded(app, pilot)
        await press(pilot, "3")
        assert active(app) == "tab-params"
        assert isinstance(app.focused, ReportList)
        header = app.query_one("#params-view .report-header").content  # type: ignore[attr-defined]
        assert "7 arguments → 6 HLO parameters: 6 used · 1 pruned" in str(header)
        shown = rows(app, "params")
        assert shown[0] == "Arguments (7)"
        mask = next(
            line for line in listing(app, "params").lines if "batch['mask']" in line.text.plain
        )
        assert "pruned" in mask.text.plain and " - " in mask.text.plain
        assert "red" in style_of(mask.text, "pruned")
        assert "red" in style_of(mask.text, "batch['mask']")
        used = next(
            line for line in listing(app, "params").lines if "params['w']" in line.text.plain
        )
        assert "green" in style_of(used.text, "used")
        # j on the last row stays there, k on the first too (less and vim stop).
        params_list = listing(app, "params")
        params_list.focus()
        await press(pilot, "G")
        last = params_list.highlighted
        await press(pilot, "j")
        assert params_list.highlighted == last
        await press(pilot, "g")
        first = params_list.highlighted
        await press(pilot, "k")
        assert params_list.highlighted == first and first != last
        # A pruned argument has nothing in the IR: it says so and stays.
        await choose(pilot, app, "params", "3 ")
        assert active(app) == "tab-params"


@sync
async def test_u_shows_only_unused_and_pruned_parameters():
    app = entrypoint("params", "train_step", "train_step_args")
    async with app.run_test(size=SIZE) as pilot:
        await loaded(app, pilot)
        await press(pilot, "3", "U")
        shown = rows(app, "params")
        assert shown[0] == "Arguments (1)"
        assert [r for r in shown[2:] if r] == [next(r for r in shown if "batch['mask']" in r)]
        await press(pilot, "U")
        assert rows(app, "params")[0] == "Arguments (7)"


@sync
async def test_an_unused_parameter_is_marked_and_leads_to_its_hlo_argument():
    app = entrypoint("params_nested", "ignored_by_callee")
    async with app.run_test(size=SIZE) as pilot:
        await loaded(app, pilot)
        await press(pilot, "3", "U")
        shown = rows(app, "params")
        assert any(r.startswith("1  y") and "unused" in r for r in shown)
        assert any("Private functions ignoring parameters" in r for r in shown)
        await choose(pilot, app, "params", "1  y")
        assert active(app) == "tab-ir"
        assert isinstance(app.focused, IRView)
        # The entry function's header, then each op reading %arg1.
        assert "func.func public @main" in cursor_text(app)
        browser = app.query_one(BrowserPane)
        assert browser.hits_label == "y (%arg1)"
        assert "y (%arg1): 1/2 lines" in status(app)
        await press(pilot, "n")
        assert "call @scaled" in cursor_text(app) and "%arg1" in cursor_text(app)
        await press(pilot, "backspace")
        assert "func.func public @main" in cursor_text(app)
        # The private function that ignores its parameter leads to itself.
        await press(pilot, "3")
        await choose(pilot, app, "params", "scaled")
        assert "func.func private @scaled" in cursor_text(app)


# --------------------------------------------------------------------------- Placement


@sync
async def test_placement_tab_and_host_ops_from_the_placement_analysis():
    app = entrypoint("memory_kinds", "host_compute_to_host_memory")
    async with app.run_test(size=SIZE) as pilot:
        await loaded(app, pilot)
        session = app.session
        assert session is not None
        # Host ops are the placement analysis's: the marked call and what it runs.
        host = session.marked["host"]
        assert len(host) == 5
        names = sorted(session.loaded.module.ops[i].name for i in host)
        assert "func.call" in names and "stablehlo.sine" in names
        await press(pilot, "4")
        assert active(app) == "tab-placement"
        shown = rows(app, "placement")
        for title in ("Host regions (1)", "Memory kinds (1)", "Transfers (1)", "Warnings (1)"):
            assert title in shown
        assert any(r.startswith("compute_on  host  main") for r in shown)
        assert any("annotate_device_placement  device  pinned_host" in r for r in shown)
        # A host region leads to its ops.
        await choose(pilot, app, "placement", "compute_on")
        assert active(app) == "tab-ir"
        assert "host region @compute_on: 1/5 lines" in status(app)
        assert selected_name(app) == "func.call"
        rows_shown = details(app)
        assert any(r.startswith("compute type: host") for r in rows_shown)
        # A transfer leads to its custom call.
        await press(pilot, "4")
        await choose(pilot, app, "placement", "annotate_device_placement")
        assert selected_name(app) == "stablehlo.custom_call"
        assert "annotate_device_placement: 1/1 lines" in status(app)
        # The memory kind of the result leads to the entry's return.
        await press(pilot, "4")
        await choose(pilot, app, "placement", "result 0")
        assert selected_name(app) == "func.func"
        await press(pilot, "n")
        assert selected_name(app) == "func.return"
        # A warning leads to the ops at its source lines.
        await press(pilot, "4")
        await choose(pilot, app, "placement", "• the host region")
        assert "large host input" in status(app)
        # Inside the host function, ops say how they got there.
        await press(pilot, "H")
        assert "only host ops (5)" in status(app)
        view = app.query_one(IRView)
        assert view.rows is not None
        line = next(n for n in view.rows if "stablehlo.sine" in view.printed.lines[n])  # type: ignore[union-attr]
        op = view.printed.line_op[line]  # type: ignore[union-attr]
        app.query_one(BrowserPane).jump(op)
        await quiet(pilot)
        assert "compute type: host (marked on the op)" in details(app)
        reports = session.reports
        assert reports is not None
        called = next(p.op_id for p in reports.placed.values() if p.via == "call")
        app.query_one(BrowserPane).jump(called)
        await quiet(pilot)
        assert "compute type: host (through a call)" in details(app)


@pytest.mark.corpus
@sync
async def test_collectives_lead_to_each_collective():
    app = HloscopeApp(str(require_corpus() / COLLECTIVES))
    async with app.run_test(size=SIZE) as pilot:
        await loaded(app, pilot)
        await press(pilot, "4")
        shown = rows(app, "placement")
        assert "Collectives (2)" in shown
        await choose(pilot, app, "placement", "all_reduce")
        assert "all_reduce ×2: 1/2 lines" in status(app)
        first = app.query_one(IRView).cursor
        assert "all_reduce" in cursor_text(app)
        await press(pilot, "n")
        assert "all_reduce" in cursor_text(app) and app.query_one(IRView).cursor > first
        assert "2/2 lines" in status(app)


@sync
async def test_a_plain_module_says_everything_runs_on_the_device():
    app = HloscopeApp(MLP)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(app, pilot)
        await press(pilot, "4")
        assert rows(app, "placement") == [
            "Every op runs on the device; no memory kinds, transfers, shardings or collectives."
        ]


# --------------------------------------------------------------------------- Fusions


@sync
async def test_fusions_of_a_lowered_module_compile_when_asked():
    app = HloscopeApp(MLP)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(app, pilot)
        await press(pilot, "5")
        pending = app.query_one("#tab-fusions PendingView", PendingView)
        assert "tab reads the optimized module" in str(pending.content)
        assert app.focused is pending
        await press(pilot, "enter")
        assert app.jobs[-1] == f"Compiling {MLP}"
        await loaded(app, pilot)
        assert app.session is not None and app.session.loaded.source.stage == "optimized"
        assert active(app) == "tab-fusions"  # the tab stays, now with the report
        shown = rows(app, "fusions")
        assert shown[0].startswith("Fusions (")
        assert isinstance(app.focused, ReportList)
        # Back on the lowered module, the tab offers to switch (no second compile).
        await press(pilot, "c", "5")
        pending = app.query_one("#tab-fusions PendingView", PendingView)
        assert "press enter (or c) to switch to it" in str(pending.content)
        await press(pilot, "enter")
        assert app.session.loaded.source.stage == "optimized"
        assert app.jobs == [f"Loading {MLP}", f"Compiling {MLP}"]


@sync
async def test_fusions_of_a_gpu_dump_say_why_it_is_not_compiled_here():
    # The tab says so at once, instead of offering a compile that XLA would end, after
    # its whole pipeline, on the first GPU-only custom call.
    target = str((FIXTURES / "gpu_custom_calls.hlo").relative_to(ROOT))
    app = HloscopeApp(target)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(app, pilot)
        await press(pilot, "5")
        assert pending_text(app, "fusions") == (
            "Fusions could not be built: the module holds custom calls the local cpu backend "
            "cannot run (__cublas$lt$matmul, te_fused_attn_forward_ffi): compile it on the "
            "backend it was written for"
        )
        await press(pilot, "enter")
        assert app.jobs == [f"Loading {target}"]  # nothing compiled


def pending_text(app: HloscopeApp, view: str) -> str:
    pending = app.query(f"#tab-{view} PendingView")
    return str(pending.first(PendingView).content) if pending else ""


@sync
async def test_a_fusion_row_leads_to_its_fusion_op():
    app = HloscopeApp(MLP_OPTIMIZED)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(app, pilot)
        await press(pilot, "5")
        shown = rows(app, "fusions")
        assert shown[0] == "Fusions (8)"
        assert any(r.startswith("Source lines (") for r in shown)
        first = next(line for line in listing(app, "fusions").lines if line.selectable)
        name = first.text.plain.split()[0]
        await press(pilot, "enter")
        assert active(app) == "tab-ir"
        assert selected_name(app) == "mhlo.fusion"
        assert f"{name}: 1/1 lines" in status(app)
        # A source line leads to every fusion holding its ops.
        await press(pilot, "5")
        await choose(pilot, app, "fusions", "samples/")
        assert selected_name(app) == "mhlo.fusion"
        assert "lines" in status(app)


@sync
async def test_backspace_after_a_rows_jump_returns_to_its_tab():
    """Issue 61: after enter on a report's row, backspace walked back through the IR's
    own history and never returned to the tab the row was in."""
    app = HloscopeApp(MLP_OPTIMIZED)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(app, pilot)
        before = app.query_one(BrowserPane).selected
        await press(pilot, "5")
        await press(pilot, "enter")
        assert active(app) == "tab-ir"
        jumped = app.query_one(BrowserPane).selected
        assert jumped != before
        await press(pilot, "backspace")
        assert active(app) == "tab-fusions"
        # Back in the IR, backspace goes on to the op selected before the jump.
        await press(pilot, "1")
        assert app.query_one(BrowserPane).selected == jumped
        await press(pilot, "backspace")
        assert app.query_one(BrowserPane).selected == before


# --------------------------------------------------------------------------- AOT check


def shown_text(app: HloscopeApp, widget_id: str) -> str:
    text = app.query_one(f"#{widget_id}").content  # type: ignore[attr-defined]
    return text.plain if isinstance(text, Text) else str(text)


@sync
async def test_the_aot_tab_counts_the_ops_as_the_overview_does_with_the_calls_apart():
    # The ops check compares ops, not the calls that lead to them; the tab says how
    # many calls it left out, so that its numbers add up to the Overview's.
    app = entrypoint("nested_jits", "mlp")
    async with app.run_test(size=SIZE) as pilot:
        await loaded(app, pilot)
        await press(pilot, "2")
        assert "16 ops in 4 reachable functions" in shown_text(app, "overview-text")
        await press(pilot, "6", "enter")
        await until(pilot, lambda: "aot" in app.on_demand and app.job is None, "the check")
        await quiet(pilot)
        shown = shown_text(app, "aot-text")
        assert "call       1 program: jit_mlp (11 ops and 5 calls)" in shown
        assert "aot        jit_mlp (11 ops and 5 calls)" in shown


@sync
async def test_the_aot_check_runs_when_asked_and_shows_the_differences():
    app = entrypoint("wrapped", "difference")
    async with app.run_test(size=SIZE) as pilot:
        await loaded(app, pilot)
        await press(pilot, "6")
        pending = app.query_one("#tab-aot PendingView", PendingView)
        assert "runs your function twice" in str(pending.content)
        assert len(app.jobs) == 1  # nothing ran yet
        await press(pilot, "enter")
        assert app.jobs[-1] == "AOT check: samples/wrapped.py:difference"
        await until(pilot, lambda: "aot" in app.on_demand and app.job is None, "the check")
        await quiet(pilot)
        text = app.query_one("#aot-text").content  # type: ignore[attr-defined]
        plain = text.plain if isinstance(text, Text) else str(text)
        assert "verdict    different: results" in plain
        assert "aot entry  difference.__wrapped__  (wrapped.difference)" in plain
        # Each difference with its cause (the start of its table cell).
        report = app.on_demand["aot"]
        assert [d.kind for d in report.comparison.differences] == ["results"]
        assert "likely cause" in plain
        assert "the modules are identical" in plain
        # The report stays with the target when the module changes.
        await press(pilot, "c")
        await loaded(app, pilot)
        await press(pilot, "6")
        assert app.query_one("#aot-view") is not None
        # r runs it again, and the tab shows the new report, not the first one.
        first = app.on_demand["aot"]
        await press(pilot, "r")
        assert app.jobs[-1] == "AOT check: samples/wrapped.py:difference"
        await until(pilot, lambda: app.job is None, "the second check")
        await quiet(pilot)
        assert app.on_demand["aot"] is not first
        assert app.query_one("#aot-view", AotView).report is app.on_demand["aot"]


@sync
async def test_an_aot_check_failure_is_shown_and_the_browser_stays():
    # It lowers, but raises when it runs: the check fails, the module stays.
    target = "tests/fixtures/tui_targets.py:fails_when_run"
    app = HloscopeApp(target, loader.LoadOptions(args=("f32[4]",)))
    async with app.run_test(size=SIZE) as pilot:
        await loaded(app, pilot)
        assert app.failure is None
        await press(pilot, "6", "enter")
        await until(pilot, lambda: isinstance(app.screen, ErrorScreen), "the failure")
        assert "calling it raised" in app.screen.message  # type: ignore[attr-defined]
        await press(pilot, "escape")
        pending = app.query_one("#tab-aot PendingView", PendingView)
        assert "The last run failed" in str(pending.content)
        assert app.failure is None


@sync
async def test_dumps_have_no_aot_check_tab():
    app = HloscopeApp(MLP)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(app, pilot)
        assert "tab-aot" not in [pane.id for pane in app.query_one(TabbedContent).query("TabPane")]
        await press(pilot, "6")
        assert active(app) == "tab-ir"

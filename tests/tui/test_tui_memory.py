"""The browser's Memory tab through `App.run_test()`: on a lowered module it offers to
compile; on the optimized one it builds the report when asked, shows the profile and
the buffers at the peak, and enter on a buffer shows its defining op in the IR."""

from __future__ import annotations

from textual.widgets import TabbedContent

from hloscope.sources import loader
from hloscope.tui.app import HloscopeApp
from hloscope.tui.widgets.pending import PendingView
from hloscope.tui.widgets.report_list import ReportList
from tui_support import SIZE, loaded, quiet, selected_name, status, sync, until

MEMORY_KEY = "7"


async def press(pilot, *keys: str) -> None:
    for key in keys:
        await pilot.press(key)
        await quiet(pilot)


def rows(app: HloscopeApp) -> list[str]:
    return [line.text.plain for line in app.query_one("#memory-list", ReportList).lines]


@sync
async def test_the_memory_tab_shows_the_peak_and_leads_to_the_sort():
    app = HloscopeApp(
        "samples/memory_peak.py:rank_scores",
        loader.LoadOptions(args_factory="samples/memory_peak.py:example_args"),
    )
    async with app.run_test(size=SIZE) as pilot:
        await loaded(app, pilot)
        await press(pilot, MEMORY_KEY)
        pending = app.query_one("#tab-memory PendingView", PendingView)
        assert "tab reads the optimized module" in str(pending.content)
        await press(pilot, "enter")
        await loaded(app, pilot)
        assert app.session is not None and app.session.loaded.source.stage == "optimized"
        pending = app.query_one("#tab-memory PendingView", PendingView)
        assert "buffer assignment" in str(pending.content)
        await press(pilot, "enter")
        await until(pilot, lambda: "memory" in app.on_demand and app.job is None, "the report")
        await quiet(pilot)
        shown = rows(app)
        assert any(r.startswith("peak    8.0 MiB (8,388,612 bytes) at position 5") for r in shown)
        assert "Live bytes over the schedule" in shown
        assert any("▲ peak at 5" in r for r in shown)
        assert any(r.startswith("Buffers live at the peak (3)") for r in shown)
        # Enter on the sort's output shows the sort in the IR of the optimized module.
        listing = app.query_one("#memory-list", ReportList)
        sort_row = next(
            i
            for i, line in enumerate(listing.lines)
            if line.selectable and "sort.0" in line.text.plain
        )
        listing.highlighted = sort_row
        await press(pilot, "enter")
        assert app.query_one(TabbedContent).active == "tab-ir"
        assert selected_name(app) == "stablehlo.sort"
        assert "sort.0" in status(app)

"""The browser's Remat tab through `App.run_test()`: it differentiates the target when
asked, shows the residuals with how they got there and the policy names that match
nothing, and enter on a residual shows the ops of its line in the IR."""

from __future__ import annotations

from textual.widgets import TabbedContent

from hloscope.sources import loader
from hloscope.tui.app import HloscopeApp
from hloscope.tui.widgets.pending import PendingView
from hloscope.tui.widgets.report_list import ReportList
from tui_support import SIZE, loaded, quiet, status, sync, until

REMAT_KEY = "9"
SAMPLE = "samples/remat_policies.py"


async def press(pilot, *keys: str) -> None:
    for key in keys:
        await pilot.press(key)
        await quiet(pilot)


@sync
async def test_the_remat_tab_lists_the_residuals_and_leads_to_their_line():
    app = HloscopeApp(
        f"{SAMPLE}:loss_typo", loader.LoadOptions(args_factory=f"{SAMPLE}:example_args")
    )
    async with app.run_test(size=SIZE) as pilot:
        await loaded(app, pilot)
        await press(pilot, REMAT_KEY)
        pending = app.query_one("#tab-remat PendingView", PendingView)
        assert "what the backward pass keeps" in str(pending.content)
        await press(pilot, "enter")
        await until(pilot, lambda: "remat" in app.on_demand and app.job is None, "the report")
        await quiet(pilot)
        listing = app.query_one("#remat-list", ReportList)
        shown = [line.text.plain for line in listing.lines]
        assert any(
            r.startswith("residuals       3 residuals: 1.3 MiB on the device") for r in shown
        )
        assert any("warning: policy name 'hiden' matches no checkpoint_name" in r for r in shown)
        assert any(r.startswith("  policy      save_only_these_names('hiden')") for r in shown)
        # Enter on the residual the loss's last line made shows that line's ops in the IR.
        last = next(
            i
            for i, line in enumerate(listing.lines)
            if line.selectable and "not checkpointed" in line.text.plain
        )
        listing.highlighted = last
        await press(pilot, "enter")
        assert app.query_one(TabbedContent).active == "tab-ir"
        assert f"{SAMPLE}:42" in status(app)

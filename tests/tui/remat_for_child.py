"""The browser's Remat tab under `--for`, in a process of its own (the platform's host
devices are given before the target is imported, as `hloscope tui --for` gives them):
prints, as JSON, the report the tab shows (as `hloscope remat --json` writes it, under
`report`; null when it failed) and the lines it shows. Run by `test_tui_remat.py`.

    python tests/tui/remat_for_child.py TARGET ARGS_FACTORY SPEC
"""

from __future__ import annotations

import asyncio
import json
import sys

sys.path.insert(0, "tests")

from hloscope.compile_for import parse_compile_for
from hloscope.reports.remat import ENTRY
from hloscope.sources import loader
from hloscope.tui.app import HloscopeApp
from tui_support import SIZE, loaded, quiet, until

REMAT_KEY = "9"


async def remat_tab(target: str, factory: str, spec: str) -> dict[str, object]:
    options = loader.LoadOptions(args_factory=factory, compile_for=parse_compile_for(spec))
    app = HloscopeApp(target, options)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(app, pilot)
        for key in (REMAT_KEY, "enter"):
            await pilot.press(key)
            await quiet(pilot)
        await until(pilot, lambda: app.job is None, "the report")
        await quiet(pilot)
        report = app.on_demand.get("remat")
        tab = app.query_one("#tab-remat")
        return {
            "report": ENTRY.json_renderer()(report) if report is not None else None,
            "shown": " ".join(str(getattr(w, "content", "")) for w in tab.query("Static")),
        }


if __name__ == "__main__":
    print(json.dumps(asyncio.run(remat_tab(*sys.argv[1:4]))))

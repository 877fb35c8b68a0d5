"""The browser shares one compile between its tabs: the Memory tab of a compiled
target reads the buffer assignment of the compile the browser shows
(`hloscope.sources.compile_cache`), where it compiled again on enter."""

from __future__ import annotations

from pathlib import Path

import pytest

from hloscope.sources import compile_cache, loader
from hloscope.tui.app import HloscopeApp
from hloscope.tui.widgets.report_list import ReportList
from tui_support import SIZE, loaded, quiet, sync, until

MEMORY_KEY = "7"


@pytest.fixture
def cache_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(compile_cache.ENV_FOLDER, str(tmp_path / "compiles"))
    monkeypatch.setattr(compile_cache, "_kept", {})
    return tmp_path / "compiles"


@sync
async def test_the_memory_tab_reads_the_compile_the_browser_shows(cache_folder: Path) -> None:
    app = HloscopeApp(
        "samples/memory_peak.py:rank_scores",
        loader.LoadOptions(args_factory="samples/memory_peak.py:example_args", optimized=True),
    )
    async with app.run_test(size=SIZE) as pilot:
        await loaded(app, pilot)
        assert app.session is not None and app.session.loaded.source.stage == "optimized"
        compiled = compile_cache.compile_count()
        for key in (MEMORY_KEY, "enter"):
            await pilot.press(key)
            await quiet(pilot)
        await until(pilot, lambda: "memory" in app.on_demand and app.job is None, "the report")
        await quiet(pilot)
        shown = [line.text.plain for line in app.query_one("#memory-list", ReportList).lines]
        assert any(r.startswith("peak    8.0 MiB") for r in shown), shown[:5]
        assert compile_cache.compile_count() == compiled, "the Memory tab compiled again"

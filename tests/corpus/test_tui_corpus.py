"""The browser opens modules of the shared corpus without an exception, and every tab
of each: about twenty files chosen deterministically across the corpus' folders and
formats (evenly spread over each folder's sorted files), XLA's own form of a module
(`hlo-native`), and a file the loader refuses (the error screen)."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest
from textual.widgets import TabbedContent

from conftest import CORPUS, every_corpus_file
from hloscope.tui.app import HloscopeApp
from hloscope.tui.screens.message import ErrorScreen
from hloscope.tui.views import VIEWS
from hloscope.tui.widgets.ir_view import IRView
from tui_support import SIZE, loaded, quiet, sync

# Files per (folder, extension) group, about twenty in all (each opens every tab: about
# 4 s a file on 2 cores).
QUOTAS = {
    ("gleasonk-stablehlo-exports", "mlir"): 1,
    ("jax", "fb"): 1,
    ("jax", "hlo"): 1,
    ("jax", "mlir"): 2,
    ("jax", "mlirbc"): 2,
    ("shardy", "mlir"): 2,
    ("stablehlo", "bc"): 1,
    ("stablehlo", "mlir"): 3,
    ("xla", "hlo"): 2,
    ("xla", "mlir"): 2,
    ("xla-cc-embedded-hlo", "hlo"): 4,
}
# Past this size a file says nothing more about the browser than the load tests do.
MAX_BYTES = 1 << 20
HLO_NATIVE = "xla-cc-embedded-hlo/xla/hlo/parser/hlo_parser_test.159.hlo"
REFUSED = "stablehlo/stablehlo/tests/verify_bounds.mlir"


def chosen_files() -> list[str]:
    """The files, relative to the corpus: for each group, its quota of files spread
    evenly over the group's files sorted by path."""
    groups: dict[tuple[str, str], list[Path]] = defaultdict(list)
    for path in every_corpus_file():
        if path.stat().st_size > MAX_BYTES:
            continue
        relative = path.relative_to(CORPUS)
        groups[(relative.parts[0], path.suffix.lstrip("."))].append(relative)
    chosen: list[str] = []
    for key, quota in QUOTAS.items():
        files = groups.get(key, [])
        if not files:
            continue
        step = len(files) / quota
        for i in range(min(quota, len(files))):
            chosen.append(str(files[int(i * step + step / 2)]))
    for extra in (HLO_NATIVE, REFUSED):
        if extra not in chosen and (CORPUS / extra).is_file():
            chosen.append(extra)
    return chosen


FILES = chosen_files()


@pytest.mark.corpus
def test_the_choice_covers_the_corpus():
    if not FILES:
        pytest.skip(f"the shared corpus is not at {CORPUS}")
    assert 20 <= len(FILES) <= 26
    assert HLO_NATIVE in FILES and REFUSED in FILES
    assert {f.split("/")[0] for f in FILES} == {folder for folder, _ in QUOTAS}


@pytest.mark.corpus
@pytest.mark.slow
@pytest.mark.parametrize("relative", FILES or ["(no corpus)"])
@sync
async def test_the_browser_opens_a_corpus_module_and_each_tab(relative: str):
    if not FILES:
        pytest.skip(f"the shared corpus is not at {CORPUS}")
    app = HloscopeApp(str(CORPUS / relative))
    async with app.run_test(size=SIZE) as pilot:
        await loaded(app, pilot)
        if app.failure is not None:
            # Refused by the loader: the message, in the app, and exit 2.
            assert isinstance(app.screen, ErrorScreen)
            assert app.screen.message == app.failure
            await pilot.press("q")
            await quiet(pilot)
            assert app.return_code == 2
            return
        assert relative != REFUSED, "the loader accepted a file it should refuse"
        session = app.session
        assert session is not None
        if relative == HLO_NATIVE:
            assert session.hlo_native
        # Every report was built: a failure would be an analysis bug. The tabs that read
        # the optimized module say instead why it cannot be compiled here, when its
        # custom calls need a backend this machine lacks (a GPU module on the CPU).
        assert session.reports is not None
        refusal = session.loaded.compile_refusal()
        expected = {v.id: refusal for v in session.views if v.optimized} if refusal else {}
        assert session.reports.failures == expected
        tabs = app.query_one(TabbedContent)
        for number, view in enumerate(VIEWS, start=2):
            await pilot.press(str(number))
            await quiet(pilot)
            if view in session.views:
                assert tabs.active == f"tab-{view.id}"
                pane = tabs.get_pane(f"tab-{view.id}")
                assert pane.children, f"the {view.title} tab is empty"
        await pilot.press("1")
        await quiet(pilot)
        assert tabs.active == "tab-ir"
        view = app.query_one(IRView)
        for key in ("G", "g", "j", "H", "H", "L"):
            await pilot.press(key)
            await quiet(pilot)
        assert view.row_count > 0
        await pilot.press("q")
        await quiet(pilot)

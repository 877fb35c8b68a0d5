"""The passes screen (`hloscope passes` on a terminal) through `App.run_test()`."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import DataTable, Input, Static

from conftest import DOCS
from hloscope.sources import loader
from hloscope.tui.diff_app import DiffPane
from hloscope.tui.keys import key_rows, markdown_table
from hloscope.tui.passes_app import PassDiffScreen, PassesApp, passes_key_sections
from hloscope.tui.screens.help import HelpScreen
from hloscope.tui.screens.message import ErrorScreen
from tui_support import SIZE, plain, quiet, sync, until


@pytest.fixture(scope="module")
def dump(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("passes-tui")
    options = loader.LoadOptions(
        args_factory="samples/compute_on.py:example_args",
        optimized=True,
        compiler_options=(("xla_dump_to", str(folder)), ("xla_dump_hlo_pass_re", ".*")),
    )
    loader.load("samples/compute_on.py:host_inside_jit", options)
    return folder


def footer_bindings(app: PassesApp) -> list:
    """What the footer shows: the screen's active bindings that are shown and enabled."""
    return [
        (key, active.binding, active.enabled, active.tooltip)
        for key, active in app.screen.active_bindings.items()
        if active.binding.show and active.enabled
    ]


async def ready(app: PassesApp, pilot) -> None:
    await until(
        pilot,
        lambda: (app.report is not None or app.failure is not None) and app.job is None,
        "the passes read",
    )
    await quiet(pilot)


def rows(app: PassesApp) -> list[list[str]]:
    grid = app.query_one("#passes-table", DataTable)
    return [[plain(cell) for cell in grid.get_row_at(i)] for i in range(grid.row_count)]


@sync
async def test_the_table_lists_every_pass_and_enter_shows_its_diff(dump: Path):
    app = PassesApp(str(dump))
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        assert app.report is not None and app.failure is None
        table = rows(app)
        assert len(table) == len(app.report.table.steps)
        fusion = next(i for i, row in enumerate(table) if row[2] == "fusion")
        assert "+fusion 1" in table[fusion][5]
        app.query_one("#passes-table", DataTable).move_cursor(row=fusion)
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, PassDiffScreen), "the diff screen")
        await quiet(pilot)
        summary = plain(app.screen.query_one("#diff-summary", Static).content)
        assert "1 added" in summary and f"#{fusion} " in summary and "/fusion" in summary
        assert app.screen.query_one(DiffPane).session is not None
        # The footer shows the diff screen's keys, not the table's.
        shown = {binding.description for _, binding, enabled, _ in footer_bindings(app)}
        assert "Back to the passes" in shown
        assert not shown & {"Diff of the pass", "Find", "Next mark", "Changed only"}, shown
        await pilot.press("escape")
        await quiet(pilot)
        assert not isinstance(app.screen, PassDiffScreen)
        shown = {binding.description for _, binding, enabled, _ in footer_bindings(app)}
        assert {"Find", "Changed only"} <= shown


@sync
async def test_find_marks_the_passes_where_the_pattern_changes(dump: Path):
    app = PassesApp(str(dump))
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        await pilot.press("slash")
        await quiet(pilot)
        app.screen.query_one(Input).value = "fusion"
        await pilot.press("enter")
        await until(pilot, lambda: app.report is not None and app.report.find is not None, "find")
        await quiet(pilot)
        table = rows(app)
        marked = [row[0] for row in table if "→" in row[-1]]
        assert app.report is not None and app.report.find is not None
        assert marked == [str(change.index) for change in app.report.find.changes]
        await pilot.press("C")
        await quiet(pilot)
        assert len(rows(app)) < len(table)
        await pilot.press("C", "home", "right_square_bracket")
        await quiet(pilot)
        assert app.selected == app.report.find.changes[0].index


@sync
async def test_a_folder_without_per_pass_files_is_shown_and_exits_2(tmp_path: Path):
    app = PassesApp(str(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        assert isinstance(app.screen, ErrorScreen)
        assert "--xla_dump_hlo_pass_re=.*" in app.screen.message
        await pilot.press("q")
        await quiet(pilot)
    assert app.return_code == 2


@sync
async def test_the_passes_help_lists_every_key(dump: Path):
    app = PassesApp(str(dump))
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        await pilot.press("question_mark")
        await quiet(pilot)
        assert isinstance(app.screen, HelpScreen)
        table = app.screen.query_one("#help-box Static").content  # type: ignore[attr-defined]
        cells = [plain(cell) for column in table.columns for cell in column._cells]
        for title, cls in passes_key_sections():
            assert title in cells
            for row in key_rows(cls):
                assert ", ".join(row.keys) in cells


def test_the_docs_list_every_key_of_the_passes_screen():
    # After a change to the keys, paste `markdown_table(passes_key_sections())` into
    # docs/commands/passes.md.
    assert markdown_table(passes_key_sections()) in (DOCS / "commands" / "passes.md").read_text()

"""The Compiles view (`hloscope compiles` on a terminal) through `App.run_test()`:
its rows, enter opening a compilation's module in the IR browser, and `d` opening
two compilations of one function on the diff screen."""

from __future__ import annotations

import textwrap
from pathlib import Path

from textual.widgets import DataTable, Static

from hloscope import reports
from hloscope.sources.jax.capture import record_script
from hloscope.tui.app import HloscopeApp
from hloscope.tui.compiles_app import CompilesApp, LoadedDiffApp, compile_loaded, next_app
from hloscope.tui.widgets.ir_view import IRView
from tui_support import SIZE, loaded, plain, quiet, sync

PROGRAM = """
import jax, jax.numpy as jnp

@jax.jit
def grows(x):
    return jnp.tanh(x) * 2

grows(jnp.ones((2, 3)))
grows(jnp.ones((5, 3)))
"""


def recorded(tmp_path: Path) -> reports.CompilesReport:
    script = tmp_path / "grows.py"
    script.write_text(textwrap.dedent(PROGRAM))
    run = record_script(str(script), [], stdout_to_stderr=False)
    return reports.compiles_report(run)


def rows_of(report: reports.CompilesReport, function: str) -> list[int]:
    return [i for i, c in enumerate(report.analysis.compiles) if c.function == function]


@sync
async def test_rows_details_and_enter_asks_for_the_module(tmp_path: Path) -> None:
    report = recorded(tmp_path)
    _first, second = rows_of(report, "grows")
    app = CompilesApp(report)
    async with app.run_test(size=SIZE) as pilot:
        await quiet(pilot)
        table = app.query_one(DataTable)
        assert table.row_count == len(report.analysis.compiles)
        assert "2 compilations of 1 function (1 recompiled)" in plain(
            app.query_one("#compiles-summary", Static).content
        )
        # j and k move as in every list; the cursor stops at the edges.
        table.move_cursor(row=0)
        await pilot.press("j")
        await quiet(pilot)
        assert table.cursor_row == min(1, table.row_count - 1)
        await pilot.press("k", "k")
        await quiet(pilot)
        assert table.cursor_row == 0
        table.move_cursor(row=second)
        await quiet(pilot)
        details = plain(app.query_one("#compiles-details", Static).content)
        assert "x: f32[2,3] → f32[5,3] (type)" in details
        assert "JAX: different input types: at x, now f32[5,3] and before f32[2,3]" in details
        await pilot.press("enter")
        await quiet(pilot)
    assert app.request == ("open", second)


@sync
async def test_the_module_of_a_compilation_opens_in_the_ir_browser(tmp_path: Path) -> None:
    report = recorded(tmp_path)
    second = rows_of(report, "grows")[1]
    app = next_app(report, ("open", second))(None)
    assert isinstance(app, HloscopeApp)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(app, pilot)
        assert app.failure is None
        module = app.session.loaded.module  # type: ignore[union-attr]
        assert module.name == "jit_grows"
        assert any(op.name == "stablehlo.tanh" for op in module.ops)
        assert "5x3xf32" in app.session.loaded.parsed.text()  # type: ignore[union-attr]
        await pilot.press("q")


@sync
async def test_d_diffs_a_compilation_with_the_previous_one_of_its_function(tmp_path: Path) -> None:
    report = recorded(tmp_path)
    first, second = rows_of(report, "grows")
    app = CompilesApp(report, cursor=second)
    async with app.run_test(size=SIZE) as pilot:
        await quiet(pilot)
        await pilot.press("d")
        await quiet(pilot)
    assert app.request == ("diff", first, second)
    diff_app = next_app(report, app.request)(None)
    assert isinstance(diff_app, LoadedDiffApp)
    async with diff_app.run_test(size=SIZE) as pilot:
        await loaded(diff_app, pilot)
        assert diff_app.failure is None
        summary = plain(diff_app.query_one("#diff-summary", Static).content)
        assert "verdict different" in summary
        assert "grows #" in summary
        await pilot.press("q")


@sync
async def test_the_returns_of_two_compilations_share_a_row(tmp_path: Path) -> None:
    # The two compilations' returns differ only in their type: they end the same
    # function, so `d` shows them on one row (issue 49).
    report = recorded(tmp_path)
    first, second = rows_of(report, "grows")
    diff_app = next_app(report, ("diff", first, second))(None)
    assert isinstance(diff_app, LoadedDiffApp)
    async with diff_app.run_test(size=SIZE) as pilot:
        await loaded(diff_app, pilot)
        a = diff_app.query_one("#diff-a", IRView)
        b = diff_app.query_one("#diff-b", IRView)
        assert a.printed is not None and b.printed is not None
        assert a.module is not None and b.module is not None
        (return_a,) = [op.id for op in a.module.ops if op.name == "func.return"]
        (return_b,) = [op.id for op in b.module.ops if op.name == "func.return"]
        # The last rows: the return, then the function's and the module's braces.
        await pilot.press("G", "k", "k")
        await quiet(pilot)
        assert a.cursor_line == a.printed.op_line[return_a]
        assert b.cursor_line == b.printed.op_line[return_b]
        await pilot.press("q")


@sync
async def test_space_marks_the_other_side_of_a_diff(tmp_path: Path) -> None:
    report = recorded(tmp_path)
    first, second = rows_of(report, "grows")
    app = CompilesApp(report, cursor=second)
    async with app.run_test(size=SIZE) as pilot:
        await quiet(pilot)
        await pilot.press("space")
        app.query_one(DataTable).move_cursor(row=first)
        await quiet(pilot)
        await pilot.press("d")
        await quiet(pilot)
    assert app.request == ("diff", first, second)
    assert compile_loaded(report, first).module.name == "jit_grows"


def test_the_docs_list_every_key_of_the_compiles_view() -> None:
    # After a change to the keys, paste `markdown_table(compiles_key_sections())` into
    # docs/commands/compiles.md.
    from conftest import DOCS
    from hloscope.tui.compiles_app import compiles_key_sections
    from hloscope.tui.keys import markdown_table

    assert (
        markdown_table(compiles_key_sections()) in (DOCS / "commands" / "compiles.md").read_text()
    )

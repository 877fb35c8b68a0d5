"""The diff screen (`hloscope diff A B` on a terminal) through `App.run_test()`."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys

from rich.console import Console
from rich.text import Text
from textual.widget import Widget
from textual.widgets import OptionList, Static

from conftest import DOCS, DUMPS, ROOT, rename_hlo
from hloscope import reports
from hloscope.analyses.diff import ADDED, CHANGED
from hloscope.render.text.diff import compiled_table
from hloscope.sources import diff_sides, loader
from hloscope.tui.diff_app import STYLES, DiffApp, DiffPane, diff_key_sections
from hloscope.tui.keys import key_rows
from hloscope.tui.screens.changes import ChangesScreen
from hloscope.tui.screens.help import HelpScreen
from hloscope.tui.screens.message import ErrorScreen
from hloscope.tui.widgets.ir_view import IRView
from hloscope.units import human_bytes
from tui_support import SIZE, loaded, plain, quiet, sync

COMPUTE_ON = loader.LoadOptions(args_factory="samples/compute_on.py:example_args")
INSIDE = "samples/compute_on.py:host_inside_jit"
OUTSIDE = "samples/compute_on.py:host_outside_jit"
MLP = str(DUMPS.relative_to(ROOT) / "mlp.stablehlo.mlir")
MLP_HLO = str(DUMPS.relative_to(ROOT) / "mlp.before_optimizations.hlo")
PAIRS = "tests/fixtures/diff_pair_targets.py"
PAIRS_ARGS = loader.LoadOptions(args_factory=f"{PAIRS}:example_args")


async def press(pilot, *keys: str) -> None:
    for key in keys:
        await pilot.press(key)
        await quiet(pilot)


def sides(app: DiffApp) -> tuple[IRView, IRView]:
    return app.query_one("#diff-a", IRView), app.query_one("#diff-b", IRView)


def text_of(app: DiffApp, widget_id: str) -> str:
    return plain(app.query_one(widget_id, Static).content)


def line(view: IRView) -> str:
    """The printed line under the cursor ('' on a blank row)."""
    number = view.cursor_line
    return view.printed.lines[number].strip() if number is not None and view.printed else ""


@sync
async def test_the_diff_screen_shows_both_modules_aligned_with_a_summary():
    app = DiffApp(INSIDE, OUTSIDE, COMPUTE_ON)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(app, pilot)
        assert app.failure is None
        summary = text_of(app, "#diff-summary")
        assert f"A  {INSIDE}" in summary and f"B  {OUTSIDE}" in summary
        # Two lowered modules: no summary of compiled programs.
        assert app.session is not None and app.session.report.compiled is None
        assert not app.query_one("#diff-compiled").display
        assert "verdict different · 1 added · 0 removed · 1 changed · 6 unchanged" in summary
        a, b = sides(app)
        assert a.row_count == b.row_count
        assert isinstance(app.focused, IRView) and app.focused is a
        assert line(a).startswith("module @jit_host_inside_jit")
        assert line(b).startswith("module @jit_host_outside_jit")
        # Added, removed and changed lines are drawn in their colours.
        session = app.session
        assert session is not None
        changed_a = {n for n, style in a.line_styles.items() if style == STYLES[CHANGED]}
        assert [session.printed_a.lines[n].strip()[:19] for n in changed_a] == [
            "%4 = stablehlo.tanh"
        ]
        added_b = {n for n, style in b.line_styles.items() if style == STYLES[ADDED]}
        assert [session.printed_b.lines[n].split("(")[0].strip() for n in added_b] == [
            "%0 = call @host_outside_jit"
        ]
        rendered = [a.render_line(y) for y in range(a.scrollable_content_region.height)]
        assert any("▌" in strip.text for strip in rendered)
        await press(pilot, "q")
    assert app.return_code == 1  # they differ, as `hloscope diff` exits


@sync
async def test_brackets_go_from_change_to_change_and_the_details_follow():
    app = DiffApp(INSIDE, OUTSIDE, COMPUTE_ON)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(app, pilot)
        a, b = sides(app)
        assert "unchanged" in text_of(app, "#diff-details")
        await press(pilot, "right_square_bracket")
        # The call only B has: A's side of the row is blank.
        assert line(a) == "" and line(b).startswith("%0 = call @host_outside_jit")
        details = text_of(app, "#diff-details")
        assert "A (nothing on this row)" in details
        assert "added func.call in main" in details
        assert "calls @host_outside_jit; compute type host" in details
        assert "change 1/2" in text_of(app, "#diff-status")
        await press(pilot, "right_square_bracket")
        assert "stablehlo.tanh" in line(a) and "stablehlo.tanh" in line(b)
        details = text_of(app, "#diff-details")
        assert "changed stablehlo.tanh in main → host_outside_jit" in details
        assert "compute type device → host" in details
        assert "change 2/2" in text_of(app, "#diff-status")
        # No change after the last: the cursor stays.
        row = a.cursor
        await press(pilot, "right_square_bracket")
        assert a.cursor == row
        await press(pilot, "left_square_bracket")
        assert line(b).startswith("%0 = call @host_outside_jit")
        # Both sides keep one cursor row, whichever moves it.
        await press(pilot, "j", "j")
        assert a.cursor == b.cursor
        await press(pilot, "tab")
        assert app.focused is b
        await press(pilot, "k")
        assert a.cursor == b.cursor
        await press(pilot, "G")
        assert a.cursor == b.cursor == b.row_count - 1


def op_on(view: IRView) -> int:
    """The op whose own line is under the cursor, or -1."""
    number = view.cursor_line
    printed = view.printed
    if number is None or printed is None:
        return -1
    op = printed.line_op[number]
    return op if op >= 0 and printed.own_line[op] and printed.op_line[op] == number else -1


@sync
async def test_each_changed_pair_is_on_one_row_across_functions():
    # The diff pairs A's relu constant (relu is a function of its own in A) with a
    # constant of B's main (gelu inlined): both halves of each changed pair are on
    # the cursor's row at every change `]` goes to, and with `C` too (issue 49).
    app = DiffApp(f"{PAIRS}:relu_doubled", f"{PAIRS}:gelu_doubled", PAIRS_ARGS)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(app, pilot)
        assert app.failure is None and app.session is not None
        diff = app.session.report.diff
        partners = {
            diff.a.ops[c.a]: diff.b.ops[c.b]
            for c in diff.changes
            if c.a is not None and c.b is not None
        }
        assert len(partners) == 2
        a, b = sides(app)
        pane = app.query_one(DiffPane)
        aligned = app.session.aligned
        seen: set[tuple[int, int]] = set()

        async def walk_run() -> None:
            """Down every row of the run of changes under the cursor."""
            while pane.row >= 0 and aligned.is_change(pane.row):
                op_a, op_b = op_on(a), op_on(b)
                if op_a in partners:
                    assert op_b == partners[op_a], (line(a), line(b))
                    seen.add((op_a, op_b))
                    assert "changed" in text_of(app, "#diff-details")
                if op_b in partners.values():
                    assert partners.get(op_a) == op_b, (line(a), line(b))
                before = pane.row
                await press(pilot, "j")
                if pane.row == before:
                    return

        for only_changes in (False, True):
            seen.clear()
            stops = 0
            if only_changes:
                # Every row shown is a change: from the first, down to the last.
                await press(pilot, "C", "g")
                assert a.row_count < len(aligned.a)
                await walk_run()
            while True:
                row = pane.row
                await press(pilot, "right_square_bracket")
                if pane.row == row:
                    break
                stops += 1
                await walk_run()
            if not only_changes:
                assert stops >= 2
            assert seen == set(partners.items())
        await press(pilot, "q")


@sync
async def test_c_shows_only_the_changed_rows():
    app = DiffApp(INSIDE, OUTSIDE, COMPUTE_ON)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(app, pilot)
        a, b = sides(app)
        rows = a.row_count
        await press(pilot, "C")
        assert a.row_count == b.row_count == 2
        assert "only changes" in text_of(app, "#diff-status")
        assert line(b).startswith("%0 = call @host_outside_jit")
        await press(pilot, "right_square_bracket")
        assert "stablehlo.tanh" in line(a)
        # Back to every row, the cursor on the same change.
        await press(pilot, "C")
        assert a.row_count == rows
        assert "stablehlo.tanh" in line(a)


@sync
async def test_scrolling_one_side_scrolls_the_other(tmp_path):
    def chain(name: str, cosine_at: int | None) -> str:
        lines = ["func.func @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {"]
        previous = "%arg0"
        for i in range(200):
            op = "cosine" if i == cosine_at else "sine"
            lines.append(f"  %v{i} = stablehlo.{op} {previous} : tensor<4xf32>")
            previous = f"%v{i}"
        lines += [f"  return {previous} : tensor<4xf32>", "}"]
        path = tmp_path / name
        path.write_text("\n".join(lines) + "\n")
        return str(path)

    app = DiffApp(chain("a.mlir", None), chain("b.mlir", 120))
    async with app.run_test(size=SIZE) as pilot:
        await loaded(app, pilot)
        a, b = sides(app)
        await press(pilot, "pagedown", "pagedown")
        assert a.scroll_y > 0 and (a.scroll_y, a.cursor) == (b.scroll_y, b.cursor)
        await press(pilot, "right_square_bracket")
        assert "stablehlo.sine" in line(a) and "stablehlo.cosine" in line(b)
        assert a.scroll_y == b.scroll_y
        await press(pilot, "l", "l")
        assert a.scroll_x > 0 and a.scroll_x == b.scroll_x
        # The mouse wheel over B scrolls A too.
        b.scroll_to(y=b.scroll_y + 7, animate=False, immediate=True)
        await quiet(pilot)
        assert a.scroll_y == b.scroll_y


STEP = "samples/sharding_choice.py:train_step"
FSDP_AGAINST_TP = diff_sides.DiffOptions(
    loader.LoadOptions(args_factory="samples/sharding_choice.py:fsdp_args", optimized=True),
    loader.LoadOptions(args_factory="samples/sharding_choice.py:tp_args", optimized=True),
)


def shown_lines(widget: Widget) -> list[str]:
    """The lines a widget shows on the screen, trailing blanks dropped."""
    return [widget.render_line(y).text.rstrip() for y in range(widget.size.height)]


@sync
async def test_two_compiled_programs_open_with_the_commands_summary():
    # `hloscope diff STEP STEP --args-a fsdp --args-b tp --compile` on a terminal: the
    # "Compiled: A → B" rows above the modules are the command's (`diff_loaded(...,
    # summary=True)`, whose figures tests/cli/test_diff_sides.py holds to the single
    # views and to XLA's own compile), and the modules keep most of 120x40.
    app = DiffApp(STEP, STEP, FSDP_AGAINST_TP)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(app, pilot)
        assert app.failure is None, app.failure
        panel = app.query_one("#diff-compiled")
        assert panel.display
        table = app.query_one("#diff-compiled-table", Static)
        shown, width = shown_lines(table), table.size.width
        sides_height = app.query_one("#diff-sides").size.height
    expected = reports.diff_loaded(
        *diff_sides.load_diff_sides(STEP, STEP, FSDP_AGAINST_TP), summary=True
    )
    compiled = expected.compiled
    assert compiled is not None
    printed = io.StringIO()
    Console(file=printed, width=width, color_system=None).print(compiled_table(compiled))
    assert shown == [line.rstrip() for line in printed.getvalue().splitlines()]
    # The numbers themselves, row by row.
    peak = next(row for row in shown if row.lstrip().startswith("peak (buffer assignment)"))
    assert re.split(r"\s{2,}", peak.strip())[1:3] == [human_bytes(x) for x in compiled.memory]
    assert {change.op for change in compiled.collectives} >= {"all_reduce", "all_gather"}
    for change in compiled.collectives:
        row = next(row for row in shown if row.lstrip().startswith(change.op.replace("_", "-")))
        for count in (change.a, change.b):
            assert (f"{count.count} · {human_bytes(count.bytes)}" if count.count else "0") in row
    added = next(change for change in compiled.collectives if change.added_at)
    row = next(row for row in shown if row.lstrip().startswith(added.op.replace("_", "-")))
    assert "more in B at samples/sharding_choice.py:41 +1" in row
    assert sides_height >= 12


def renamed_mlp(tmp_path, minimum: bool = False) -> str:
    """XLA's HLO of the MLP with every name renamed (and the relu made a minimum)."""
    text = (DUMPS / "mlp.before_optimizations.hlo").read_text()
    if minimum:
        text = text.replace("maximum(Arg_0.2, max.2)", "minimum(Arg_0.2, max.2)")
    path = tmp_path / "renamed.hlo"
    path.write_text(rename_hlo(text)[0])
    return str(path)


@sync
async def test_renamed_functions_are_in_the_summary_not_changes(tmp_path):
    app = DiffApp(MLP_HLO, renamed_mlp(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await loaded(app, pilot)
        summary = text_of(app, "#diff-summary")
        assert "verdict same · 0 added · 0 removed · 0 changed" in summary
        assert "renamed 4 functions (not changes): relu.1 → r_relu_1" in summary
        assert "and 1 more (L lists them)" in summary
        await press(pilot, "L")
        assert isinstance(app.screen, ChangesScreen)
        renames = plain(app.screen.query_one("#changes-renames", Static).content)
        for a_name, b_name in (("dense.2", "r_dense_2"), ("region_0.3", "r_region_0_3")):
            assert f"{a_name} → {b_name}" in renames
        await press(pilot, "escape")
        assert not isinstance(app.screen, ChangesScreen)
        await press(pilot, "q")
    assert app.return_code == 0


@sync
async def test_g_lists_the_grouped_changes_and_goes_to_one(tmp_path):
    """The relu's maximum made a minimum, in a function called three times: one row
    with its count and place; enter goes to it."""
    app = DiffApp(MLP_HLO, renamed_mlp(tmp_path, minimum=True))
    async with app.run_test(size=SIZE) as pilot:
        await loaded(app, pilot)
        await press(pilot, "L")
        screen = app.screen
        assert isinstance(screen, ChangesScreen)
        options = screen.query_one(OptionList)
        assert options.option_count == 1
        row = plain(options.get_option_at_index(0).prompt)
        assert "changed" in row and "×3" in row
        assert "stablehlo.maximum → stablehlo.minimum" in row
        assert "in relu.1 ×3" in row
        await press(pilot, "enter")
        assert not isinstance(app.screen, ChangesScreen)
        a, b = sides(app)
        assert "maximum" in line(a) and "minimum" in line(b)
        details = text_of(app, "#diff-details")
        assert "(the same change ×3: relu.1 ×3)" in details
        await press(pilot, "q")
    assert app.return_code == 1


@sync
async def test_the_same_module_twice():
    app = DiffApp(MLP, MLP_HLO)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(app, pilot)
        assert "verdict same · 0 added · 0 removed · 0 changed" in text_of(app, "#diff-summary")
        row = sides(app)[0].cursor
        await press(pilot, "right_square_bracket", "C")
        assert sides(app)[0].cursor == row
        assert not app.query_one(DiffPane).only_changes
        await press(pilot, "q")
    assert app.return_code == 0


@sync
async def test_a_side_that_does_not_load_is_shown_and_exits_2():
    app = DiffApp(MLP, "samples/dumps/no_such_file.mlir")
    async with app.run_test(size=SIZE) as pilot:
        await loaded(app, pilot)
        assert isinstance(app.screen, ErrorScreen)
        assert "no_such_file.mlir" in app.screen.message
        await press(pilot, "q")
    assert app.return_code == 2


@sync
async def test_the_diff_help_lists_every_key():
    app = DiffApp(MLP, MLP_HLO)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(app, pilot)
        await press(pilot, "question_mark")
        assert isinstance(app.screen, HelpScreen)
        table = app.screen.query_one("#help-box Static").content  # type: ignore[attr-defined]
        cells = [plain(cell) for column in table.columns for cell in column._cells]
        for title, cls in diff_key_sections():
            assert title in cells
            for row in key_rows(cls):
                assert ", ".join(row.keys) in cells
        assert "]" in cells and "[" in cells and "C" in cells
        # Following links is the browser's: the sides do not list it.
        assert not any(isinstance(c, str) and c.startswith("Follow") for c in cells)


def test_diff_json_never_loads_the_browser():
    code = (
        "import sys\n"
        "from hloscope.cli import main\n"
        "try:\n"
        f"    main(['diff', {MLP!r}, {MLP_HLO!r}, '--json'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "sys.stderr.write(repr('textual' in sys.modules))\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
        stdin=subprocess.DEVNULL,
        check=True,
    )
    assert '"verdict": "same"' in run.stdout
    assert run.stderr == "False"


def test_summary_colours_the_counts():
    from hloscope.tui.diff_app import summary_text

    a, b = loader.load(MLP), loader.load(str(DUMPS.relative_to(ROOT) / "host_call.stablehlo.mlir"))
    text: Text = summary_text(reports.diff_loaded(a, b))
    added = text.plain.index(" added")
    assert any("green" in str(span.style) for span in text.spans if span.start <= added < span.end)


def test_the_docs_list_every_key_of_the_diff_screen():
    # As for the browser: after a change to the keys, paste
    # `markdown_table(diff_key_sections())` into docs/browser.md.
    from hloscope.tui.keys import markdown_table

    assert markdown_table(diff_key_sections()) in (DOCS / "browser.md").read_text()


THREE_OPS = """\
module @m {
  func.func public @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {
    %0 = stablehlo.sine %arg0 : tensor<4xf32>
    %1 = stablehlo.cosine %0 : tensor<4xf32>
    %2 = stablehlo.tanh %1 : tensor<4xf32>
    return %2 : tensor<4xf32>
  }
}
"""


@sync
async def test_each_of_three_adjacent_changed_ops_is_a_stop(tmp_path):
    # ] goes to each change, not over a run of them: the counter agrees with the
    # verdict's count, and the pane below describes each changed op in turn.
    a, b = tmp_path / "a.mlir", tmp_path / "b.mlir"
    a.write_text(THREE_OPS)
    b.write_text(
        THREE_OPS.replace("stablehlo.sine", "stablehlo.exponential")
        .replace("stablehlo.cosine", "stablehlo.log")
        .replace("stablehlo.tanh", "stablehlo.negate")
    )
    app = DiffApp(str(a), str(b))
    async with app.run_test(size=SIZE) as pilot:
        await loaded(app, pilot)
        assert app.failure is None, app.failure
        assert "3 changed" in text_of(app, "#diff-summary")
        described = []
        for number in range(1, 4):
            await press(pilot, "right_square_bracket")
            assert f"change {number}/3" in text_of(app, "#diff-status")
            details = text_of(app, "#diff-details")
            described.append(
                next(op for op in ("sine", "cosine", "tanh") if f".{op} " in details + " ")
            )
        assert described == ["sine", "cosine", "tanh"]
        await press(pilot, "q")

"""The Compiles view: one row per compilation of a run (`hloscope compiles`), its
cost and JAX's reason, with the selected one's details below.

Enter on a compilation opens the module JAX compiled in the IR browser; `d` opens
it on the diff screen beside the same function's previous compilation, or beside
the compilation marked with space, so that the user sees what the new shape (or
dtype, or static value) changed in the program.
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.coordinate import Coordinate
from textual.message import Message
from textual.widgets import DataTable, Static

from hloscope.analyses.compiles import call_site_shown
from hloscope.render.text.common import seconds, short_source
from hloscope.render.text.compiles import change_text, summary_text
from hloscope.reports import CompilesReport
from hloscope.runs import RecordedCompile
from hloscope.tui.widgets.lists import RowTable


class OpenCompile(Message):
    """Open compilation `index`'s module in the IR browser."""

    def __init__(self, index: int) -> None:
        self.index = index
        super().__init__()


class DiffCompiles(Message):
    """Open compilations `a` and `b` (indices in the run) on the diff screen."""

    def __init__(self, a: int, b: int) -> None:
        self.a = a
        self.b = b
        super().__init__()


def details_text(report: CompilesReport, index: int) -> Text:
    """Everything known about one compilation."""
    compile_ = report.analysis.compiles[index]
    text = Text()
    text.append(f"{compile_.function}", style="bold")
    if compile_.source:
        text.append(f"  defined at {short_source(compile_.source)}")
    if call_site_shown(compile_):
        text.append(f"  called at {short_source(call_site_shown(compile_))}")
    text.append("\n")
    if compile_.eager:
        text.append("an op run outside any jit: JAX compiled it alone\n", style="yellow")
    if compile_.cause:
        text.append(f"JAX: {compile_.cause}\n", style="yellow")
    for change in compile_.changes:
        text.append(f"  {change.path}: {change.before} → {change.after} ({change.kind})\n")
    if compile_.signature:
        text.append(f"signature {compile_.signature}\n", style="dim")
    text.append(
        f"trace {seconds(compile_.trace_seconds)} · lower {seconds(compile_.lower_seconds)} · "
        f"compile {seconds(compile_.compile_seconds)} · "
        f"{compile_.ops if compile_.ops is not None else '-'} ops"
        + (" · from the persistent cache" if compile_.persistent_cache_hit else ""),
        style="dim",
    )
    if compile_.module is None:
        text.append("\nits module was not kept (only the latest are)", style="dim")
    return text


class CompilesView(Vertical):
    """The totals, the compilations, and the selected one's details."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "enter",
            "open",
            "Open module",
            tooltip="The module JAX compiled, in the IR browser",
            show=True,
        ),
        Binding(
            "d",
            "diff",
            "Diff",
            tooltip="On the diff screen: this compilation beside the marked one, or beside "
            "the same function's previous compilation",
            show=True,
        ),
        Binding(
            "space", "mark", "Mark", tooltip="Mark a compilation to diff against (d)", show=True
        ),
    ]

    DEFAULT_CSS = """
    CompilesView { height: 1fr; }
    CompilesView #compiles-summary { padding: 0 1; color: $text-muted; }
    CompilesView #compiles-table { height: 1fr; }
    CompilesView #compiles-details { height: auto; max-height: 12; padding: 0 1;
        border-top: solid $primary; }
    """

    def __init__(self, report: CompilesReport, cursor: int = 0) -> None:
        super().__init__(id="compiles")
        self.report = report
        self.initial_cursor = cursor
        self.marked: int | None = None

    def compose(self) -> ComposeResult:
        yield Static(summary_text(self.report.analysis), id="compiles-summary")
        yield RowTable(id="compiles-table", cursor_type="row", zebra_stripes=True)
        yield Static(id="compiles-details")

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns("#", "function", "called at", "trace", "lower", "compile", "ops", "why")
        for index, compile_ in enumerate(self.report.analysis.compiles):
            table.add_row(*self._cells(index, compile_), key=str(index))
        if self.report.analysis.compiles:
            table.move_cursor(row=min(self.initial_cursor, table.row_count - 1))
            self._show_details(table.cursor_row)
        table.focus()

    def _cells(self, index: int, compile_: RecordedCompile) -> list[Text | str]:
        mark = "●" if index == self.marked else ""
        name = Text(compile_.function, style="dim" if compile_.eager else "bold")
        if compile_.eager:
            name.append(" (eager)", style="dim")
        return [
            f"{mark}{index + 1}",
            name,
            short_source(call_site_shown(compile_)),
            seconds(compile_.trace_seconds),
            seconds(compile_.lower_seconds),
            seconds(compile_.compile_seconds),
            str(compile_.ops) if compile_.ops is not None else "-",
            change_text(compile_),
        ]

    @property
    def cursor(self) -> int:
        return self.query_one(DataTable).cursor_row

    def _show_details(self, index: int) -> None:
        if 0 <= index < len(self.report.analysis.compiles):
            self.query_one("#compiles-details", Static).update(details_text(self.report, index))

    @on(DataTable.RowHighlighted)
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._show_details(event.cursor_row)

    @on(DataTable.RowSelected)
    def _selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        self.action_open()

    def action_open(self) -> None:
        index = self.cursor
        if not self._has_module(index):
            return
        self.post_message(OpenCompile(index))

    def action_mark(self) -> None:
        index = self.cursor
        previous, self.marked = self.marked, (None if self.marked == index else index)
        table = self.query_one(DataTable)
        for row in {previous, index} - {None}:
            assert row is not None
            table.update_cell_at(
                Coordinate(row, 0), self._cells(row, self.report.analysis.compiles[row])[0]
            )

    def action_diff(self) -> None:
        index = self.cursor
        compiles = self.report.analysis.compiles
        other = self.marked
        if other is None or other == index:
            function = compiles[index].function
            other = next(
                (i for i in range(index - 1, -1, -1) if compiles[i].function == function), None
            )
            if other is None:
                self.app.notify(
                    f"{function} has no earlier compilation: mark one with space first",
                    timeout=4,
                )
                return
        if self._has_module(index) and self._has_module(other):
            self.post_message(DiffCompiles(min(index, other), max(index, other)))

    def _has_module(self, index: int) -> bool:
        compiles = self.report.analysis.compiles
        if not 0 <= index < len(compiles):
            return False
        if compiles[index].module is None:
            self.app.notify(
                f"The module of compilation {index + 1} was not kept (only the latest are).",
                timeout=4,
            )
            return False
        return True

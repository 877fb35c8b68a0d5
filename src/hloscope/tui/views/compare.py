"""The Compare view: one row per configuration of a comparison (`hloscope compare` on
a terminal), the best that fits marked, with the selected one's collectives and
reasons below.

Rows arrive as their child processes finish. Once every configuration is done, enter
on a row opens that configuration's browser, and `d` opens the diff of the row marked
with space and the row under the cursor: each is `hloscope tui` or `hloscope diff` in
a process of its own (a configuration's environment is read when its program is
imported), reading the compile cache the comparison filled.
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import DataTable, Static

from hloscope.render.text.compare import (
    BEST_MARK,
    ESTIMATED,
    collectives_text,
    peak_text,
    row_cells,
    table_columns,
)
from hloscope.reports.compare import CompareRow, Comparison
from hloscope.tui.widgets.lists import RowTable


class OpenConfig(Message):
    """Open configuration `index` (of the shown comparison's rows) in the browser."""

    def __init__(self, index: int) -> None:
        self.index = index
        super().__init__()


class DiffConfigs(Message):
    """Open configurations `a` and `b` (rows of the shown comparison) on the diff screen."""

    def __init__(self, a: int, b: int) -> None:
        self.a = a
        self.b = b
        super().__init__()


def summary_text(report: Comparison, total: int) -> Text:
    """`3 of 8 configurations done · 2 fit · best ★ LLM_MESH=2x8 @ tpu:v5e:4x4`."""
    rows = report.rows
    text = Text()
    done = len(rows)
    text.append(f"{done} of {total} configurations done" if done < total else f"{total} done")
    text.append(f" · {sum(1 for r in rows if r.fits)} fit")
    failed = sum(1 for r in rows if not r.succeeded)
    if failed:
        text.append(f" · {failed} failed", style="red")
    text.append(" · best ")
    if report.best is not None:
        text.append(f"{BEST_MARK} {rows[report.best].config.label}", style="bold green")
    else:
        text.append("none fits yet" if done < total else "none fits")
    text.append(f"\nsorted by {report.sort}; {ESTIMATED}", style="dim")
    return text


def details_text(row: CompareRow) -> Text:
    """Everything the comparison knows of one configuration."""
    text = Text()
    text.append(row.config.label, style="bold")
    text.append(f"\n{row.config.target} --for {row.config.compile_for}")
    for name, value in row.config.env.items():
        text.append(f" {name}={value}")
    text.append("\n")
    if not row.succeeded:
        text.append(f"failed: {row.error}\n", style="red")
        return text
    if row.refused is not None:
        text.append(f"XLA refused it: {row.refused}\n", style="red")
    text.append(f"peak {peak_text(row)}")
    if row.peak_from:
        text.append(f" ({row.peak_from})", style="dim")
    if row.device:
        text.append(f" · {row.devices} × {row.device}")
    text.append(f"\ncollectives: {collectives_text(row)}\n")
    for note in row.notes:
        text.append(f"{note}\n", style="dim")
    return text


class CompareView(Vertical):
    """The progress and best, the configurations, and the selected one's details."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "enter",
            "open",
            "Open",
            tooltip="This configuration's program in the browser (hloscope tui --for)",
            show=True,
        ),
        Binding(
            "d",
            "diff",
            "Diff",
            tooltip="On the diff screen: the marked configuration (space) beside this one",
            show=True,
        ),
        Binding(
            "space", "mark", "Mark", tooltip="Mark a configuration to diff against (d)", show=True
        ),
    ]

    DEFAULT_CSS = """
    CompareView { height: 1fr; }
    CompareView #compare-summary { padding: 0 1; }
    CompareView #compare-table { height: 1fr; }
    CompareView #compare-details { height: auto; max-height: 12; padding: 0 1;
        border-top: solid $primary; }
    """

    def __init__(self, report: Comparison, total: int, cursor: int = 0) -> None:
        super().__init__(id="compare")
        self.report = report
        self.total = total
        self.initial_cursor = cursor
        self.marked: CompareRow | None = None
        self._dcn: bool | None = None

    @property
    def finished(self) -> bool:
        return len(self.report.rows) >= self.total

    def compose(self) -> ComposeResult:
        yield Static(id="compare-summary")
        yield RowTable(id="compare-table", cursor_type="row", zebra_stripes=True)
        yield Static(id="compare-details")

    def on_mount(self) -> None:
        self.show(self.report, cursor=self.initial_cursor)
        self.query_one(DataTable).focus()

    def show(self, report: Comparison, cursor: int | None = None) -> None:
        """Show `report` (rows come in as they finish; the cursor stays on its row)."""
        table = self.query_one(DataTable)
        under = self._row_at(table.cursor_row) if cursor is None else None
        self.report = report
        dcn = any(r.dcn_bytes for r in report.rows)
        if dcn != self._dcn:
            table.clear(columns=True)
            table.add_columns("", "configuration", *table_columns(dcn))
            self._dcn = dcn
        else:
            table.clear()
        for index, row in enumerate(report.rows):
            table.add_row(*self._cells(index, row, dcn), key=str(index))
        self.query_one("#compare-summary", Static).update(summary_text(report, self.total))
        if report.rows:
            if under is not None:
                cursor = report.rows.index(under)
            table.move_cursor(row=min(cursor or 0, table.row_count - 1))
            self._show_details(table.cursor_row)

    def _cells(self, index: int, row: CompareRow, dcn: bool) -> list[Text | str]:
        mark = BEST_MARK if index == self.report.best else ""
        if row is self.marked:
            mark = "●" + mark
        style = "bold green" if index == self.report.best else ("red" if not row.succeeded else "")
        return [mark, Text(row.config.label, style=style), *row_cells(row, dcn)]

    def _row_at(self, index: int) -> CompareRow | None:
        rows = self.report.rows
        return rows[index] if 0 <= index < len(rows) else None

    def _show_details(self, index: int) -> None:
        row = self._row_at(index)
        if row is not None:
            self.query_one("#compare-details", Static).update(details_text(row))

    @on(DataTable.RowHighlighted)
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._show_details(event.cursor_row)

    @on(DataTable.RowSelected)
    def _selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        self.action_open()

    def _ready(self, row: CompareRow | None) -> bool:
        if not self.finished:
            self.app.notify(
                f"{len(self.report.rows)} of {self.total} configurations are done: "
                "a configuration opens once the comparison has finished",
                timeout=4,
            )
            return False
        if row is not None and not row.succeeded:
            self.app.notify(f"{row.config.label} failed: {row.error}", timeout=6)
            return False
        return row is not None

    def action_open(self) -> None:
        index = self.query_one(DataTable).cursor_row
        if self._ready(self._row_at(index)):
            self.post_message(OpenConfig(index))

    def action_mark(self) -> None:
        row = self._row_at(self.query_one(DataTable).cursor_row)
        self.marked = None if row is None or row is self.marked else row
        self.show(self.report)

    def action_diff(self) -> None:
        index = self.query_one(DataTable).cursor_row
        row = self._row_at(index)
        if self.marked is None or self.marked is row:
            self.app.notify("Mark a configuration with space first, then d on another", timeout=4)
            return
        if self._ready(row) and self._ready(self.marked):
            self.post_message(DiffConfigs(self.report.rows.index(self.marked), index))

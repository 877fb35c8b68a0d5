"""A report as a list of lines, some of them rows that lead to ops in the IR.

The Parameters, Placement and Fusions tabs show their reports as sections of
table rows; enter on a row shows its ops in the IR tab (the first selected, all of
them as the matches `n` and `N` walk). Where a row leads is worked out when it is
chosen, not when the tab is drawn, so a large module's tab costs nothing until
used.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import ClassVar

from rich.style import Style
from rich.text import Span, Text
from textual import on
from textual.binding import Binding, BindingType
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from hloscope.render.text.common import elide_middle, elide_path
from hloscope.tui.views.base import ShowOps
from hloscope.tui.widgets.lists import RowList

GAP = "  "
TITLE = Style(bold=True)
HEADER = Style(dim=True, bold=True)


@dataclasses.dataclass(frozen=True)
class Jump:
    """Ops a row leads to, and what to call them in the status line."""

    ops: tuple[int, ...]
    label: str


@dataclasses.dataclass(frozen=True)
class Line:
    """One line of the list; a row when `selectable`."""

    text: Text
    selectable: bool = False
    jump: Callable[[], Jump | None] | None = None
    """Where the row leads, worked out when it is chosen (None: nowhere)."""
    note: str = ""
    """Said when a row that leads nowhere is chosen (`pruned: no HLO parameter`)."""
    tags: frozenset[str] = frozenset()
    """What the row is, for a view's filter (`unused`, `pruned`)."""


@dataclasses.dataclass(frozen=True)
class Column:
    name: str
    right: bool = False
    """Right-aligned (numbers)."""
    width: int = 40
    """At most this many cells; longer values are cut with an ellipsis."""
    path: bool = False
    """Its values are pytree paths: a long one loses its middle, not its end."""
    names: bool = False
    """Its values are names (`bitcast_dynamic-update-slice_fusion.22`): a long one keeps
    its start and its end, which tell names apart (`elide_middle`)."""


@dataclasses.dataclass(frozen=True)
class Row:
    """A table row: its cells, and what `Line` it becomes."""

    cells: Sequence[str | Text]
    jump: Callable[[], Jump | None] | None = None
    note: str = ""
    tags: frozenset[str] = frozenset()


def fixed(jump: Jump) -> Callable[[], Jump | None]:
    """A row that leads to ops known when it is drawn."""
    return lambda: jump


def heading(title: str) -> Line:
    return Line(Text(title, style=TITLE))


def text_line(text: str | Text, style: str | Style = "") -> Line:
    return Line(text if isinstance(text, Text) else Text(text, style=style))


def blank() -> Line:
    return Line(Text(""))


def notes_lines(notes: Sequence[str]) -> list[Line]:
    """A report's notes under their heading, as every tab ends (none: no lines)."""
    if not notes:
        return []
    return [heading("Notes"), *(text_line(f"• {note}", "dim") for note in notes)]


def table(title: str, columns: Sequence[Column], rows: Sequence[Row]) -> list[Line]:
    """A section: its title, the column names, and a line per row, in columns as wide
    as their widest cell (up to each column's width). As in the text reports, a
    column no row fills gives way, and a long path or name keeps what tells it from
    the others."""
    cells = [[c if isinstance(c, Text) else Text(c) for c in row.cells] for row in rows]
    empty = {
        i
        for i, column in enumerate(columns)
        if rows and not any(i < len(r) and r[i].plain.strip() for r in cells)
    }
    if empty:
        columns = [c for i, c in enumerate(columns) if i not in empty]
        cells = [[c for i, c in enumerate(r) if i not in empty] for r in cells]
    widths = [
        min(column.width, max([len(column.name), *(len(r[i].plain) for r in cells if i < len(r))]))
        for i, column in enumerate(columns)
    ]

    # A path column's paths: each shortened keeps what tells it from the others.
    paths = {
        i: tuple(r[i].plain for r in cells if i < len(r))
        for i, column in enumerate(columns)
        if column.path
    }

    def joined(parts: Sequence[Text], style: Style | str = "") -> Text:
        line = Text(style=style, no_wrap=True, overflow="ellipsis", end="")
        for i, (part, column) in enumerate(zip(parts, columns, strict=False)):
            if i:
                line.append(GAP)
            if column.path and part.cell_len > widths[i]:
                cell = Text(elide_path(part.plain, widths[i], paths[i]), style=part.style)
            elif column.names and part.cell_len > widths[i]:
                cell = Text(elide_middle(part.plain, widths[i]), style=part.style)
            else:
                cell = part.copy()
                cell.truncate(widths[i], overflow="ellipsis")
            pad = " " * (widths[i] - cell.cell_len)
            if column.right:
                line.append(pad)
                line.append_text(cell)
            elif i < len(columns) - 1:
                line.append_text(cell)
                line.append(pad)
            else:
                line.append_text(cell)
        return line

    lines = [heading(title), Line(joined([Text(c.name) for c in columns], HEADER))]
    for row, row_cells in zip(rows, cells, strict=True):
        lines.append(
            Line(joined(row_cells), selectable=True, jump=row.jump, note=row.note, tags=row.tags)
        )
    return lines


def without_links(text: Text) -> Text:
    """`text` without the links the text reports' cells give source lines
    (`render.text.common.source_text`): a row of the browser is chosen with enter."""
    if not any(isinstance(s.style, Style) and s.style.link for s in text.spans):
        return text
    plain = text.copy()
    spans = []
    for span in text.spans:
        if isinstance(span.style, Style) and span.style.link:
            span = Span(span.start, span.end, span.style.update_link(None))
        if span.style and span.style != Style():  # a span that only linked goes
            spans.append(span)
    plain.spans = spans
    return plain


class ReportList(RowList):
    """Lines of a report; enter on a row shows its ops in the IR."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "enter", "select", "Show in IR", tooltip="Show the row's ops in the IR tab", show=True
        ),
    ]

    def __init__(self, lines: Sequence[Line] = (), *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.lines: list[Line] = []
        self.show(lines)

    def show(self, lines: Sequence[Line]) -> None:
        """Show `lines`, the first row highlighted."""
        self.lines = list(lines)
        self.set_options(
            Option(without_links(line.text), disabled=not line.selectable) for line in self.lines
        )
        self.highlighted = next(
            (index for index, line in enumerate(self.lines) if line.selectable), None
        )

    @property
    def current(self) -> Line | None:
        """The highlighted row."""
        index = self.highlighted
        return self.lines[index] if index is not None and index < len(self.lines) else None

    @on(OptionList.OptionSelected)
    def _chosen(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        line = self.lines[event.option_index]
        jump = line.jump() if line.jump is not None else None
        if jump is not None and jump.ops:
            self.post_message(ShowOps(jump.ops, jump.label))
        else:
            self.notify(line.note or "This row has no op in the IR.", timeout=3)

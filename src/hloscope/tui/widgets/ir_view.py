"""The module's printed text, virtualised: only the lines on screen are rendered.

A 100,000-op module prints as hundreds of thousands of lines; this view renders
a line when it scrolls into sight (the Line API), highlights it then, and keeps a
few screens of rendered lines. Moving the cursor costs the same on any module.

The diff screen shows two of these side by side: each shows its module's lines
on the rows the diff aligned (a row of the other side only is blank here), with
the lines coloured by what changed, and each follows the other's cursor and
scrolling.
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping, Sequence
from typing import ClassVar

from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding, BindingType
from textual.cache import LRUCache
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from hloscope.ir.model import Module
from hloscope.tui.highlight import highlight_line
from hloscope.tui.printed import PrintedModule

CURSOR = Style(bgcolor="grey27")
GUTTER = Style(color="bright_black")
SOURCE = Style(color="green", italic=True)
HIT = Style(bgcolor="dark_goldenrod", color="black")
# Lines are cut here on screen (a serialized kernel in `backend_config` can print as
# a megabyte on one line); search still reads the whole line.
MAX_SHOWN_CHARS = 4000


class IRView(ScrollView, can_focus=True):
    """The printed module with a cursor line; the cursor's op is the selection."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up,k", "cursor(-1)", "Line up", show=False),
        Binding("down,j", "cursor(1)", "Line down", show=False),
        Binding("pageup,ctrl+b", "page(-1)", "Page up", show=False),
        Binding("pagedown,ctrl+f,space", "page(1)", "Page down", show=False),
        Binding("ctrl+u", "half_page(-1)", "Half a page up", show=False),
        Binding("ctrl+d", "half_page(1)", "Half a page down", show=False),
        Binding("home,g", "first", "First line", show=False),
        Binding("end,G", "last", "Last line", show=False),
        Binding("left,h", "sideways(-8)", "Scroll left", show=False),
        Binding("right,l", "sideways(8)", "Scroll right", show=False),
        Binding("{", "function(-1)", "Previous function", show=False),
        Binding("}", "function(1)", "Next function", show=False),
        Binding("enter", "follow", "Follow: a call's callee, else the op's links", show=False),
    ]

    class CursorMoved(Message):
        """The user moved the cursor onto `op_id`'s line (-1: a line outside ops, or a
        blank row); `row` is the cursor's row."""

        def __init__(self, op_id: int, row: int = -1) -> None:
            self.op_id = op_id
            self.row = row
            super().__init__()

    class Follow(Message):
        """Enter was pressed on `op_id`'s line."""

        def __init__(self, op_id: int) -> None:
            self.op_id = op_id
            super().__init__()

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.module: Module | None = None
        self.printed: PrintedModule | None = None
        self.hlo = False
        self.rows: Sequence[int] | None = None
        """The line shown on each row when filtered (sorted), or aligned with another
        view (-1: a blank row); None: every line."""
        self.marks: tuple[tuple[frozenset[int], Style], ...] = ()
        """Op sets that stand out, with their colour (host ops, ...)."""
        self.hits: frozenset[int] = frozenset()
        """Lines the current search matched."""
        self.sources = False
        """Append each op's source line (`model.py:42`) to its line: with locations
        shown, MLIR prints them as aliases (`loc(#loc12)`) defined at the end."""
        self.line_styles: Mapping[int, Style] = {}
        """Lines drawn in a colour of their own (the diff's added, removed and changed
        lines): its colour marks the gutter and the op name, its background the row."""
        self.copy_rows: Mapping[int, Style] = {}
        """Rows that show a line again away from its place (the diff's copy of a line
        beside its pair), with their style instead of the line's: `»` in the gutter."""
        self.follower: IRView | None = None
        """A view that keeps the same cursor row and scrolling as this one."""
        self.min_width = 0
        """Scroll sideways as if lines were at least this long (the follower's are)."""
        self.cursor = 0
        """The cursor's row."""
        self._gutter = 0
        self._cache: LRUCache[int, Strip] = LRUCache(1024)

    # -- content ------------------------------------------------------------------

    def show_module(
        self,
        module: Module | None,
        printed: PrintedModule,
        *,
        hlo: bool,
        marks: tuple[tuple[frozenset[int], Style], ...] = (),
        sources: bool = False,
        line_styles: Mapping[int, Style] | None = None,
    ) -> None:
        self.module = module
        self.printed = printed
        self.hlo = hlo
        self.sources = sources
        self.marks = marks
        self.line_styles = line_styles or {}
        self.copy_rows = {}
        self.rows = None
        self.hits = frozenset()
        self.cursor = 0
        self._gutter = len(str(len(printed.lines))) + 2
        self._reset()

    def set_rows(self, rows: Sequence[int] | None) -> None:
        """Show only `rows` (sorted line numbers), or every line; the cursor stays on
        its line, or the nearest one shown."""
        line = self.cursor_line
        self.rows = rows
        self.cursor = self._row_of(line) if line is not None else 0
        self._reset()
        self.scroll_to_cursor(centre=True)

    def show_rows(self, rows: Sequence[int], copy_rows: Mapping[int, Style] | None = None) -> None:
        """Show a line per row as given (-1: a blank row), the cursor on the first
        row: the diff screen's alignment (`copy_rows`: the rows that show a line
        again, beside its pair, and their style)."""
        self.rows = rows
        self.copy_rows = copy_rows or {}
        self.cursor = 0
        self._reset()

    def set_hits(self, hits: frozenset[int]) -> None:
        self.hits = hits
        self._cache.clear()
        self.refresh()

    def _reset(self) -> None:
        self._cache.clear()
        longest = min(self.printed.width, MAX_SHOWN_CHARS + 40) if self.printed else 0
        longest = max(longest, min(self.min_width, MAX_SHOWN_CHARS + 40))
        width = self._gutter + longest + (60 if self.sources else 0)
        self.virtual_size = Size(width, self.row_count)
        self.refresh()

    @property
    def row_count(self) -> int:
        if self.printed is None:
            return 0
        return len(self.rows) if self.rows is not None else len(self.printed.lines)

    def line_at(self, row: int) -> int:
        """The line on `row` (-1: a blank row)."""
        return self.rows[row] if self.rows is not None else row

    def _row_of(self, line: int) -> int:
        """The row showing `line`, or the nearest row after it (before it at the end)."""
        if self.rows is None:
            return max(0, min(line, self.row_count - 1))
        row = bisect.bisect_left(self.rows, line)
        return max(0, min(row, len(self.rows) - 1))

    @property
    def cursor_line(self) -> int | None:
        """The line under the cursor; None on a blank row or in an empty view."""
        if self.row_count == 0:
            return None
        line = self.line_at(self.cursor)
        return line if line >= 0 else None

    @property
    def cursor_op(self) -> int:
        line = self.cursor_line
        if line is None or self.printed is None:
            return -1
        return self.printed.line_op[line]

    # -- moving -------------------------------------------------------------------

    def go_to_line(self, line: int, *, centre: bool = True) -> None:
        """Put the cursor on `line` (without telling anyone: the caller selected)."""
        self._set_cursor(self._row_of(line), centre=centre, notify=False)

    def go_to_row(self, row: int, *, centre: bool = True) -> None:
        """Put the cursor on `row` (without telling anyone: the caller selected)."""
        self._set_cursor(row, centre=centre, notify=False)

    def _set_cursor(self, row: int, *, centre: bool = False, notify: bool = True) -> None:
        count = self.row_count
        if count == 0:
            return
        row = max(0, min(row, count - 1))
        old = self.cursor
        self.cursor = row
        self._cache.discard(old)
        self._cache.discard(row)
        self.refresh()
        self.scroll_to_cursor(centre=centre)
        self._lead()
        if notify and row != old:
            self.post_message(self.CursorMoved(self.cursor_op, row))

    def _lead(self) -> None:
        """Give the follower this view's cursor row and scrolling."""
        other = self.follower
        if other is None or other.row_count != self.row_count:
            return
        if other.cursor != self.cursor:
            other._cache.discard(other.cursor)
            other.cursor = self.cursor
            other._cache.discard(other.cursor)
            other.refresh()
        if (other.scroll_x, other.scroll_y) != (self.scroll_x, self.scroll_y):
            other.scroll_to(self.scroll_x, self.scroll_y, animate=False, immediate=True)

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        self._lead()

    def watch_scroll_x(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_x(old_value, new_value)
        self._lead()

    def scroll_to_cursor(self, *, centre: bool = False) -> None:
        if not self.allow_vertical_scroll and self.virtual_size.height > self.size.height:
            # Lines shown before the layout has given the view its scrollbar (the
            # first screen): scrolling now does nothing, so scroll again once it has.
            self.call_after_refresh(self._scroll_to_cursor, centre)
        self._scroll_to_cursor(centre)

    def _scroll_to_cursor(self, centre: bool) -> None:
        height = max(1, self.scrollable_content_region.height)
        top = round(self.scroll_y)
        if centre or not top <= self.cursor < top + height:
            if centre:
                target = self.cursor - height // 2
            elif self.cursor < top:
                target = self.cursor
            else:
                target = self.cursor - height + 1
            self.scroll_to(y=max(0, target), animate=False, immediate=True)

    def action_cursor(self, delta: int) -> None:
        self._set_cursor(self.cursor + delta)

    def action_page(self, direction: int) -> None:
        height = max(1, self.scrollable_content_region.height)
        self._set_cursor(self.cursor + direction * height)

    def action_half_page(self, direction: int) -> None:
        height = max(1, self.scrollable_content_region.height)
        self._set_cursor(self.cursor + direction * (height // 2))

    def action_first(self) -> None:
        self._set_cursor(0)

    def action_last(self) -> None:
        self._set_cursor(self.row_count - 1)

    def action_sideways(self, delta: int) -> None:
        self.scroll_to(x=max(0, self.scroll_x + delta), animate=False)

    def action_function(self, direction: int) -> None:
        """The header of the next (previous) function."""
        if self.printed is None or self.cursor_line is None:
            return
        starts = sorted(self.printed.function_lines.values())
        line = self.cursor_line
        if direction > 0:
            index = bisect.bisect_right(starts, line)
            target = starts[index] if index < len(starts) else None
        else:
            index = bisect.bisect_left(starts, line) - 1
            target = starts[index] if index >= 0 else None
        if target is not None:
            self._set_cursor(self._row_of(target), centre=False)

    def action_follow(self) -> None:
        self.post_message(self.Follow(self.cursor_op))

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is not None:
            self._set_cursor(round(self.scroll_y) + offset.y)

    def on_resize(self) -> None:
        self._cache.clear()

    # -- rendering ----------------------------------------------------------------

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        row = scroll_y + y
        width = self.scrollable_content_region.width
        line_number = self.line_at(row) if self.printed is not None and row < self.row_count else -1
        if line_number < 0:
            blank = Strip.blank(width, self.rich_style)
            return (
                blank.apply_style(CURSOR) if row == self.cursor and row < self.row_count else blank
            )
        strip = self._cache.get(row)
        if strip is None:
            strip = self._render_row(row)
            self._cache[row] = strip
        gutter = strip.crop(0, self._gutter)
        body = strip.crop(self._gutter + scroll_x, self._gutter + scroll_x + width - self._gutter)
        line = Strip.join([gutter, body]).extend_cell_length(width, self.rich_style)
        tint = self.copy_rows.get(row, self.line_styles.get(line_number))
        if tint is not None and tint.bgcolor is not None:
            line = line.apply_style(Style(bgcolor=tint.bgcolor))
        if row == self.cursor:
            line = line.apply_style(CURSOR)
        return line.apply_offsets(scroll_x, row)

    def _render_row(self, row: int) -> Strip:
        assert self.printed is not None
        printed = self.printed
        line = self.line_at(row)
        text = printed.lines[line]
        op_id = printed.line_op[line]
        own = op_id >= 0 and printed.own_line[op_id] and printed.op_line[op_id] == line
        mark_style: Style | None = None
        if own:
            for ops, style in self.marks:
                if op_id in ops:
                    mark_style = style
                    break
        copy = row in self.copy_rows
        tint = self.copy_rows[row] if copy else self.line_styles.get(line)
        if tint is not None:
            mark_style = Style(color=tint.color, bold=tint.bold)
        number = str(line + 1).rjust(self._gutter - 2)
        mark = "»" if copy else "▌" if mark_style else " "
        gutter = [
            Segment(number, GUTTER),
            Segment(mark, GUTTER if copy and mark_style is None else mark_style),
        ]
        gutter.append(Segment(" "))
        cut = len(text) - MAX_SHOWN_CHARS
        if cut > 0:
            text = text[:MAX_SHOWN_CHARS]
        body = highlight_line(text, hlo=self.hlo, op_line=own, op_style=mark_style)
        if cut > 0:
            body.append(f" … {cut:,} more characters", style=GUTTER)
        if self.sources and own and self.module is not None:
            source = self.module.ops[op_id].location.source
            if source is not None:
                body.append(f"  ◂ {source}", style=SOURCE)
        if line in self.hits:
            body.stylize(HIT, 0, len(text.rstrip()))
        segments = gutter + list(body.render(self.app.console))
        return Strip(segments).simplify()

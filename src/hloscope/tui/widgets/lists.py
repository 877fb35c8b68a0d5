"""Lists and tables that move as `less` and `vim` do, the same in every view: `j`/`k`
a row, `g`/`G` the first and last, PageUp/PageDown a page, and the cursor stops at
the first and last rows instead of wrapping around (textual's `OptionList` wraps).
"""

from __future__ import annotations

from typing import ClassVar

from textual.binding import Binding, BindingType
from textual.widgets import DataTable, OptionList


class RowList(OptionList):
    """An option list whose cursor stops at its edges; disabled options are skipped."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("j", "cursor_down", "Next row", show=False),
        Binding("k", "cursor_up", "Previous row", show=False),
        Binding("g", "first", "First row", show=False),
        Binding("G", "last", "Last row", show=False),
    ]

    def action_cursor_down(self) -> None:
        self._step(1)

    def action_cursor_up(self) -> None:
        self._step(-1)

    def _step(self, direction: int) -> None:
        """The next enabled option in `direction`; none past the edge."""
        count = self.option_count
        if count == 0:
            return
        start = self.highlighted
        if start is None:
            start = -1 if direction > 0 else count
        index = start + direction
        while 0 <= index < count:
            if not self.get_option_at_index(index).disabled:
                self.highlighted = index
                return
            index += direction


class RowTable(DataTable[object]):
    """A table with the same keys as every list (`j`/`k`, `g`/`G`); textual's
    `DataTable` already stops at its edges."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("j", "cursor_down", "Next row", show=False),
        Binding("k", "cursor_up", "Previous row", show=False),
        Binding("g", "scroll_top", "First row", show=False),
        Binding("G", "scroll_bottom", "Last row", show=False),
    ]

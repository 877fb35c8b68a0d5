"""Source lines in a table cell, for the text reports and the browser alike: the
user's own line (`user_source`) first, the libraries' lines beside it, and never a
line number cut off: a long path loses its middle (`tests/…/models.py:59`), a list
too long for its cell loses whole entries (`… 3 more`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol

from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from hloscope.render.text.common import source_text

ELLIPSIS = "…"

YOUR_LINE = "your line"
"""The header of the column of `user_source`."""
MAX_USER_SOURCE_CHARS = 40


class WithSources(Protocol):
    """A fusion, an unfused op or a buffer: what made it."""

    @property
    def sources(self) -> tuple[str, ...]: ...

    @property
    def user_source(self) -> str | None: ...

    @property
    def library_sources(self) -> tuple[str, ...]: ...


def elide_source(source: str, limit: int) -> str:
    """`file.py:LINE` in at most `limit` characters where it can be: the start of
    the path, `…/`, and the file's name with its line (`tests/…/models.py:59`). The
    file's name and the line number are never cut: when even they do not fit, they
    are returned whole."""
    if len(source) <= limit:
        return source
    folder, slash, name = source.rpartition("/")
    if not slash:
        return source
    room = limit - len(name) - len(ELLIPSIS + "/")
    if room < 0:
        return ELLIPSIS + "/" + name if limit >= len(name) + 2 else name
    # Whole folders (`.venv/lib/…/update.py:42`): a folder's name cut short could read
    # as another (`python3.…`).
    kept = folder[:room]
    if folder[len(kept) : len(kept) + 1] != "/":
        kept = kept[: kept.rindex("/") + 1] if "/" in kept else ""
    return kept + ELLIPSIS + "/" + name


class ElidedSource:
    """A table cell holding one `file.py:LINE` that, when the column is narrower,
    gives up the middle of its path (`elide_source`), never its line number."""

    def __init__(self, source: str, style: str = "") -> None:
        self.source = source
        self.style = style

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        shortest = len(elide_source(self.source, 0))
        return Measurement(shortest, len(self.source))

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        shown = elide_source(self.source, options.max_width)
        text = source_text(self.source, shown, style=self.style)
        text.no_wrap = True
        yield text


def grouped_sources(sources: Sequence[str], only_file: str | None = None) -> list[str]:
    """`a/x.py:3`, `a/x.py:7`, `b/y.py:1` -> [`x.py:3,7`, `y.py:1`]: one entry per
    file, named by its last part, in order of first appearance; just [`3,7`] when
    every source is in `only_file`."""
    by_file = _lines_by_file(sources)
    if only_file is not None and set(by_file) <= {only_file}:
        return [",".join(by_file.get(only_file, []))] if by_file else []
    return [f"{file.rpartition('/')[2]}:{','.join(lines)}" for file, lines in by_file.items()]


def _lines_by_file(sources: Sequence[str]) -> dict[str, list[str]]:
    by_file: dict[str, list[str]] = {}
    for source in sources:
        file, _, line = source.rpartition(":")
        by_file.setdefault(file, []).append(line)
    return by_file


def linked_entries(
    sources: Sequence[str], only_file: str | None = None, spaced: bool = False, style: str = ""
) -> list[Text]:
    """`grouped_sources` (with `spaced`, `_spaced`), each entry a link to its file
    (`source_text`)."""
    entries = grouped_sources(sources, only_file)
    files = list(_lines_by_file(sources).items())[: len(entries)]
    return [
        source_text(f"{file}:{lines[0]}", _spaced(entry) if spaced else entry, style=style)
        for entry, (file, lines) in zip(entries, files, strict=True)
    ]


def fit_entries(entries: Sequence[str], width: int, separator: str = ", ") -> str:
    """As many whole `entries` as fit in `width` characters, then `… N more`; the
    first entry is kept whole even when it alone is wider."""
    shown: list[str] = []
    used = 0
    for index, entry in enumerate(entries):
        rest = len(entries) - index - 1
        more = f"{separator}{ELLIPSIS} {rest} more" if rest else ""
        cost = len(entry) + (len(separator) if shown else 0)
        if shown and used + cost + len(more) > width:
            shown.append(f"{ELLIPSIS} {len(entries) - index} more")
            return separator.join(shown)
        shown.append(entry)
        used += cost
    return separator.join(shown)


def widest(entries: Sequence[str]) -> int:
    """The width of the widest entry: a column that wraps between entries needs at
    least this much not to cut one."""
    return max((len(entry) for entry in entries), default=0)


def _single_file(sources: Iterable[str]) -> str | None:
    """The one file all `sources` are in, if they are all in one."""
    files = {source.rpartition(":")[0] for source in sources}
    return files.pop() if len(files) == 1 else None


def _spaced(entry: str) -> str:
    """`transform.py:294,298` -> `transform.py:294, 298`: a library file's many lines
    wrap between numbers, never inside one."""
    return entry.replace(",", ", ")


LINES_WIDTH = 10
"""The widest a source-line column of a text table is made for its entries' sake."""


class SourceColumn:
    """The source-line column of a table of fusions, unfused ops or buffers. Where every
    line is the user's: the lines (just the numbers when they are all in one file,
    which the caption names). Where libraries made some: the user's own line first
    (`user_source`, bold; just the number when those are all in one file), then the
    libraries' lines (dim). The column wraps between entries, never inside one, so
    no line number is cut."""

    def __init__(self, rows: Sequence[WithSources]) -> None:
        self.split = any(row.library_sources for row in rows)
        if self.split:
            self.only_file = _single_file(row.user_source for row in rows if row.user_source)
        else:
            self.only_file = _single_file(s for row in rows for s in row.sources)
        # As wide as the widest entry, up to LINES_WIDTH: a longer list of one file's
        # lines wraps between its numbers (`43, 44, 45,` / `51, 73`), not cutting the
        # table's numbers to fit.
        whole = max((widest(self._entries(row)) for row in rows), default=0)
        self.spaced = self.split or whole > LINES_WIDTH
        self.words = max((widest(self._words(row)) for row in rows), default=0)
        self.whole = max(
            (
                widest([_spaced(e) if self.spaced else e for e in self._entries(row)])
                for row in rows
            ),
            default=0,
        )
        self.width = max(min(whole, LINES_WIDTH), self.words)

    def _mine(self, row: WithSources) -> str | None:
        if row.user_source is None:
            return None
        if self.only_file is not None:
            return row.user_source.rpartition(":")[2]
        return elide_source(row.user_source, MAX_USER_SOURCE_CHARS)

    def _entries(self, row: WithSources) -> list[str]:
        if not self.split:
            return grouped_sources(row.sources, self.only_file)
        mine = self._mine(row)
        return [*([mine] if mine else []), *grouped_sources(row.library_sources)]

    def _words(self, row: WithSources) -> list[str]:
        """What the text report's cell may wrap between: entries, and the line
        numbers of a file where a column's entries are too wide for it
        (`transform.py:294,` `298`)."""
        if not self.spaced:
            return self._entries(row)
        return [word for entry in self._entries(row) for word in _spaced(entry).split()]

    def header(self, name_file: bool = False) -> str:
        """The column's header; with `name_file`, the one file (where there is one)
        named in it, for a table without a caption."""
        file = f" of {self.only_file.rpartition('/')[2]}" if name_file and self.only_file else ""
        if self.split:
            return f"{YOUR_LINE}{file} + libs"
        return f"lines{file}" if self.only_file else "source lines"

    def add_to(self, table: Table) -> None:
        # As wide as its widest entry where the table has room; where it has not, it
        # wraps between entries (and a long list between its numbers) before the
        # table cuts another column, never narrower than its widest word.
        header = self.header()
        table.add_column(
            header,
            min_width=max(self.words, len(header)) if self.spaced else max(self.width, len(header)),
            max_width=max(self.whole, len(header)),
        )

    def cell(self, row: WithSources) -> RenderableType:
        if not self.split:
            entries = linked_entries(row.sources, self.only_file, spaced=self.spaced)
            return Text(" ").join(entries) if entries else Text("-", style="dim")
        text = Text()
        mine = self._mine(row)
        if mine:
            text.append(source_text(row.user_source, mine, style="bold"))
        else:
            text.append("-", style="dim")
        for entry in linked_entries(row.library_sources, spaced=True, style="dim"):
            text.append(" ")
            text.append(entry)
        return text

    def fitted(self, row: WithSources, width: int) -> Text:
        """The cell in at most `width` cells, for a column of fixed width (the
        browser's): whole entries, then `… N more`."""
        entries = self._entries(row)
        if not entries:
            return Text("-", style="dim")
        text = Text(fit_entries(entries, width, separator=" "))
        mine = self._mine(row) if self.split else None
        if mine is not None:
            text.stylize("bold", 0, len(mine))
            text.stylize("dim", len(mine))
        return text

    def caption(self) -> str | None:
        if not self.split:
            return f"lines of {self.only_file}" if self.only_file else None
        where = f"a line of {self.only_file}" if self.only_file else "a line"
        return f"{YOUR_LINE}: {where} (the innermost frame in your code), then the libraries' lines"

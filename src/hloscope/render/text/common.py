"""What the text renderers share: the console, numbers, sizes and times for
people, where a module came from, source lines, pytree paths shortened by their
middle, and the header, table and notes layouts every report uses.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import IO

from rich import box
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.measure import Measurement
from rich.segment import Segment
from rich.style import Style
from rich.table import Table
from rich.text import Text

from hloscope.errors import reader_gone
from hloscope.reports import Timings
from hloscope.stages import CompiledFor, Source

Cell = str | Text
"""A table cell, in a table of a text report or of the browser."""

MAX_FUNCTIONS = 40


MAX_NAMES_IN_CELL = 6


class ReportConsole(Console):
    """A console whose reader may go away (`hloscope ... --print | head -1`): then
    hloscope ends quietly with exit 0 (rich's own answer is exit 1, which reads as
    'a difference was found')."""

    def on_broken_pipe(self) -> None:
        reader_gone()

    def render(
        self, renderable: RenderableType, options: ConsoleOptions | None = None
    ) -> Iterable[Segment]:
        """What rich renders, without the links of source lines (`source_text`) under
        NO_COLOR: rich keeps links there, where it drops colours. (In a pipe rich
        writes no escape codes at all, links included.)"""
        segments = super().render(renderable, options)
        if not self.no_color:
            return segments
        return (
            Segment(text, style.update_link(None), control)
            if style is not None and style.link
            else Segment(text, style, control)
            for text, style, control in segments
        )


def make_console(file: IO[str] | None = None) -> Console:
    """A console for stdout: the terminal's width, or 120 columns in a pipe."""
    stream = file or sys.stdout
    is_tty = hasattr(stream, "isatty") and stream.isatty()
    width = None if is_tty else max(120, shutil.get_terminal_size((120, 24)).columns)
    return ReportConsole(file=stream, width=width, highlight=False, soft_wrap=False)


def seconds(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value * 1000:.0f} ms" if value < 1 else f"{value:.2f} s"


def ir_label(ir: str) -> str:
    """The words for a module's IR (`Source.ir`) in every view: `HLO (XLA's own form)`,
    never `hlo-native`."""
    return {
        "stablehlo": "StableHLO",
        "vhlo": "StableHLO (from a portable VHLO artifact)",
        "hlo": "HLO (converted to MLIR)",
        "hlo-native": "HLO (XLA's own form)",
        "mlir": "MLIR",
    }.get(ir, ir)


def describe_source(source: Source) -> str:
    stage = "optimized" if source.stage == "optimized" else "lowered"
    ir = ir_label(source.ir)
    read = {
        "entrypoint": "entrypoint",
        "python-object": "Python object",
        "mlir-text": "MLIR text",
        "mlir-bytecode": "MLIR bytecode",
        "hlo-text": "HLO text",
        "hlo-proto": "HLO proto",
        "jax-exported": "serialized jax.export.Exported",
    }.get(source.format, source.format)
    text = f"{read}, {stage} module, {ir}"
    if source.path and source.kind == "dump" and source.path != source.target:
        text += f" from {source.path}"
    compiled_for = compiled_for_text(source.compiled_for)
    if compiled_for:
        text += f", {compiled_for}"
    return text


def compiled_for_text(compiled_for: CompiledFor | None) -> str:
    """`compiled for tpu:v5e:2x4 (8 × TPU v5 lite; libtpu 0.0.42.1, without the
    device)`; empty for the local backend (what every report was compiled for unless
    `--for` said otherwise)."""
    if compiled_for is None or compiled_for.spec is None:
        return ""
    devices = f"{compiled_for.devices} × {compiled_for.device_kind}"
    if compiled_for.devices != compiled_for.platform_devices:
        devices = f"{compiled_for.devices} of {compiled_for.platform_devices} × "
        devices += compiled_for.device_kind
    compiler = " ".join(p for p in (compiled_for.compiler, compiled_for.compiler_version) if p)
    how = "without the device" if compiled_for.deviceless else "on the device"
    if compiled_for.autotuned is False:
        how += ", not autotuned"
    return f"compiled for {compiled_for.spec} ({devices}; {compiler}, {how})"


def header_table(rows: list[tuple[str, RenderableType]]) -> Table:
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold cyan", no_wrap=True)
    table.add_column()
    for key, value in rows:
        table.add_row(key, value)
    return table


def notes_group(notes: tuple[str, ...]) -> RenderableType | None:
    if not notes:
        return None
    lines = [Text("Notes", style="bold")]
    lines.extend(Text(f" • {note}", style="yellow") for note in notes)
    return Group(*lines)


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}" + ("" if count == 1 else "s")


def clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


# A pytree path's steps: a leading name, `[0]`, `['key']` (quotes may hold `]`), `.attr`.
PATH_STEP = re.compile(r"""\[(?:'[^']*'|"[^"]*"|[^\]]*)\]|\.[^.\[]+|[^.\[]+""")

ELLIPSIS = "…"


def path_steps(path: str) -> list[str]:
    """`args[1]['params']` → `['args', '[1]', "['params']"]`; the steps join back to `path`."""
    steps = PATH_STEP.findall(path)
    return steps if "".join(steps) == path else [path]


def elide_path(path: str, limit: int, among: Iterable[str] = ()) -> str:
    """`path` in at most `limit` characters, its middle elided, keeping its end, which
    tells leaves apart (`args[1]…['attn']['_query_norm']['scale']`). Every path is
    shortened here, in the text reports and the browser alike.

    `among` are the other paths of its column: the shortened path names none of them
    (`opt_state[0].mu…['ln1']`, never an `opt_state[0]…['ln1']` that could be `.nu`'s
    too), so what is elided is what the rows share. Preferred: the root (with its
    index, when it is one) and as many whole trailing steps as fit, then more leading
    steps where the rows need them to differ; failing that, the trailing steps alone;
    failing even that, the last characters."""
    if len(path) <= limit:
        return path
    if limit <= 1:
        return ELLIPSIS[:limit]
    others = tuple(p for p in among if p != path)
    return _elided(path, limit, others)


@functools.lru_cache(maxsize=8192)
def _elided(path: str, limit: int, others: tuple[str, ...]) -> str:
    steps = path_steps(path)
    root = 2 if len(steps) > 2 and re.fullmatch(r"\[\d+\]", steps[1]) else 1
    room = limit - len(ELLIPSIS)
    best: tuple[tuple[int, int, int, int], str] | None = None
    # Keep steps[:i] and steps[j:]: the root and more (or nothing), and a tail.
    for i in (0, *range(root, len(steps) - 1)):
        head = "".join(steps[:i])
        for j in range(max(i + 1, 1), len(steps)):
            tail = "".join(steps[j:])
            if len(head) + len(tail) > room:
                continue
            names_another = any(o.startswith(head) and o.endswith(tail) for o in others)
            # Distinct first, then the root kept, the longest tail, the shortest head.
            score = (not names_another, i > 0, len(tail), -len(head))
            if best is None or score > best[0]:
                best = (score, head + ELLIPSIS + tail)
    if best is not None and not best[0][0]:
        # No one stretch elided tells it apart: keep the step that does between two
        # (`…mu…['down']`, where `opt_state[0]…['down']` is `.nu`'s too).
        for i in (0, root):
            head = "".join(steps[:i])
            for j in range(i + 2, len(steps)):
                tail = "".join(steps[j:])
                for m in range(i + 1, j - 1):
                    shown = head + ELLIPSIS + steps[m] + ELLIPSIS + tail
                    if len(shown) > limit:
                        continue
                    kept = [head, steps[m], tail]
                    if any(_holds(o, kept) for o in others):
                        continue
                    score = (True, i > 0, len(tail), -len(head) - len(steps[m]))
                    if score > best[0]:
                        best = (score, shown)
    if best is not None:
        return best[1]
    return ELLIPSIS + path[len(path) - limit + 1 :]


def _holds(other: str, kept: Sequence[str]) -> bool:
    """Whether `other` reads as the path shortened to `kept` (its head, a middle step,
    its tail, with elisions between)."""
    head, middle, tail = kept
    if not (other.startswith(head) and other.endswith(tail)):
        return False
    return middle in other[len(head) : len(other) - len(tail)]


class ElidedPath:
    """A table cell holding a pytree path that, when the table is narrower than the
    path, gives up its middle (`elide_path`, told the column's other paths `among`)
    rather than its end or wrapping."""

    MIN_WIDTH = 24

    def __init__(self, path: str, style: str = "", among: tuple[str, ...] = ()) -> None:
        self.path = path
        self.style = style
        self.among = among

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement(min(len(self.path), self.MIN_WIDTH), len(self.path))

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        shown = elide_path(self.path, options.max_width, self.among)
        yield Text(shown, style=self.style, no_wrap=True)


def elide_middle(word: str, limit: int) -> str:
    """`word` in at most `limit` characters, its middle elided: a name keeps its start
    and its end (`bitcast_dyn…slice_fusion.22`), which tell names apart; never split
    over two lines."""
    if len(word) <= limit:
        return word
    if limit <= 1:
        return ELLIPSIS[:limit]
    head = (limit - 1) // 2
    tail = len(word) - (limit - 1 - head)
    # Never through a number (`fusion.2…` of `fusion.22`): the cut moves to its edge.
    while head > 0 and word[head - 1].isdigit() and word[head].isdigit():
        head -= 1
    while tail < len(word) and word[tail - 1].isdigit() and word[tail].isdigit():
        tail += 1
    return word[:head] + ELLIPSIS + word[tail:]


class Entries:
    """A table cell holding a list (names, source lines, ops) that gives way: the
    entries wrap between entries, never inside one, on at most `max_lines` lines of the
    column's width, then `… N more`; an entry wider than the column loses its middle
    (`elide_middle`). It asks for little room, so that in a narrow table this column
    yields and the numbers keep theirs."""

    def __init__(
        self,
        entries: Iterable[Cell],
        *,
        max_lines: int = 2,
        more: int = 0,
        separator: str = ", ",
        min_width: int = 16,
        style: str = "",
        shorten: Callable[[str, int], str] = elide_middle,
    ) -> None:
        self.entries = [e if isinstance(e, Text) else Text(e) for e in entries]
        self.shorten = shorten
        """How an entry wider than the column is shortened: `elide_middle`, or
        `elide_source` for source lines (`src/…/model.py:12`)."""
        self.max_lines = max_lines
        self.more = more
        self.separator = separator
        self.min_width = min_width
        self.style = style

    def _widest(self) -> int:
        whole = self._lines(10**6)
        return max((line.cell_len for line in whole), default=0)

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        widest = self._widest()
        return Measurement(min(widest, self.min_width), widest)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        lines = self._lines(max(options.max_width, 1))
        yield Text("\n", style=self.style, no_wrap=True).join(lines)

    def _lines(self, width: int) -> list[Text]:
        """The entries in lines of at most `width` cells, at most `max_lines` of them; a
        line that goes on ends with the separator (`a, b,`). An entry wider than a line
        wraps between its words (`broadcast_in_dim` `×2`), never inside one."""
        sep, glue = self.separator, self.separator.rstrip()
        total = len(self.entries) + self.more
        lines: list[Text] = []
        line = Text(style=self.style)
        shown = 0
        before: list[tuple[list[Text], Text]] = []
        for index, entry in enumerate(self.entries):
            final = index == total - 1
            before.append(([x.copy() for x in lines], line.copy()))
            placed = True
            # Wider than a line (with the separator that may end it): its words.
            fits = entry.cell_len <= width - (0 if final else len(glue))
            tokens = [entry] if fits else list(entry.split(" "))
            for k, token in enumerate(tokens):
                ends_entry = k == len(tokens) - 1
                if token.cell_len > width - (0 if final and ends_entry else len(glue)):
                    room = max(width - (0 if final and ends_entry else len(glue)), 1)
                    token = Text(self.shorten(token.plain, room), style=token.style)
                joiner = (sep if k == 0 else " ") if line.plain else ""
                reserve = 0 if final or not ends_entry else len(glue)
                if line.plain and line.cell_len + len(joiner) + token.cell_len + reserve > width:
                    if len(lines) + 1 >= self.max_lines:
                        placed = False
                        break
                    if k == 0:
                        line.append(glue)
                    lines.append(line)
                    line = Text(style=self.style)
                    joiner = ""
                line.append(joiner)
                line.append_text(token)
            if not placed:
                lines, line = before.pop()
                break
            shown += 1
        rest = total - shown
        while rest:
            more = f"{ELLIPSIS} {rest} more"
            if not line.plain or line.cell_len + len(sep) + len(more) <= width:
                line.append(sep if line.plain else "")
                line.append(more, style="dim")
                break
            if len(lines) + 1 < self.max_lines:
                line.append(glue)
                lines.append(line)
                line = Text(more, style="dim")
                break
            if shown == 0 or not before:
                line = Text(more, style="dim")
                break
            # No room to say how many more: one entry fewer.
            lines, line = before.pop()
            shown -= 1
            rest += 1
        if line.plain:
            lines.append(line)
        return lines


class Named:
    """A table cell holding a name and a short suffix (`×2`): where the column is
    narrower, the name loses its middle (`elide_middle`) and the suffix stays; never
    wrapped over two lines."""

    def __init__(self, name: Cell, suffix: Cell = "", min_width: int = 16) -> None:
        self.name = name if isinstance(name, Text) else Text(name)
        self.suffix = suffix if isinstance(suffix, Text) else Text(suffix)
        self.min_width = min_width

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        full = self.name.cell_len + self.suffix.cell_len
        return Measurement(min(full, self.min_width), full)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        room = max(options.max_width - self.suffix.cell_len, 1)
        name = self.name
        if name.cell_len > room:
            name = Text(elide_middle(name.plain, room), style=name.style)
        yield Text.assemble(name, self.suffix, no_wrap=True)


class Squeezed:
    """A table cell of words (a name with what it shares, an op's JAX name) that gives
    way: it wraps between words on at most `max_lines` lines of the column's width, the
    last ending in `…` when more did not fit, and a word wider than the column loses
    its middle (`elide_middle`) rather than being split over two lines. It asks for
    little room, so that in a narrow table this column yields and numbers keep theirs."""

    def __init__(self, text: Cell, *, max_lines: int = 2, min_width: int = 16) -> None:
        self.text = text if isinstance(text, Text) else Text(text)
        self.max_lines = max_lines
        self.min_width = min_width

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        widest = self.text.cell_len
        return Measurement(min(widest, self.min_width), widest)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        width = max(options.max_width, 1)
        if self.text.cell_len <= width and "\n" not in self.text.plain:
            yield Text.assemble(self.text, no_wrap=True)
            return
        style = self.text.style
        lines: list[str] = []
        line = ""
        words = self.text.plain.split(" ")
        cut = False
        for word in words:
            word = elide_middle(word, width)
            if line and len(line) + 1 + len(word) > width:
                if len(lines) == self.max_lines - 1:
                    cut = True
                    break
                lines.append(line)
                line = word
            else:
                line = f"{line} {word}" if line else word
        if cut:
            # Whole words then ` …`: never a word (a number) cut short.
            while " " in line and len(line) + 2 > width:
                line = line.rsplit(" ", 1)[0]
            line = f"{line} {ELLIPSIS}" if len(line) + 2 <= width else ELLIPSIS
        lines.append(line)
        yield Text("\n".join(lines), style=style, no_wrap=True)


def add_row_giving_way(table: Table, cells: Sequence[RenderableType]) -> None:
    """A row whose words, in the columns that may wrap, give way as `Squeezed` does:
    wrapped between words, a name too wide for its column elided in its middle, never
    split over two lines (rich folds a long word)."""
    row: list[RenderableType] = []
    for column, cell in zip(table.columns, cells, strict=False):
        gives_way = not column.no_wrap and isinstance(cell, str | Text)
        row.append(Squeezed(cell, max_lines=3) if gives_way else cell)  # type: ignore[arg-type]
    table.add_row(*row)


class Heading:
    """A table row's first cell that heads the rows below it (`in FUNCTION`): it asks
    for no more width than the column's other cells have (`beside`) and, where it is
    wider, loses its middle (`elide_middle`)."""

    MIN_WIDTH = 24

    def __init__(self, text: str, style: str = "dim italic", beside: int = 0) -> None:
        self.text = text
        self.style = style
        self.beside = beside
        """The width of the column's other cells: the heading asks for no more (nor
        less than `MIN_WIDTH`)."""

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        width = min(len(self.text), max(self.beside, self.MIN_WIDTH))
        return Measurement(width, width)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield Text(elide_middle(self.text, options.max_width), style=self.style, no_wrap=True)


MAX_SHAPE_CHARS = 24
"""A tuple's shape longer than this wraps between its elements."""


def shape_cell(shape: str, max_lines: int = 4) -> str:
    """A shape for a column read whole: a tuple's long shape wrapped between its
    elements in lines of `MAX_SHAPE_CHARS` (or its widest element), at most `max_lines`
    of them, then `… N more)`, so that it does not take the table's width and no
    element (no number) is ever cut."""
    if len(shape) <= MAX_SHAPE_CHARS or not (shape.startswith("(") and shape.endswith(")")):
        return shape
    return shapes_cell(shape[1:-1].split(", "), max_lines, ("(", ")"))


def shapes_cell(shapes: list[str], max_lines: int = 4, brackets: tuple[str, str] = ("", "")) -> str:
    """`shapes` (an op's results) as `shape_cell` writes a tuple's elements."""
    if not shapes:
        return ""
    elements = [f"{e}," for e in shapes]
    elements[0] = brackets[0] + elements[0]
    elements[-1] = elements[-1][:-1] + brackets[1]
    width = max(MAX_SHAPE_CHARS, *(len(e) + 1 for e in elements))
    rows: list[list[str]] = []
    rest = 0
    for index, element in enumerate(elements):
        if rows and _shape_line_len(rows) + 1 + len(element) <= width:
            rows[-1].append(element)
        elif len(rows) < max_lines:
            rows.append([element])
        else:
            rest = len(elements) - index
            break
    if rest:
        # `… N more)` on the last line, in the width: elements make room for it.
        while True:
            more = f"{ELLIPSIS} {rest} more{brackets[1]}"
            if _shape_line_len(rows) + 1 + len(more) <= width or len(rows[-1]) == 1:
                break
            rows[-1].pop()
            rest += 1
        rows[-1].append(more)
    return "\n".join((" " if i else "") + " ".join(row) for i, row in enumerate(rows))


def _shape_line_len(rows: list[list[str]]) -> int:
    """The length of the last of `rows` as `shapes_cell` writes it (indented after the
    first)."""
    return len(" ".join(rows[-1])) + (1 if len(rows) > 1 else 0)


def names_text(names: tuple[str, ...]) -> str:
    if len(names) <= MAX_NAMES_IN_CELL:
        return ", ".join(names)
    return ", ".join(names[:MAX_NAMES_IN_CELL]) + f", … ({len(names)})"


def simple_table(title: str, columns: list[tuple[str, str, bool]]) -> Table:
    """Columns are (header, justify, no_wrap); a column justified right holds numbers,
    which never wrap (`add_number_column`)."""
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, show_edge=False)
    for column, justify, no_wrap in columns:
        if justify == "right":
            add_number_column(table, column)
        else:
            table.add_column(column, justify=justify, no_wrap=no_wrap)  # type: ignore[arg-type]
    return table


def add_number_column(table: Table, header: str) -> None:
    """A column of numbers (counts, sizes, `1.0 MiB → 2.0 MiB`), justified right: a
    number is read whole, so it never wraps; the table's other columns give way (their
    cells ask for little room: `ElidedPath`, `Entries`, `Squeezed`), so that rich never
    has to narrow this one."""
    table.add_column(header, justify="right", no_wrap=True)


def short_source(source: str | None) -> str:
    """`file.py:LINE` with the file relative to the working directory when below it."""
    if not source:
        return ""
    cwd = os.getcwd() + os.sep
    return source[len(cwd) :] if source.startswith(cwd) else source


def source_text(source: str | None, shown: str | None = None, style: str = "") -> Text:
    """`file.py:LINE` as a report shows it (`short_source`), or `shown` in its place (a
    shorter form, the line numbers alone); where the file is there, a link to it (its
    `file://` URL), which a terminal shows as a link (OSC 8). Every `file:line` of the
    text reports is made here; the console decides whether links are written: never
    in a pipe or under NO_COLOR (`ReportConsole`)."""
    text = Text(short_source(source) if shown is None else shown, style=style)
    url = source_url(source) if source else None
    if url is not None:
        text.stylize(Style(link=url))
    return text


def sentence_text(sentence: str, sources: Iterable[str | None], style: str = "") -> Text:
    """`sentence` with each of the `sources` it names (`file.py:LINE`) as `source_text`
    shows it: relative to the working directory, a link to its file."""
    named = sorted({s for s in sources if s}, key=len, reverse=True)
    text = Text(style=style)
    rest = sentence
    while True:
        hits = [(rest.find(s), -len(s), s) for s in named if s in rest]
        if not hits:
            text.append(rest)
            return text
        at, _, source = min(hits)
        text.append(rest[:at])
        text.append(source_text(source))
        rest = rest[at + len(source) :]


def source_url(source: str) -> str | None:
    """The `file://` URL of the file of `file.py:LINE` (relative to the working
    directory, or absolute); None when it names no file that is there."""
    file, _, line = source.rpartition(":")
    if not file or not line.isdigit():
        return None
    return _file_url(os.path.abspath(file))


@functools.lru_cache(maxsize=4096)
def _file_url(path: str) -> str | None:
    return Path(path).as_uri() if os.path.isfile(path) else None


def source_entries(sources: Iterable[str]) -> list[Text]:
    """`a.py:3`, `:7`, `b.py:2`: each source a link to its file, a file named once for
    its consecutive lines."""
    entries = []
    last_file = None
    for source in sources:
        short = short_source(source)
        file, _, line = short.rpartition(":")
        entries.append(source_text(source, f":{line}" if file == last_file else short))
        last_file = file
    return entries


def sources_text(sources: tuple[str, ...], limit: int = 4) -> Text:
    """`a.py:3, :7, b.py:2`: a file named once for its consecutive lines."""
    text = Text(", ").join(source_entries(sources[:limit]))
    if len(sources) > limit:
        text.append(f"{', ' if text.plain else ''}… {len(sources) - limit} more")
    return text


def timings_text(timings: Timings) -> str:
    """`load 526 ms · lower 39 ms · compile 122 ms`: the stages that ran."""
    parts = [f"load {seconds(timings.load_seconds)}"]
    if timings.lower_seconds is not None:
        parts.append(f"lower {seconds(timings.lower_seconds)}")
    if timings.compile_seconds is not None:
        cached = " (cached)" if timings.compile_cached else ""
        parts.append(f"compile {seconds(timings.compile_seconds)}{cached}")
    return " · ".join(parts)

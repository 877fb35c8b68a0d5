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
from collections.abc import Iterable
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


def describe_source(source: Source) -> str:
    stage = "optimized" if source.stage == "optimized" else "lowered"
    ir = {
        "stablehlo": "StableHLO",
        "vhlo": "StableHLO (from a portable VHLO artifact)",
        "hlo": "HLO (converted to MLIR)",
        "hlo-native": "HLO (XLA's own form)",
        "mlir": "MLIR",
    }.get(source.ir, source.ir)
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


def elide_path(path: str, limit: int) -> str:
    """`path` in at most `limit` characters, keeping its end, which tells leaves apart
    (`args[1]…['attn']['_query_norm']['scale']`): the root (with its index, when it is
    one) and as many whole trailing steps as fit, the middle elided; failing that, the
    trailing steps alone; failing even that, the last characters."""
    if len(path) <= limit:
        return path
    if limit <= 1:
        return ELLIPSIS[:limit]
    steps = path_steps(path)
    root = steps[:1]
    if len(steps) > 2 and re.fullmatch(r"\[\d+\]", steps[1]):
        root = steps[:2]
    with_root = _trailing_steps(steps[len(root) :], limit - len("".join(root)) - len(ELLIPSIS))
    alone = _trailing_steps(steps[1:], limit - len(ELLIPSIS))
    if with_root:
        return "".join(root) + ELLIPSIS + "".join(with_root)
    if alone:
        return ELLIPSIS + "".join(alone)
    return ELLIPSIS + path[len(path) - limit + 1 :]


def _trailing_steps(steps: list[str], room: int) -> list[str]:
    """The most trailing `steps` whose text fits in `room` characters."""
    tail: list[str] = []
    for step in reversed(steps):
        room -= len(step)
        if room < 0:
            break
        tail.insert(0, step)
    return tail


class ElidedPath:
    """A table cell holding a pytree path that, when the table is narrower than the
    path, gives up its middle (`elide_path`) rather than its end or wrapping."""

    MIN_WIDTH = 24

    def __init__(self, path: str, style: str = "") -> None:
        self.path = path
        self.style = style

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement(min(len(self.path), self.MIN_WIDTH), len(self.path))

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield Text(elide_path(self.path, options.max_width), style=self.style, no_wrap=True)


def names_text(names: tuple[str, ...]) -> str:
    if len(names) <= MAX_NAMES_IN_CELL:
        return ", ".join(names)
    return ", ".join(names[:MAX_NAMES_IN_CELL]) + f", … ({len(names)})"


def simple_table(title: str, columns: list[tuple[str, str, bool]]) -> Table:
    """Columns are (header, justify, no_wrap)."""
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, show_edge=False)
    for column, justify, no_wrap in columns:
        table.add_column(column, justify=justify, no_wrap=no_wrap)  # type: ignore[arg-type]
    return table


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


def sources_text(sources: tuple[str, ...], limit: int = 4) -> Text:
    """`a.py:3, :7, b.py:2`: a file named once for its consecutive lines."""
    text = Text()
    last_file = None
    for index, source in enumerate(sources[:limit]):
        short = short_source(source)
        file, _, line = short.rpartition(":")
        text.append(", " if index else "")
        text.append(source_text(source, f":{line}" if file == last_file else short))
        last_file = file
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

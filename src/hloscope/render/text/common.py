"""What the text renderers share: the console, numbers, sizes and times for
people, where a module came from, source lines, and the header, table and notes
layouts every report uses.
"""

from __future__ import annotations

import os
import shutil
import sys
from typing import IO

from rich import box
from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from hloscope.reports import Timings
from hloscope.sources.loader import Source

Cell = str | Text
"""A table cell, in a table of a text report or of the browser."""

MAX_FUNCTIONS = 40


MAX_NAMES_IN_CELL = 6


def make_console(file: IO[str] | None = None) -> Console:
    """A console for stdout: the terminal's width, or 120 columns in a pipe."""
    stream = file or sys.stdout
    is_tty = hasattr(stream, "isatty") and stream.isatty()
    width = None if is_tty else max(120, shutil.get_terminal_size((120, 24)).columns)
    return Console(file=stream, width=width, highlight=False, soft_wrap=False)


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
    return text


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


def sources_text(sources: tuple[str, ...], limit: int = 4) -> str:
    """`a.py:3, :7, b.py:2`: a file named once for its consecutive lines."""
    parts: list[str] = []
    last_file = None
    for source in sources[:limit]:
        short = short_source(source)
        file, _, line = short.rpartition(":")
        parts.append(f":{line}" if file == last_file else short)
        last_file = file
    if len(sources) > limit:
        parts.append(f"… {len(sources) - limit} more")
    return ", ".join(parts)


def timings_text(timings: Timings) -> str:
    """`load 526 ms · lower 39 ms · compile 122 ms`: the stages that ran."""
    parts = [f"load {seconds(timings.load_seconds)}"]
    if timings.lower_seconds is not None:
        parts.append(f"lower {seconds(timings.lower_seconds)}")
    if timings.compile_seconds is not None:
        parts.append(f"compile {seconds(timings.compile_seconds)}")
    return " · ".join(parts)

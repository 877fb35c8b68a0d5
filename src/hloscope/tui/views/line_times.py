"""The rows the measured Profile tab and the estimated one share: your lines by time,
each leading to its instructions in the IR tab (by their XLA names)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from rich.text import Text

from hloscope.ir.model import Module
from hloscope.render.text.common import short_source
from hloscope.render.text.profile import INSTRUCTIONS_WIDTH, duration, instruction_names, percent
from hloscope.render.text.source_lines import elide_source
from hloscope.tui.widgets.report_list import Column, Jump, Line, Row, table

if TYPE_CHECKING:
    from hloscope.analyses.estimate import EstimatedLine
    from hloscope.analyses.profile import ProfiledLine

LINE_WIDTH = 40
"""Cells of the line column of the lines table."""


def _ops_by_name(module: Module) -> Mapping[str, int]:
    """The op of each HLO instruction name in the module shown. The last op of a
    name is the one that runs: copies of fused computations the conversion leaves
    come first (as for the Memory tab's buffers)."""
    return {op.hlo_name: op.id for op in module.ops if op.hlo_name is not None}


JumpTo = Callable[[Sequence[str], str], Callable[[], Jump | None]]
"""A row's jump to the ops of XLA instructions (by name), labelled."""


def instruction_jumps(module: Module) -> JumpTo:
    """Jumps to the ops of instructions of `module`, by name; the names are looked up
    when a row is chosen, not when the tab is drawn: a large module's tab costs
    nothing until used."""
    ops_by_name = functools.cache(lambda: _ops_by_name(module))

    def jump(names: Sequence[str], label: str) -> Callable[[], Jump | None]:
        def found() -> Jump | None:
            ids = tuple(ops_by_name()[n] for n in names if n in ops_by_name())
            return Jump(ids, label) if ids else None

        return found

    return jump


def line_times_lines(
    title: str,
    lines: Sequence[ProfiledLine | EstimatedLine],
    line_texts: Mapping[str, str],
    jump: JumpTo,
    note: str,
) -> list[Line]:
    """Your lines (measured or estimated) by time, with their code and instructions,
    each row leading to its instructions (`note` where none is in the module)."""
    rows = [
        Row(
            [
                duration(line.seconds),
                percent(line.share),
                # A long path loses its middle, never its line number.
                elide_source(short_source(line.source), LINE_WIDTH)
                if line.source
                else Text("(no line of yours)", style="dim"),
                Text(line_texts.get(line.source or "", ""), style="cyan"),
                instruction_names(line.ops),
            ],
            jump=jump(line.ops, short_source(line.source) or "no line of yours"),
            note=note,
        )
        for line in lines
    ]
    return table(
        f"{title} ({len(lines)})",
        [
            Column("time", right=True, width=10),
            Column("share", right=True, width=7),
            Column("line", width=LINE_WIDTH),
            Column("code", width=50),
            Column("instructions", width=INSTRUCTIONS_WIDTH),
        ],
        rows,
    )

"""Reports as text for a terminal or a pipe, with rich: one module per report
(`inspect`, `params`, `placement`, `fusions`, `diff`, `aot`), and what they share
(`common`). The browser's views use the same helpers for the rows and summaries
they show.

Each `render_*` takes a report and a `rich.console.Console`; nothing here computes
anything a report does not already hold.

The `render_*` functions below are the entry points the command line and
`render.display` hand out: each imports its module (and rich with it) when called,
so that a command printing JSON never loads rich or another command's renderer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console

    from hloscope.check_report import CheckReport
    from hloscope.reports import (
        AotReport,
        CompilesReport,
        DiffReport,
        FusionsReport,
        InspectReport,
        MemoryReport,
        ParamsReport,
        PassesReport,
        PlacementReport,
    )


def render_inspect(report: InspectReport, console: Console) -> None:
    from hloscope.render.text import inspect

    inspect.render_inspect(report, console)


def render_params(report: ParamsReport, console: Console) -> None:
    from hloscope.render.text import params

    params.render_params(report, console)


def render_placement(report: PlacementReport, console: Console) -> None:
    from hloscope.render.text import placement

    placement.render_placement(report, console)


def render_fusions(report: FusionsReport, console: Console) -> None:
    from hloscope.render.text import fusions

    fusions.render_fusions(report, console)


def render_diff(report: DiffReport, console: Console) -> None:
    from hloscope.render.text import diff

    diff.render_diff(report, console)


def render_aot_check(report: AotReport, console: Console) -> None:
    from hloscope.render.text import aot

    aot.render_aot_check(report, console)


def render_compiles(report: CompilesReport, console: Console) -> None:
    from hloscope.render.text import compiles

    compiles.render_compiles(report, console)


def render_passes(report: PassesReport, console: Console) -> None:
    from hloscope.render.text import passes

    passes.render_passes(report, console)


def render_memory(report: MemoryReport, console: Console) -> None:
    from hloscope.render.text import memory

    memory.render_memory(report, console)


def render_check(report: CheckReport, console: Console) -> None:
    from hloscope.render.text import check

    check.render_check(report, console)

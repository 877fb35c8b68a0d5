"""The `compiles` report: every compilation JAX performed while a program ran."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from hloscope.reports.entry import ReportEntry

if TYPE_CHECKING:
    from hloscope.analyses.compiles import CompilesAnalysis
    from hloscope.runs import RecordedRun


@dataclasses.dataclass(frozen=True)
class CompilesReport:
    """The `compiles` view: every compilation JAX performed while a program ran, why
    it happened and what it cost."""

    target: str
    """What ran: the script and its arguments, or the function."""
    analysis: CompilesAnalysis
    exit_code: int
    """The program's own exit code."""
    error: str | None
    """The exception the program raised, on one line."""
    modules_dropped: int
    """Compilations whose module was not kept (over the memory bound)."""

    @property
    def recompiled(self) -> bool:
        """Whether a jitted function compiled more than once (for `--fail-on`)."""
        return self.analysis.summary.recompiled_functions > 0


def compiles_report(run: RecordedRun) -> CompilesReport:
    """Build the `compiles` report of a recorded run."""
    from hloscope.analyses.compiles import analyze_compiles

    return CompilesReport(
        target=run.label,
        analysis=analyze_compiles(run.compiles, run.wall_seconds),
        exit_code=run.exit_code,
        error=run.error,
        modules_dropped=run.modules_dropped,
    )


# Shown by the compiles browser of its own (`hloscope.tui.compiles_app`), not a tab.
ENTRY = ReportEntry(
    report=CompilesReport,
    json="hloscope.render.runs_json:compiles_json",
    text="hloscope.render.text.compiles:render_compiles",
)

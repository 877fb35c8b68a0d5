"""The `params` report: every argument mapped to its HLO parameter."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from hloscope.reports.entry import ReportEntry
from hloscope.stages import Source

if TYPE_CHECKING:
    from hloscope.analyses.params import ParameterUsage
    from hloscope.sources.loader import Loaded


@dataclasses.dataclass(frozen=True)
class ParamsReport:
    """The `params` view: every argument mapped to its HLO parameter, with status,
    donation, sharding and memory kind."""

    source: Source
    module: str | None
    """The module's name (`jit_f`)."""
    usage: ParameterUsage
    notes: tuple[str, ...]
    """The load's notes and the analysis's."""

    def has_status(self, statuses: tuple[str, ...]) -> bool:
        """Whether any argument has one of `statuses` (for `--fail-on`)."""
        return bool(self.usage.with_status(*statuses))


def params_report(loaded: Loaded) -> ParamsReport:
    """Build the `params` report of a loaded target."""
    from hloscope.analyses.params import analyze_params

    usage = analyze_params(loaded.module, loaded.lowering)
    return ParamsReport(
        source=loaded.source,
        module=loaded.module.name,
        usage=usage,
        notes=loaded.notes + usage.notes,
    )


ENTRY = ReportEntry(
    report=ParamsReport,
    json="hloscope.render.json:params_json",
    text="hloscope.render.text.params:render_params",
    tab="hloscope.tui.views.params:VIEW",
)

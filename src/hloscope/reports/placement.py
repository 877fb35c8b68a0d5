"""The `placement` report: where a module's ops run and where its data lives."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from hloscope.reports.entry import ReportEntry
from hloscope.stages import Source

if TYPE_CHECKING:
    from hloscope.analyses.placement import Placement
    from hloscope.sources.loader import Loaded


@dataclasses.dataclass(frozen=True)
class PlacementReport:
    """Where a module's ops run and where its data lives: compute types, host
    regions, memory kinds, transfers, shardings and collectives."""

    source: Source
    placement: Placement
    notes: tuple[str, ...]


def placement_report(loaded: Loaded) -> PlacementReport:
    """Build the `placement` report of a loaded target."""
    from hloscope.analyses.placement import analyze_placement

    return PlacementReport(
        source=loaded.source, placement=analyze_placement(loaded.module), notes=loaded.notes
    )


ENTRY = ReportEntry(
    report=PlacementReport,
    json="hloscope.render.json:placement_json",
    text="hloscope.render.text.placement:render_placement",
    tab="hloscope.tui.views.placement:VIEW",
)

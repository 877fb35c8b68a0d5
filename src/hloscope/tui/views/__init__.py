"""The report tabs, in order. Each is a `ReportView` in a module of this package;
registering an analysis's tab is one import and one entry here."""

from __future__ import annotations

from hloscope.tui.views import aot, fusions, memory, overview, params, placement
from hloscope.tui.views.base import ReportView, RunView, ShowOp, ShowOps

VIEWS: tuple[ReportView, ...] = (
    overview.VIEW,
    params.VIEW,
    placement.VIEW,
    fusions.VIEW,
    aot.VIEW,
    memory.VIEW,
)

__all__ = ["VIEWS", "ReportView", "RunView", "ShowOp", "ShowOps"]

"""The report tabs, in the order of the reports' registry
(`hloscope.reports.registry.REPORTS`): each is a `ReportView` in a module of this
package, named as the tab of its report's entry."""

from __future__ import annotations

from hloscope.reports.registry import REPORTS
from hloscope.tui.views.base import ReportView, RunDeeper, RunView, ShowOp, ShowOps

VIEWS: tuple[ReportView, ...] = tuple(
    entry.browser_tab() for entry in REPORTS if entry.tab is not None
)

__all__ = ["VIEWS", "ReportView", "RunDeeper", "RunView", "ShowOp", "ShowOps"]

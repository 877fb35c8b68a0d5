"""The report tabs, in order. Each is a `ReportView` in a module of this package;
registering an analysis's tab is one import and one entry here."""

from __future__ import annotations

from hloscope.tui.views import overview
from hloscope.tui.views.base import ReportView, ShowOp

VIEWS: tuple[ReportView, ...] = (overview.VIEW,)

__all__ = ["VIEWS", "ReportView", "ShowOp"]

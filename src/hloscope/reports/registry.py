"""Every report, listed once, in the order the browser shows their tabs.

The command line prints a report with its entry's renderers, the Python API shows
it with them, and the browser's tabs are the entries' tabs in this order. Adding a
report is a module in this package (its dataclass, its builder, its `ENTRY`), its
import and its line in REPORTS.
"""

from __future__ import annotations

from hloscope.reports import (
    aot,
    check,
    compare,
    compiles,
    diff,
    estimate,
    fusions,
    inspect,
    memory,
    params,
    passes,
    placement,
    profile,
    remat,
)
from hloscope.reports.entry import ReportEntry, entry_of

__all__ = ["REPORTS", "entry_of"]

REPORTS: tuple[ReportEntry, ...] = (
    inspect.ENTRY,
    params.ENTRY,
    placement.ENTRY,
    fusions.ENTRY,
    aot.ENTRY,
    memory.ENTRY,
    diff.ENTRY,
    compiles.ENTRY,
    passes.ENTRY,
    check.ENTRY,
    profile.ENTRY,
    profile.SCRIPT_ENTRY,
    estimate.ENTRY,
    remat.ENTRY,
    compare.ENTRY,
)

"""The `diff` report: the structural diff of two loaded modules."""

from __future__ import annotations

import dataclasses
import time
from typing import TYPE_CHECKING

from hloscope.reports.entry import ReportEntry
from hloscope.stages import Source

if TYPE_CHECKING:
    from hloscope.analyses.diff import ModuleDiff
    from hloscope.sources.loader import Loaded


@dataclasses.dataclass(frozen=True)
class DiffReport:
    """`hloscope diff A B`: where each side came from and their structural diff."""

    a: Source
    """Where A came from."""
    b: Source
    """Where B came from."""
    diff: ModuleDiff
    """The structural diff."""
    load_seconds: tuple[float, float]
    """Loading A, loading B (lowering and compiling included)."""
    diff_seconds: float
    """Building the diff, loading excluded."""
    notes: tuple[str, ...]
    """The diff's notes, then what loading each side noted (prefixed `A:`/`B:`)."""

    @property
    def same(self) -> bool:
        return self.diff.verdict == "same"


def diff_loaded(a: Loaded, b: Loaded) -> DiffReport:
    """Diff two loaded targets."""
    from hloscope.analyses.diff import diff_modules

    start = time.perf_counter()
    result = diff_modules(a.module, b.module)
    elapsed = time.perf_counter() - start
    notes = (
        result.notes
        + tuple(f"A: {note}" for note in a.notes)
        + tuple(f"B: {note}" for note in b.notes)
    )
    return DiffReport(a.source, b.source, result, (a.load_seconds, b.load_seconds), elapsed, notes)


# Shown by the diff screen of its own (`hloscope.tui.diff_app`), not a tab.
ENTRY = ReportEntry(
    report=DiffReport,
    json="hloscope.render.json:diff_json",
    text="hloscope.render.text.diff:render_diff",
)

"""The `diff` report: the structural diff of two loaded modules."""

from __future__ import annotations

import dataclasses
import time
from typing import TYPE_CHECKING

from hloscope.errors import HloscopeError
from hloscope.reports.entry import ReportEntry
from hloscope.stages import OPTIMIZED, Source

if TYPE_CHECKING:
    from hloscope.analyses.diff import ModuleDiff
    from hloscope.analyses.diff.collectives import CollectiveChange
    from hloscope.analyses.estimate import EstimateAnalysis
    from hloscope.sources.loader import Loaded


@dataclasses.dataclass(frozen=True)
class CompiledSummary:
    """What changed between two compiled programs, shown before their structural diff:
    each side's figures from the builder of the view that shows them alone."""

    memory: tuple[int | None, int | None]
    """The peak bytes of A and of B, per device, as `memory` reports them (XLA's
    buffer assignment and live ranges); None where that is not known (a note says
    why)."""
    estimate: tuple[EstimateAnalysis | None, EstimateAnalysis | None] | None
    """`profile --for`'s estimate of A and of B; None unless both were compiled for a
    platform (`--for`)."""
    collectives: tuple[CollectiveChange, ...]
    """Each kind of collective either side runs, as `placement` counts them, with the
    lines where B runs more of it."""
    notes: tuple[str, ...]
    """Why a figure is not known."""


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
    compiled: CompiledSummary | None = None
    """Of two compiled programs (`compiled_summary`): what changed in memory, the
    estimate and collectives; None for a diff of anything else."""

    @property
    def same(self) -> bool:
        return self.diff.verdict == "same"


def diff_loaded(a: Loaded, b: Loaded, *, summary: bool = False) -> DiffReport:
    """Diff two loaded targets; with `summary`, two compiled programs' diff opens with
    their `compiled_summary` (`hloscope diff`, `hloscope.diff`: it compiles each again
    for XLA's buffer assignment, read from the compile cache where it holds it)."""
    from hloscope.analyses.diff import diff_modules

    compiled = compiled_summary(a, b) if summary else None
    start = time.perf_counter()
    result = diff_modules(a.module, b.module)
    elapsed = time.perf_counter() - start
    notes = (
        result.notes
        + tuple(f"A: {note}" for note in a.notes)
        + tuple(f"B: {note}" for note in b.notes)
        + (compiled.notes if compiled is not None else ())
    )
    return DiffReport(
        a.source, b.source, result, (a.load_seconds, b.load_seconds), elapsed, notes, compiled
    )


def compiled_summary(a: Loaded, b: Loaded) -> CompiledSummary | None:
    """What changed between two optimized modules, from the builders of the single
    views: the peak of memory (`memory`'s report), the estimate when both were compiled
    for a platform (`profile --for`'s), and the collectives (`placement`'s). None where
    a side is not an optimized module."""
    if a.source.stage != OPTIMIZED or b.source.stage != OPTIMIZED:
        return None  # before any import: a plain diff loads nothing more than it did
    from hloscope.analyses.diff.collectives import collective_changes
    from hloscope.reports.memory import loaded_memory_report
    from hloscope.reports.placement import loaded_placement

    unknown: dict[tuple[str, str], list[str]] = {}

    def peak(side: str, loaded: Loaded) -> int | None:
        try:
            return loaded_memory_report(loaded).analysis.peak_bytes
        except HloscopeError as error:
            unknown.setdefault(("the peak of memory", error.message), []).append(side)
            return None

    def estimate(side: str, loaded: Loaded) -> EstimateAnalysis | None:
        from hloscope.reports.estimate import estimate_report

        try:
            return estimate_report(loaded).analysis
        except HloscopeError as error:
            unknown.setdefault(("the estimate", error.message), []).append(side)
            return None

    for_platform = a.options.compile_for is not None and b.options.compile_for is not None
    return CompiledSummary(
        memory=(peak("A", a), peak("B", b)),
        estimate=(estimate("A", a), estimate("B", b)) if for_platform else None,
        collectives=collective_changes(
            a.module,
            loaded_placement(a).collectives,
            b.module,
            loaded_placement(b).collectives,
        ),
        # Said once for both sides where it is the same reason.
        notes=tuple(
            f"{' and '.join(sides)}: {what} is not known: {why}"
            for (what, why), sides in unknown.items()
        ),
    )


# Shown by the diff screen of its own (`hloscope.tui.diff_app`), not a tab.
ENTRY = ReportEntry(
    report=DiffReport,
    json="hloscope.render.json:diff_json",
    text="hloscope.render.text.diff:render_diff",
)

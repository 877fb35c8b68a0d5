"""The `check` report: a compiled program's facts against its stored baseline.

Building one runs the analyses every other report runs (structure, fusions,
placement, parameters, XLA's buffer assignment) on one compilation, measures the
facts (`analyses.baseline.facts`) and compares them with the baseline's
(`analyses.baseline.compare`). Reading and writing baseline files is the sources'
job (`sources.baselines`); nothing here does I/O.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

from hloscope.errors import HloscopeError
from hloscope.reports.entry import ReportEntry
from hloscope.source_text import line_texts
from hloscope.stages import OPTIMIZED

if TYPE_CHECKING:
    from hloscope.analyses.baseline.compare import Comparison
    from hloscope.analyses.baseline.facts import Measurement
    from hloscope.analyses.baseline.record import Backend, Baseline
    from hloscope.analyses.baseline.tolerance import Tolerances
    from hloscope.remat_facts import RematFacts
    from hloscope.runs import RecordedRun
    from hloscope.sources.baselines import CheckedProgram
    from hloscope.sources.loader import Loaded
    from hloscope.sources.memory import BufferDumps


@dataclasses.dataclass(frozen=True)
class CollectiveOrigin:
    """Why one collective at a line is there, as `placement --why` says it."""

    kind: str
    """The collective's kind as check's facts name it (`all-gather`,
    `collective-permute`): a fact's why is its own collective's."""
    sentence: str


@dataclasses.dataclass(frozen=True)
class TargetCheck:
    """One target checked (or recorded) against its baseline."""

    name: str
    """The target's name in the configuration, else the target as given."""
    target: str
    baseline_path: str
    backend: Backend
    """What the program was compiled for here."""
    baseline: Baseline | None
    """The baseline compared with; None when none was stored (recording the first)."""
    measurement: Measurement
    comparison: Comparison | None
    """None when there was no baseline to compare with."""
    updated: bool
    """The baseline was written (`--update`)."""
    notes: tuple[str, ...]
    line_texts: Mapping[str, str]
    """The code of each line a change names (`file.py:LINE` -> text), where readable."""
    origins: Mapping[str, tuple[CollectiveOrigin, ...]] = dataclasses.field(default_factory=dict)
    """Where a collective fact regressed: per line a change names (`file.py:LINE`),
    the cause of each collective there, as `placement --why` says it (Shardy's
    origins: the argument, result or constraint that sharded or asked for it)."""

    @property
    def passed(self) -> bool:
        return self.updated or (self.comparison is not None and not self.comparison.regressions)

    def why(self, fact: str, lines: tuple[str, ...]) -> tuple[str, ...]:
        """Why the collective a fact counts is at `lines`, as `placement --why` says it:
        that collective's sentences, not those of other collectives on those lines."""
        kind = collective_kind(fact)
        said = (o.sentence for line in lines for o in self.origins.get(line, ()) if o.kind == kind)
        return tuple(dict.fromkeys(said)) if kind is not None else ()


def collective_kind(fact: str) -> str | None:
    """`all-gather` of `collectives.all-gather.count` (and of
    `collectives.dcn.all-gather.bytes`); None for a fact of no collective."""
    parts = fact.split(".")
    if parts[0] != "collectives" or len(parts) < 3:
        return None
    return parts[2] if parts[1] == "dcn" and len(parts) > 3 else parts[1]


@dataclasses.dataclass(frozen=True)
class CheckReport:
    """Every target checked: the command's answer."""

    checks: tuple[TargetCheck, ...]
    baseline: str
    """The baseline file (one target), or the folder of baselines (the configuration's)."""
    backend: Backend
    updated: bool

    @property
    def passed(self) -> bool:
        return all(check.passed for check in self.checks)


def measure_program(program: CheckedProgram) -> Measurement:
    """The facts of a program compiled here, or of a recorded run."""
    if program.run is not None:
        return _measure_run(program.run)
    assert program.lowered is not None and program.optimized is not None
    return _measure_compiled(program.lowered, program.buffers, program.optimized, program.remat)


def _measure_compiled(
    lowered: Loaded, buffers: BufferDumps | None, optimized: Loaded, remat: RematFacts | None
) -> Measurement:
    from hloscope.analyses.baseline.facts import Compiled, measure
    from hloscope.analyses.fusions import analyze_fusions
    from hloscope.analyses.params import analyze_params
    from hloscope.analyses.placement import analyze_placement
    from hloscope.analyses.remat import analyze_remat
    from hloscope.analyses.structure import analyze_structure
    from hloscope.reports.common import lowered_frames
    from hloscope.reports.memory import buffers_analysis

    root = os.getcwd()
    before = lowered.module if lowered.source.stage != OPTIMIZED else None
    # The lowered module's frames and the optimized module's parameters, made once for
    # the fusions, the facts and the buffers (the memory report alone makes its own).
    frames = lowered_frames(lowered)
    module = optimized.module
    compilation = optimized.compilation
    params = analyze_params(module, optimized.lowering)
    memory = buffers_analysis(buffers, params, frames) if buffers is not None else None
    return measure(
        Compiled(
            optimized=module,
            structure=analyze_structure(module),
            fusions=analyze_fusions(module, source_root=root, lowered=frames),
            placement=analyze_placement(module),
            params=params,
            memory=memory,
            memory_totals=compilation.memory if compilation is not None else None,
            cost=compilation.cost if compilation is not None else None,
            compile_seconds=compilation.compile_seconds if compilation is not None else None,
            lowered=before,
            lowered_structure=analyze_structure(before) if before is not None else None,
            lowered_frames=frames,
            source_root=root,
            remat=analyze_remat(remat) if remat is not None else None,
        )
    )


def _measure_run(run: RecordedRun) -> Measurement:
    from hloscope.analyses.baseline.facts import program_facts

    if run.error is not None:
        raise HloscopeError(f"the program failed: {run.error}", where=run.label)
    return program_facts((c.function, c.compile_seconds) for c in run.compiles)


def refuse_baseline(
    baseline: Baseline | None, backend: Backend | None, baseline_path: str, update: bool
) -> None:
    """Without `update`, refuse a missing baseline, or one recorded on another platform
    than `backend`'s (None: not known yet, before the target is compiled)."""
    if update:
        return
    if baseline is None:
        raise HloscopeError(
            "no baseline here: record one with --update (and commit it)", where=baseline_path
        )
    if backend is not None and baseline.backend.compared_on != backend.compared_on:
        raise HloscopeError(
            f"the baseline was recorded on {baseline.backend.compared_on} and this runs on "
            f"{backend.compared_on}: baselines compare like with like (record one for "
            f"{backend.compared_on} with --update, in a file of its own)",
            where=baseline_path,
        )


def check_target(
    name: str,
    target: str,
    measurement: Measurement,
    backend: Backend,
    baseline: Baseline | None,
    baseline_path: str,
    tolerances: Tolerances,
    update: bool,
    root: str | None = None,
) -> TargetCheck:
    """Compare `measurement` with `baseline` where it was recorded on this platform
    (`refuse_baseline` has refused the rest, unless recording with `update`).
    `root`: the folder the measurement's sites are relative to, as the baseline's are
    (the project's root); the changes name them relative to the working directory."""
    from hloscope.analyses.baseline.compare import compare
    from hloscope.analyses.baseline.facts import RUNTIME_SECONDS
    from hloscope.analyses.baseline.record import COMPARISON_PLATFORM
    from hloscope.analyses.baseline.sites import rebase_comparison

    refuse_baseline(baseline, backend, baseline_path, update)
    notes: list[str] = []
    comparison = None
    if baseline is not None and baseline.backend.compared_on == backend.compared_on:
        comparison = compare(baseline.measurement, measurement, tolerances)
        if root is not None:
            comparison = rebase_comparison(comparison, root, os.getcwd())
        notes.extend(_backend_notes(baseline.backend, backend))
        if RUNTIME_SECONDS in comparison.not_compared:
            notes.append(
                "the baseline has no run time (recorded without --runtime): the run time "
                "was measured and not compared; record one with --update --runtime"
            )
    if not ({"memory.peak_bytes", "programs.count"} & set(measurement.facts)) and (
        backend.platform != COMPARISON_PLATFORM
    ):
        notes.append(
            "XLA's buffer assignment is not in what was read (an optimized module read as it "
            "is): memory.peak_bytes and the buffers at the peak are not checked; give the "
            "dump folder XLA wrote, or the module before optimization"
        )
    changes = comparison.changes if comparison is not None else ()
    grown = comparison.grown_at_peak if comparison is not None else ()
    sources = [*(s for c in changes for s in c.sources), *(g.site for g in grown)]
    return TargetCheck(
        name=name,
        target=target,
        baseline_path=baseline_path,
        backend=backend,
        baseline=baseline,
        measurement=measurement,
        comparison=comparison,
        updated=update,
        notes=tuple(notes),
        line_texts=line_texts(sources),
    )


def with_collective_origins(check: TargetCheck, lowered: Loaded | None) -> TargetCheck:
    """`check` with the origins of its regressed collectives. They come from a second
    compilation, with Shardy's dumps (`placement_why_report`), made only when a
    collective regressed: the check itself costs nothing more."""
    comparison = check.comparison
    if lowered is None or comparison is None or lowered.source.stage == OPTIMIZED:
        return check
    lines = {
        source
        for change in comparison.regressions
        if change.fact.startswith("collectives.")
        for source in change.sources
    }
    if not lines:
        return check
    from hloscope.reports.placement import placement_why_report

    try:
        why = placement_why_report(lowered).why
    except HloscopeError:
        return check  # the check stands without them
    if why is None or not why.available:
        return check
    origins: dict[str, tuple[CollectiveOrigin, ...]] = {}
    for line in sorted(lines):
        # The check's lines are relative to the working directory, --why's as JAX
        # recorded them.
        said = [
            CollectiveOrigin(site.op.replace("_", "-"), site.sentence)
            for site in why.sites
            if site.source and not site.note and _same_line(site.source, line)
        ]
        if said:
            origins[line] = tuple(dict.fromkeys(said))
    return dataclasses.replace(check, origins=origins) if origins else check


def _same_line(source: str, line: str) -> bool:
    return source == line or source.endswith("/" + line)


def _backend_notes(recorded: Backend, here: Backend) -> list[str]:
    notes = []
    if (recorded.jax, recorded.jaxlib) != (here.jax, here.jaxlib):
        notes.append(
            f"the baseline was recorded with jax {recorded.jax} and jaxlib {recorded.jaxlib}; "
            f"this is jax {here.jax} and jaxlib {here.jaxlib}: changes may come from the upgrade"
        )
    if recorded.device_kind != here.device_kind:
        notes.append(
            f"the baseline was recorded on {recorded.device_kind}; this is {here.device_kind}"
        )
    if recorded.device_count != here.device_count:
        notes.append(
            f"the baseline was recorded with {recorded.device_count} devices; "
            f"this has {here.device_count}"
        )
    return notes


ENTRY = ReportEntry(
    report=CheckReport,
    json="hloscope.render.json:check_json",
    text="hloscope.render.text.check:render_check",
)

"""The `aot-check` report: the direct call against the AOT path."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from hloscope.reports.entry import ReportEntry

if TYPE_CHECKING:
    from hloscope.analyses.aot import AotComparison, Program, Verdict
    from hloscope.ir.parsed import ParsedModule
    from hloscope.runs import InputLeaf
    from hloscope.sources.loader import LoadedRuns

# Constants up to this many elements are printed (and so compared) in full.
AOT_TEXT_ELEMENTS = 4096


@dataclasses.dataclass(frozen=True)
class AotReport:
    """The direct call against the AOT path: what each compiled, what each returned,
    and how they differ."""

    target: str
    aot_target: str | None
    """`--aot`, when given."""
    comparison: AotComparison
    inputs: tuple[InputLeaf, ...]
    """The concrete arguments both paths ran on."""
    seed: int
    """The seed of the pseudo-random inputs."""
    timings: AotTimings
    notes: tuple[str, ...]

    @property
    def verdict(self) -> Verdict:
        return self.comparison.verdict


@dataclasses.dataclass(frozen=True)
class AotTimings:
    """Wall times of `aot-check`, in seconds."""

    load_seconds: float
    """Everything: import, both paths, parsing."""
    call_seconds: float
    """The call, compilations included."""
    lower_seconds: float | None
    """`.lower(...)` on the AOT path."""
    compile_seconds: float | None
    """`.compile()` on the AOT path."""
    run_seconds: float
    """Running the AOT-compiled executable."""


def aot_check_report(loaded: LoadedRuns) -> AotReport:
    """Build the `aot-check` report of a target run both ways."""
    from hloscope.analyses.aot import Program, compare_paths

    runs = loaded.runs

    def program(parsed: ParsedModule) -> Program:
        module = parsed.model
        return Program(
            name=module.name or "(unnamed)",
            module=module,
            text=parsed.text(debug_info=False, elements_limit=AOT_TEXT_ELEMENTS),
        )

    comparison = compare_paths(
        runs,
        [program(p) for p in loaded.call_modules],
        program(loaded.aot_module) if loaded.aot_module is not None else None,
        [program(p) for p in loaded.aot_run_modules],
    )
    lowering = runs.aot_lowering
    return AotReport(
        target=loaded.target,
        aot_target=loaded.aot_target,
        comparison=comparison,
        inputs=runs.inputs,
        seed=runs.seed,
        timings=AotTimings(
            load_seconds=loaded.load_seconds,
            call_seconds=runs.call.seconds,
            lower_seconds=lowering.lower_seconds if lowering is not None else None,
            compile_seconds=runs.compile_seconds,
            run_seconds=runs.aot.seconds,
        ),
        notes=loaded.notes,
    )


ENTRY = ReportEntry(
    report=AotReport,
    json="hloscope.render.json:aot_check_json",
    text="hloscope.render.text.aot:render_aot_check",
    tab="hloscope.tui.views.aot:VIEW",
)

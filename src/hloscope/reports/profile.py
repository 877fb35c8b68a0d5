"""The `profile` report: where the run time of a compiled program goes, by XLA
instruction and by the user's line."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

from hloscope.reports.common import Timings, lowered_frames, stage_timings
from hloscope.reports.entry import ReportEntry
from hloscope.runs import ProfiledScript
from hloscope.source_text import line_texts
from hloscope.stages import Source

if TYPE_CHECKING:
    from hloscope.analyses.profile import ProfileAnalysis, ScriptProfile
    from hloscope.runs import ProfiledRuns
    from hloscope.sources.loader import Loaded
    from hloscope.sources.profile import ProfiledProgram


@dataclasses.dataclass(frozen=True)
class ProfileReport:
    """Where the run time of a compiled program goes: JAX's profiler events joined to
    the optimized module's instructions and to the user's lines."""

    source: Source
    module: str | None
    """The module that ran (`jit_step`)."""
    analysis: ProfileAnalysis
    line_texts: Mapping[str, str]
    """The code of each source line named (`file.py:LINE` -> text), where readable."""
    timings: Timings
    notes: tuple[str, ...]


def profile_report(lowered: Loaded, optimized: Loaded, runs: ProfiledRuns) -> ProfileReport:
    """Build the `profile` report of a program's profiled runs: `optimized` is the
    module that ran, `lowered` what was loaded before compiling it (its lowered
    module maps the instructions to the user's lines)."""
    from hloscope.analyses.fusions import analyze_fusions
    from hloscope.analyses.profile import analyze_profile

    fusions = analyze_fusions(
        optimized.module, source_root=os.getcwd(), lowered=lowered_frames(lowered)
    )
    analysis = analyze_profile(runs, fusions)
    notes = optimized.notes
    if not analysis.ops:
        notes += (f"the trace holds no instruction of {runs.module}: nothing ran on the device",)
    if analysis.unknown_ops:
        notes += (
            f"{len(analysis.unknown_ops)} instruction names of the trace are not in the "
            f"module ({', '.join(analysis.unknown_ops[:5])})",
        )
    if analysis.devices > 1:
        notes += (
            f"the program runs on {analysis.devices} devices: an instruction's time is "
            "per device, the mean over them",
        )
    sources = [op.user_source for op in analysis.ops] + [
        s for op in analysis.ops for s in op.sources
    ]
    return ProfileReport(
        source=optimized.source,
        module=optimized.module.name,
        analysis=analysis,
        line_texts=line_texts(s for s in sources if s is not None),
        timings=stage_timings(optimized),
        notes=notes,
    )


def profiled_report(
    profiled: ProfiledProgram | ProfiledScript,
) -> ProfileReport | ScriptProfileReport:
    """The report of what `sources.profile.profile_target` ran: a script's, or one
    program's."""
    if isinstance(profiled, ProfiledScript):
        return script_profile_report(profiled)
    return profile_report(profiled.lowered, profiled.loaded, profiled.runs)


def loaded_profile_report(loaded: Loaded) -> ProfileReport:
    """The `profile` report of a loaded target: its program compiled (when it is not
    already) and run under JAX's profiler, as `hloscope profile` runs it."""
    from hloscope.sources.profile import profiled

    program = profiled(loaded)
    return profile_report(program.lowered, program.loaded, program.runs)


ENTRY = ReportEntry(
    report=ProfileReport,
    json="hloscope.render.json:profile_json",
    text="hloscope.render.text.profile:render_profile",
    tab="hloscope.tui.views.profile:VIEW",
)


@dataclasses.dataclass(frozen=True)
class ScriptProfileReport:
    """A script run under JAX's profiler: per jitted function, its calls, compilations
    and time per call, and the ops run outside any jit."""

    target: str
    """The script and its arguments."""
    analysis: ScriptProfile
    exit_code: int
    """The script's own exit code."""
    error: str | None
    """The exception the script raised, on one line."""
    trace_file: str | None
    notes: tuple[str, ...]


def script_profile_report(profiled: ProfiledScript) -> ScriptProfileReport:
    """Build the `profile` report of a script run under JAX's profiler."""
    from hloscope.analyses.profile import analyze_script_profile

    recorded = profiled.recorded
    analysis = analyze_script_profile(recorded.compiles, profiled.programs, recorded.wall_seconds)
    notes: tuple[str, ...] = ()
    if analysis.unmatched:
        notes += (
            f"{len(analysis.unmatched)} programs ran with no compilation recorded for them "
            f"({', '.join(analysis.unmatched[:5])}): compiled before the script's run began",
        )
    return ScriptProfileReport(
        target=recorded.label,
        analysis=analysis,
        exit_code=recorded.exit_code,
        error=recorded.error,
        trace_file=profiled.trace_file,
        notes=notes,
    )


SCRIPT_ENTRY = ReportEntry(
    report=ScriptProfileReport,
    json="hloscope.render.json:script_profile_json",
    text="hloscope.render.text.profile:render_script_profile",
)

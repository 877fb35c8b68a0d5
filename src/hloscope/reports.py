"""The reports and the functions that build them from what was loaded.

The command line, the browser and the Python API (`hloscope.inspect`) all build
their reports here, so they never disagree. Reports are frozen dataclasses holding
everything their renderers show (`hloscope.render`: text, JSON, and in Python
`render.display`); building one runs the analyses, and nothing here renders.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING

from hloscope.errors import HloscopeError, display_path
from hloscope.source_text import line_texts
from hloscope.stages import OPTIMIZED, Source

# Each builder imports the analyses it runs, so a command loads only its own
# (`aot-check`'s bring numpy, `diff`'s and `passes`' are large): start-up is part of
# every command's time.
if TYPE_CHECKING:
    from hloscope.analyses.aot import AotComparison, Program, Verdict
    from hloscope.analyses.compiles import CompilesAnalysis
    from hloscope.analyses.diff import ModuleDiff
    from hloscope.analyses.fusions import FusionAnalysis, FusionSummary, LoweredFrames
    from hloscope.analyses.memory import MemoryAnalysis
    from hloscope.analyses.params import ParameterUsage
    from hloscope.analyses.passes import Census, PassFind, PassStep, PassTable
    from hloscope.analyses.placement import Placement
    from hloscope.analyses.structure import Structure
    from hloscope.ir.parsed import ParsedModule
    from hloscope.sources.loader import Loaded, LoadedRuns
    from hloscope.sources.memory import BufferDumps
    from hloscope.sources.passes import PassDumps
    from hloscope.stages import InputLeaf, RecordedRun

__all__ = [
    "AotReport",
    "AotTimings",
    "CompilesReport",
    "DiffReport",
    "FusionsReport",
    "InspectReport",
    "MemoryReport",
    "ParamsReport",
    "PassesReport",
    "PlacementReport",
    "Timings",
    "aot_check_report",
    "compiles_report",
    "diff_loaded",
    "fusions_report",
    "inspect_report",
    "memory_report",
    "params_report",
    "passes_report",
    "placement_report",
]


@dataclasses.dataclass(frozen=True)
class Timings:
    """Wall times of the pipeline's stages, in seconds (None: the stage did not run
    here)."""

    load_seconds: float
    """Everything: import, lowering, compiling, parsing."""
    lower_seconds: float | None
    """`jax.jit(f).lower(...)`."""
    compile_seconds: float | None
    """`.compile()` (XLA's optimizations and code generation)."""


@dataclasses.dataclass(frozen=True)
class InspectReport:
    """The overview of a module: where it came from, its structure, and what JAX and
    XLA report about it."""

    source: Source
    structure: Structure
    timings: Timings
    cost: Mapping[str, float] | None
    """XLA's cost analysis: `flops`, `transcendentals`, `bytes_accessed`; of the
    optimized module when compiled here, else of the lowered one."""
    memory: Mapping[str, int] | None
    """XLA's memory analysis of the compiled executable (bytes of arguments, outputs,
    temporaries, generated code)."""
    notes: tuple[str, ...]
    fusions: FusionSummary | None = None
    """What XLA fused, when the module read is the optimized one."""
    params: ParameterUsage | None = None
    """Parameter usage of the entry (the `params` view), summarised by renderers."""
    placement: Placement | None = None
    """Compute placement, memory kinds, transfers, shardings and collectives."""


def inspect_report(loaded: Loaded) -> InspectReport:
    """Build the `inspect` report of a loaded target."""
    from hloscope.analyses.params import analyze_params
    from hloscope.analyses.placement import analyze_placement
    from hloscope.analyses.structure import analyze_structure

    lowering = loaded.lowering
    compilation = loaded.compilation
    cost = None
    if compilation is not None and compilation.cost:
        cost = compilation.cost
    elif lowering is not None and lowering.cost:
        cost = lowering.cost
    return InspectReport(
        source=loaded.source,
        structure=analyze_structure(loaded.module),
        timings=Timings(
            load_seconds=loaded.load_seconds,
            lower_seconds=lowering.lower_seconds if lowering is not None else None,
            compile_seconds=compilation.compile_seconds if compilation is not None else None,
        ),
        cost=cost,
        memory=compilation.memory if compilation is not None else None,
        notes=loaded.notes,
        fusions=_fusion_summary(loaded) if loaded.source.stage == OPTIMIZED else None,
        params=analyze_params(loaded.module, lowering),
        placement=analyze_placement(loaded.module),
    )


def _fusion_summary(loaded: Loaded) -> FusionSummary:
    from hloscope.analyses.fusions import analyze_fusions, summarize_fusions

    return summarize_fusions(analyze_fusions(loaded.module))


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


@dataclasses.dataclass(frozen=True)
class ParamsReport:
    """The `params` view: every argument mapped to its HLO parameter, with status,
    donation, sharding and memory kind."""

    source: Source
    module: str | None
    """The module's name (`jit_f`)."""
    usage: ParameterUsage
    notes: tuple[str, ...]
    """The load's notes and the analysis's."""

    def has_status(self, statuses: tuple[str, ...]) -> bool:
        """Whether any argument has one of `statuses` (for `--fail-on`)."""
        return bool(self.usage.with_status(*statuses))


def params_report(loaded: Loaded) -> ParamsReport:
    """Build the `params` report of a loaded target."""
    from hloscope.analyses.params import analyze_params

    usage = analyze_params(loaded.module, loaded.lowering)
    return ParamsReport(
        source=loaded.source,
        module=loaded.module.name,
        usage=usage,
        notes=loaded.notes + usage.notes,
    )


# --------------------------------------------------------------------------- fusions


@dataclasses.dataclass(frozen=True)
class FusionsReport:
    """What XLA fused in the optimized module, mapped back to the source lines."""

    source: Source
    module: str | None
    """The module's name (`jit_mlp`)."""
    analysis: FusionAnalysis
    summary: FusionSummary
    """The analysis in numbers: fusions by kind, fused and unfused ops."""
    line_texts: Mapping[str, str]
    """The code of each source line the analysis names (`file.py:LINE` -> text),
    for the files readable here."""
    timings: Timings
    notes: tuple[str, ...]


def lowered_frames(loaded: Loaded) -> LoweredFrames | None:
    """The user frames of the lowered module's ops (JAX's whole Python stack), for
    `user_source` where the optimized module kept a shorter one: the module loaded
    when it is the lowered one, else the lowering's module JAX gave (read again from
    its bytecode, not lowered again); None without one (a dump)."""
    from hloscope.analyses.fusions import lowered_user_frames

    if loaded.source.stage != OPTIMIZED:
        return lowered_user_frames(loaded.module)
    lowering = loaded.lowering
    if lowering is None or lowering.mlir_bytecode is None:
        return None
    from hloscope.ir import parse

    parsed = parse.parse_mlir(
        lowering.mlir_bytecode,
        f"{loaded.label} (lowered)",
        trusted=lowering.kind != "exported",
    )
    return lowered_user_frames(parsed.model)


def fusions_report(loaded: Loaded) -> FusionsReport:
    """Build the `fusions` report, compiling the target first when what was loaded is
    not the optimized module."""
    from hloscope.analyses.fusions import analyze_fusions, inner_jits, summarize_fusions

    lowered = lowered_frames(loaded)
    loaded = loaded.optimized()
    analysis = analyze_fusions(loaded.module, source_root=os.getcwd(), lowered=lowered)
    notes = loaded.notes
    lowering = loaded.lowering
    jits = inner_jits(analysis)
    if lowering is not None and lowering.kind == "function" and jits:
        crossing = len(analysis.crossing_jits)
        combine = "fusion here combines" if crossing == 1 else "fusions here combine"
        notes += (
            f"{lowering.name} is not jitted, so hloscope compiled it under one jax.jit; "
            f"called as it is, its jits ({', '.join(jits)}) run as separate XLA programs "
            f"and nothing fuses across them ({crossing} {combine} ops of different jits). "
            "Point hloscope at each jit to see the programs that run.",
        )
    compilation = loaded.compilation
    return FusionsReport(
        source=loaded.source,
        module=loaded.module.name,
        analysis=analysis,
        summary=summarize_fusions(analysis),
        line_texts=line_texts(line.source for line in analysis.lines),
        timings=Timings(
            load_seconds=loaded.load_seconds,
            lower_seconds=lowering.lower_seconds if lowering is not None else None,
            compile_seconds=compilation.compile_seconds if compilation is not None else None,
        ),
        notes=notes,
    )


# --------------------------------------------------------------------------- diff


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


# --------------------------------------------------------------------------- aot-check

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


# --------------------------------------------------------------------------- compiles


@dataclasses.dataclass(frozen=True)
class CompilesReport:
    """The `compiles` view: every compilation JAX performed while a program ran, why
    it happened and what it cost."""

    target: str
    """What ran: the script and its arguments, or the function."""
    analysis: CompilesAnalysis
    exit_code: int
    """The program's own exit code."""
    error: str | None
    """The exception the program raised, on one line."""
    modules_dropped: int
    """Compilations whose module was not kept (over the memory bound)."""

    @property
    def recompiled(self) -> bool:
        """Whether a jitted function compiled more than once (for `--fail-on`)."""
        return self.analysis.summary.recompiled_functions > 0


def compiles_report(run: RecordedRun) -> CompilesReport:
    """Build the `compiles` report of a recorded run."""
    from hloscope.analyses.compiles import analyze_compiles

    return CompilesReport(
        target=run.label,
        analysis=analyze_compiles(run.compiles, run.wall_seconds),
        exit_code=run.exit_code,
        error=run.error,
        modules_dropped=run.modules_dropped,
    )


# --------------------------------------------------------------------------- passes


@dataclasses.dataclass(frozen=True)
class PassesReport:
    """`hloscope passes`: XLA's pipeline pass by pass, from one module's per-pass
    files; with a pattern, where it changed; with a pass, that pass's diff."""

    target: str
    """The target as the user gave it."""
    folder: str | None
    """The dump folder read; None when the files were made here (and are gone)."""
    module: str
    """The module's key (`module_0000.jit_f`)."""
    files: tuple[str, ...]
    """The per-pass files' names, in pipeline order."""
    table: PassTable
    """Each pass with its pipeline, op count and change."""
    find: PassFind | None
    """Where the searched pattern changed (`--find`)."""
    diff: DiffReport | None
    """The diff of one pass (`--diff`): the module before it against after it."""
    diff_index: int | None
    """The pass diffed."""
    compile_seconds: float | None
    """Compiling with the dump options, when it was done here."""
    scan_seconds: float
    """Reading and counting the files."""
    notes: tuple[str, ...]


def _census_of(text: str | None, pattern: str | None) -> Census | None:
    from hloscope.analyses.passes import census

    return None if text is None else census(text, pattern)


def _pass_censuses(dumped: PassDumps, pattern: str | None) -> list[Census]:
    """Each file's census; a file identical to the one before it (XLA dumps each
    pipeline's start, often unchanged) is not counted again. A pattern spelled like an
    op kind is first counted by kind, and searched as text only when no module holds
    that kind (searching the text of every line that names `fusion` costs more than
    counting them all)."""
    from hloscope.analyses.passes import looks_like_op_kind

    by_kind = pattern is not None and looks_like_op_kind(pattern)
    censuses = _read_censuses(dumped, None if by_kind else pattern)
    if by_kind and not any(pattern in counted.kinds for counted in censuses):
        censuses = _read_censuses(dumped, pattern)
    return censuses


def _read_censuses(dumped: PassDumps, pattern: str | None) -> list[Census]:
    from hloscope.analyses.passes import census

    censuses: list[Census] = []
    previous_text: str | None = None
    for text in dumped.pass_texts():
        if text == previous_text:
            censuses.append(censuses[-1])
        else:
            censuses.append(census(text, pattern))
        previous_text = text
    return censuses


def passes_report(
    dumped: PassDumps, find: str | None = None, diff: str | None = None
) -> PassesReport:
    """The `passes` report of per-pass files in hand (while they exist): with `find`,
    where the pattern changes; with `diff` (a pass's index or name), that pass's
    structural diff."""
    from hloscope.analyses.passes import PassName, find_in_passes, pass_table

    start = time.perf_counter()
    pattern = find or None
    names = tuple(
        PassName(f.step, f.pipeline, f.after, f.before, f.path.name) for f in dumped.files
    )
    censuses = _pass_censuses(dumped, pattern)
    input_census = _census_of(dumped.stage_text(dumped.module.before), pattern)
    output_census = _census_of(dumped.stage_text(dumped.module.after), None)
    table = pass_table(names, censuses, input_census, output_census)
    found = find_in_passes(pattern, names, censuses, input_census) if pattern else None
    scan_seconds = time.perf_counter() - start
    notes = dumped.notes
    if any(step.pass_name == "pipeline-start" and step.changed for step in table.steps):
        notes += (
            "a pipeline-start row holds what changed since the file before it: done by the "
            "pass that runs that pipeline (spmd-partitioning runs spmd-cleanup), or by "
            "passes outside any dumped pipeline",
        )
    diff_report = None
    diff_index = None
    if diff is not None:
        diff_index, note = pick_pass(table, diff)
        notes += (note,) if note else ()
        diff_report = pass_diff(dumped, table, diff_index)
    compiled = dumped.compiled
    compile_seconds = None
    if compiled is not None and compiled.compilation is not None:
        compile_seconds = compiled.compilation.compile_seconds
    return PassesReport(
        target=dumped.target,
        folder=None if dumped.temporary else display_path(dumped.folder),
        module=dumped.module.key,
        files=tuple(name.file for name in names),
        table=table,
        find=found,
        diff=diff_report,
        diff_index=diff_index,
        compile_seconds=compile_seconds,
        scan_seconds=scan_seconds,
        notes=notes,
    )


def pick_pass(table: PassTable, wanted: str) -> tuple[int, str | None]:
    """The pass `--diff` names: its index, or its name (the first run of it that
    changed the op counts, with a note when it ran several times)."""
    steps = table.steps
    if wanted.isdigit():
        index = int(wanted)
        if index >= len(steps):
            raise HloscopeError(
                f"--diff {wanted}: there are {len(steps)} passes (indexes 0 to {len(steps) - 1})"
            )
        return index, None
    runs = [step for step in steps if step.pass_name == wanted]
    if not runs:
        known = ", ".join(dict.fromkeys(step.pass_name for step in steps))
        raise HloscopeError(f"--diff {wanted}: no such pass in this pipeline; passes: {known}")
    picked = next((step for step in runs if step.changed), runs[0])
    if len(runs) == 1:
        return picked.index, None
    indexes = ", ".join(str(step.index) for step in runs)
    return picked.index, (
        f"{wanted} ran {len(runs)} times (indexes {indexes}); showing index {picked.index} "
        "(give --diff INDEX for another)"
    )


def pass_sides(dumped: PassDumps, table: PassTable, index: int) -> tuple[Loaded, Loaded]:
    """The module before the pass at `index` and the module after it, parsed in full
    (unlike the listing)."""
    step = table.steps[index]
    if dumped.module_before(index) is None:
        raise HloscopeError(
            f"the module before the first pass ({step.pass_name}) was not dumped "
            "(no before_optimizations file)",
            where=display_path(dumped.folder),
        )
    before_label = (
        "before_optimizations"
        if index == 0
        else f"#{index - 1} {_pass_label(table.steps[index - 1])}"
    )
    return dumped.sides(index, before_label, f"#{index} {_pass_label(step)}")


def pass_diff(dumped: PassDumps, table: PassTable, index: int) -> DiffReport:
    """The structural diff of the pass at `index`: the module before it against the
    module after it."""
    return diff_loaded(*pass_sides(dumped, table, index))


def _pass_label(step: PassStep) -> str:
    return f"{step.pipeline}/{step.pass_name}"


# --------------------------------------------------------------------------- memory


@dataclasses.dataclass(frozen=True)
class MemoryReport:
    """What is live at the memory peak of the optimized module, from XLA's buffer
    assignment and live ranges, mapped to source lines."""

    source: Source
    module: str | None
    """The module's name (`jit_f`)."""
    analysis: MemoryAnalysis
    files: tuple[str, ...]
    """The dump files read (a dump folder's); empty when hloscope compiled the target
    with XLA dumping into a temporary folder."""
    line_texts: Mapping[str, str]
    """The code of each source line named (`file.py:LINE` -> text), where readable."""
    notes: tuple[str, ...]


def memory_report(buffers: BufferDumps) -> MemoryReport:
    """Build the `memory` report of XLA's buffer assignment and live ranges of an
    optimized module (`hloscope.sources.memory`)."""
    from hloscope.analyses.memory import analyze_memory
    from hloscope.analyses.params import analyze_params

    loaded = buffers.loaded
    usage = analyze_params(loaded.module, loaded.lowering)
    paths = {p.hlo_index: p.path for p in usage.parameters if p.hlo_index is not None}
    compilation = loaded.compilation
    analysis = analyze_memory(
        buffers.assignment,
        buffers.live,
        loaded.module,
        paths,
        compilation.memory if compilation is not None and not buffers.dumped else None,
        source_root=os.getcwd(),
        lowered=lowered_frames(loaded),
    )
    notes = loaded.notes + analysis.notes
    return MemoryReport(
        source=loaded.source,
        module=loaded.module.name,
        analysis=analysis,
        files=buffers.files,
        line_texts=line_texts(
            s
            for b in (
                *analysis.buffers_at_peak,
                *(analysis.busiest.buffers if analysis.busiest else ()),
            )
            for s in b.sources
        ),
        notes=notes,
    )

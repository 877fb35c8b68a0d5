"""The `passes` report: XLA's pipeline pass by pass, from one module's per-pass
files."""

from __future__ import annotations

import dataclasses
import time
from typing import TYPE_CHECKING

from hloscope.errors import HloscopeError, display_path
from hloscope.reports.diff import DiffReport, diff_loaded
from hloscope.reports.entry import ReportEntry
from hloscope.stages import CompiledFor

if TYPE_CHECKING:
    from hloscope.analyses.passes import Census, PassFind, PassStep, PassTable
    from hloscope.sources.loader import Loaded
    from hloscope.sources.passes import PassDumps


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
    compiled_for: CompiledFor | None = None
    """What it was compiled for, when compiled here (`--for`, or the local backend)."""
    compile_cached: bool = False
    """The compile and its files were read from hloscope's compile cache
    (`compile_seconds` is then the seconds of the compile that made them)."""


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
    compile_cached = False
    if compiled is not None and compiled.compilation is not None:
        compile_seconds = compiled.compilation.compile_seconds
        compile_cached = compiled.compilation.cached
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
        compiled_for=compiled.source.compiled_for if compiled is not None else None,
        compile_cached=compile_cached,
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


# Shown by the passes screen of its own (`hloscope.tui.passes_app`), not a tab.
ENTRY = ReportEntry(
    report=PassesReport,
    json="hloscope.render.runs_json:passes_json",
    text="hloscope.render.text.passes:render_passes",
)

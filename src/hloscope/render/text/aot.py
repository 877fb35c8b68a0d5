"""`hloscope aot-check` as text: the direct call against the AOT path, the checks
made, their differences and likely causes, and the results compared."""

from __future__ import annotations

from rich.console import Console, RenderableType
from rich.text import Text

from hloscope.analyses.aot import ProgramSummary, changed_kinds
from hloscope.analyses.aot import ResultComparison as AotResult
from hloscope.render.text.common import (
    MAX_NAMES_IN_CELL,
    header_table,
    notes_group,
    plural,
    seconds,
    simple_table,
)
from hloscope.reports import AotReport

MAX_RESULT_ROWS = 40


_CHECK_STYLES = {True: "green", False: "bold red", None: "dim"}


def _program_text(program: ProgramSummary) -> str:
    # The calls apart: the ops check compares the ops they lead to, and together the
    # two are the Overview's count.
    text = f"{program.name} ({plural(program.ops, 'op')}"
    if program.calls:
        text += f" and {plural(program.calls, 'call')}"
    if program.off_device_ops:
        text += f", {program.off_device_ops} off the device"
    return text + ")"


def _inputs_text(report: AotReport) -> str:
    leaves = report.inputs
    if not leaves:
        return "none"
    shown = ", ".join(f"{leaf.path} {leaf.shape}" for leaf in leaves[:MAX_NAMES_IN_CELL])
    if len(leaves) > MAX_NAMES_IN_CELL:
        shown += f" … {len(leaves) - MAX_NAMES_IN_CELL} more"
    origins = {leaf.origin for leaf in leaves}
    if "generated" in origins:
        shown += f" · values generated from seed {report.seed} where shapes were given"
    sharded = sum(1 for leaf in leaves if leaf.sharding)
    if sharded:
        shown += f" · {sharded} sharded"
    return shown


def _tolerance_text(result: AotResult) -> str:
    if result.dtype is None or (result.rtol == 0 and result.atol == 0):
        return "exact"
    return f"rtol {result.rtol:g}, atol {result.atol:g}"


def _difference_text(result: AotResult) -> str:
    if result.max_abs_diff is None:
        return "not comparable"
    return f"{result.max_abs_diff:.6g}"


def render_aot_check(report: AotReport, console: Console) -> None:
    comparison = report.comparison
    entry = comparison.entry
    kinds = changed_kinds(comparison.differences)
    verdict = Text(comparison.verdict, style="bold green" if not kinds else "bold red")
    if kinds:
        verdict.append(f": {', '.join(kinds)}", style="red")
    programs = comparison.call_programs
    call_text = (
        f"{plural(len(programs), 'program')}: "
        + ", ".join(_program_text(p) for p in programs[:MAX_NAMES_IN_CELL])
        if programs
        else "no XLA program"
    )
    if len(programs) > MAX_NAMES_IN_CELL:
        call_text += f" … {len(programs) - MAX_NAMES_IN_CELL} more"
    aot_text = (
        _program_text(comparison.aot_program)
        if comparison.aot_program is not None
        else "no lowered module"
    )
    timings = report.timings
    timing_parts = [
        f"load {seconds(timings.load_seconds)}",
        f"call {seconds(timings.call_seconds)}",
    ]
    if timings.lower_seconds is not None:
        timing_parts.append(f"lower {seconds(timings.lower_seconds)}")
    if timings.compile_seconds is not None:
        timing_parts.append(f"compile {seconds(timings.compile_seconds)}")
    timing_parts.append(f"run {seconds(timings.run_seconds)}")
    rows: list[tuple[str, RenderableType]] = [
        ("target", Text(report.target, style="bold")),
        ("verdict", verdict),
        ("aot entry", Text(f"{entry.expression}  ({entry.name})", style="bold")),
        ("why", entry.reason),
        ("call", call_text),
        ("aot", aot_text),
        ("inputs", _inputs_text(report)),
        ("timings", " · ".join(timing_parts)),
    ]
    console.print(header_table(rows))
    if comparison.differences:
        console.print()
        table = simple_table(
            f"Differences ({len(comparison.differences)})",
            [
                ("kind", "left", True),
                ("what differs", "left", False),
                ("likely cause", "left", False),
            ],
        )
        for difference in comparison.differences:
            table.add_row(
                Text(difference.kind, style="bold red"),
                difference.detail,
                Text(difference.cause, style="yellow"),
            )
        console.print(table)
    console.print()
    checks = simple_table(
        "Checks",
        [("check", "left", True), ("outcome", "left", True), ("what was compared", "left", False)],
    )
    for check in comparison.checks:
        label = {True: "same", False: "different", None: "skipped"}[check.same]
        checks.add_row(check.kind, Text(label, style=_CHECK_STYLES[check.same]), check.note)
    console.print(checks)
    if comparison.results:
        console.print()
        table = simple_table(
            f"Results ({len(comparison.results)})",
            [
                ("output", "left", False),
                ("shape", "left", True),
                ("max |call − AOT|", "right", True),
                ("tolerance", "left", True),
                ("", "left", True),
            ],
        )
        for result in comparison.results[:MAX_RESULT_ROWS]:
            shape = result.call_shape or "-"
            if result.aot_shape != result.call_shape:
                shape = f"{result.call_shape or '-'} vs {result.aot_shape or '-'}"
            table.add_row(
                result.path,
                shape,
                _difference_text(result),
                _tolerance_text(result),
                Text("✓", style="green")
                if result.same
                else Text(f"✗ {result.mismatched} of {result.elements}", style="bold red"),
            )
        if len(comparison.results) > MAX_RESULT_ROWS:
            table.add_row(
                Text(
                    f"… {len(comparison.results) - MAX_RESULT_ROWS} more (see --json)", style="dim"
                ),
                "",
                "",
                "",
                "",
            )
        console.print(table)
    notes = notes_group(report.notes)
    if notes is not None:
        console.print()
        console.print(notes)

"""`hloscope passes` as text: the pipeline pass by pass, where a pattern changed,
and one pass's diff."""

from __future__ import annotations

from rich import box
from rich.console import Console, RenderableType
from rich.table import Table
from rich.text import Text

from hloscope.analyses.passes import FoundAt, KindChange, PassFind, PassStep
from hloscope.render.text.common import (
    Cell,
    Entries,
    compiled_for_text,
    header_table,
    notes_group,
    seconds,
)
from hloscope.render.text.diff import render_diff
from hloscope.reports import PassesReport

MAX_KINDS_IN_CELL = 3


def kind_changes_text(changes: tuple[KindChange, ...]) -> Text:
    """`+fusion 3  −multiply 2`, the largest changes first."""
    text = Text("  ").join(kind_change_entries(changes[:MAX_KINDS_IN_CELL]))
    if len(changes) > MAX_KINDS_IN_CELL:
        text.append(f"  … {len(changes) - MAX_KINDS_IN_CELL} more", style="dim")
    return text


def kind_change_entries(changes: tuple[KindChange, ...]) -> list[Text]:
    """`+fusion 3`, `−multiply 2`: each kind with its change, read as one."""
    return [
        Text(
            f"{'+' if c.delta > 0 else '−'}{c.kind} {abs(c.delta)}",
            style="green" if c.delta > 0 else "red",
        )
        for c in changes
    ]


def delta_text(delta: int | None) -> Text:
    if delta is None:
        return Text("")
    if delta == 0:
        return Text("0", style="dim")
    return Text(f"{delta:+d}", style="green" if delta > 0 else "red")


def found_at_text(found: FoundAt | None) -> str:
    if found is None:
        return "-"
    if found.index is None:
        return found.pass_name
    return f"#{found.index} {found.pass_name}"


def find_summary(found: PassFind) -> Text:
    """One line: what the pattern was taken to be, where it appears and is gone."""
    text = Text(f"{found.pattern}", style="bold")
    text.append(f" ({found.kind}) · first seen {found_at_text(found.first_seen)}")
    text.append(f" · gone at {found_at_text(found.gone_at)}")
    last = found.counts[-1] if found.counts else 0
    changed = len(found.changes)
    text.append(
        f" · {changed} {'pass' if changed == 1 else 'passes'} changed it · {last} at the end"
    )
    return text


def pass_cells(step: PassStep, found: PassFind | None) -> list[Cell]:
    """A pass's row, in the text report and the passes screen: index, pipeline, pass,
    op count, its change, the op kinds that changed, and the pattern's count when
    `--find` asked for one."""
    cells: list[Cell] = [
        str(step.index),
        step.pipeline,
        Text(step.pass_name, style="bold" if step.changed else "dim"),
        str(step.ops),
        delta_text(step.ops_delta),
        kind_changes_text(step.changed_kinds),
    ]
    if found is not None:
        cells.append(_find_cell(found, step))
    return cells


def _find_cell(found: PassFind | None, step: PassStep) -> Text:
    if found is None:
        return Text("")
    change = found.changed_at(step.index)
    if change is None:
        return Text(str(found.counts[step.index]), style="dim")
    text = Text(f"{change.before} → {change.after}", style="bold yellow")
    if (change.fused_before, change.fused_after) != (0, 0):
        text.append(f", fused {change.fused_before} → {change.fused_after}", style="yellow")
    return text


INSTRUCTIONS_COLUMN = "instrs"
INSTRUCTIONS_MEANING = "HLO instructions, parameters included (a diff counts ops)"
"""What the table's count is: not the ops a diff of a pass counts."""


def passes_table(report: PassesReport, only_changed: bool) -> Table:
    found = report.find
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, title_justify="left")
    table.add_column("#", justify="right", no_wrap=True)
    table.add_column("pipeline", no_wrap=True, overflow="ellipsis", max_width=26)
    table.add_column("pass", no_wrap=True, overflow="ellipsis", max_width=26)
    table.add_column(INSTRUCTIONS_COLUMN, justify="right", no_wrap=True)
    table.add_column("Δ", justify="right", no_wrap=True)
    table.add_column("changed kinds", min_width=22)
    if found is not None:
        table.add_column("found", overflow="fold", min_width=20, max_width=24)
    hidden = 0
    for step in report.table.steps:
        marked = found is not None and found.changed_at(step.index) is not None
        if only_changed and not (step.changed or marked or step.index == report.diff_index):
            hidden += 1
            continue
        cells: list[RenderableType] = list(pass_cells(step, found))
        # A kind keeps its count on its line, and the kinds give way (`Entries`).
        kinds = step.changed_kinds
        cells[5] = Entries(
            kind_change_entries(kinds[:MAX_KINDS_IN_CELL]),
            more=max(len(kinds) - MAX_KINDS_IN_CELL, 0),
            max_lines=3,
            separator="  ",
        )
        table.add_row(*cells)
    if hidden:
        table.title = (
            f"Passes that changed the op counts ({len(report.table.steps) - hidden} of "
            f"{len(report.table.steps)}; every pass is in --json)"
        )
    return table


def render_passes(report: PassesReport, console: Console) -> None:
    table = report.table
    changed = sum(1 for step in table.steps if step.changed)
    ops = "-"
    if table.steps:
        first = table.input_ops if table.input_ops is not None else table.steps[0].ops
        ops = f"{first} → {table.steps[-1].ops}"
        if table.output_ops is not None:
            ops += f" (after optimizations: {table.output_ops})"
    compiled_for = compiled_for_text(report.compiled_for)
    where = f"in {report.folder}" if report.folder else "(compiled here)"
    if not report.folder and compiled_for:
        where = f"· {compiled_for}"
    rows: list[tuple[str, RenderableType]] = [
        ("target", Text(report.target, style="bold")),
        ("module", f"{report.module}  {where}"),
        (
            "passes",
            f"{len(table.steps)} files · {len(table.pipelines)} pipelines · "
            f"{changed} changed the op counts",
        ),
        ("instructions", f"{ops} · {INSTRUCTIONS_MEANING}" if table.steps else ops),
        (
            "timings",
            f"compile {seconds(report.compile_seconds)}"
            f"{' (cached)' if report.compile_cached else ''} · scan {seconds(report.scan_seconds)}",
        ),
    ]
    if report.find is not None:
        rows.append(("find", find_summary(report.find)))
    console.print(header_table(rows))
    console.print()
    console.print(passes_table(report, only_changed=len(table.steps) > 40))
    notes = notes_group(report.notes)
    if notes is not None:
        console.print()
        console.print(notes)
    if report.diff is not None and report.diff_index is not None:
        step = table.steps[report.diff_index]
        console.print()
        console.print(Text(f"Diff of #{step.index} {step.pipeline}/{step.pass_name}", style="bold"))
        render_diff(report.diff, console)

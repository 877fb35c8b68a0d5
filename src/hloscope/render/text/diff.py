"""`hloscope diff` as text: the two sides, the verdict, and the changes grouped by
what changed."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from rich import box
from rich.console import Console, RenderableType
from rich.table import Table
from rich.text import Text

from hloscope.analyses.diff import Change, ChangeGroup, ModuleDiff
from hloscope.analyses.diff import Side as DiffSide
from hloscope.render.text.common import (
    Squeezed,
    describe_source,
    header_table,
    notes_group,
    plural,
    seconds,
)
from hloscope.reports import DiffReport
from hloscope.stages import Source
from hloscope.units import human_bytes

if TYPE_CHECKING:
    # The summary's types only: a plain diff's text loads no view of the summary.
    from hloscope.analyses.diff.collectives import CollectiveCount
    from hloscope.reports.diff import CompiledSummary

MAX_CHANGE_GROUPS = 60
# Functions named in a group's row (every one is in --json `places`).
MAX_PLACES = 4


DIFF_STYLES = {"added": "green", "removed": "red", "changed": "yellow"}


def _relative(text: str | None) -> str:
    """A location string with the working directory's prefix dropped."""
    if not text:
        return ""
    prefix = os.getcwd().rstrip(os.sep) + os.sep
    return text.replace(prefix, "")


def _diff_side_line(source: Source, side: DiffSide) -> Text:
    line = Text(source.target, style="bold")
    ops = sum(side.counted)
    line.append(
        f"  {describe_source(source)} · {side.module or '(unnamed)'} · {plural(ops, 'op')}",
        style="",
    )
    if side.fusions:
        line.append(f" · {plural(side.fusions, 'fusion')}")
    return line


def change_where(change: Change) -> str:
    """`main %6 (model.py:33) → host_fn %6 (model.py:51)`, paths relative to the
    working directory."""
    a, b = _relative(change.a_where), _relative(change.b_where)
    if a and b:
        return a if a == b else f"{a} → {b}"
    return a or b


def render_diff(report: DiffReport, console: Console) -> None:
    result = report.diff
    summary = result.summary
    verdict = Text(result.verdict, style="bold green" if report.same else "bold yellow")
    counts = (
        f" · {summary.added} added · {summary.removed} removed · {summary.changed} changed"
        f" · {summary.unchanged} unchanged"
    )
    verdict.append(counts)
    if summary.normalized:
        verdict.append(
            f" · {summary.normalized} normalised (unit-dimension reshapes, repeated constants)",
            style="dim",
        )
    other = sum(1 for c in result.changes if c.op in ("parameter", "result", "module"))
    if other:
        verdict.append(f" · {other} parameter, result or module changes")
    rows: list[tuple[str, RenderableType]] = [
        ("a", _diff_side_line(report.a, result.a)),
        ("b", _diff_side_line(report.b, result.b)),
        ("verdict", verdict),
        (
            "timings",
            f"load {seconds(report.load_seconds[0])} + {seconds(report.load_seconds[1])}"
            f" · diff {seconds(report.diff_seconds)}",
        ),
    ]
    console.print(header_table(rows))
    if report.compiled is not None:
        console.print()
        console.print(compiled_table(report.compiled))
    not_ops = ("parameter", "result", "module")
    op_groups = [g for g in result.groups if g.op not in not_ops]
    other_groups = [g for g in result.groups if g.op in not_ops]
    if op_groups:
        console.print()
        console.print(_changes_table("Changes", op_groups))
    if other_groups:
        console.print()
        console.print(_changes_table("Parameters, results and module", other_groups))
    fusion_table = _fusions_table(result)
    if fusion_table is not None:
        console.print()
        console.print(fusion_table)
    notes = notes_group(report.notes)
    if notes is not None:
        console.print()
        console.print(notes)


def compiled_table(summary: CompiledSummary) -> Table:
    """The two compiled programs side by side: the peak of memory (as `memory`), the
    estimate (as `profile --for`), each kind of collective (as `placement`) and the
    lines where B runs more of it."""
    from hloscope.render.text.profile import duration, percent

    table = Table(
        title="Compiled: A → B", title_justify="left", box=box.SIMPLE_HEAD, show_edge=False
    )
    table.add_column("", no_wrap=True)
    table.add_column("a", justify="right", no_wrap=True)
    table.add_column("b", justify="right", no_wrap=True)
    table.add_column("", overflow="fold")
    a_peak, b_peak = summary.memory
    table.add_row(
        "peak (buffer assignment)", human_bytes(a_peak), human_bytes(b_peak), _ratio(a_peak, b_peak)
    )
    if summary.estimate is not None:
        a, b = summary.estimate

        def cells(value: float | None) -> str:
            return "?" if value is None else duration(value)

        for label, field in (
            ("step (estimated)", "seconds"),
            ("  compute", "compute_seconds"),
            ("  exposed communication", "exposed_communication_seconds"),
        ):
            values = [getattr(x, field) if x is not None else None for x in (a, b)]
            table.add_row(label, cells(values[0]), cells(values[1]), _ratio(*values))
        mfu = [x.mfu if x is not None else None for x in (a, b)]
        table.add_row("  MFU", *("?" if m is None else percent(m) for m in mfu), "")
    for change in summary.collectives:
        label = change.op.replace("_", "-") + (" (across slices)" if change.across_slices else "")
        added = ", ".join(f"{_relative(line)} +{count}" for line, count in change.added_at)
        table.add_row(
            label,
            _collectives(change.a),
            _collectives(change.b),
            Text(f"more in B at {added}" if added else "", style="dim"),
        )
    return table


def _collectives(count: CollectiveCount) -> str:
    """`2 · 64.0 KiB · 1 in loops`, `0`."""
    if not count.count:
        return "0"
    text = f"{count.count} · {human_bytes(count.bytes)}"
    return text + (f" · {count.in_loops} in loops" if count.in_loops else "")


def _ratio(a: float | None, b: float | None) -> str:
    """`-33%`, `+5%`, `=`: B against A."""
    if a is None or b is None:
        return ""
    if a == b:
        return "="
    if not a:
        return ""
    return f"{(b - a) / a:+.0%}"


def _changes_table(title: str, groups: list[ChangeGroup]) -> Table:
    total = sum(group.count for group in groups)
    table = Table(
        title=f"{title} ({len(groups)} distinct, {total} in all)",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        show_edge=False,
    )
    table.add_column("kind", no_wrap=True)
    table.add_column("×", justify="right", no_wrap=True)
    # A name too wide loses its middle (`Squeezed`), never split over two lines.
    table.add_column("function", max_width=28)
    table.add_column("op", max_width=30)
    table.add_column("detail", overflow="fold")
    for group in groups[:MAX_CHANGE_GROUPS]:
        detail = Text(group.detail)
        if len(group.places) > 1:
            places = ", ".join(f"{p.function} ×{p.count}" for p in group.places[:MAX_PLACES])
            if len(group.places) > MAX_PLACES:
                places += f" and {len(group.places) - MAX_PLACES} more functions"
            detail.append(("\n" if group.detail else "") + "in " + places, style="dim")
        where = change_where(group.changes[0])
        if where:
            detail.append(("\n" if group.detail else "") + "at " + where, style="dim")
            if group.count > 1:
                detail.append(f" and {group.count - 1} more", style="dim")
        table.add_row(
            Text(group.kind, style=DIFF_STYLES.get(group.kind, "")),
            str(group.count),
            Squeezed(group.function, min_width=12),
            Squeezed(group.op, min_width=12),
            detail,
        )
    if len(groups) > MAX_CHANGE_GROUPS:
        rest = groups[MAX_CHANGE_GROUPS:]
        table.add_row(
            Text(f"… {len(rest)} more", style="dim"),
            str(sum(group.count for group in rest)),
            "",
            "",
            Text("every change is in --json", style="dim"),
        )
    return table


def _fusions_table(result: ModuleDiff) -> Table | None:
    if not result.fusions or not (result.a.fusions and result.b.fusions):
        return None
    changed = [f for f in result.fusions if f.status == "changed"]
    added = sum(1 for f in result.fusions if f.status == "added")
    removed = sum(1 for f in result.fusions if f.status == "removed")
    table = Table(
        title=(
            f"Fusions ({result.a.fusions} → {result.b.fusions}: {len(changed)} changed, "
            f"{added} added, {removed} removed)"
        ),
        title_justify="left",
        box=box.SIMPLE_HEAD,
        show_edge=False,
    )
    table.add_column("status", no_wrap=True)
    table.add_column("fusion")
    table.add_column("kind", no_wrap=True)
    # Lists wrap between their words; a word too wide ends in `…`, never split.
    table.add_column("fused ops")
    table.add_column("what moved")
    for fusion in result.fusions[:MAX_CHANGE_GROUPS]:
        kind = fusion.a_kind or fusion.b_kind or ""
        if fusion.a_kind and fusion.b_kind and fusion.a_kind != fusion.b_kind:
            kind = f"{fusion.a_kind} → {fusion.b_kind}"
        fused = ", ".join(fusion.b_ops if fusion.status == "added" else fusion.a_ops)
        if fusion.status == "changed":
            fused = f"{', '.join(fusion.a_ops)} → {', '.join(fusion.b_ops)}"
        name = fusion.a_name or fusion.b_name or ""
        if fusion.a_name and fusion.b_name and fusion.a_name != fusion.b_name:
            name = f"{fusion.a_name} → {fusion.b_name}"
        table.add_row(
            Text(fusion.status, style=DIFF_STYLES.get(fusion.status, "")),
            name,
            kind,
            fused,
            fusion.detail,
        )
    return table

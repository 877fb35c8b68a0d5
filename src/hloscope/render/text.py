"""Reports as text for a terminal or a pipe, with rich.

Each `render_*` takes a report and a `rich.console.Console`; nothing here
computes anything a report does not already hold.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Mapping
from typing import IO

from rich import box
from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from hloscope.analyses.diff import Change, ChangeGroup, ModuleDiff
from hloscope.analyses.diff import Side as DiffSide
from hloscope.analyses.structure import Structure
from hloscope.api import DiffReport, InspectReport
from hloscope.sources.loader import Source

MAX_OP_KINDS = 15
MAX_FUNCTIONS = 40


def make_console(file: IO[str] | None = None) -> Console:
    """A console for stdout: the terminal's width, or 120 columns in a pipe."""
    stream = file or sys.stdout
    is_tty = hasattr(stream, "isatty") and stream.isatty()
    width = None if is_tty else max(120, shutil.get_terminal_size((120, 24)).columns)
    return Console(file=stream, width=width, highlight=False, soft_wrap=False)


def human_count(value: float) -> str:
    """1234 -> 1.23k, 5e9 -> 5.00G."""
    for unit, size in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(value) >= size:
            return f"{value / size:.2f}{unit}"
    return f"{value:g}"


def human_bytes(value: float | None) -> str:
    if value is None:
        return "?"
    size = float(value)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(size) < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} TiB"


def seconds(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value * 1000:.0f} ms" if value < 1 else f"{value:.2f} s"


def describe_source(source: Source) -> str:
    stage = "optimized" if source.stage == "optimized" else "lowered"
    ir = {
        "stablehlo": "StableHLO",
        "vhlo": "StableHLO (from a portable VHLO artifact)",
        "hlo": "HLO (converted to MLIR)",
        "hlo-native": "HLO (XLA's own form)",
        "mlir": "MLIR",
    }.get(source.ir, source.ir)
    read = {
        "entrypoint": "entrypoint",
        "mlir-text": "MLIR text",
        "mlir-bytecode": "MLIR bytecode",
        "hlo-text": "HLO text",
        "hlo-proto": "HLO proto",
        "jax-exported": "serialized jax.export.Exported",
    }.get(source.format, source.format)
    text = f"{read}, {stage} module, {ir}"
    if source.path and source.kind == "dump" and source.path != source.target:
        text += f" from {source.path}"
    return text


def header_table(rows: list[tuple[str, RenderableType]]) -> Table:
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold cyan", no_wrap=True)
    table.add_column()
    for key, value in rows:
        table.add_row(key, value)
    return table


def counts_table(title: str, counts: Mapping[str, int], limit: int = MAX_OP_KINDS) -> Table:
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, show_edge=False)
    table.add_column("op")
    table.add_column("count", justify="right")
    items = list(counts.items())
    for name, count in items[:limit]:
        table.add_row(name, str(count))
    if len(items) > limit:
        rest = sum(count for _, count in items[limit:])
        table.add_row(Text(f"… {len(items) - limit} more kinds", style="dim"), str(rest))
    return table


def functions_table(structure: Structure) -> Table:
    table = Table(
        title=f"Functions ({len(structure.functions)})",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        show_edge=False,
    )
    for column, justify in (
        ("function", "left"),
        ("visibility", "left"),
        ("ops", "right"),
        ("inlined", "right"),
        ("params", "right"),
        ("results", "right"),
        ("calls", "left"),
    ):
        table.add_column(column, justify=justify)  # type: ignore[arg-type]
    shown = sorted(
        structure.functions,
        key=lambda f: (f.name != structure.entry, not f.reachable, -f.inlined_ops),
    )
    for info in shown[:MAX_FUNCTIONS]:
        name = Text(info.name, style="bold" if info.name == structure.entry else "")
        if not info.reachable:
            name.append(" (unreachable)", style="dim")
        calls = ", ".join(f"{c.callee} ×{c.count}" if c.count > 1 else c.callee for c in info.calls)
        table.add_row(
            name,
            info.visibility,
            str(info.ops),
            str(info.inlined_ops),
            str(info.parameters),
            str(info.results),
            calls,
        )
    if len(shown) > MAX_FUNCTIONS:
        table.add_row(Text(f"… {len(shown) - MAX_FUNCTIONS} more", style="dim"), "", "", "")
    return table


def call_tree(structure: Structure) -> Tree | None:
    """The call graph from the entry, or None when nothing calls anything."""
    if structure.call_depth == 0 or structure.entry is None:
        return None
    by_name = {f.name: f for f in structure.functions}
    root = Tree(Text(structure.entry, style="bold"))
    budget = [200]

    def grow(node: Tree, name: str, path: tuple[str, ...]) -> None:
        info = by_name.get(name)
        if info is None:
            return
        for call in info.calls:
            if budget[0] <= 0:
                node.add(Text("…", style="dim"))
                return
            budget[0] -= 1
            label = Text(call.callee)
            if call.count > 1:
                label.append(f" ×{call.count}", style="yellow")
            callee = by_name.get(call.callee)
            if callee is not None:
                label.append(f"  {callee.ops} ops", style="dim")
            child = node.add(label)
            if call.callee not in path:
                grow(child, call.callee, (*path, call.callee))

    grow(root, structure.entry, (structure.entry,))
    return root


def cost_text(cost: Mapping[str, float] | None) -> str:
    if not cost:
        return "-"
    parts = []
    if "flops" in cost:
        parts.append(f"flops {human_count(cost['flops'])}")
    if "transcendentals" in cost:
        parts.append(f"transcendentals {human_count(cost['transcendentals'])}")
    if "bytes_accessed" in cost:
        parts.append(f"bytes accessed {human_bytes(cost['bytes_accessed'])}")
    return " · ".join(parts) or "-"


def memory_text(memory: Mapping[str, int] | None) -> str:
    if not memory:
        return "-"
    labels = (
        ("argument_size_in_bytes", "arguments"),
        ("output_size_in_bytes", "outputs"),
        ("alias_size_in_bytes", "aliased"),
        ("temp_size_in_bytes", "temporaries"),
        ("generated_code_size_in_bytes", "code"),
    )
    return " · ".join(
        f"{label} {human_bytes(memory[key])}" for key, label in labels if key in memory
    )


def notes_group(notes: tuple[str, ...]) -> RenderableType | None:
    if not notes:
        return None
    lines = [Text("Notes", style="bold")]
    lines.extend(Text(f" • {note}", style="yellow") for note in notes)
    return Group(*lines)


def render_inspect(report: InspectReport, console: Console) -> None:
    structure = report.structure
    source = report.source
    timing_parts = [f"load {seconds(report.timings.load_seconds)}"]
    if report.timings.lower_seconds is not None:
        timing_parts.append(f"lower {seconds(report.timings.lower_seconds)}")
    if report.timings.compile_seconds is not None:
        timing_parts.append(f"compile {seconds(report.timings.compile_seconds)}")
    rows: list[tuple[str, RenderableType]] = [
        ("target", Text(source.target, style="bold")),
        ("source", describe_source(source)),
    ]
    if source.folder_modules:
        rows.append(
            ("folder", f"{source.folder_module} (one of {len(source.folder_modules)} modules)")
        )
    rows.append(("module", f"{structure.module or '(unnamed)'} · entry {structure.entry or '-'}"))
    ops_line = f"{structure.total_ops} ops in {sum(f.reachable for f in structure.functions)} "
    ops_line += "reachable functions"
    if structure.call_depth:
        entry = structure.function(structure.entry or "")
        if entry is not None:
            ops_line += f" · {entry.inlined_ops} once calls are inlined"
    rows.append(("ops", ops_line))
    rows.append(("timings", " · ".join(timing_parts)))
    if report.cost is not None:
        rows.append(("cost", cost_text(report.cost)))
    if report.memory is not None:
        rows.append(("memory", memory_text(report.memory)))
    console.print(header_table(rows))
    console.print()
    console.print(functions_table(structure))
    tree = call_tree(structure)
    if tree is not None:
        console.print(Text("Call graph", style="bold italic"))
        console.print(tree)
        console.print()
    console.print(
        counts_table(
            f"Op counts ({len(structure.op_counts)} kinds, {structure.total_ops} ops)",
            structure.op_counts,
        )
    )
    notes = notes_group(report.notes)
    if notes is not None:
        console.print()
        console.print(notes)


# --------------------------------------------------------------------------- diff

MAX_CHANGE_GROUPS = 60
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
    line.append(f"  {describe_source(source)} · {side.module or '(unnamed)'} · {ops} ops", style="")
    if side.fusions:
        line.append(f" · {side.fusions} fusions")
    return line


def _change_where(change: Change) -> str:
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
    table.add_column("function", overflow="fold", max_width=28)
    table.add_column("op", overflow="fold", max_width=30)
    table.add_column("detail", overflow="fold")
    for group in groups[:MAX_CHANGE_GROUPS]:
        detail = Text(group.detail)
        where = _change_where(group.changes[0])
        if where:
            detail.append(("\n" if group.detail else "") + "at " + where, style="dim")
            if group.count > 1:
                detail.append(f" and {group.count - 1} more", style="dim")
        table.add_row(
            Text(group.kind, style=DIFF_STYLES.get(group.kind, "")),
            str(group.count),
            group.function,
            group.op,
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
    table.add_column("kind", no_wrap=True)
    table.add_column("fused ops", overflow="fold")
    table.add_column("what moved", overflow="fold")
    for fusion in result.fusions[:MAX_CHANGE_GROUPS]:
        kind = fusion.a_kind or fusion.b_kind or ""
        if fusion.a_kind and fusion.b_kind and fusion.a_kind != fusion.b_kind:
            kind = f"{fusion.a_kind} → {fusion.b_kind}"
        fused = ", ".join(fusion.b_ops if fusion.status == "added" else fusion.a_ops)
        if fusion.status == "changed":
            fused = f"{', '.join(fusion.a_ops)} → {', '.join(fusion.b_ops)}"
        table.add_row(
            Text(fusion.status, style=DIFF_STYLES.get(fusion.status, "")),
            kind,
            fused,
            fusion.detail,
        )
    return table

"""`hloscope inspect` as text: the overview of a module (functions, call graph, op
counts, timings, cost and memory, and the summaries of the other views)."""

from __future__ import annotations

from collections.abc import Mapping

from rich import box
from rich.console import Console, RenderableType
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from hloscope.analyses.structure import Call, FunctionInfo, Structure
from hloscope.render.text.common import (
    MAX_FUNCTIONS,
    Entries,
    Heading,
    Named,
    describe_source,
    header_table,
    notes_group,
    plural,
    timings_text,
)
from hloscope.render.text.fusions import fusion_summary_text
from hloscope.render.text.params import params_summary_text
from hloscope.render.text.placement import placement_line, placement_warnings
from hloscope.reports import InspectReport
from hloscope.units import counted, human_bytes, human_count

MAX_OP_KINDS = 15


def counts_table(title: str, counts: Mapping[str, int], limit: int = MAX_OP_KINDS) -> Table:
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, show_edge=False)
    table.add_column("op")
    table.add_column("count", justify="right", no_wrap=True)
    items = list(counts.items())
    for name, count in items[:limit]:
        table.add_row(name, str(count))
    if len(items) > limit:
        rest = sum(count for _, count in items[limit:])
        table.add_row(Text(f"… {len(items) - limit} more kinds", style="dim"), str(rest))
    return table


def grouped_calls(structure: Structure, calls: tuple[Call, ...]) -> list[tuple[str, str, int]]:
    """(label, first callee, call sites) per callee, XLA's clones of one function
    merged into one entry named after it: `remainder_1` for `remainder_1.9915`, ...."""
    merged: dict[str, list[str | int]] = {}
    for call in calls:
        group = structure.group_of(call.callee)
        label = group.name if group is not None else call.callee
        entry = merged.setdefault(label, [call.callee, 0])
        entry[1] = int(entry[1]) + call.count
    return [(label, str(callee), int(count)) for label, (callee, count) in merged.items()]


def functions_table(structure: Structure) -> Table:
    shown = sorted(
        structure.functions,
        key=lambda f: (f.name != structure.entry, not f.reachable, -f.inlined_ops),
    )
    # A group of XLA's clones is one row, where its first member would be.
    listed: list[tuple[FunctionInfo, int]] = []
    seen_groups: set[tuple[str, ...]] = set()
    for info in shown:
        group = structure.group_of(info.name)
        if group is None:
            listed.append((info, 1))
        elif group.functions not in seen_groups:
            seen_groups.add(group.functions)
            listed.append((info, len(group.functions)))
    title = f"Functions ({len(structure.functions):,})"
    if structure.groups:
        title = (
            f"Functions ({len(structure.functions):,}: {len(listed):,} once XLA's clones "
            "are grouped)"
        )
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, show_edge=False)
    for column, justify in (
        ("function", "left"),
        ("visibility", "left"),
        ("ops", "right"),
        ("inlined", "right"),
        ("params", "right"),
        ("results", "right"),
        ("calls", "left"),
    ):
        # The names and calls give way (`Named`, `Entries`): numbers are read whole.
        gives_way = column in ("function", "calls")
        table.add_column(column, justify=justify, no_wrap=not gives_way)  # type: ignore[arg-type]
    unreachable_headed = False
    widest = max((len(info.name) for info, _ in listed[:MAX_FUNCTIONS]), default=0)
    for info, clones in listed[:MAX_FUNCTIONS]:
        name = Text(info.name, style="bold" if info.name == structure.entry else "")
        if clones > 1:
            group = structure.group_of(info.name)
            name = Text(group.name if group is not None else info.name)
        if not info.reachable and not unreachable_headed:
            # Said once, above them (they come last), not on every row.
            unreachable_headed = True
            entry = structure.entry or "the entry"
            table.add_row(Heading(f"unreachable from {entry}:", beside=widest))
        suffix = Text(f" ×{clones}", style="yellow") if clones > 1 else Text()
        calls = Entries(
            [
                f"{label} ×{count}" if count > 1 else label
                for label, _callee, count in grouped_calls(structure, info.calls)
            ],
            max_lines=2,
        )
        table.add_row(
            Named(name, suffix, min_width=24),
            info.visibility,
            f"{info.ops:,}",
            f"{info.inlined_ops:,}",
            f"{info.parameters:,}",
            f"{info.results:,}",
            calls,
        )
    if len(listed) > MAX_FUNCTIONS:
        table.add_row(Text(f"… {len(listed) - MAX_FUNCTIONS} more", style="dim"), "", "", "")
    return table


def call_tree(structure: Structure) -> Tree | None:
    """The call graph from the entry, or None when nothing calls anything. XLA's
    clones of one function called from several places are one node with the count
    of call sites."""
    if structure.call_depth == 0 or structure.entry is None:
        return None
    by_name = {f.name: f for f in structure.functions}
    root = Tree(Text(structure.entry, style="bold"))
    budget = [200]

    def grow(node: Tree, name: str, path: tuple[str, ...]) -> None:
        info = by_name.get(name)
        if info is None:
            return
        for label_text, first, count in grouped_calls(structure, info.calls):
            if budget[0] <= 0:
                node.add(Text("…", style="dim"))
                return
            budget[0] -= 1
            label = Text(label_text)
            if count > 1:
                label.append(f" ×{count}", style="yellow")
            callee = by_name.get(first)
            if callee is not None:
                label.append(f"  {plural(callee.ops, 'op')}", style="dim")
            child = node.add(label)
            if first not in path:
                grow(child, first, (*path, first))

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


def render_inspect(report: InspectReport, console: Console) -> None:
    structure = report.structure
    source = report.source
    rows: list[tuple[str, RenderableType]] = [
        ("target", Text(source.target, style="bold")),
        ("source", describe_source(source)),
    ]
    if source.folder_modules:
        rows.append(
            ("folder", f"{source.folder_module} (one of {len(source.folder_modules)} modules)")
        )
    rows.append(("module", f"{structure.module or '(unnamed)'} · entry {structure.entry or '-'}"))
    reachable = sum(f.reachable for f in structure.functions)
    ops_line = f"{counted(structure.total_ops, 'op')} in {counted(reachable, 'reachable function')}"
    if structure.call_depth:
        entry = structure.function(structure.entry or "")
        if entry is not None:
            ops_line += f" · {entry.inlined_ops:,} once calls are inlined"
    rows.append(("ops", ops_line))
    rows.append(("timings", timings_text(report.timings)))
    if report.cost is not None:
        cost = cost_text(report.cost)
        if report.cost_counts_loop_bodies_once:
            cost += " (XLA's cost analysis counts a loop body once)"
        rows.append(("cost", cost))
    if report.memory is not None:
        rows.append(("memory", memory_text(report.memory)))
    if report.params is not None and (report.params.parameters or report.params.static):
        rows.append(("params", params_summary_text(report.params)))
    if report.placement is not None and not report.placement.is_plain:
        rows.append(("placement", placement_line(report.placement)))
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
            f"Op counts ({plural(len(structure.op_counts), 'kind')}, "
            f"{plural(structure.total_ops, 'op')})",
            structure.op_counts,
        )
    )
    if report.fusions is not None:
        console.print()
        console.print(Text("Fusions", style="bold italic"))
        console.print(fusion_summary_text(report.fusions))
    if report.placement is not None and report.placement.warnings:
        console.print()
        console.print(placement_warnings(report.placement))
    notes = notes_group(report.notes)
    if notes is not None:
        console.print()
        console.print(notes)

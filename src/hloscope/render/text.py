"""Reports as text for a terminal or a pipe, with rich.

Each `render_*` takes a report and a `rich.console.Console`; nothing here
computes anything a report does not already hold.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Mapping
from typing import IO

from rich import box
from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from hloscope.analyses.params import ParameterUsage
from hloscope.analyses.structure import Structure
from hloscope.api import InspectReport, ParamsReport
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
    if report.params is not None and (report.params.parameters or report.params.static):
        rows.append(("params", params_summary_text(report.params)))
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


# --------------------------------------------------------------------------- params

STATUS_STYLES = {"used": "green", "unused": "bold yellow", "pruned": "bold red"}
MAX_PARAMETERS = 200
MAX_LISTED = 6


def _listed(names: list[str]) -> str:
    shown = ", ".join(names[:MAX_LISTED])
    return shown + (f", … {len(names) - MAX_LISTED} more" if len(names) > MAX_LISTED else "")


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" + ("" if count == 1 else "s")


def params_counts_text(usage: ParameterUsage) -> str:
    """`6 arguments → 4 HLO parameters: 4 used · 2 pruned`."""
    totals = usage.totals
    what = "arguments" if usage.from_python else "parameters"
    parts = [f"{totals.used} used"]
    if totals.unused:
        parts.append(f"{totals.unused} unused")
    if totals.pruned:
        parts.append(f"{totals.pruned} pruned")
    text = _plural(totals.arguments, what[:-1])
    if usage.from_python:
        text += f" → {_plural(totals.hlo_parameters, 'HLO parameter')}"
    text += ": " + " · ".join(parts)
    if totals.static:
        text += f" · {totals.static} static"
    return text


def params_summary_text(usage: ParameterUsage) -> Text:
    """One or two lines for `inspect`: counts, and which arguments are not used."""
    text = Text(params_counts_text(usage))
    unused = [p.path for p in usage.with_status("unused")]
    pruned = [p.path for p in usage.with_status("pruned")]
    if unused:
        text.append(f"\nunused: {_listed(unused)}", style=STATUS_STYLES["unused"])
    if pruned:
        text.append(f"\npruned: {_listed(pruned)}", style=STATUS_STYLES["pruned"])
    functions = [f for f in usage.functions if f.unused]
    if functions:
        names = [f"{f.name} ({', '.join(p.name for p in f.unused)})" for f in functions]
        text.append(
            f"\nprivate functions ignoring parameters: {_listed(names)}",
            style=STATUS_STYLES["unused"],
        )
    return text


def _donation_text(donated: bool, aliases_output: int | None) -> str:
    if aliases_output is not None:
        return f"→ out {aliases_output}"
    return "yes" if donated else ""


def parameters_table(usage: ParameterUsage) -> Table:
    rows = usage.parameters
    show_donation = any(p.donated for p in rows)
    show_sharding = any(p.sharding for p in rows)
    show_memory = any(p.memory_kind for p in rows)
    table = Table(
        title="Arguments" if usage.from_python else "Parameters",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        show_edge=False,
    )
    table.add_column("#", justify="right")
    table.add_column("argument" if usage.from_python else "parameter")
    table.add_column("hlo", justify="right")
    table.add_column("status")
    table.add_column("shape")
    table.add_column("bytes", justify="right")
    if show_donation:
        table.add_column("donated")
    if show_sharding:
        table.add_column("sharding")
    if show_memory:
        table.add_column("memory")
    for p in rows[:MAX_PARAMETERS]:
        shape = p.shape
        if p.hlo_shape is not None and p.hlo_shape != p.shape:
            shape += f" ({p.hlo_shape} per device)"
        cells: list[RenderableType] = [
            str(p.position),
            p.path,
            "-" if p.hlo_index is None else str(p.hlo_index),
            Text(p.status, style=STATUS_STYLES.get(p.status, "")),
            shape,
            human_bytes(p.bytes),
        ]
        if show_donation:
            cells.append(_donation_text(p.donated, p.aliases_output))
        if show_sharding:
            cells.append(p.sharding or "")
        if show_memory:
            cells.append(p.memory_kind or "")
        table.add_row(*cells)
    if len(rows) > MAX_PARAMETERS:
        table.add_row("", Text(f"… {len(rows) - MAX_PARAMETERS} more (see --json)", style="dim"))
    return table


def render_params(report: ParamsReport, console: Console) -> None:
    usage = report.usage
    totals = usage.totals
    byte_parts = [f"{human_bytes(totals.bytes_passed)} passed per call"]
    if totals.bytes_unused:
        byte_parts.append(f"{human_bytes(totals.bytes_unused)} of it unused")
    if totals.bytes_pruned:
        byte_parts.append(f"{human_bytes(totals.bytes_pruned)} pruned")
    if totals.bytes_donated:
        byte_parts.append(f"{human_bytes(totals.bytes_donated)} donated")
    rows: list[tuple[str, RenderableType]] = [
        ("target", Text(report.source.target, style="bold")),
        ("source", describe_source(report.source)),
        ("module", f"{report.module or '(unnamed)'} · entry {usage.entry or '-'}"),
        ("params", params_counts_text(usage)),
        ("bytes", " · ".join(byte_parts)),
    ]
    console.print(header_table(rows))
    console.print()
    if usage.parameters:
        console.print(parameters_table(usage))
        console.print()
    if usage.implicit:
        console.print(Text("Implicit parameters (no Python argument)", style="bold italic"))
        for q in usage.implicit:
            shape = "" if q.shape == "token" else f"  {q.shape}"
            line = Text(f"  hlo {q.hlo_index}  {q.kind}{shape}  ")
            line.append(q.status, style=STATUS_STYLES.get(q.status, ""))
            console.print(line)
        console.print()
    if usage.static:
        console.print(
            Text("Static arguments (part of the trace, not parameters)", style="bold italic")
        )
        for static in usage.static:
            console.print(f"  {static.path} = {static.value}")
        console.print()
    ignoring = [f for f in usage.functions if f.unused]
    if ignoring:
        console.print(
            Text(
                f"Private functions ignoring parameters ({len(ignoring)} of the "
                f"{len(usage.functions)} called)",
                style="bold italic",
            )
        )
        table = Table(box=box.SIMPLE_HEAD, show_edge=False)
        table.add_column("function")
        table.add_column("call sites", justify="right")
        table.add_column("unused parameters")
        for f in ignoring[:MAX_FUNCTIONS]:
            unused = ", ".join(f"{p.index}: {p.name} {p.shape}" for p in f.unused)
            table.add_row(f.name, str(f.call_sites), Text(unused, style=STATUS_STYLES["unused"]))
        if len(ignoring) > MAX_FUNCTIONS:
            table.add_row(Text(f"… {len(ignoring) - MAX_FUNCTIONS} more", style="dim"), "", "")
        console.print(table)
        console.print()
    notes = notes_group(report.notes)
    if notes is not None:
        console.print(notes)

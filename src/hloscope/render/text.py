"""Reports as text for a terminal or a pipe, with rich.

Each `render_*` takes a report and a `rich.console.Console`; nothing here
computes anything a report does not already hold.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from collections.abc import Mapping
from typing import IO

from rich import box
from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from hloscope.analyses.placement import ComputeRegion, Placement
from hloscope.analyses.structure import Structure
from hloscope.api import InspectReport, PlacementReport
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
            f"Op counts ({len(structure.op_counts)} kinds, {structure.total_ops} ops)",
            structure.op_counts,
        )
    )
    if report.placement is not None and report.placement.warnings:
        console.print()
        console.print(placement_warnings(report.placement))
    notes = notes_group(report.notes)
    if notes is not None:
        console.print()
        console.print(notes)


# --------------------------------------------------------------------------- placement

MAX_PLACEMENT_ROWS = 40


def short_source(source: str | None) -> str:
    """`file.py:LINE` with the file relative to the working directory when below it."""
    if not source:
        return ""
    cwd = os.getcwd() + os.sep
    return source[len(cwd) :] if source.startswith(cwd) else source


def sources_text(sources: tuple[str, ...], limit: int = 4) -> str:
    """`a.py:3, :7, b.py:2`: a file named once for its consecutive lines."""
    parts: list[str] = []
    last_file = None
    for source in sources[:limit]:
        short = short_source(source)
        file, _, line = short.rpartition(":")
        parts.append(f":{line}" if file == last_file else short)
        last_file = file
    if len(sources) > limit:
        parts.append(f"… {len(sources) - limit} more")
    return ", ".join(parts)


def sharding_text(sharding: str) -> str:
    """A sharding for reading: `#sdy.sharding<@mesh, [{"x"}, {}]>` as
    `@mesh [{"x"}, {}]`; GSPMD's `{devices=...}` as it is."""
    if sharding.startswith("#sdy.sharding<") and sharding.endswith(">"):
        body = sharding[len("#sdy.sharding<") : -1]
        mesh, _, dims = body.partition(", ")
        return f"{mesh} {dims}" if dims else body
    return sharding


def shardings_text(shardings: str) -> str:
    """`#sdy.sharding_per_value<[<@mesh, [{"x"}]>, ...]>` as `@mesh [{"x"}]; ...`."""
    found = re.findall(r"<(@[\w.$-]+), (\[[^\[\]]*\])", shardings)
    return "; ".join(f"{mesh} {dims}" for mesh, dims in found) if found else shardings


def compute_text(placement: Placement) -> str:
    counts = " · ".join(f"{kind} {count}" for kind, count in placement.compute_types.items())
    return f"{placement.total_ops} ops: {counts}" if counts else "no ops"


def mesh_text(placement: Placement) -> str:
    meshes = []
    for mesh in placement.meshes:
        axes = " × ".join(f"{axis}={size}" for axis, size in mesh.axes) or "no axes"
        meshes.append(f"@{mesh.name} {axes} ({mesh.devices} device{'s' * (mesh.devices != 1)})")
    return ", ".join(meshes)


def placement_line(placement: Placement) -> str:
    """One line for `inspect`: compute types, then what else there is."""
    parts = [" · ".join(f"{kind} {count}" for kind, count in placement.compute_types.items())]
    for label, regions in (
        ("host region", placement.host_regions),
        ("other compute region", placement.other_regions),
    ):
        if regions:
            parts.append(f"{len(regions)} {label}{'s' * (len(regions) != 1)}")
    host_memory = sum(1 for m in placement.memory if m.host)
    if host_memory:
        parts.append(f"{host_memory} in host memory")
    moving = sum(1 for t in placement.transfers if t.moves)
    if placement.transfers:
        parts.append(f"{moving} transfer{'s' * (moving != 1)}")
    if placement.meshes:
        parts.append(mesh_text(placement))
    if placement.shardings:
        parts.append(f"{len(placement.shardings)} shardings")
    if placement.collectives:
        parts.append(", ".join(f"{c.op} ×{c.count}" for c in placement.collectives))
    if placement.warnings:
        count = len(placement.warnings)
        parts.append(f"{count} warning{'s' * (count != 1)}")
    return " · ".join(p for p in parts if p)


def placement_warnings(placement: Placement) -> RenderableType:
    lines = [Text(f"Warnings ({len(placement.warnings)})", style="bold")]
    for warning in placement.warnings:
        line = Text(f" • {warning.message}", style="yellow")
        if warning.sources:
            line.append(f" ({sources_text(warning.sources)})", style="dim")
        lines.append(line)
    return Group(*lines)


def _table(title: str, columns: list[tuple[str, str]]) -> Table:
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, show_edge=False)
    for column, justify in columns:
        # Source lines and sizes are read whole; long shardings and names wrap.
        whole = column in (
            "source",
            "sources",
            "size",
            "bytes",
            "kind",
            "shape",
            "from",
            "to",
            "memory",
        )
        table.add_column(
            column,
            justify=justify,  # type: ignore[arg-type]
            no_wrap=whole,
            overflow="ellipsis" if whole else "fold",
        )
    return table


def _more(table: Table, shown: int, total: int) -> None:
    if total > shown:
        table.add_row(Text(f"… {total - shown} more", style="dim"))


def regions_table(title: str, regions: tuple[ComputeRegion, ...]) -> Table:
    table = _table(
        f"{title} ({len(regions)})",
        [
            ("function", "left"),
            ("type", "left"),
            ("called from", "left"),
            ("ops", "right"),
            ("reads from device", "right"),
            ("writes", "right"),
            ("sources", "left"),
        ],
    )
    for region in regions[:MAX_PLACEMENT_ROWS]:
        called = region.called_from or ""
        table.add_row(
            Text(region.function, style="bold"),
            region.compute_type,
            called,
            str(region.ops),
            human_bytes(region.device_input_bytes),
            human_bytes(region.output_bytes),
            sources_text(region.sources),
        )
    _more(table, MAX_PLACEMENT_ROWS, len(regions))
    return table


def render_placement(report: PlacementReport, console: Console) -> None:
    placement = report.placement
    source = report.source
    rows: list[tuple[str, RenderableType]] = [
        ("target", Text(source.target, style="bold")),
        ("source", describe_source(source)),
        ("compute", compute_text(placement)),
    ]
    if placement.meshes:
        rows.append(("meshes", mesh_text(placement)))
    if (placement.partitions or 1) > 1 or (placement.replicas or 1) > 1:
        rows.append(
            (
                "devices",
                f"{placement.partitions or 1} partitions × {placement.replicas or 1} replicas",
            )
        )
    console.print(header_table(rows))

    def section(renderable: RenderableType) -> None:
        console.print()
        console.print(renderable)

    if placement.host_regions:
        section(regions_table("Host regions", placement.host_regions))
    if placement.other_regions:
        section(regions_table("Other compute regions", placement.other_regions))
    if placement.memory:
        table = _table(
            f"Memory kinds ({len(placement.memory)})",
            [
                ("value", "left"),
                ("name", "left"),
                ("memory", "left"),
                ("shape", "left"),
                ("size", "right"),
            ],
        )
        for memory in placement.memory[:MAX_PLACEMENT_ROWS]:
            table.add_row(
                memory.value,
                memory.name or "",
                Text(memory.memory_kind, style="magenta" if memory.host else ""),
                memory.shape,
                human_bytes(memory.bytes),
            )
        _more(table, MAX_PLACEMENT_ROWS, len(placement.memory))
        section(table)
    if placement.transfers:
        table = _table(
            f"Transfers ({len(placement.transfers)})",
            [
                ("kind", "left"),
                ("from", "left"),
                ("to", "left"),
                ("shape", "left"),
                ("size", "right"),
                ("function", "left"),
                ("source", "left"),
            ],
        )
        for transfer in placement.transfers[:MAX_PLACEMENT_ROWS]:
            table.add_row(
                transfer.kind,
                transfer.source_memory,
                Text(transfer.target_memory, style="" if transfer.moves else "dim"),
                transfer.shape,
                human_bytes(transfer.bytes),
                transfer.function,
                sources_text(transfer.sources),
            )
        _more(table, MAX_PLACEMENT_ROWS, len(placement.transfers))
        section(table)
    if placement.shardings:
        table = _table(
            f"Shardings ({len(placement.shardings)})",
            [
                ("kind", "left"),
                ("value", "left"),
                ("name", "left"),
                ("sharding", "left"),
                ("source", "left"),
            ],
        )
        for sharding in placement.shardings[:MAX_PLACEMENT_ROWS]:
            value = sharding.value
            if sharding.function and sharding.kind in ("argument", "result"):
                value = f"{sharding.function} {value}" if sharding.function != "main" else value
            table.add_row(
                sharding.kind,
                value,
                sharding.name or "",
                sharding_text(sharding.sharding),
                short_source(sharding.source),
            )
        _more(table, MAX_PLACEMENT_ROWS, len(placement.shardings))
        section(table)
    if placement.op_shardings:
        count = placement.op_shardings
        other = "1 other op carries" if count == 1 else f"{count} other ops carry"
        section(Text(f"{other} a sharding", style="dim"))
    if placement.manual_computations:
        table = _table(
            f"Manual computations ({len(placement.manual_computations)})",
            [
                ("function", "left"),
                ("manual axes", "left"),
                ("in", "left"),
                ("out", "left"),
                ("ops", "right"),
                ("source", "left"),
            ],
        )
        for manual in placement.manual_computations[:MAX_PLACEMENT_ROWS]:
            table.add_row(
                manual.function,
                ", ".join(re.findall(r'"((?:[^"\\]|\\.)*)"', manual.manual_axes)),
                shardings_text(manual.in_shardings),
                shardings_text(manual.out_shardings),
                str(manual.ops),
                short_source(manual.source),
            )
        _more(table, MAX_PLACEMENT_ROWS, len(placement.manual_computations))
        section(table)
    if placement.collectives:
        table = _table(
            f"Collectives ({sum(c.count for c in placement.collectives)})",
            [
                ("op", "left"),
                ("count", "right"),
                ("async", "right"),
                ("bytes", "right"),
                ("functions", "left"),
                ("sources", "left"),
            ],
        )
        for collective in placement.collectives:
            table.add_row(
                collective.op,
                str(collective.count),
                str(collective.async_count),
                human_bytes(collective.bytes),
                ", ".join(collective.functions[:3])
                + (
                    f" … {len(collective.functions) - 3} more"
                    if len(collective.functions) > 3
                    else ""
                ),
                sources_text(collective.sources),
            )
        section(table)
    if placement.warnings:
        section(placement_warnings(placement))
    notes = notes_group(report.notes)
    if notes is not None:
        section(notes)

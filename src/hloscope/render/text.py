"""Reports as text for a terminal or a pipe, with rich.

Each `render_*` takes a report and a `rich.console.Console`; nothing here
computes anything a report does not already hold.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from collections.abc import Iterable, Mapping
from typing import IO

from rich import box
from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from hloscope.analyses.aot import ProgramSummary, changed_kinds
from hloscope.analyses.aot import ResultComparison as AotResult
from hloscope.analyses.diff import Change, ChangeGroup, ModuleDiff
from hloscope.analyses.diff import Side as DiffSide
from hloscope.analyses.fusions import Fusion, FusionSummary
from hloscope.analyses.params import ParameterUsage
from hloscope.analyses.placement import ComputeRegion, Placement
from hloscope.analyses.structure import Structure
from hloscope.reports import (
    AotReport,
    DiffReport,
    FusionsReport,
    InspectReport,
    ParamsReport,
    PlacementReport,
)
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
        "python-object": "Python object",
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


# --------------------------------------------------------------------------- fusions

MAX_FUSION_ROWS = 60
MAX_UNFUSED_ROWS = 40
MAX_LINE_ROWS = 60
MAX_NAMES_IN_CELL = 6
MAX_CODE_CHARS = 40


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def fusion_summary_text(summary: FusionSummary) -> str:
    """`8 fusions (5 kLoop, 3 __ynn_fusion) holding 24 ops · 2 unfused ops (...)`."""
    kinds = ", ".join(f"{count} {kind}" for kind, count in summary.by_kind.items())
    text = f"{summary.fusions} fusion{'' if summary.fusions == 1 else 's'}"
    if kinds:
        text += f" ({kinds})"
    text += f" holding {summary.fused_ops} ops · {summary.unfused_ops} unfused ops"
    if summary.unfused_by_category:
        categories = summary.unfused_by_category.items()
        text += " (" + ", ".join(f"{count} {category}" for category, count in categories) + ")"
    if summary.crossing_jits:
        text += f" · {summary.crossing_jits} across separate jits"
    return text


def _short_ops(counts: Mapping[str, int]) -> str:
    parts = []
    for name, count in sorted(counts.items(), key=lambda kv: -kv[1]):
        short = name.partition(".")[2] or name
        parts.append(f"{short} ×{count}" if count > 1 else short)
    return ", ".join(parts)


def _grouped_sources(sources: tuple[str, ...], only_file: str | None = None) -> str:
    """`a.py:3`, `a.py:7`, `b.py:1` -> `a.py:3,7 b.py:1`; just `3,7` when every
    source is in `only_file`."""
    by_file: dict[str, list[str]] = {}
    for source in sources:
        file, _, line = source.rpartition(":")
        by_file.setdefault(file, []).append(line)
    if only_file is not None and set(by_file) <= {only_file}:
        return ",".join(by_file.get(only_file, []))
    return " ".join(
        f"{file.rpartition('/')[2]}:{','.join(lines)}" for file, lines in by_file.items()
    )


def _single_file(sources: Iterable[str]) -> str | None:
    """The one file all `sources` are in, if they are all in one."""
    files = {source.rpartition(":")[0] for source in sources}
    return files.pop() if len(files) == 1 else None


def _names(names: tuple[str, ...]) -> str:
    if len(names) <= MAX_NAMES_IN_CELL:
        return ", ".join(names)
    return ", ".join(names[:MAX_NAMES_IN_CELL]) + f", … ({len(names)})"


def _fusion_kind_text(fusion: Fusion) -> str:
    # A backend kind (`__triton_gemm`) says more than the kCustom it comes with.
    return fusion.backend_kind or fusion.kind


def _table(title: str, columns: list[tuple[str, str, bool]]) -> Table:
    """Columns are (header, justify, no_wrap)."""
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, show_edge=False)
    for column, justify, no_wrap in columns:
        table.add_column(column, justify=justify, no_wrap=no_wrap)  # type: ignore[arg-type]
    return table


def _crossing_text(crossing: tuple[Fusion, ...]) -> str:
    names = _names(tuple(f.name for f in crossing))
    verb = "combines" if len(crossing) == 1 else "combine"
    return (
        f"{names} (⇄) {verb} ops of separate jits: one jit around them all lets XLA fuse "
        "them; called as separate jits, it could not"
    )


def render_fusions(report: FusionsReport, console: Console) -> None:
    analysis = report.analysis
    source = report.source
    timing_parts = [f"load {seconds(report.timings.load_seconds)}"]
    if report.timings.lower_seconds is not None:
        timing_parts.append(f"lower {seconds(report.timings.lower_seconds)}")
    if report.timings.compile_seconds is not None:
        timing_parts.append(f"compile {seconds(report.timings.compile_seconds)}")
    rows: list[tuple[str, RenderableType]] = [
        ("target", Text(source.target, style="bold")),
        ("source", describe_source(source)),
        ("module", report.module or "(unnamed)"),
        ("fusions", fusion_summary_text(report.summary)),
        ("timings", " · ".join(timing_parts)),
    ]
    crossing = analysis.crossing_jits
    if crossing:
        rows.append(("jits", _crossing_text(crossing)))
    console.print(header_table(rows))

    only_file = _single_file(line.source for line in analysis.lines)
    lines_header = "lines" if only_file else "source lines"
    fusions = _table(
        f"Fusions ({len(analysis.fusions)})",
        [
            ("fusion", "left", True),
            ("kind", "left", True),
            ("ops", "left", False),
            ("result", "left", False),
            ("bytes in → out", "right", True),
            (lines_header, "left", False),
        ],
    )
    for fusion in analysis.fusions[:MAX_FUSION_ROWS]:
        name = Text(fusion.name, style="bold")
        if fusion.crosses_jits:
            name.append(" ⇄", style="yellow")
        if fusion.function != "main":
            name.append(f" in {fusion.function}", style="dim")
        fusions.add_row(
            name,
            _fusion_kind_text(fusion),
            _short_ops(fusion.op_counts),
            ", ".join(fusion.results),
            f"{human_bytes(fusion.operand_bytes)} → {human_bytes(fusion.result_bytes)}",
            _grouped_sources(fusion.sources, only_file) or Text("-", style="dim"),
        )
    if len(analysis.fusions) > MAX_FUSION_ROWS:
        fusions.add_row(
            Text(f"… {len(analysis.fusions) - MAX_FUSION_ROWS} more (--json lists all)", "dim")
        )
    if only_file:
        fusions.caption = f"lines of {only_file}"
        fusions.caption_justify = "left"
    if analysis.fusions:
        console.print()
        console.print(fusions)

    if analysis.unfused:
        unfused = _table(
            f"Unfused ops ({analysis.unfused_ops})",
            [
                ("op", "left", True),
                ("kind", "left", True),
                ("what", "left", False),
                ("results", "left", False),
                ("bytes", "right", True),
                (lines_header, "left", False),
            ],
        )
        for op in analysis.unfused[:MAX_UNFUSED_ROWS]:
            what = op.op.partition(".")[2] or op.op
            if op.target:
                what += f" {op.target}"
            name = Text(op.name, style="bold")
            if op.function != "main":
                name.append(f" in {op.function}", style="dim")
            unfused.add_row(
                name,
                op.category,
                what,
                ", ".join(op.results),
                human_bytes(op.result_bytes),
                _grouped_sources(op.sources, only_file) or Text("-", style="dim"),
            )
        if len(analysis.unfused) > MAX_UNFUSED_ROWS:
            unfused.add_row(
                Text(f"… {len(analysis.unfused) - MAX_UNFUSED_ROWS} more (--json lists all)", "dim")
            )
        if only_file:
            unfused.caption = f"lines of {only_file}"
            unfused.caption_justify = "left"
        console.print()
        console.print(unfused)

    if analysis.lines:
        lines = _table(
            f"Source lines ({len(analysis.lines)}): what XLA made of each",
            [
                ("line", "left", True),
                ("code", "left", True),
                ("fused", "right", True),
                ("unfused", "right", True),
                ("in fusions / unfused ops", "left", False),
            ],
        )
        for line in analysis.lines[:MAX_LINE_ROWS]:
            where = _names(line.fusions)
            if line.unfused:
                where = "; ".join(p for p in (where, "unfused: " + _names(line.unfused)) if p)
            lines.add_row(
                line.source,
                Text(_clip(report.line_texts.get(line.source, ""), MAX_CODE_CHARS), style="cyan"),
                str(line.fused_ops),
                str(line.unfused_ops),
                where,
            )
        if len(analysis.lines) > MAX_LINE_ROWS:
            lines.add_row(
                Text(f"… {len(analysis.lines) - MAX_LINE_ROWS} more (--json lists all)", "dim")
            )
        console.print()
        console.print(lines)
    elif analysis.fusions or analysis.unfused:
        console.print()
        console.print(
            Text(
                "No source lines: this module's ops carry no source locations "
                "(no StackFrames or metadata source_file/source_line).",
                style="dim",
            )
        )
    if not analysis.fusions:
        console.print()
        console.print(Text("XLA made no fusions in this module.", style="dim"))
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


def _placement_table(title: str, columns: list[tuple[str, str]]) -> Table:
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
    table = _placement_table(
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
        table = _placement_table(
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
        table = _placement_table(
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
        table = _placement_table(
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
        table = _placement_table(
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
        table = _placement_table(
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


# --------------------------------------------------------------------------- aot-check

MAX_RESULT_ROWS = 40
_CHECK_STYLES = {True: "green", False: "bold red", None: "dim"}


def _program_text(program: ProgramSummary) -> str:
    text = f"{program.name} ({_plural(program.ops, 'op')}"
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
        f"{_plural(len(programs), 'program')}: "
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
        table = _table(
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
    checks = _table(
        "Checks",
        [("check", "left", True), ("outcome", "left", True), ("what was compared", "left", False)],
    )
    for check in comparison.checks:
        label = {True: "same", False: "different", None: "skipped"}[check.same]
        checks.add_row(check.kind, Text(label, style=_CHECK_STYLES[check.same]), check.note)
    console.print(checks)
    if comparison.results:
        console.print()
        table = _table(
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

"""`hloscope placement` as text: compute types, host regions, memory kinds,
transfers, shardings and meshes, manual computations, collectives and warnings."""

from __future__ import annotations

from rich import box
from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from hloscope.analyses.placement.report import (
    Collective,
    ComputeRegion,
    ManualComputation,
    MemoryPlacement,
    Placement,
    PlacementWarning,
    ShardingAnnotation,
    Transfer,
)
from hloscope.render.text.common import (
    Cell,
    ElidedPath,
    Entries,
    add_row_giving_way,
    describe_source,
    header_table,
    notes_group,
    short_source,
    source_entries,
    source_text,
    sources_text,
)
from hloscope.render.text.source_lines import ElidedSource, elide_source
from hloscope.reports import PlacementReport
from hloscope.units import counted, human_bytes

MAX_PLACEMENT_ROWS = 40


def compute_text(placement: Placement) -> str:
    counts = " · ".join(f"{kind} {count:,}" for kind, count in placement.compute_types.items())
    return f"{counted(placement.total_ops, 'op')}: {counts}" if counts else "no ops"


def mesh_text(placement: Placement) -> str:
    meshes = []
    for mesh in placement.meshes:
        axes = " × ".join(f"{axis}={size}" for axis, size in mesh.axes) or "no axes"
        meshes.append(f"@{mesh.name} {axes} ({mesh.devices} device{'s' * (mesh.devices != 1)})")
    text = ", ".join(meshes)
    if any(mesh.xla_axes for mesh in placement.meshes):
        # Said once: XLA's axes are not the program's, whose mesh is not known here.
        text += " · axes as XLA names them: the program's mesh is not known"
    return text


def placement_line(placement: Placement) -> str:
    """One line for `inspect`: compute types, then what else there is."""
    parts = [" · ".join(f"{kind} {count:,}" for kind, count in placement.compute_types.items())]
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
        parts.append(counted(len(placement.shardings), "sharding"))
    if placement.collectives:
        parts.append(", ".join(collective_count_text(c) for c in placement.collectives))
    if placement.warnings:
        count = len(placement.warnings)
        parts.append(f"{count} warning{'s' * (count != 1)}")
    return " · ".join(p for p in parts if p)


def placement_warnings(placement: Placement) -> RenderableType:
    lines = [Text(f"Warnings ({len(placement.warnings)})", style="bold")]
    for warning in placement.warnings:
        lines.append(warning_text(warning, " • "))
    return Group(*lines)


def region_cells(region: ComputeRegion) -> list[Cell]:
    """A compute region's row: function, type, caller, ops, bytes read and written,
    sources."""
    return [
        Text(region.function, style="bold"),
        region.compute_type,
        region.called_from or "",
        str(region.ops),
        human_bytes(region.device_input_bytes),
        human_bytes(region.output_bytes),
        sources_text(region.sources),
    ]


def memory_cells(memory: MemoryPlacement) -> list[Cell]:
    """A value's row in the memory kinds: value, name, memory kind, shape, size."""
    return [
        memory.value,
        memory.name or "",
        Text(memory.memory_kind, style="magenta" if memory.host else ""),
        memory.shape,
        human_bytes(memory.bytes),
    ]


def transfer_cells(transfer: Transfer) -> list[Cell]:
    """A transfer's row: kind, from, to, shape, size, function, sources."""
    return [
        transfer.kind,
        transfer.source_memory,
        Text(transfer.target_memory, style="" if transfer.moves else "dim"),
        transfer.shape,
        human_bytes(transfer.bytes),
        transfer.function,
        sources_text(transfer.sources),
    ]


def sharding_cells(sharding: ShardingAnnotation, entry: str) -> list[Cell]:
    """A sharding's row: kind, value (with its function, outside the `entry`), name,
    sharding, source."""
    value = sharding.value
    if sharding.function and sharding.kind in ("argument", "result"):
        value = f"{sharding.function} {value}" if sharding.function != entry else value
    return [
        sharding.kind,
        value,
        sharding.name or "",
        sharding.on_mesh or sharding.words,
        source_text(sharding.source),
    ]


def manual_cells(manual: ManualComputation) -> list[Cell]:
    """A manual computation's row: function, manual axes, in and out shardings, ops,
    source."""
    return [
        manual.function,
        ", ".join(manual.axes),
        manual.in_words,
        manual.out_words,
        str(manual.ops),
        source_text(manual.source),
    ]


def collective_count_text(collective: Collective) -> str:
    """`all_reduce ×1`, and how many run per call when loops repeat them
    (`all_reduce ×1 (4 per call)`, `(in a loop of unknown trip count)`)."""
    text = f"{collective.op} ×{collective.count:,}"
    if collective.in_loops:
        if collective.per_call is None:
            text += " (in a loop of unknown trip count)"
        elif collective.per_call != collective.count:
            text += f" ({collective.per_call:,} per call)"
    return text


_TRIP_COUNT_SOURCES = {
    "known_trip_count": "XLA's known_trip_count",
    "loop_condition": "the loop's condition",
}


def per_call_note(collectives: tuple[Collective, ...]) -> str:
    """The line under a collectives table with a per-call column: what per call
    counts, and where the loops' trip counts were read (`Collective.trip_counts_from`)."""
    sources = dict.fromkeys(s for c in collectives for s in c.trip_counts_from)
    read = " and ".join(_TRIP_COUNT_SOURCES.get(s, s) for s in sources)
    where = f"read from {read}; " if read else ""
    return f"per call: inside loops, times their trip counts ({where}? where one is unknown)"


def collectives_in_loops(collectives: tuple[Collective, ...]) -> bool:
    """Whether any collective sits in a loop: their tables then say per call too."""
    return any(c.in_loops for c in collectives)


def collective_cells(
    collective: Collective, functions: int | None, per_call: bool = False
) -> list[Cell]:
    """A collective's row: op, count (in the module; with `per_call`, then the runs
    per call of the module, `?` where a loop's trip count is unknown), async count,
    bytes (then per call), functions (the first `functions` of them, all when None),
    the user's lines."""
    names = ", ".join(collective.functions[:functions])
    if functions is not None and len(collective.functions) > functions:
        names += f" … {len(collective.functions) - functions} more"
    counts: list[Cell] = [str(collective.count)]
    sizes: list[Cell] = [human_bytes(collective.bytes)]
    if per_call:
        unknown = Text("?", style="yellow")
        counts.append(unknown if collective.per_call is None else str(collective.per_call))
        sizes.append(
            unknown if collective.per_call is None else human_bytes(collective.bytes_per_call)
        )
    return [
        Text(f"{collective.op} across slices", style="bold")
        if collective.across_slices
        else collective.op,
        *counts,
        str(collective.async_count),
        *sizes,
        names,
        # The user's lines: Flax's `linear.py` says nothing of which layer it was.
        sources_text(collective.user_sources or collective.sources),
    ]


def warning_text(warning: PlacementWarning, bullet: str) -> Text:
    """`{bullet}message (sources)`."""
    line = Text(f"{bullet}{warning.message}", style="yellow")
    if warning.sources:
        line.append(Text.assemble(" (", sources_text(warning.sources), ")", style="dim"))
    return line


def _placement_table(title: str, columns: list[tuple[str, str]]) -> Table:
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, show_edge=False)
    for column, justify in columns:
        # What gives way in a narrow table: names, shardings and lists (rich narrows
        # every column that may wrap to one width); the rest is read whole.
        gives_way = column in (
            "function",
            "functions",
            "sources",
            "source",
            "called from",
            "value",
            "name",
            "sharding",
            "manual axes",
            "in",
            "out",
        )
        whole = not gives_way
        table.add_column(
            column,
            justify=justify,  # type: ignore[arg-type]
            no_wrap=whole or justify == "right",
            overflow="ellipsis" if whole else "fold",
        )
    return table


def _with_elided_source(cells: list[Cell], source: str | None) -> list[RenderableType]:
    """`cells`, the last of which is `source`'s: there it gives up the middle of its
    path, never its line (`ElidedSource`), when the table is narrow."""
    shown: list[RenderableType] = list(cells)
    if source:
        shown[-1] = ElidedSource(short_source(source))
    return shown


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
        cells: list[RenderableType] = list(region_cells(region))
        cells[-1] = Entries(source_entries(region.sources), shorten=elide_source)
        add_row_giving_way(table, cells)
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
            add_row_giving_way(table, memory_cells(memory))
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
            moved: list[RenderableType] = list(transfer_cells(transfer))
            moved[-1] = Entries(source_entries(transfer.sources), shorten=elide_source)
            add_row_giving_way(table, moved)
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
        shown = placement.shardings[:MAX_PLACEMENT_ROWS]
        names = tuple(s.name for s in shown if s.name)
        for sharding in shown:
            row = _with_elided_source(sharding_cells(sharding, "main"), sharding.source)
            if sharding.name and sharding.kind in ("argument", "result"):
                # An argument's or result's pytree path, shortened as every path is.
                row[2] = ElidedPath(sharding.name, among=names)
            add_row_giving_way(table, row)
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
            add_row_giving_way(table, _with_elided_source(manual_cells(manual), manual.source))
        _more(table, MAX_PLACEMENT_ROWS, len(placement.manual_computations))
        section(table)
    if placement.collectives:
        looped = collectives_in_loops(placement.collectives)
        per_call = [("per call", "right")] if looped else []
        table = _placement_table(
            f"Collectives ({sum(c.count for c in placement.collectives)})",
            [
                ("op", "left"),
                ("count", "right"),
                *per_call,
                ("async", "right"),
                ("bytes", "right"),
                *[("bytes/call", "right")] * looped,
                ("functions", "left"),
                ("sources", "left"),
            ],
        )
        for collective in placement.collectives:
            cells: list[RenderableType] = list(
                collective_cells(collective, functions=None, per_call=looped)
            )
            # The lists give way to the numbers: whole names and lines, on at most two
            # lines, then `… N more`.
            cells[-2] = Entries(collective.functions, max_lines=2)
            lines = source_entries(collective.user_sources or collective.sources)
            cells[-1] = Entries(lines, shorten=elide_source)
            add_row_giving_way(table, cells)
        section(table)
        if looped:
            console.print(Text(per_call_note(placement.collectives), style="dim"))
    if report.why is not None:
        from hloscope.render.text.why import why_section

        section(why_section(report.why, report.notes))
    if placement.warnings:
        section(placement_warnings(placement))
    notes = notes_group(report.notes)
    if notes is not None:
        section(notes)

"""`hloscope params` as text: every argument mapped to its HLO parameter, with
status, donation, sharding and memory kind."""

from __future__ import annotations

from collections.abc import Sequence

from rich import box
from rich.console import Console, RenderableType
from rich.table import Table
from rich.text import Text

from hloscope.analyses.params import USED, Parameter, ParameterUsage
from hloscope.render.text.common import (
    MAX_FUNCTIONS,
    Cell,
    ElidedPath,
    describe_source,
    header_table,
    notes_group,
    plural,
)
from hloscope.reports import ParamsReport
from hloscope.units import human_bytes

STATUS_STYLES = {"used": "green", "unused": "bold yellow", "pruned": "bold red"}


MAX_PARAMETERS = 200


MAX_LISTED = 6


def _listed(names: list[str]) -> str:
    shown = ", ".join(names[:MAX_LISTED])
    return shown + (f", … {len(names) - MAX_LISTED} more" if len(names) > MAX_LISTED else "")


def params_counts_text(usage: ParameterUsage) -> str:
    """`6 arguments → 4 HLO parameters: 4 used · 2 pruned`."""
    totals = usage.totals
    what = "arguments" if usage.from_python else "parameters"
    parts = [f"{totals.used} used"]
    if totals.unused:
        parts.append(f"{totals.unused} unused")
    if totals.pruned:
        parts.append(f"{totals.pruned} pruned")
    text = plural(totals.arguments, what[:-1])
    if usage.from_python:
        text += f" → {plural(totals.hlo_parameters, 'HLO parameter')}"
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
    dropped = [p.path for p in usage.dropped_donations]
    if dropped:
        text.append(f"\ndonation dropped: {_listed(dropped)}", style=DROPPED_STYLE)
    functions = [f for f in usage.functions if f.unused]
    if functions:
        names = [f"{f.name} ({', '.join(p.name for p in f.unused)})" for f in functions]
        text.append(
            f"\nprivate functions ignoring parameters: {_listed(names)}",
            style=STATUS_STYLES["unused"],
        )
    return text


DROPPED_STYLE = "bold yellow"
"""How a donation asked for and not done stands out."""


def donation_text(p: Parameter) -> Text:
    """The donated column: `→ out N` (aliased to result N), `yes` (a buffer donor:
    XLA may reuse it), `dropped` (asked for, not done), or nothing."""
    if p.aliases_output is not None:
        return Text(f"→ out {p.aliases_output}")
    if p.donated:
        return Text("yes")
    if p.donation_dropped is not None:
        return Text("dropped", style=DROPPED_STYLE)
    return Text("")


def shows_donation(parameters: Sequence[Parameter]) -> bool:
    """Whether a donated column is worth showing: something is donated or dropped."""
    return any(p.donated or p.donation_dropped is not None for p in parameters)


def parameter_shape_text(parameter: Parameter) -> str:
    """The argument's shape, and its HLO parameter's when that differs: a sharded
    argument's shape per device, or the array XLA is passed for a type it has none
    of (`key<fry>[] (as u32[2])`, `float0[2] (as pred[2])`)."""
    shape = parameter.shape
    hlo = parameter.hlo_shape
    if hlo is not None and hlo != shape:
        same_type = hlo.partition("[")[0] == shape.partition("[")[0]
        shape += f" ({hlo} per device)" if same_type else f" (as {hlo})"
    return shape


def params_bytes_text(usage: ParameterUsage) -> str:
    """`1.2 MiB passed per call · 4.0 KiB of it unused · ...`."""
    totals = usage.totals
    parts = [f"{human_bytes(totals.bytes_passed)} passed per call"]
    if totals.bytes_unused:
        parts.append(f"{human_bytes(totals.bytes_unused)} of it unused")
    if totals.bytes_pruned:
        parts.append(f"{human_bytes(totals.bytes_pruned)} pruned")
    if totals.bytes_donated:
        parts.append(f"{human_bytes(totals.bytes_donated)} donated")
    if totals.donations_dropped:
        parts.append(f"{human_bytes(totals.bytes_donation_dropped)} donation dropped")
    return " · ".join(parts)


def parameter_cells(
    p: Parameter, *, donation: bool, sharding: bool, memory: bool, mark_unused: bool = False
) -> list[Cell]:
    """An argument's row: position, path, HLO index, status, shape, bytes, and the
    donation, sharding and memory columns that are shown. `mark_unused` colours the
    path of an argument that is not used as its status is coloured."""
    style = STATUS_STYLES.get(p.status, "")
    cells: list[Cell] = [
        str(p.position),
        Text(p.path, style=style if p.status != USED else "") if mark_unused else p.path,
        "-" if p.hlo_index is None else str(p.hlo_index),
        Text(p.status, style=style),
        parameter_shape_text(p),
        human_bytes(p.bytes),
    ]
    if donation:
        cells.append(donation_text(p))
    if sharding:
        cells.append(p.sharding or "")
    if memory:
        cells.append(p.memory_kind or "")
    return cells


MESH_WORDS = " over mesh("

WIDEST = 10_000
"""Wider than any table: a table measured in it says how wide it would be."""


def shared_mesh(parameters: Sequence[Parameter]) -> str | None:
    """`data=4 × model=2` when every sharded argument is sharded over one mesh
    (`P(...) over mesh(data=4, model=2)`): the header says it once, and the sharding
    column holds the specs alone. None when they name several meshes, or none."""
    meshes = {
        p.sharding.partition(MESH_WORDS)[2] if MESH_WORDS in p.sharding else None
        for p in parameters
        if p.sharding
    }
    if len(meshes) != 1 or None in meshes:
        return None
    mesh = meshes.pop()
    if mesh is None or not mesh.endswith(")"):
        return None
    return " × ".join(axis.strip() for axis in mesh[:-1].split(","))


def per_device_shape(p: Parameter) -> str:
    """The shape of the argument's shard on each device, where it differs from the
    argument's (same type: a sharded array); empty otherwise."""
    hlo = p.hlo_shape
    if hlo is None or hlo == p.shape or hlo.partition("[")[0] != p.shape.partition("[")[0]:
        return ""
    return hlo


def parameters_table(usage: ParameterUsage, compact: bool = False) -> Table:
    """Every argument's row. `compact`, for a table that would not fit otherwise: one
    line per argument in the common case, the columns that would say the same on
    every row (the HLO index equal to the position, every argument used, every array
    in device memory, one mesh) left out, said once in the header instead
    (`compact_header_rows`), and the shape per device in a column of its own, blank
    where it is the whole shape."""
    rows = usage.parameters
    show_donation = shows_donation(rows)
    show_sharding = any(p.sharding for p in rows)
    mesh = shared_mesh(rows) if show_sharding and compact else None
    show_memory = any(p.memory_kind and (p.memory_kind != "device" or not compact) for p in rows)
    show_hlo = any(p.hlo_index != p.position or not compact for p in rows)
    show_status = any(p.status != USED or not compact for p in rows)
    show_per_device = compact and any(per_device_shape(p) for p in rows)
    paths = tuple(p.path for p in rows[:MAX_PARAMETERS])
    table = Table(
        title="Arguments" if usage.from_python else "Parameters",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        show_edge=False,
    )
    table.add_column("#", justify="right", no_wrap=True)
    table.add_column("argument" if usage.from_python else "parameter")
    if show_hlo:
        table.add_column("hlo", justify="right", no_wrap=True)
    if show_status:
        table.add_column("status", no_wrap=True)
    # An array's shape is read whole; a type with spaces (an MLIR type) may wrap.
    table.add_column("shape", no_wrap=not any(" " in p.shape for p in rows))
    if show_per_device:
        table.add_column("per device", no_wrap=True)
    table.add_column("bytes", justify="right", no_wrap=True)
    if show_donation:
        table.add_column("donated", no_wrap=True)
    if show_sharding:
        table.add_column("sharding")
    if show_memory:
        table.add_column("memory", no_wrap=True)
    for p in rows[:MAX_PARAMETERS]:
        style = STATUS_STYLES.get(p.status, "")
        # A long path gives up its middle, never what tells it from the others (the
        # browser's table does the same).
        cells: list[RenderableType] = [str(p.position), ElidedPath(p.path, among=paths)]
        if show_hlo:
            cells.append("-" if p.hlo_index is None else str(p.hlo_index))
        if show_status:
            cells.append(Text(p.status, style=style))
        if show_per_device:
            cells += [p.shape, per_device_shape(p)]
        else:
            cells.append(parameter_shape_text(p))
        cells.append(human_bytes(p.bytes))
        if show_donation:
            cells.append(donation_text(p))
        if show_sharding:
            sharding = p.sharding or ""
            cells.append(sharding.partition(MESH_WORDS)[0] if mesh else sharding)
        if show_memory:
            cells.append(p.memory_kind or "")
        table.add_row(*cells)
    if len(rows) > MAX_PARAMETERS:
        table.add_row("", Text(f"… {len(rows) - MAX_PARAMETERS} more (see --json)", style="dim"))
    return table


DROPPED_TITLE = "Donations dropped (asked for, not done: not counted as donated)"


def dropped_donations_table(dropped: Sequence[Parameter]) -> Table:
    """The arguments whose donation was asked for and is not done, with the reason
    (JAX's own warning where it gave one)."""
    table = Table(
        title=DROPPED_TITLE,
        title_justify="left",
        title_style="bold italic",
        box=box.SIMPLE_HEAD,
        show_edge=False,
    )
    table.add_column("argument")
    table.add_column("shape")
    table.add_column("bytes", justify="right", no_wrap=True)
    table.add_column("why")
    for p in dropped[:MAX_PARAMETERS]:
        among = tuple(d.path for d in dropped[:MAX_PARAMETERS])
        table.add_row(
            ElidedPath(p.path, among=among), p.shape, human_bytes(p.bytes), p.donation_dropped
        )
    if len(dropped) > MAX_PARAMETERS:
        table.add_row(Text(f"… {len(dropped) - MAX_PARAMETERS} more (see --json)", style="dim"))
    return table


SHARED_TITLE = "Passed once, reachable by several paths (named by the first)"


def shared_table(shared: Sequence[Parameter]) -> Table:
    """The arguments the call reaches by several paths (a Flax Variable held by the
    model and by the optimizer), passed once: the path they are named by, and the
    others."""
    table = Table(box=box.SIMPLE_HEAD, show_edge=False)
    table.add_column("argument")
    table.add_column("also")
    for p in shared[:MAX_PARAMETERS]:
        among = tuple(s.path for s in shared[:MAX_PARAMETERS])
        table.add_row(ElidedPath(p.path, among=among), ", ".join(p.also))
    if len(shared) > MAX_PARAMETERS:
        table.add_row(Text(f"… {len(shared) - MAX_PARAMETERS} more (see --json)", style="dim"))
    return table


def render_params(report: ParamsReport, console: Console) -> None:
    usage = report.usage
    rows: list[tuple[str, RenderableType]] = [
        ("target", Text(report.source.target, style="bold")),
        ("source", describe_source(report.source)),
        ("module", f"{report.module or '(unnamed)'} · entry {usage.entry or '-'}"),
        ("params", params_counts_text(usage)),
        ("bytes", params_bytes_text(usage)),
    ]
    table = parameters_table(usage)
    if console.measure(table, options=console.options.update_width(WIDEST)).maximum > (
        console.width
    ):
        # Too wide: rows of three or four lines. What every row would say is said once.
        table = parameters_table(usage, compact=True)
        mesh = shared_mesh(usage.parameters)
        if mesh is not None:
            rows.append(("mesh", f"{mesh} (every sharding below is over it)"))
    console.print(header_table(rows))
    console.print()
    if usage.parameters:
        console.print(table)
        console.print()
    shared = [p for p in usage.parameters if p.also]
    if shared:
        console.print(Text(SHARED_TITLE, style="bold italic"))
        console.print(shared_table(shared))
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
    dropped = usage.dropped_donations
    if dropped:
        console.print(dropped_donations_table(dropped))
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
        table.add_column("call sites", justify="right", no_wrap=True)
        table.add_column("unused parameters")
        for f in ignoring[:MAX_FUNCTIONS]:
            unused = ", ".join(f"{p.index}: {p.name} {p.shape}" for p in f.unused)
            table.add_row(f.name, str(f.call_sites), Text(unused, style=STATUS_STYLES["unused"]))
        if len(ignoring) > MAX_FUNCTIONS:
            table.add_row(Text(f"… {len(ignoring) - MAX_FUNCTIONS} more", style="dim"), "", "")
        console.print(table)
        console.print()
    # A warning of JAX's that the dropped donations' table already shows as their
    # reason is not printed twice.
    reasons = {p.donation_dropped for p in dropped}
    notes = notes_group(tuple(n for n in report.notes if n not in reasons))
    if notes is not None:
        console.print(notes)

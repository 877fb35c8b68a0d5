"""The Placement tab: where the module's ops run and where its data lives, as
`hloscope placement` reports it: compute types, host (and other) compute regions,
memory kinds, transfers, shardings, manual computations, collectives and
warnings. Enter on a row shows its ops in the IR tab.

On a partitioned module `w` adds why each collective is there
(`hloscope.tui.views.why`, as `placement --why` says it)."""

from __future__ import annotations

import dataclasses
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.widgets import Static

from hloscope.analyses.placement import ComputeRegion, Placement
from hloscope.analyses.placement.why_report import Why
from hloscope.ir.model import Module
from hloscope.render.text.placement import (
    collective_cells,
    collectives_in_loops,
    compute_text,
    manual_cells,
    memory_cells,
    mesh_text,
    region_cells,
    sharding_cells,
    transfer_cells,
    warning_text,
)
from hloscope.reports import PlacementReport, placement_report, placement_why
from hloscope.sources.loader import Loaded
from hloscope.tui.views.base import Deeper, ReportView, RunDeeper
from hloscope.tui.views.jumps import (
    JumpFactory,
    defines,
    is_collective,
    made_at,
    ops_jump,
    result_jump,
    scan_jump,
)
from hloscope.tui.views.params import argument_jump
from hloscope.tui.views.why import ASK, why_lines
from hloscope.tui.widgets.report_list import (
    Column,
    Line,
    ReportList,
    Row,
    blank,
    heading,
    notes_lines,
    table,
    text_line,
)


def _regions(title: str, regions: tuple[ComputeRegion, ...]) -> list[Line]:
    return table(
        f"{title} ({len(regions)})",
        [
            Column("function", width=30, names=True),
            Column("type", width=16),
            Column("called from", width=20),
            Column("ops", right=True),
            Column("reads from device", right=True),
            Column("writes", right=True),
            Column("sources", width=60),
        ],
        [
            Row(
                region_cells(region),
                jump=ops_jump(
                    sorted(region.op_ids), f"{region.compute_type} region @{region.function}"
                ),
            )
            for region in regions
        ],
    )


def placement_lines(report: PlacementReport, module: Module) -> list[Line]:
    placement = report.placement
    sections: list[list[Line]] = []
    if placement.host_regions:
        sections.append(_regions("Host regions", placement.host_regions))
    if placement.other_regions:
        sections.append(_regions("Other compute regions", placement.other_regions))
    entry = module.entry
    entry_name = entry.name if entry is not None else ""
    if placement.memory:
        rows = []
        for memory in placement.memory:
            if memory.kind == "argument":
                to_memory = argument_jump(module, memory.index, memory.name or memory.value)
            else:
                to_memory = result_jump(module, entry_name, memory.value)
            rows.append(
                Row(
                    memory_cells(memory),
                    jump=to_memory,
                )
            )
        sections.append(
            table(
                f"Memory kinds ({len(placement.memory)})",
                [
                    Column("value"),
                    Column("name", width=30, path=True),
                    Column("memory", width=16),
                    Column("shape", width=30),
                    Column("size", right=True),
                ],
                rows,
            )
        )
    if placement.transfers:
        sections.append(
            table(
                f"Transfers ({len(placement.transfers)})",
                [
                    Column("kind", width=28),
                    Column("from", width=14),
                    Column("to", width=14),
                    Column("shape", width=24),
                    Column("size", right=True),
                    Column("function", width=20, names=True),
                    Column("source", width=50),
                ],
                [
                    Row(
                        transfer_cells(transfer),
                        jump=ops_jump((transfer.op_id,), transfer.kind),
                    )
                    for transfer in placement.transfers
                ],
            )
        )
    if placement.shardings:
        rows = []
        for sharding in placement.shardings:
            value = sharding.value
            label = f"{sharding.kind} {value}"
            index = sharding.index
            jump: JumpFactory | None = None
            if sharding.kind == "argument" and index is not None:
                function = module.functions.get(sharding.function)
                if function is not None and function is entry:
                    jump = argument_jump(module, index, sharding.name or value)
                elif function is not None:
                    jump = ops_jump((function.op.id,), label)
            elif sharding.kind == "result":
                jump = result_jump(module, sharding.function, label)
            else:
                jump = scan_jump(module, defines(module, value), label, sharding.function)
            rows.append(Row(sharding_cells(sharding, entry_name), jump=jump))
        sections.append(
            table(
                f"Shardings ({len(placement.shardings)})",
                [
                    Column("kind", width=14),
                    Column("value", width=24),
                    Column("name", width=24, path=True),
                    Column("sharding", width=60),
                    Column("source", width=40),
                ],
                rows,
            )
        )
    if placement.op_shardings:
        count = placement.op_shardings
        other = "1 other op carries" if count == 1 else f"{count} other ops carry"
        sections.append([text_line(f"{other} a sharding", "dim")])
    if placement.manual_computations:
        sections.append(
            table(
                f"Manual computations ({len(placement.manual_computations)})",
                [
                    Column("function", width=24, names=True),
                    Column("manual axes", width=20),
                    Column("in", width=40),
                    Column("out", width=40),
                    Column("ops", right=True),
                    Column("source", width=40),
                ],
                [
                    Row(
                        manual_cells(manual),
                        jump=scan_jump(
                            module,
                            lambda op: op.name == "sdy.manual_computation",
                            "manual computations",
                            manual.function,
                        ),
                    )
                    for manual in placement.manual_computations
                ],
            )
        )
    if placement.collectives:
        looped = collectives_in_loops(placement.collectives)
        sections.append(
            table(
                f"Collectives ({sum(c.count for c in placement.collectives)})",
                [
                    Column("op", width=24),
                    Column("count", right=True),
                    *[Column("per call", right=True)] * looped,
                    Column("async", right=True),
                    Column("bytes", right=True),
                    *[Column("bytes/call", right=True)] * looped,
                    Column("functions", width=30),
                    Column("sources", width=50),
                ],
                [
                    Row(
                        collective_cells(collective, functions=None, per_call=looped),
                        jump=scan_jump(
                            module,
                            is_collective(collective.op),
                            f"{collective.op} ×{collective.count}",
                        ),
                    )
                    for collective in placement.collectives
                ],
            )
        )
    if report.why is not None:
        sections.append(why_lines(report.why, module))
    elif asks_why(placement):
        sections.append([text_line(ASK, "dim")])
    if placement.warnings:
        warning_lines = [heading(f"Warnings ({len(placement.warnings)})")]
        for warning in placement.warnings:
            sources = frozenset(warning.sources)
            warning_lines.append(
                Line(
                    warning_text(warning, "• "),
                    selectable=True,
                    jump=scan_jump(
                        module,
                        made_at(sources),
                        warning.kind.replace("_", " "),
                        warning.function or "",
                    ),
                    note="This warning names no op.",
                )
            )
        sections.append(warning_lines)
    if report.notes:
        sections.append(notes_lines(report.notes))
    if not sections:
        sections.append(
            [
                text_line(
                    "Every op runs on the device; no memory kinds, transfers, shardings or "
                    "collectives.",
                    "dim",
                )
            ]
        )
    lines: list[Line] = []
    for section in sections:
        if lines:
            lines.append(blank())
        lines += section
    return lines


def asks_why(placement: Placement) -> bool:
    """Whether there are collectives to explain: the module has some, or is
    partitioned or declares a mesh (a lowered module's collectives appear when it is
    compiled; XLA's HLO text of one does not always say its partitions)."""
    return bool(placement.collectives or placement.meshes) or (placement.partitions or 1) > 1


class PlacementView(Vertical):
    """The placement report; rows lead to their ops; `w` says why each collective is
    there."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "w",
            "why",
            "Why",
            tooltip="Compile with Shardy's dumps and say why each collective is there",
        ),
    ]

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "why":
            return asks_why(self.report.placement)
        return True

    def action_why(self) -> None:
        self.post_message(RunDeeper(VIEW.id))

    def __init__(self, report: PlacementReport, module: Module) -> None:
        super().__init__(id="placement-view", classes="report-view")
        self.report = report
        self.module = module

    def compose(self) -> ComposeResult:
        placement = self.report.placement
        header = Text(f"compute  {compute_text(placement)}", style="bold")
        if placement.meshes:
            header.append(f"\nmeshes   {mesh_text(placement)}", style="")
        if (placement.partitions or 1) > 1 or (placement.replicas or 1) > 1:
            header.append(
                f"\ndevices  {placement.partitions or 1} partitions × "
                f"{placement.replicas or 1} replicas",
                style="",
            )
        yield Static(header, classes="report-header")
        yield ReportList(placement_lines(self.report, self.module), id="placement-list")


def placement_widget(report: PlacementReport, loaded: Loaded) -> PlacementView:
    return PlacementView(report, loaded.module)


def with_why(report: PlacementReport, why: Why) -> PlacementReport:
    return dataclasses.replace(report, why=why)


VIEW = ReportView(
    id="placement",
    title="Placement",
    build=placement_report,
    widget=placement_widget,
    deeper=Deeper(
        build=placement_why,
        join=with_why,
        step="compiling with Shardy's dumps to say why each collective is there",
    ),
)

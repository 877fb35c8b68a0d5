"""The Parameters tab: every argument leaf (every entry parameter of a dump) with
its HLO parameter and status, as `hloscope params` reports it. Unused and pruned
arguments stand out by colour, and `U` shows only them. Enter on an argument
shows its HLO parameter in the IR: the entry function, then each op reading it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.widgets import Static

from hloscope.analyses.params import PRUNED, UNUSED
from hloscope.ir.model import Module
from hloscope.render.text.params import (
    DROPPED_STYLE,
    DROPPED_TITLE,
    SHARED_TITLE,
    STATUS_STYLES,
    parameter_cells,
    params_bytes_text,
    params_counts_text,
    shows_donation,
)
from hloscope.reports import ParamsReport, params_report
from hloscope.sources.loader import Loaded
from hloscope.tui.focus import focus_now
from hloscope.tui.views.base import ReportView
from hloscope.tui.widgets.report_list import (
    Column,
    Jump,
    Line,
    ReportList,
    Row,
    blank,
    heading,
    notes_lines,
    table,
    text_line,
)
from hloscope.units import human_bytes

NOT_USED = frozenset({UNUSED, PRUNED})


def argument_jump(module: Module, hlo_index: int, label: str) -> Callable[[], Jump | None]:
    """The entry function's parameter `hlo_index`: the function, then its readers."""

    def jump() -> Jump | None:
        entry = module.entry
        if entry is None or not 0 <= hlo_index < len(entry.arguments):
            return None
        value = entry.arguments[hlo_index].value
        return Jump((entry.op.id, *module.users(value)), f"{label} (%arg{hlo_index})")

    return jump


def function_jump(module: Module, name: str, indices: Sequence[int]) -> Callable[[], Jump | None]:
    """A private function: its header, then the ops reading the given parameters."""

    def jump() -> Jump | None:
        function = module.functions.get(name)
        if function is None:
            return None
        users = [
            user
            for argument in function.arguments
            if argument.index in indices
            for user in module.users(argument.value)
        ]
        return Jump((function.op.id, *users), f"@{name}")

    return jump


def params_lines(report: ParamsReport, module: Module, only_unused: bool) -> list[Line]:
    """The tab's lines; `only_unused`: the unused and pruned arguments alone."""
    usage = report.usage
    lines: list[Line] = []
    rows = [p for p in usage.parameters if not only_unused or p.status in NOT_USED]
    if rows:
        donated = shows_donation(rows)
        sharded = any(p.sharding for p in rows)
        memory = any(p.memory_kind for p in rows)
        columns = [
            Column("#", right=True),
            Column("argument" if usage.from_python else "parameter", width=56, path=True),
            Column("hlo", right=True),
            Column("status"),
            Column("shape", width=36),
            Column("bytes", right=True),
        ]
        if donated:
            columns.append(Column("donated", width=10))
        if sharded:
            columns.append(Column("sharding", width=48))
        if memory:
            columns.append(Column("memory", width=14))
        table_rows = []
        for p in rows:
            cells = parameter_cells(
                p, donation=donated, sharding=sharded, memory=memory, mark_unused=True
            )
            table_rows.append(
                Row(
                    cells,
                    jump=(
                        argument_jump(module, p.hlo_index, p.path)
                        if p.hlo_index is not None
                        else None
                    ),
                    note=f"{p.path} was pruned: the module has no parameter for it",
                    tags=frozenset({p.status}),
                )
            )
        title = "Arguments" if usage.from_python else "Parameters"
        lines += table(f"{title} ({len(rows)})", columns, table_rows)
    implicit = [q for q in usage.implicit if not only_unused or q.status in NOT_USED]
    if implicit:
        lines.append(blank())
        lines += table(
            "Implicit parameters (no Python argument)",
            [
                Column("hlo", right=True),
                Column("kind", width=30),
                Column("shape"),
                Column("status"),
            ],
            [
                Row(
                    [
                        str(q.hlo_index),
                        q.kind,
                        q.shape,
                        Text(q.status, style=STATUS_STYLES.get(q.status, "")),
                    ],
                    jump=argument_jump(module, q.hlo_index, q.name),
                    tags=frozenset({q.status}),
                )
                for q in implicit
            ],
        )
    dropped = usage.dropped_donations
    if dropped and not only_unused:
        lines.append(blank())
        lines += table(
            DROPPED_TITLE,
            [
                Column("argument", width=56, path=True),
                Column("shape", width=24),
                Column("bytes", right=True),
                Column("why", width=140),
            ],
            [
                Row(
                    [
                        p.path,
                        p.shape,
                        human_bytes(p.bytes),
                        Text(p.donation_dropped or "", style=DROPPED_STYLE),
                    ],
                    jump=(
                        argument_jump(module, p.hlo_index, p.path)
                        if p.hlo_index is not None
                        else None
                    ),
                    note=f"{p.path} was pruned: the module has no parameter for it",
                )
                for p in dropped
            ],
        )
    shared = [p for p in usage.parameters if p.also]
    if shared and not only_unused:
        lines.append(blank())
        lines += table(
            SHARED_TITLE,
            [Column("argument", width=56, path=True), Column("also", width=140)],
            [
                Row(
                    [p.path, ", ".join(p.also)],
                    jump=(
                        argument_jump(module, p.hlo_index, p.path)
                        if p.hlo_index is not None
                        else None
                    ),
                    note=f"{p.path} was pruned: the module has no parameter for it",
                )
                for p in shared
            ],
        )
    if usage.static and not only_unused:
        lines.append(blank())
        lines.append(heading("Static arguments (part of the trace, not parameters)"))
        lines += [text_line(f"{s.path} = {s.value}") for s in usage.static]
    ignoring = [f for f in usage.functions if f.unused]
    if ignoring:
        lines.append(blank())
        lines += table(
            f"Private functions ignoring parameters ({len(ignoring)} of the "
            f"{len(usage.functions)} called)",
            [Column("function", width=32), Column("call sites", right=True), Column("unused")],
            [
                Row(
                    [
                        f.name,
                        str(f.call_sites),
                        Text(
                            ", ".join(f"{p.index}: {p.name} {p.shape}" for p in f.unused),
                            style=STATUS_STYLES[UNUSED],
                        ),
                    ],
                    jump=function_jump(module, f.name, [p.index for p in f.unused]),
                    tags=frozenset({UNUSED}),
                )
                for f in ignoring
            ],
        )
    if only_unused and not lines:
        lines.append(text_line("No argument is unused or pruned.", "dim"))
    if report.notes and not only_unused:
        lines += [blank(), *notes_lines(report.notes)]
    return lines


class ParamsView(Vertical):
    """The parameter map; `U` narrows it to the unused and pruned arguments."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "U",
            "toggle_unused",
            "Unused/pruned",
            tooltip="Show only unused and pruned parameters, or all again",
        ),
    ]

    def __init__(self, report: ParamsReport, module: Module) -> None:
        super().__init__(id="params-view", classes="report-view")
        self.report = report
        self.module = module
        self.only_unused = False

    def compose(self) -> ComposeResult:
        usage = self.report.usage
        header = Text(params_counts_text(usage), style="bold")
        header.append(f"\n{params_bytes_text(usage)}", style="")
        yield Static(header, classes="report-header")
        yield ReportList(params_lines(self.report, self.module, False), id="params-list")

    def action_toggle_unused(self) -> None:
        totals = self.report.usage.totals
        if not self.only_unused and not (totals.unused or totals.pruned or totals.private_unused):
            self.notify("No argument is unused or pruned.", timeout=3)
            return
        self.only_unused = not self.only_unused
        listing = self.query_one(ReportList)
        listing.show(params_lines(self.report, self.module, self.only_unused))
        focus_now(listing)


def params_widget(report: ParamsReport, loaded: Loaded) -> ParamsView:
    return ParamsView(report, loaded.module)


VIEW = ReportView(id="params", title="Parameters", build=params_report, widget=params_widget)

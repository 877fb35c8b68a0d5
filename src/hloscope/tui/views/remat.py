"""The Remat tab, for entrypoints: what the backward pass keeps from the forward, as
`hloscope remat` reports it (the target is the loss, or a gradient of it): the
totals on the device and the host, the policy names that match nothing, every
residual with how it got there, its checkpoint name and line, and the checkpoint
regions with their policies and what they recompute. Enter on a residual shows the
ops of its line in the IR.

Building it differentiates the target on its example arguments (JAX traces it), so
it runs when asked, in a worker, and is kept for the target whichever module the
browser shows."""

from __future__ import annotations

from collections.abc import Callable

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static

from hloscope.analyses.remat import Residual
from hloscope.ir.model import Module, Op
from hloscope.render.text.common import plural, short_source
from hloscope.render.text.remat import HOW_STYLES, per_device_totals, residual_totals
from hloscope.reports import RematReport, remat_report
from hloscope.sources import loader
from hloscope.sources.loader import Loaded
from hloscope.tui.views.aot import is_entrypoint
from hloscope.tui.views.base import ReportView
from hloscope.tui.views.jumps import scan_jump
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
from hloscope.units import human_bytes


def build_remat(loaded: Loaded) -> RematReport:
    """Differentiate the target on the example arguments it was loaded with, as
    `hloscope remat` does with the browser's target options: under `--for`, in the
    slice's meshes (a step's gradient is found only there) and compiled for it."""
    from hloscope.sources.remat import remat_source

    options = loader.LoadOptions(
        args=loaded.options.args,
        args_factory=loaded.options.args_factory,
        optimized=loaded.options.optimized,
        compile_for=loaded.options.compile_for,
    )
    return remat_report(remat_source(loaded.source.target, options))


def _made_on(line: str) -> Callable[[Op], bool]:
    """Whether the user's line that made an op is `line` (relative to the working
    directory, where the module's locations name the whole path)."""

    def match(op: Op) -> bool:
        source = op.location.user_source
        return source is not None and (source == line or source.endswith("/" + line))

    return match


def _residual_row(residual: Residual, module: Module, sharded: bool) -> Row:
    where = short_source(residual.source) if residual.source else residual.path or "-"
    if residual.stacked_by and residual.stacked_by != residual.source:
        where += f" (stacked by the loop at {short_source(residual.stacked_by)})"
    return Row(
        [
            human_bytes(residual.bytes),
            *([_size(residual.bytes_per_device)] if sharded else []),
            residual.type,
            residual.memory_kind,
            Text(residual.detail, style=HOW_STYLES.get(residual.detail, "")),
            residual.name or "-",
            where,
        ],
        jump=None
        if residual.source is None
        else scan_jump(module, _made_on(residual.source), short_source(residual.source)),
        note=f"{residual.path}: an argument (see the Parameters tab)"
        if residual.path
        else "This residual has no line of your code.",
    )


def _size(size: int | None) -> str:
    return human_bytes(size) if size is not None else "-"


def remat_lines(report: RematReport, module: Module) -> list[Line]:
    a = report.analysis
    sharded = a.devices > 1
    lines: list[Line] = [
        text_line(f"function        {a.function or '-'}"),
        text_line(f"differentiated  {', '.join(a.differentiated) or '-'}"),
        text_line(Text(f"residuals       {residual_totals(a)}")),
    ]
    per_device = per_device_totals(a, a.peak is not None)
    if per_device is not None:
        lines.append(text_line(f"per device      {per_device}"))
    if a.peak is not None:
        lines.append(
            text_line(
                f"at the peak     {human_bytes(a.peak.residual_bytes)} of "
                f"{human_bytes(a.peak.peak_bytes)} live at the peak"
                + (" on one device" if sharded else "")
                + " are residuals"
            )
        )
    for unmatched in a.unmatched:
        closest = ", ".join(repr(n) for n in unmatched.closest) or "none"
        lines.append(
            text_line(
                f"warning: policy name {unmatched.name!r} matches no checkpoint_name; "
                f"the program's names, closest first: {closest}",
                "bold yellow",
            )
        )
    lines.append(blank())
    lines += table(
        f"Residuals ({len(a.residuals)})",
        [
            *(
                [Column("global", right=True, width=12), Column("per device", right=True, width=12)]
                if sharded
                else [Column("bytes", right=True, width=12)]
            ),
            Column("type", width=28),
            Column("memory", width=12),
            Column("how", width=18),
            Column("name", width=24),
            Column("line", width=80),
        ],
        [_residual_row(r, module, sharded) for r in a.residuals],
    )
    if a.regions:
        lines += [blank(), heading("Checkpoint regions")]
    for region in a.regions:
        f = region.fact
        where = short_source(f.source) if f.source else "?"
        lines.append(text_line(Text(f"#{f.index} {f.function or '?'} at {where}", style="bold")))
        policy = f.policy + (
            f"({', '.join(repr(n) for n in f.policy_names)})" if f.policy_names else ""
        )
        if f.offload_to:
            policy += f" → offloads to {f.offload_to}"
        saves = f"{plural(region.saved, 'residual')}, {human_bytes(region.saved_bytes)}"
        if sharded:
            saves += " global" + (
                f", {human_bytes(region.saved_bytes_per_device)} per device"
                if region.saved_bytes_per_device is not None
                else ", per device as XLA shards them"
            )
        recomputes = ", ".join(
            f"{op.primitive}{f' ×{op.count}' if op.count > 1 else ''}"
            + (f" ({op.source.rpartition(':')[2]})" if op.source else "")
            for op in f.recomputed
        )
        lines += [
            text_line(f"  policy      {policy}"),
            text_line(f"  names       {', '.join(f.names) or '-'}"),
            text_line(f"  saves       {saves}"),
            text_line(f"  recomputes  {recomputes or 'nothing'}"),
        ]
    if report.notes:
        lines += [blank(), *notes_lines(report.notes)]
    return lines


class RematView(Vertical):
    """The remat report; residual rows lead to the ops of their lines in the IR."""

    def __init__(self, report: RematReport, module: Module) -> None:
        super().__init__(id="remat-view", classes="report-view")
        self.report = report
        self.module = module

    def compose(self) -> ComposeResult:
        a = self.report.analysis
        summary = (
            f"remat  {plural(len(a.residuals), 'residual')} · "
            f"{human_bytes(a.device_bytes)} on the device · "
            f"{human_bytes(a.host_bytes)} on the host"
            + (f" (global, over {a.devices} devices)" if a.devices > 1 else "")
            + f" · {plural(len(a.regions), 'checkpoint region')}"
        )
        yield Static(Text(summary, style="bold"), classes="report-header")
        yield ReportList(remat_lines(self.report, self.module), id="remat-list")


def remat_widget(report: RematReport, loaded: Loaded) -> RematView:
    return RematView(report, loaded.module)


VIEW = ReportView(
    id="remat",
    title="Remat",
    build=build_remat,
    widget=remat_widget,
    applies=is_entrypoint,
    on_demand=(
        "Differentiate the target (the loss, or a gradient of it) on its example "
        "arguments, and show what the backward pass keeps from the forward: every "
        "residual, saved, offloaded or recomputed by its jax.checkpoint policies."
    ),
)

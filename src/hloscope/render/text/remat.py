"""`hloscope remat` as text: every residual the backward pass keeps, grouped by line
and checkpoint name, the totals on the device and the host, the checkpoint regions
with their policies and what they recompute, and the names that match nothing."""

from __future__ import annotations

from rich.console import Console, Group, RenderableType
from rich.padding import Padding
from rich.text import Text

from hloscope.analyses.remat import RematAnalysis
from hloscope.render.text.common import (
    compiled_for_text,
    header_table,
    notes_group,
    plural,
    short_source,
    simple_table,
    source_text,
)
from hloscope.reports.remat import RematReport
from hloscope.units import human_bytes

MAX_RESIDUALS = 200
HOW_STYLES = {"offloaded": "cyan", "not checkpointed": "yellow", "argument": "dim"}


def _line_or(line: str | None, other: str | None = None) -> Text:
    return source_text(line) if line else Text(other or "-")


def unmatched_text(analysis: RematAnalysis) -> list[Text]:
    """One warning line per policy name that no `checkpoint_name` gives."""
    out = []
    for u in analysis.unmatched:
        closest = ", ".join(repr(n) for n in u.closest[:3])
        where = ", ".join(f"#{i}" for i in u.regions)
        text = f"warning: policy name {u.name!r} (region {where}) matches no checkpoint_name"
        text += f"; the program's names, closest first: {closest}" if closest else "; it gives none"
        out.append(Text(text, style="bold yellow"))
    return out


def residual_totals(a: RematAnalysis) -> str:
    """`25 residuals: 92.0 MiB on the device`, saying `global` (the whole arrays) where
    the program is partitioned and one device holds less."""
    totals = f"{plural(len(a.residuals), 'residual')}: {human_bytes(a.device_bytes)} on the device"
    totals += f" · {human_bytes(a.host_bytes)} on the host" if a.host_bytes else ""
    if a.devices > 1:
        totals += f", global (the whole arrays, over {a.devices} devices)"
    return totals


def per_device_totals(a: RematAnalysis, at_peak: bool) -> str | None:
    """One device's bytes of the residuals, as far as their shardings are known (None
    on one device, where they are the global ones)."""
    if a.devices <= 1:
        return None
    if a.device_bytes_per_device is not None and a.host_bytes_per_device is not None:
        text = f"{human_bytes(a.device_bytes_per_device)} on the device"
        return text + (
            f" · {human_bytes(a.host_bytes_per_device)} on the host" if a.host_bytes else ""
        )
    others = len(a.residuals) - a.known_per_device
    return (
        f"{human_bytes(a.known_bytes_per_device)} of the {a.known_per_device} whose sharding "
        f"is known; XLA shards the other {others} as it compiles"
        + (": see at the peak" if at_peak else " (--compile or --for: at the peak)")
    )


def _size(size: int | None) -> str:
    return human_bytes(size) if size is not None else "-"


def render_remat(report: RematReport, console: Console) -> None:
    a = report.analysis
    parts: list[RenderableType] = []
    sharded = a.devices > 1
    rows: list[tuple[str, RenderableType]] = [
        ("target", Text(report.target)),
        ("function", Text(a.function or "-")),
        ("differentiated", Text(", ".join(a.differentiated) or "-")),
        ("residuals", Text(residual_totals(a))),
    ]
    per_device = per_device_totals(a, a.peak is not None)
    if per_device is not None:
        rows.append(("per device", Text(per_device)))
    rows.append(("regions", Text(plural(len(a.regions), "jax.checkpoint region"))))
    if a.peak is not None:
        share = a.peak.residual_bytes / a.peak.peak_bytes if a.peak.peak_bytes else 0.0
        at_peak = (
            f"{human_bytes(a.peak.residual_bytes)} of {human_bytes(a.peak.peak_bytes)} "
            f"live at the compiled program's peak"
            + (" on one device" if sharded else "")
            + f" are residuals ({share:.0%})"
        )
        if a.peak.host_bytes:
            at_peak += f"; {human_bytes(a.peak.host_bytes)} on the host"
        rows.append(("at the peak", Text(at_peak)))
        compiled = compiled_for_text(report.compiled_for)
        if compiled:
            rows.append(("compiled for", Text(compiled.removeprefix("compiled for "))))
    parts.append(header_table(rows))
    parts.extend(unmatched_text(a))

    # Partitioned: the whole arrays' bytes and one device's, each column named.
    sizes = [("global", "right", True), ("per device", "right", True)] if sharded else []
    table = simple_table(
        f"Residuals ({len(a.residuals)})",
        [
            *(sizes or [("bytes", "right", True)]),
            ("type", "left", True),
            ("memory", "left", True),
            ("how", "left", True),
            ("name", "left", True),
            ("line", "left", False),
        ],
    )
    for r in a.residuals[:MAX_RESIDUALS]:
        where = _line_or(r.source, r.path)
        if r.stacked_by and r.stacked_by == r.source:
            where.append(" (stacked, one per iteration)", style="dim")
        elif r.stacked_by:
            where.append(f" (stacked by the loop at {_near(r.stacked_by, r.source)})", style="dim")
        table.add_row(
            human_bytes(r.bytes),
            *([_size(r.bytes_per_device)] if sharded else []),
            r.type,
            r.memory_kind,
            Text(r.detail, style=HOW_STYLES.get(r.detail, "")),
            r.name or "-",
            where,
        )
    parts.append(table)

    groups = simple_table(
        "By line and name",
        [
            *(sizes or [("bytes", "right", True)]),
            ("count", "right", True),
            ("memory", "left", True),
            ("name", "left", True),
            ("line", "left", False),
        ],
    )
    for g in a.groups:
        where = _line_or(g.source, g.path)
        text = report.line_texts.get(g.source or "")
        if text:
            where.append(f"  {text}", style="dim")
        groups.add_row(
            human_bytes(g.bytes),
            *([_size(g.bytes_per_device)] if sharded else []),
            str(g.count),
            g.memory_kind,
            g.name or "-",
            where,
        )
    parts.append(groups)

    if a.regions:
        parts.append(Text("Checkpoint regions", style="bold"))
    for region in a.regions:
        f = region.fact
        head = Text(f" #{f.index} ")
        head.append(f.function or "?", style="bold")
        head.append(" at ")
        head.append_text(_line_or(f.source))
        if f.in_loop and f.in_loop == f.source:
            head.append(" (in that loop)", style="dim")
        elif f.in_loop:
            head.append(f" (in the loop at {_near(f.in_loop, f.source)})", style="dim")
        parts.append(head)
        policy = f.policy + (
            f"({', '.join(repr(n) for n in f.policy_names)})" if f.policy_names else ""
        )
        saves = f"{plural(region.saved, 'residual')}, {human_bytes(region.saved_bytes)}"
        if region.offloaded_bytes:
            saves += f" ({human_bytes(region.offloaded_bytes)} offloaded)"
        if sharded:
            saves += " global" + (
                f", {human_bytes(region.saved_bytes_per_device)} per device"
                if region.saved_bytes_per_device is not None
                else ", per device as XLA shards them"
            )
        recomputes = (
            ", ".join(
                f"{op.primitive}{f' ×{op.count}' if op.count > 1 else ''}"
                + (f" ({short_source(op.source).rpartition(':')[2]})" if op.source else "")
                for op in f.recomputed
            )
            or "nothing"
        )
        details = header_table(
            [
                ("policy", policy + (f" → offloads to {f.offload_to}" if f.offload_to else "")),
                ("names", ", ".join(f.names) or "-"),
                ("saves", saves),
                ("recomputes", recomputes),
            ]
        )
        details.columns[0].style = ""  # under the region's head, not a header
        parts.append(Padding(details, (0, 0, 0, 3)))

    if a.peak is not None and a.peak.by_line:
        on_host = any(p.memory_kind != "device" for p in a.peak.by_line)
        columns = [("bytes", "right", True), ("buffers", "right", True)]
        columns += [("memory", "left", True)] if on_host else []
        whose = "one device's" if sharded else "the"
        title = f"Residuals live at {whose} peak, by line"
        peak = simple_table(title, [*columns, ("line", "left", False)])
        for p in a.peak.by_line:
            memory = [p.memory_kind] if on_host else []
            peak.add_row(human_bytes(p.bytes), str(p.buffers), *memory, _line_or(p.source, p.path))
        parts.append(peak)
    notes = notes_group(report.notes)
    if notes is not None:
        parts.append(notes)
    console.print(Group(*parts))


def _near(source: str, beside: str | None) -> str:
    """`line 35` where `source` is in the file of `beside`, else `file.py:35`."""
    file, _, line = source.rpartition(":")
    if beside is not None and beside.rpartition(":")[0] == file:
        return f"line {line}"
    return short_source(source)

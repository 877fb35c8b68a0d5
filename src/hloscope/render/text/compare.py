"""`hloscope compare` as text (a table of the configurations, the best marked, then
their collectives and the failed rows' reasons), as a Markdown table
(`--format markdown`), and its progress lines."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console
from rich.text import Text

from hloscope.render.text.common import header_table, notes_group, simple_table
from hloscope.render.text.profile import duration, percent
from hloscope.reports.compare import CompareRow, Comparison
from hloscope.units import counted, human_bytes

BEST_MARK = "★"
COLUMNS_WORDS = (
    "peak HBM a device; the step, and its communication no kernel hides; tokens a second "
    "a device; bytes a device moves a step over the slice's interconnect (and the DCN)"
)
ESTIMATED = "estimated on the target from its compiler, not measured"


def fits_text(row: CompareRow) -> str:
    """`yes`, `no`, `no (XLA refused)`, `?` (the capacity is not known), `-` (failed)."""
    if not row.succeeded:
        return "-"
    if row.refused is not None:
        return "no (XLA refused)"
    return {True: "yes", False: "no", None: "?"}[row.fits]


def peak_text(row: CompareRow) -> str:
    """`1.2 GiB of 16.0 GiB`: the peak per device against the device's memory."""
    if row.peak_bytes is None:
        return "-"
    if row.capacity_bytes is None:
        return human_bytes(row.peak_bytes)
    return f"{human_bytes(row.peak_bytes)} of {human_bytes(row.capacity_bytes)}"


def _tokens_text(row: CompareRow) -> str:
    value = row.tokens_per_second_per_device
    return "-" if value is None else f"{value:,.0f}"


def row_cells(row: CompareRow, dcn: bool) -> list[str]:
    """A row's numbers, in `table_columns`' order (the table, Markdown and browser's)."""
    estimate = row.estimate
    if estimate is None:
        step = comm = mfu = "-"
    else:
        step = duration(estimate.seconds)
        comm = duration(estimate.exposed_communication_seconds)
        mfu = percent(estimate.mfu) if estimate.mfu is not None else "?"
    peak = human_bytes(row.peak_bytes) if row.peak_bytes is not None else "-"
    ici = human_bytes(row.ici_bytes) if row.ici_bytes is not None else "-"
    cells = [fits_text(row), peak, step, comm, mfu, _tokens_text(row), ici]
    if dcn:
        cells.append(human_bytes(row.dcn_bytes) if row.dcn_bytes else "-")
    return cells


def table_columns(dcn: bool) -> list[str]:
    """The numbers' headers; DCN's only where a row sends over it."""
    columns = ["fits", "peak", "step", "exposed", "MFU", "tok/s/dev", "ICI"]
    return [*columns, "DCN"] if dcn else columns


def _capacities(rows: Sequence[CompareRow]) -> str:
    """`tpu:v5e:4x4 16.0 GiB · gpu:h100x8 79.1 GiB`: each target's memory a device."""
    seen = {r.config.compile_for: r.capacity_bytes for r in rows if r.capacity_bytes is not None}
    return " · ".join(f"{spec} {human_bytes(size)}" for spec, size in seen.items()) or "not known"


def collectives_text(row: CompareRow) -> str:
    """`all-gather 12 (8 in loops, 3.0 MiB) · all-reduce 2 (1.0 MiB)`, by kind."""
    parts = []
    for c in row.collectives:
        details = []
        if c.in_loops:
            details.append(f"{c.in_loops} in loops")
        details.append(human_bytes(c.bytes))
        where = " across slices" if c.across_slices else ""
        parts.append(f"{c.op}{where} {c.count} ({', '.join(details)})")
    return " · ".join(parts) or "none"


def render_compare(report: Comparison, console: Console) -> None:
    rows = report.rows
    done = sum(1 for r in rows if r.succeeded)
    fitting = sum(1 for r in rows if r.fits)
    best = rows[report.best] if report.best is not None else None
    dcn = any(r.dcn_bytes for r in rows)
    console.print(
        header_table(
            [
                ("targets", Text(" ".join(report.targets), style="bold")),
                (
                    "compared",
                    f"{counted(len(rows), 'configuration')}: {done} compiled, {fitting} fit, "
                    f"{len(rows) - done} failed; sorted by {report.sort}",
                ),
                ("memory", f"a device's: {_capacities(rows)}; peak: XLA's memory analysis"),
                ("estimate", ESTIMATED),
                ("columns", COLUMNS_WORDS),
                (
                    "best",
                    Text(f"{BEST_MARK} {best.config.label}", style="bold green")
                    if best is not None
                    else "none fits",
                ),
            ]
        )
    )
    console.print()
    table = simple_table(
        "Configurations",
        [("", "left", True), ("configuration", "left", False)]
        + [(name, "right", True) for name in table_columns(dcn)],
    )
    for index, row in enumerate(rows):
        mark = BEST_MARK if index == report.best else ""
        style = "bold green" if index == report.best else ("red" if not row.succeeded else "")
        table.add_row(mark, Text(row.config.label, style=style), *row_cells(row, dcn))
    console.print(table)
    measured = [r for r in rows if r.succeeded]
    if measured:
        console.print()
        collectives = simple_table(
            "Collectives by kind (count, in loops, bytes per device)",
            [("configuration", "left", False), ("collectives", "left", False)],
        )
        for row in measured:
            collectives.add_row(row.config.label, collectives_text(row))
        console.print(collectives)
    failed = [r for r in rows if not r.succeeded]
    refused = [r for r in rows if r.refused is not None]
    if failed or refused:
        console.print()
        console.print(Text("Why", style="bold"))
        for row in refused:
            console.print(Text(f" • {row.config.label}: XLA refused: {row.refused}", style="red"))
        for row in failed:
            console.print(Text(f" • {row.config.label}: {row.error}", style="red"))
    console.print()
    console.print(header_table([("timings", compile_times_text(rows))]))
    notes = notes_group(report.notes)
    if notes is not None:
        console.print(notes)


def compile_times_text(rows: Sequence[CompareRow]) -> str:
    """`compile 76.8 s in all, the longest 16.9 s`: measured, so on a line of its own
    (the documentation's transcripts mask a timings line); each row's is in the JSON."""
    times = [r.compile_seconds for r in rows if r.compile_seconds is not None]
    if not times:
        return "compile -"
    return f"compile {duration(sum(times))} in all, the longest {duration(max(times))}"


def compare_markdown(report: Comparison) -> str:
    """The table as Markdown (`--format markdown`), for a pull request or a notebook."""
    dcn = any(r.dcn_bytes for r in report.rows)
    header = ["", "configuration", *table_columns(dcn), "collectives"]
    lines = [
        f"**hloscope compare** `{' '.join(report.targets)}` ({ESTIMATED})",
        "",
        "| " + " | ".join(header) + " |",
        "|" + "|".join("---" if i < 2 else "---:" for i in range(len(header) - 1)) + "|---|",
    ]
    for index, row in enumerate(report.rows):
        mark = BEST_MARK if index == report.best else ""
        label = f"`{row.config.label}`"
        if not row.succeeded:
            last = f"failed: {row.error}"
        elif row.refused is not None:
            last = f"XLA refused: {row.refused}"
        else:
            last = collectives_text(row)
        cells = [mark, label, *row_cells(row, dcn), last.replace("|", "\\|")]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def progress_line(row: CompareRow, done: int, total: int) -> str:
    """`compare: [3/8] LLM_MESH=2x8 @ tpu:v5e:4x4: 1.54 ms a step, fits (1.2 GiB of 16.0 GiB)`."""
    head = f"compare: [{done}/{total}] {row.config.label}: "
    if not row.succeeded:
        return head + f"failed: {row.error}"
    if row.refused is not None:
        return head + f"does not fit ({peak_text(row)}): XLA refused it"
    step = f"{duration(row.estimate.seconds)} a step, " if row.estimate is not None else ""
    fits = {True: "fits", False: "does not fit", None: "fit not known"}[row.fits]
    return head + f"{step}{fits} ({peak_text(row)})"

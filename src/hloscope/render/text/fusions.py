"""`hloscope fusions` as text: each fusion XLA made, the ops it left unfused, and
what became of each source line."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from rich.console import Console, RenderableType
from rich.table import Table
from rich.text import Text

from hloscope.analyses.fusions import (
    Fusion,
    FusionSummary,
    SourceLine,
    UnfusedOp,
    jit_name,
    library_lines,
)
from hloscope.render.text.common import (
    Entries,
    Heading,
    Squeezed,
    clip,
    describe_source,
    header_table,
    names_text,
    notes_group,
    plural,
    shape_cell,
    shapes_cell,
    simple_table,
    timings_text,
)
from hloscope.render.text.source_lines import ElidedSource, SourceColumn
from hloscope.reports import FusionsReport
from hloscope.units import human_bytes

MAX_FUSION_ROWS = 60


MAX_UNFUSED_ROWS = 40


MAX_LINE_ROWS = 60


MAX_CODE_CHARS = 40


MAX_LINE_CHARS = 32


def fusion_summary_text(summary: FusionSummary) -> str:
    """`8 fusions (5 kLoop, 3 __ynn_fusion) holding 24 ops · 2 unfused ops (...)`."""
    kinds = ", ".join(f"{count} {kind}" for kind, count in summary.by_kind.items())
    text = f"{summary.fusions} fusion{'' if summary.fusions == 1 else 's'}"
    if kinds:
        text += f" ({kinds})"
    text += (
        f" holding {plural(summary.fused_ops, 'op')} · {plural(summary.unfused_ops, 'unfused op')}"
    )
    if summary.unfused_by_category:
        categories = summary.unfused_by_category.items()
        text += " (" + ", ".join(f"{count} {category}" for category, count in categories) + ")"
    if summary.crossing_jits:
        text += f" · {summary.crossing_jits} across separate jits"
    return text


def short_ops(counts: Mapping[str, int]) -> str:
    """`convert ×3, add, reduce`: a fusion's ops, the most frequent first."""
    return ", ".join(short_ops_entries(counts))


def short_ops_entries(counts: Mapping[str, int]) -> list[str]:
    """`convert ×3`, `add`, `reduce`: `short_ops`' entries."""
    parts = []
    for name, count in sorted(counts.items(), key=lambda kv: -kv[1]):
        short = name.partition(".")[2] or name
        parts.append(f"{short} ×{count}" if count > 1 else short)
    return parts


def fusion_kind_text(fusion: Fusion) -> str:
    # A backend kind (`__triton_gemm`) says more than the kCustom it comes with.
    return fusion.backend_kind or fusion.kind


def fusion_name_text(fusion: Fusion) -> Text:
    """The fusion's name, `⇄` when it combines ops of separate jits, and its function
    when that is not `main`."""
    name = Text(fusion.name, style="bold")
    if fusion.crosses_jits:
        name.append(" ⇄", style="yellow")
    if fusion.function != "main":
        name.append(f" in {fusion.function}", style="dim")
    return name


def fusion_bytes_text(fusion: Fusion) -> str:
    """`72.0 KiB → 8.0 KiB`: what the fusion reads and writes."""
    return f"{human_bytes(fusion.operand_bytes)} → {human_bytes(fusion.result_bytes)}"


def unfused_name_text(op: UnfusedOp) -> Text:
    """The op's HLO name, and its function when that is not `main`."""
    name = Text(op.name, style="bold")
    if op.function != "main":
        name.append(f" in {op.function}", style="dim")
    return name


def below_name(name: Text, function: str) -> Text:
    """A name cell whose ` in FUNCTION` goes on a line of its own: the column is
    only as wide as the longest name, so that the source lines keep their room."""
    suffix = f" in {function}"
    if function != "main" and name.plain.endswith(suffix):
        name = name.copy()
        name.right_crop(len(suffix))
        name.append(f"\n in {function}", style="dim")
    return name


def _without_function(name: Text, function: str) -> Text:
    """A name cell without its ` in FUNCTION`, which heads the rows of that function."""
    suffix = f" in {function}"
    if function != "main" and name.plain.endswith(suffix):
        name = name.copy()
        name.right_crop(len(suffix))
    return name


def unfused_what_text(op: UnfusedOp) -> str:
    """`custom_call Sharding`: the op's kind without its dialect, and its target."""
    what = op.op.partition(".")[2] or op.op
    if op.target:
        what += f" {op.target}"
    return what


def line_where_text(line: SourceLine, names: Callable[[tuple[str, ...]], str]) -> str:
    """The fusions and unfused ops a source line went into, each list written by
    `names`."""
    where = names(line.fusions)
    if line.unfused:
        where = "; ".join(p for p in (where, "unfused: " + names(line.unfused)) if p)
    return where


def _crossing_text(crossing: tuple[Fusion, ...]) -> str:
    names = names_text(tuple(f.name for f in crossing))
    verb = "combines" if len(crossing) == 1 else "combine"
    return (
        f"{names} (⇄) {verb} ops of separate jits: one jit around them all lets XLA fuse "
        "them; called as separate jits, it could not"
    )


def library_jits_text(library_jits: tuple[str, ...]) -> str:
    """`dynamic_index_in_dim, ... are JAX's or libraries' own jits: ...`: the jits
    not counted as the user's, by the name of their innermost jit."""
    names = tuple(dict.fromkeys(jit_name(path) for path in library_jits))
    if len(names) == 1:
        return (
            f"{names[0]} is JAX's or a library's own jit: part of the jit calling it, "
            "not a separate jit of yours"
        )
    return (
        f"{names_text(names)} are JAX's or a library's own jits: part of the jits calling "
        "them, not separate jits of yours"
    )


MIN_OPS_ROOM = 18
"""The fewest columns the fusions' ops are shown in (with their padding)."""

OPS_WIDTH_HINT = "a wider terminal (COLUMNS=160)"


def _fusions_table(report: FusionsReport, with_ops: bool) -> Table:
    """The fusions' table; `with_ops`, with the column of the ops they hold, which
    gives way to the rest (`Entries`)."""
    analysis = report.analysis
    shown_fusions = analysis.fusions[:MAX_FUSION_ROWS]
    fusion_sources = SourceColumn(shown_fusions)
    ops = [("ops", "left", False)] if with_ops else []
    fusions = simple_table(
        f"Fusions ({len(analysis.fusions)})",
        [
            ("fusion", "left", True),
            ("kind", "left", True),
            # The ops give way (`Entries`); results are read whole (`shape_cell`).
            *ops,
            ("result", "left", True),
            ("bytes in → out", "right", True),
        ],
    )
    fusion_sources.add_to(fusions)
    headed = any(f.function != "main" for f in shown_fusions)
    widest_fusion = max((len(f.name) for f in shown_fusions), default=0)
    function = None
    for fusion in shown_fusions:
        if headed and fusion.function != function:
            # The rows of a function other than the entry under its name, once.
            function = fusion.function
            fusions.add_row(Heading(f"in {function}:", beside=widest_fusion))
        held = Entries(short_ops_entries(fusion.op_counts), max_lines=3, min_width=12)
        fusions.add_row(
            _without_function(fusion_name_text(fusion), fusion.function),
            fusion_kind_text(fusion),
            *([held] if with_ops else []),
            shape_cell(fusion.results[0])
            if len(fusion.results) == 1
            else shapes_cell(list(fusion.results)),
            fusion_bytes_text(fusion),
            fusion_sources.cell(fusion),
        )
    if len(analysis.fusions) > MAX_FUSION_ROWS:
        fusions.add_row(
            Text(f"… {len(analysis.fusions) - MAX_FUSION_ROWS} more (--json lists all)", "dim")
        )
    fusions.caption = fusion_sources.caption()
    fusions.caption_justify = "left"
    return fusions


def render_fusions(report: FusionsReport, console: Console) -> None:
    analysis = report.analysis
    source = report.source
    rows: list[tuple[str, RenderableType]] = [
        ("target", Text(source.target, style="bold")),
        ("source", describe_source(source)),
        ("module", report.module or "(unnamed)"),
        ("fusions", fusion_summary_text(report.summary)),
        ("timings", timings_text(report.timings)),
    ]
    crossing = analysis.crossing_jits
    jits = [_crossing_text(crossing)] if crossing else []
    if analysis.library_jits:
        jits.append(library_jits_text(analysis.library_jits))
    if jits:
        rows.append(("jits", "\n".join(jits)))
    console.print(header_table(rows))

    fusions = _fusions_table(report, with_ops=True)
    unbounded = console.options.update_width(10_000)
    without_ops = console.measure(_fusions_table(report, with_ops=False), options=unbounded)
    if without_ops.maximum + MIN_OPS_ROOM > console.width:
        # No room for the ops beside names, shapes and numbers read whole: without
        # them, rather than a column too narrow to read.
        fusions = _fusions_table(report, with_ops=False)
        fusions.caption = "\n".join(
            str(c) for c in (fusions.caption, f"ops: --json, or {OPS_WIDTH_HINT}") if c
        )
    if analysis.fusions:
        console.print()
        console.print(fusions)

    if analysis.unfused:
        shown_unfused = analysis.unfused[:MAX_UNFUSED_ROWS]
        unfused_sources = SourceColumn(shown_unfused)
        unfused = simple_table(
            f"Unfused ops ({analysis.unfused_ops})",
            [
                ("op", "left", True),
                ("kind", "left", True),
                ("what", "left", False),
                ("results", "left", True),
                ("bytes", "right", True),
            ],
        )
        unfused_sources.add_to(unfused)
        headed = any(op.function != "main" for op in shown_unfused)
        widest_op = max((len(op.name) for op in shown_unfused), default=0)
        function = None
        for op in shown_unfused:
            if headed and op.function != function:
                function = op.function
                unfused.add_row(Heading(f"in {function}:", beside=widest_op))
            unfused.add_row(
                _without_function(unfused_name_text(op), op.function),
                op.category,
                Squeezed(unfused_what_text(op), min_width=12),
                shape_cell(op.results[0])
                if len(op.results) == 1
                else shapes_cell(list(op.results)),
                human_bytes(op.result_bytes),
                unfused_sources.cell(op),
            )
        if len(analysis.unfused) > MAX_UNFUSED_ROWS:
            unfused.add_row(
                Text(f"… {len(analysis.unfused) - MAX_UNFUSED_ROWS} more (--json lists all)", "dim")
            )
        unfused.caption = unfused_sources.caption()
        unfused.caption_justify = "left"
        console.print()
        console.print(unfused)

    if analysis.lines:
        lines = simple_table(
            f"Source lines ({len(analysis.lines)}): what XLA made of each",
            [
                ("line", "left", True),
                ("code", "left", True),
                ("fused", "right", True),
                ("unfused", "right", True),
                ("in fusions / unfused ops", "left", False),
            ],
        )
        # At most this wide: a library's long path loses its middle (`ElidedSource`).
        lines.columns[0].max_width = MAX_LINE_CHARS
        for line in analysis.lines[:MAX_LINE_ROWS]:
            lines.add_row(
                # A library's long path loses its middle, never its line number.
                ElidedSource(line.source, style="" if library_lines((line.source,)) else "bold"),
                Text(clip(report.line_texts.get(line.source, ""), MAX_CODE_CHARS), style="cyan"),
                str(line.fused_ops),
                str(line.unfused_ops),
                Squeezed(line_where_text(line, names_text), max_lines=4),
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

"""`hloscope compiles` as text: the totals, one row per jitted function, the ops run
eagerly, and the timeline of compilations with JAX's reasons."""

from __future__ import annotations

from rich.console import Console, Group, RenderableType
from rich.text import Text

from hloscope.analyses.compiles import CompilesAnalysis, FunctionCompiles, call_site_shown
from hloscope.render.text.common import (
    clip,
    header_table,
    plural,
    seconds,
    short_source,
    simple_table,
    source_text,
)
from hloscope.reports import CompilesReport
from hloscope.runs import RecordedCompile

MAX_TIMELINE_ROWS = 200
MAX_CAUSE_CHARS = 160


def summary_text(analysis: CompilesAnalysis) -> str:
    """`7 compilations of 3 functions (2 recompiled) · 5 eager ops · 1.20 s compiling
    (31% of 3.85 s)`."""
    summary = analysis.summary
    text = f"{plural(summary.compiles, 'compilation')} of {plural(summary.functions, 'function')}"
    if summary.recompiled_functions:
        text += f" ({summary.recompiled_functions} recompiled)"
    if summary.eager_compiles:
        text += f" · {plural(summary.eager_compiles, 'eager op compilation')}"
    text += (
        f" · {seconds(summary.compiling_seconds)} tracing, lowering and compiling "
        f"({summary.compiling_share:.0%} of {seconds(summary.wall_seconds)})"
    )
    if summary.persistent_cache_hits:
        text += f" · {summary.persistent_cache_hits} from the persistent cache"
    return text


def change_text(compile_: RecordedCompile) -> str:
    """`x: f32[4] → f32[8]; n: 2 → 3`, or JAX's cause when it names no argument."""
    if compile_.changes:
        return "; ".join(f"{c.path}: {c.before} → {c.after}" for c in compile_.changes)
    if compile_.eager:
        return "op run outside any jit"
    return compile_.cause or "(JAX gave no explanation)"


def compiles_renderables(report: CompilesReport) -> list[RenderableType]:
    analysis = report.analysis
    parts: list[RenderableType] = [
        header_table(
            [
                ("Ran", report.target),
                ("Compilations", summary_text(analysis)),
                *([("Exit code", str(report.exit_code))] if report.exit_code else []),
            ]
        )
    ]
    if analysis.functions:
        table = simple_table(
            "Functions",
            [
                ("function", "left", True),
                ("defined at", "left", True),
                ("compiles", "right", True),
                ("signatures", "right", True),
                ("time", "right", True),
                ("ops", "right", True),
                ("why", "left", False),
            ],
        )
        for function in analysis.functions:
            table.add_row(
                Text(function.function, style="bold red" if function.recompiled else "bold"),
                source_text(function.source),
                str(function.compiles),
                str(function.signatures),
                seconds(function.total_seconds),
                ops_range_text(function),
                why_text(analysis, function),
            )
        parts.append(table)
    if analysis.eager:
        table = simple_table(
            "Ops run eagerly (outside any jit)",
            [
                ("op", "left", True),
                ("compiles", "right", True),
                ("compile", "right", True),
                ("called at", "left", False),
            ],
        )
        for op in analysis.eager:
            table.add_row(
                op.op,
                str(op.compiles),
                seconds(op.compile_seconds),
                Text(", ").join(source_text(site, site) for site in op.call_sites[:4]),
            )
        parts.append(table)
    if analysis.compiles:
        parts.append(_timeline(analysis))
    if report.modules_dropped:
        parts.append(
            Text(
                f"{plural(report.modules_dropped, 'earlier module')} not kept "
                "(only the latest are, within a memory bound)",
                style="dim",
            )
        )
    return parts


def ops_range_text(function: FunctionCompiles) -> str:
    """`4`, or `4–5` where its compilations' modules differ in ops (the Timeline has
    each compilation's count)."""
    if function.ops_range is None:
        return "-"
    low, high = function.ops_range
    return str(low) if low == high else f"{low}–{high}"


def why_text(analysis: CompilesAnalysis, function: FunctionCompiles) -> Text:
    """Every likely cause of its recompilations, one line each, most frequent first;
    else the changes JAX reported."""
    if function.likely_causes:
        return Text(
            "\n".join(clip(sentence, MAX_CAUSE_CHARS) for sentence in function.likely_causes),
            style="yellow",
        )
    return Text(clip(_changes_of(analysis, function.indices), MAX_CAUSE_CHARS))


def _changes_of(analysis: CompilesAnalysis, indices: tuple[int, ...]) -> str:
    """The distinct changes of a function's recompilations, in order."""
    seen: list[str] = []
    for index in indices[1:]:
        text = change_text(analysis.compiles[index])
        if text not in seen:
            seen.append(text)
    return "; ".join(seen)


def _timeline(analysis: CompilesAnalysis) -> RenderableType:
    table = simple_table(
        "Timeline",
        [
            ("#", "right", True),
            ("at", "right", True),
            ("function", "left", True),
            ("called at", "left", True),
            ("trace", "right", True),
            ("lower", "right", True),
            ("compile", "right", True),
            ("ops", "right", True),
            ("cause", "left", False),
        ],
    )
    rows = [c for c in analysis.compiles if not c.eager]
    for index, compile_ in enumerate(rows[:MAX_TIMELINE_ROWS], start=1):
        table.add_row(
            str(index),
            seconds(compile_.started_seconds),
            compile_.function + (" (cache)" if compile_.persistent_cache_hit else ""),
            source_text(compile_.call_site, short_source(call_site_shown(compile_))),
            seconds(compile_.trace_seconds),
            seconds(compile_.lower_seconds),
            seconds(compile_.compile_seconds),
            str(compile_.ops) if compile_.ops is not None else "-",
            clip(change_text(compile_), MAX_CAUSE_CHARS),
        )
    if len(rows) > MAX_TIMELINE_ROWS:
        table.caption = f"… {len(rows) - MAX_TIMELINE_ROWS} more (see --json)"
    return table


def render_compiles(report: CompilesReport, console: Console) -> None:
    console.print(Group(*compiles_renderables(report)))

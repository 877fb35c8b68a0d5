"""`hloscope check` as text: per target, what regressed (with the lines it comes
from and, for memory, the buffers at the peak that grew), what improved, and the
verdict on the last line."""

from __future__ import annotations

from collections.abc import Mapping

from rich.console import Console
from rich.table import Table
from rich.text import Text

from hloscope.analyses.baseline.compare import Change, GrownBuffers
from hloscope.analyses.baseline.tolerance import (
    describe_amount,
    describe_move,
    describe_site_delta,
)
from hloscope.render.text.common import clip, notes_group, short_source, simple_table
from hloscope.render.text.memory import shape_text
from hloscope.reports.check import CheckReport, TargetCheck
from hloscope.units import counted, human_bytes

MAX_GROWN_ROWS = 8
MAX_KINDS_SHOWN = 6
MAX_IMPROVEMENT_ROWS = 20


def render_check(report: CheckReport, console: Console) -> None:
    for check in report.checks:
        _render_target(check, console)
    if len(report.checks) > 1:
        failed = [c.name for c in report.checks if not c.passed]
        if failed:
            console.print(
                Text(f"FAILED: {', '.join(failed)} regressed", style="bold red"), soft_wrap=True
            )
        else:
            verb = "recorded" if report.updated else "passed"
            console.print(
                Text(f"{verb}: {counted(len(report.checks), 'target')}", style="bold green")
            )


def _render_target(check: TargetCheck, console: Console) -> None:
    console.print(
        Text.assemble(
            ("check ", "bold"),
            (check.name, "bold cyan"),
            *((f" ({check.target})",) if check.target != check.name else ()),
            f" against {short_source(check.baseline_path)}",
        ),
        soft_wrap=True,
    )
    console.print(f"backend: {check.backend.words()}", soft_wrap=True)
    comparison = check.comparison
    if comparison is not None:
        regressions, improvements = comparison.regressions, comparison.improvements
        if regressions:
            console.print(_changes_table("Regressions", regressions))
            console.print(
                _lines_table(regressions, comparison.grown_at_peak, check.line_texts, check.origins)
            )
        if improvements:
            title = "Changes that are no regression" if regressions else "Changes"
            console.print(_changes_table(title, improvements[:MAX_IMPROVEMENT_ROWS]))
            if len(improvements) > MAX_IMPROVEMENT_ROWS:
                console.print(f"  … and {len(improvements) - MAX_IMPROVEMENT_ROWS} more (--json)")
    notes = notes_group(check.notes)
    if notes is not None:
        console.print(notes)
    console.print(_verdict(check), soft_wrap=True)
    console.print()


def _verdict(check: TargetCheck) -> Text:
    facts = counted(len(check.measurement.facts), "fact")
    comparison = check.comparison
    if check.updated:
        verb = "updated" if check.baseline is not None else "recorded"
        return Text(f"{verb}: {facts} in {short_source(check.baseline_path)}", style="bold green")
    assert comparison is not None
    regressions = comparison.regressions
    if regressions:
        names = ", ".join(c.fact for c in regressions[:4])
        more = f", … ({len(regressions)})" if len(regressions) > 4 else ""
        return Text(
            f"FAILED: {counted(len(regressions), 'regression')} ({names}{more})",
            style="bold red",
        )
    text = Text(f"passed: {facts} compared, none regressed", style="bold green")
    if comparison.improvements:
        text.append(
            f"; {counted(len(comparison.improvements), 'change')} to record with --update",
            style="green",
        )
    return text


def _changes_table(title: str, changes: tuple[Change, ...]) -> Table:
    """One row per fact, but the op counts by kind of each stage folded into one row
    (`ops.optimized.*`): their totals have rows of their own."""
    table = simple_table(
        title,
        [
            ("fact", "left", True),
            ("before", "right", True),
            ("after", "right", True),
            ("change", "left", False),
            ("tolerance", "left", True),
        ],
    )
    by_kind: dict[str, list[Change]] = {}
    for change in changes:
        stage = _op_kind_stage(change.fact)
        if stage is not None:
            by_kind.setdefault(stage, []).append(change)
    for change in changes:
        if _op_kind_stage(change.fact) is None:
            table.add_row(
                change.fact,
                _amount(change.fact, change.before),
                _amount(change.fact, change.after),
                _delta(change),
                change.tolerance,
            )
    for stage, kinds in by_kind.items():
        deltas = sorted(
            (((c.after or 0) - (c.before or 0)), c.fact[len(stage) + 1 :]) for c in kinds
        )
        deltas.sort(key=lambda item: (-abs(item[0]), item[1]))
        words = ", ".join(f"{delta:+d} {kind}" for delta, kind in deltas[:MAX_KINDS_SHOWN])
        if len(deltas) > MAX_KINDS_SHOWN:
            words += f", … ({len(deltas)} kinds)"
        table.add_row(f"{stage}.<kind>", "", "", words, kinds[0].tolerance)
    return table


def _op_kind_stage(fact: str) -> str | None:
    """`ops.optimized` for `ops.optimized.mhlo.copy`; None for a total or another fact."""
    for stage in ("ops.lowered", "ops.optimized"):
        if fact.startswith(stage + ".") and fact != f"{stage}.total":
            return stage
    return None


def _amount(fact: str, value: float | None) -> str:
    return "-" if value is None else describe_amount(fact, value)


def _delta(change: Change) -> str:
    if change.before is None or change.after is None:
        return "new" if change.before is None else "gone"
    amount, percent = describe_move(change.fact, change.before, change.after)
    return f"{amount} {percent}" if percent else amount


def _lines_table(
    regressions: tuple[Change, ...],
    grown: tuple[GrownBuffers, ...],
    texts: Mapping[str, str],
    origins: Mapping[str, tuple[str, ...]],
) -> Table:
    """The regressions grouped by the line of the user's code they come from: the ops
    each line gained, the bytes its buffers hold at the memory peak, and why each
    collective there is there (`placement --why`)."""
    by_site: dict[str, list[str]] = {}
    for entry in grown[:MAX_GROWN_ROWS]:
        shapes = clip(", ".join(shape_text(s) for s in entry.shapes), 48)
        by_site.setdefault(entry.site, []).append(
            f"+{human_bytes(entry.after - entry.before)} live at the memory peak ({shapes})"
        )
    for change in regressions:
        if change.fact.startswith("memory."):
            continue
        for site, delta in change.site_deltas:
            by_site.setdefault(site, []).append(
                f"{change.fact} {describe_site_delta(change.fact, delta)}"
            )
    for site, said in origins.items():
        by_site.setdefault(site, []).extend(f"why: {sentence}" for sentence in said)
    table = simple_table(
        "Where they come from",
        [("line", "left", True), ("what it adds", "left", False)],
    )
    for site, items in by_site.items():
        cell = Text("; ".join(items))
        code = texts.get(site)
        if code:
            cell = Text.assemble((clip(code, 70), "dim"), "\n", cell)
        table.add_row(short_source(site), cell)
    return table

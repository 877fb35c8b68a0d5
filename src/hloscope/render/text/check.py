"""`hloscope check` as text: per target, what regressed (with the lines it comes
from and, for memory, the buffers at the peak that grew), what improved, and the
verdict on the last line."""

from __future__ import annotations

from collections.abc import Mapping

from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from hloscope.analyses.baseline.compare import Cause, Change, GrownBuffers
from hloscope.analyses.baseline.tolerance import describe_site_delta
from hloscope.render.check_rows import change_rows, verdict_words
from hloscope.render.text.common import (
    Entries,
    clip,
    notes_group,
    short_source,
    simple_table,
    source_text,
)
from hloscope.render.text.memory import shape_text
from hloscope.reports.check import CheckReport, CollectiveOrigin, TargetCheck
from hloscope.units import counted, human_bytes

MAX_GROWN_ROWS = 8
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
        for cause in comparison.causes:
            console.print(_cause_text(cause), soft_wrap=True)
        regressions, improvements = comparison.regressions, comparison.improvements
        if regressions:
            console.print(_changes_table("Regressions", regressions))
            lines = _lines_table(
                regressions,
                comparison.grown_at_peak,
                check.line_texts,
                check.origins,
                comparison.causes,
            )
            if lines.row_count:  # none where no regression names a line
                console.print(lines)
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


def _cause_text(cause: Cause) -> Text:
    """`cause: params['w1']'s sharding: … → replicated (model.py:21); it moves …`."""
    text = Text.assemble(("cause: ", "bold"), (cause.words, "bold yellow"))
    if cause.source:
        text.append(f" ({short_source(cause.source)})")
    if cause.facts:
        text.append(f"; it moves {', '.join(cause.facts)}")
    return text


def _verdict(check: TargetCheck) -> Text:
    said, more = verdict_words(check)
    text = Text(said, style="bold green" if check.passed else "bold red")
    if more:
        text.append(more, style="green")
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
    for row in change_rows(changes):
        # A change keeps each count with its kind (`+6 hlo.copy-done`) on one line.
        change = change_entries(row.change)
        table.add_row(row.fact, row.before, row.after, change, row.tolerance)
    return table


def _lines_table(
    regressions: tuple[Change, ...],
    grown: tuple[GrownBuffers, ...],
    texts: Mapping[str, str],
    origins: Mapping[str, tuple[CollectiveOrigin, ...]],
    causes: tuple[Cause, ...] = (),
) -> Table:
    """The regressions grouped by the line of the user's code they come from: the ops
    each line gained, the bytes its buffers hold at the memory peak, and why each
    collective there is there (`placement --why`)."""
    by_site: dict[str, list[str]] = {}
    for cause in causes:  # first: the line that built what moved the rest
        if cause.source is not None:
            by_site.setdefault(cause.source, []).append(
                f"{cause.words}: moves {', '.join(cause.facts) or 'no fact'}"
            )
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
        by_site.setdefault(site, []).extend(f"why: {origin.sentence}" for origin in said)
    table = simple_table(
        "Where they come from",
        [("line", "left", True), ("what it adds", "left", False)],
    )
    for site, items in by_site.items():
        # At most a few lines a site, then `… N more` (--json has them all): a line
        # that gained many ops, and the why of each collective there, is not a page.
        added = Entries(items, separator="; ", max_lines=MAX_SITE_LINES)
        code = texts.get(site)
        cell: RenderableType = added
        if code:
            cell = Group(Text(clip(code, 70), style="dim"), added)
        table.add_row(source_text(site), cell)
    return table


MAX_SITE_LINES = 6
"""The most lines a line of the user's code takes in `Where they come from`."""


def change_entries(change: str) -> Entries:
    """`+6 hlo.copy-done, +6 hlo.copy-start, … (16 kinds)` as entries, the kinds not
    listed counted (`… 14 more`)."""
    parts = change.split(", ")
    more = 0
    # The count the change's own words end with: `… (16 kinds)`.
    last = parts[-1].removeprefix("… (").removesuffix(" kinds)")
    if len(parts) > 1 and last != parts[-1] and last.isdigit():
        parts.pop()
        more = int(last) - len(parts)
    return Entries(parts, more=more, max_lines=MAX_SITE_LINES)

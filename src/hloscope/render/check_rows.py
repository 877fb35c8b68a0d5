"""A check's changes as rows of words, for every view that lists them: the text
report's tables, the Markdown table (a pull request's comment, GitHub's job summary)
and GitHub's annotations. One place says how a fact moved and which line of the
user's code a regression comes from, so every view says the same."""

from __future__ import annotations

import dataclasses

from hloscope.analyses.baseline.compare import Change
from hloscope.analyses.baseline.facts import FactValue
from hloscope.analyses.baseline.tolerance import describe_amount, describe_move
from hloscope.render.text.common import short_source
from hloscope.reports.check import TargetCheck
from hloscope.units import counted

MAX_KINDS_SHOWN = 6


@dataclasses.dataclass(frozen=True)
class ChangeRow:
    """One row of a table of changes: a fact, or the op counts by kind of one stage
    folded into one (`ops.optimized.<kind>`, whose totals have rows of their own)."""

    fact: str
    before: str
    """The amount before (`-`: the baseline had no such fact); empty for a folded row."""
    after: str
    change: str
    """How it moved: `+2 +100%`, `new`, `gone`; a folded row's moves by kind."""
    tolerance: str
    regression: bool
    source: str | None
    """The user's line it comes from (`file.py:LINE`, `change_source`); None for a
    folded row or a change with no line."""


def change_rows(changes: tuple[Change, ...]) -> list[ChangeRow]:
    """One row per fact, but the op counts by kind of each stage folded into one row
    (after the others), their largest moves named."""
    rows: list[ChangeRow] = []
    by_kind: dict[str, list[Change]] = {}
    for change in changes:
        stage = op_kind_stage(change.fact)
        if stage is not None:
            by_kind.setdefault(stage, []).append(change)
            continue
        rows.append(
            ChangeRow(
                fact=change.fact,
                before=amount_text(change.fact, change.before),
                after=amount_text(change.fact, change.after),
                change=move_text(change),
                tolerance=change.tolerance,
                regression=change.regression,
                source=change_source(change),
            )
        )
    for stage, kinds in by_kind.items():
        deltas = sorted(
            (((c.after or 0) - (c.before or 0)), c.fact[len(stage) + 1 :]) for c in kinds
        )
        deltas.sort(key=lambda item: (-abs(item[0]), item[1]))
        words = ", ".join(f"{delta:+d} {kind}" for delta, kind in deltas[:MAX_KINDS_SHOWN])
        if len(deltas) > MAX_KINDS_SHOWN:
            words += f", … ({len(deltas)} kinds)"
        rows.append(
            ChangeRow(
                fact=f"{stage}.<kind>",
                before="",
                after="",
                change=words,
                tolerance=kinds[0].tolerance,
                regression=kinds[0].regression,
                source=None,
            )
        )
    return rows


def op_kind_stage(fact: str) -> str | None:
    """`ops.optimized` for `ops.optimized.mhlo.copy`; None for a total or another fact."""
    for stage in ("ops.lowered", "ops.optimized"):
        if fact.startswith(stage + ".") and fact != f"{stage}.total":
            return stage
    return None


def amount_text(fact: str, value: FactValue | None) -> str:
    return "-" if value is None else describe_amount(fact, value)


def move_text(change: Change) -> str:
    """`+2 +100%`, `+28.0 KiB +700%`; `new` or `gone` for a fact one side lacks."""
    if change.before is None or change.after is None:
        return "new" if change.before is None else "gone"
    amount, percent = describe_move(change.fact, change.before, change.after)
    return f"{amount} {percent}" if percent else amount


def change_source(change: Change) -> str | None:
    """The line of the user's code a change comes from: the one that makes most of it
    (`Change.sources` is largest first), the first line of its row in the text
    report's "Where they come from"; None when no line of the user's makes it."""
    return change.sources[0] if change.sources else None


def verdict_words(check: TargetCheck) -> tuple[str, str]:
    """A target's verdict (`FAILED: 3 regressions (…)`, `passed: …`, `recorded: …`),
    and what follows it (`; 2 changes to record with --update`, or nothing)."""
    facts = counted(len(check.measurement.facts), "fact")
    comparison = check.comparison
    if check.updated:
        verb = "updated" if check.baseline is not None else "recorded"
        return f"{verb}: {facts} in {short_source(check.baseline_path)}", ""
    assert comparison is not None
    regressions = comparison.regressions
    if regressions:
        names = ", ".join(c.fact for c in regressions[:4])
        more = f", … ({len(regressions)})" if len(regressions) > 4 else ""
        return f"FAILED: {counted(len(regressions), 'regression')} ({names}{more})", ""
    said = f"passed: {counted(comparison.compared, 'fact')} compared, none regressed"
    if comparison.improvements:
        return said, f"; {counted(len(comparison.improvements), 'change')} to record with --update"
    return said, ""

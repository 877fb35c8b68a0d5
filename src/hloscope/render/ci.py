"""`hloscope check` for continuous integration: `--format github` and `--format
markdown`.

`github` prints one GitHub Actions workflow command per regression, an `::error`
annotation at the line of the user's code it comes from (the line the text report
names first for it), led by one per cause (an argument's sharding changed, its
donation dropped: `Comparison.causes`) at the line that built it, and appends the
Markdown table of the changes to the job's summary (`$GITHUB_STEP_SUMMARY`) when
there is one. `markdown` prints that same table, the causes above it, for a pull
request's comment. The words of each change (how it moved, the verdict) are the text
report's (`render.check_rows`).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping
from typing import IO

from hloscope.analyses.baseline.compare import Cause, Change
from hloscope.errors import HloscopeError
from hloscope.render.check_rows import (
    amount_text,
    change_rows,
    change_source,
    move_text,
    verdict_words,
)
from hloscope.reports.check import CheckReport, TargetCheck

SUMMARY_VARIABLE = "GITHUB_STEP_SUMMARY"
"""The file GitHub Actions shows as the job's summary (Markdown, appended to)."""
WORKSPACE_VARIABLE = "GITHUB_WORKSPACE"
"""The checkout, which annotations' file paths are relative to."""

REGRESSION_MARK = "❌"


# --------------------------------------------------------------------------- github


def escape_data(text: str) -> str:
    """A workflow command's message, as GitHub's toolkit escapes it (`escapeData` in
    @actions/core): `%`, carriage returns and newlines."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """A workflow command's property value (`escapeProperty` in @actions/core): the
    message's escapes, and `:` and `,`, which end a property."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def workflow_command(command: str, properties: Mapping[str, str], message: str) -> str:
    """`::command key=value,key=value::message`, escaped."""
    props = ",".join(f"{key}={escape_property(value)}" for key, value in properties.items())
    return f"::{command}{' ' + props if props else ''}::{escape_data(message)}"


def github_commands(report: CheckReport, root: str) -> list[str]:
    """One `::error file=F,line=L::` per regression of every target, at the line it
    comes from (its file relative to `root`, the repository's checkout), or a plain
    `::error::` when no line of the user's makes it; one `::warning::` per note; and
    each target's verdict as a plain line of the job's log. With several targets,
    each message starts with its target's name."""
    lines: list[str] = []
    for check in report.checks:
        named = f"{check.name}: " if len(report.checks) > 1 else ""
        comparison = check.comparison
        for cause in comparison.causes if comparison is not None else ():
            # The cause first, at its line: what the regressions under it come from.
            location = _file_and_line(cause.source, root) if cause.source is not None else None
            properties = {"file": location[0], "line": str(location[1])} if location else {}
            lines.append(workflow_command("error", properties, named + cause_message(cause)))
        for change in comparison.regressions if comparison is not None else ():
            source = change_source(change)
            location = _file_and_line(source, root) if source is not None else None
            properties = {"file": location[0], "line": str(location[1])} if location else {}
            message = named + regression_message(change, check, source)
            lines.append(workflow_command("error", properties, message))
        lines.extend(workflow_command("warning", {}, named + note) for note in check.notes)
        said, more = verdict_words(check)
        lines.append(f"hloscope check {check.name}: {said}{more}")
    return lines


def cause_message(cause: Cause) -> str:
    """`params['w1']'s sharding: P('data', 'model') over … → replicated; it moves
    memory.argument_bytes, memory.peak_bytes`."""
    moved = f"; it moves {', '.join(cause.facts)}" if cause.facts else ""
    return f"{cause.words}{moved}"


def regression_message(change: Change, check: TargetCheck, source: str | None) -> str:
    """The fact and its move (`collectives.all-gather.count - → 1 (new, tolerance
    exact)`), how much of it the line makes, and why a collective is there
    (`placement --why`'s sentence) where that is known."""
    fact = change.fact
    causes = check.comparison.causes if check.comparison is not None else ()
    before = amount_text(fact, change.before)
    after = amount_text(fact, change.after)
    message = f"{fact} {before} → {after} ({move_text(change)}, tolerance {change.tolerance})"
    cause = next((c for c in causes if fact in c.facts), None)
    if cause is not None:
        message += f"; moved by {cause.argument}'s {cause.kind}"
    others = [s for s in change.sources if s != source]
    if others:
        message += f"; also from {', '.join(others)}"
    if source is not None:
        for sentence in check.why(fact, (source,)):
            message += f"\nwhy: {_relative_sentence(sentence)}"
    return message


def _file_and_line(source: str, root: str) -> tuple[str, int] | None:
    """(`path/to/file.py`, LINE) of `file.py:LINE` (relative to the working
    directory, or absolute), the path relative to `root` when below it."""
    file, _, line = source.rpartition(":")
    if not file or not line.isdigit():
        return None
    path = os.path.abspath(file)
    root = os.path.abspath(root)
    if path.startswith(root + os.sep):
        path = os.path.relpath(path, root)
    return path.replace(os.sep, "/"), int(line)


def _relative_sentence(sentence: str) -> str:
    """`placement --why`'s sentence with the working directory's files named relative
    to it, as the lines of a check are."""
    return sentence.replace(os.getcwd() + os.sep, "")


# --------------------------------------------------------------------------- markdown


def markdown_report(report: CheckReport) -> str:
    """Per target, a heading with its verdict, and a table of its changes, all of them
    (regressions first, marked), with the line each comes from."""
    parts = [_markdown_target(check) for check in report.checks]
    return "\n".join(parts)


def _markdown_target(check: TargetCheck) -> str:
    said, more = verdict_words(check)
    mark = "" if check.passed else f"{REGRESSION_MARK} "
    target = f" (`{check.target}`)" if check.target != check.name else ""
    lines = [
        f"### hloscope check: `{check.name}`{target}",
        "",
        f"{mark}{_cell(said + more)}",
        "",
        f"Backend: {_cell(check.backend.words())}",
        "",
    ]
    comparison = check.comparison
    for cause in comparison.causes if comparison is not None else ():
        where = f" (`{cause.source}`)" if cause.source else ""
        lines.append(f"**Cause**: {_cell(cause_message(cause))}{where}")
        lines.append("")
    if comparison is not None and comparison.changes:
        lines.append("| | fact | before | after | change | tolerance | line |")
        lines.append("|---|---|---:|---:|---|---|---|")
        rows = [*change_rows(comparison.regressions), *change_rows(comparison.improvements)]
        for row in rows:
            cells = [
                REGRESSION_MARK if row.regression else "",
                f"`{_cell(row.fact)}`",
                _cell(row.before),
                _cell(row.after),
                _cell(row.change),
                _cell(row.tolerance),
                f"`{_cell(row.source)}`" if row.source else "",
            ]
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
    lines.extend(f"> {_cell(note)}\n" for note in check.notes)
    return "\n".join(lines)


def _cell(text: str) -> str:
    """Text in a Markdown table's cell: on one line, its pipes escaped."""
    return " ".join(text.split()).replace("|", "\\|")


# --------------------------------------------------------------------------- front end


def print_github(report: CheckReport, out: IO[str] | None = None) -> None:
    """`--format github`: the workflow commands on stdout, and the table appended to
    the job's summary when GitHub names one."""
    root = os.environ.get(WORKSPACE_VARIABLE) or os.getcwd()
    stream = out or sys.stdout
    stream.write("".join(line + "\n" for line in github_commands(report, root)))
    summary = os.environ.get(SUMMARY_VARIABLE)
    if summary:
        try:
            with open(summary, "a", encoding="utf-8") as file:
                file.write(markdown_report(report) + "\n")
        except OSError as exc:
            raise HloscopeError(
                f"cannot append the job summary ({SUMMARY_VARIABLE}): {exc.strerror}",
                where=summary,
            ) from None


def print_markdown(report: CheckReport, out: IO[str] | None = None) -> None:
    """`--format markdown`: the table, for a pull request's comment."""
    (out or sys.stdout).write(markdown_report(report) + "\n")


PRINTERS: dict[str, Callable[[CheckReport], None]] = {
    "github": print_github,
    "markdown": print_markdown,
}
"""The printers of `hloscope check --format FORMAT` beside text and JSON."""

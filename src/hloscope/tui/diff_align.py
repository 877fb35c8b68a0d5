"""Two printed modules side by side for the diff screen: the rows of each, matched
ops on one row, and what each line's op is in the diff.

Only the browser's diff screen lays modules out this way; the diff itself
(`hloscope.analyses.diff`) knows nothing of printed lines. No textual here: the
layout is a pure function of the diff and the two printed modules, tested on its own.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Iterable, Mapping, Sequence
from typing import Literal

from hloscope.analyses.diff import (
    ADDED,
    CHANGED,
    NORMALIZED,
    REMOVED,
    SAME,
    ModuleDiff,
    Row,
    RowStatus,
)
from hloscope.tui.printed import PrintedModule

LineStatus = Literal[RowStatus, ""]
"""A printed line's status: its op's status in the diff, or empty for a line that is
no op of the diff."""

# What a line's status means for the side-by-side view: a change, and how bad.
CHANGE_STATUSES = frozenset({ADDED, REMOVED, CHANGED})
_SEVERITY = {SAME: 0, NORMALIZED: 1, ADDED: 2, REMOVED: 2, CHANGED: 3}
# Gaps between aligned lines larger than this (lines of A times lines of B) are not
# matched line by line.
MAX_GAP_PRODUCT = 250_000


@dataclasses.dataclass(frozen=True)
class AlignedLines:
    """Two printed modules side by side, row by row: the lines of each in their own
    order, matched ops on the same row."""

    a: tuple[int, ...]
    """A's line on each row (0-based), or -1 where the row shows only B."""
    b: tuple[int, ...]
    """B's line on each row, or -1 where the row shows only A."""
    status_a: tuple[LineStatus, ...]
    """What A's line on each row is: its op's status in the diff (`same`, `changed`,
    `removed`, `normalized`; the worst, for an op the diff saw several times through
    calls), or empty for a line that is no op of the diff (a function's header, a
    closing brace, a blank row)."""
    status_b: tuple[LineStatus, ...]
    """The same for B (`added` instead of `removed`)."""
    stops: tuple[int, ...]
    """The rows where a run of changed rows starts: what `]` and `[` go to."""

    def is_change(self, row: int) -> bool:
        """Whether either side of `row` is added, removed or changed."""
        return self.status_a[row] in CHANGE_STATUSES or self.status_b[row] in CHANGE_STATUSES


def _op_statuses(
    rows: Iterable[Row], nodes: Sequence[int], side: Literal["a", "b"]
) -> dict[int, RowStatus]:
    """Op id -> its worst status over the diff's nodes of it on one side."""
    statuses: dict[int, RowStatus] = {}
    for row in rows:
        node = row.a if side == "a" else row.b
        if node < 0:
            continue
        op = nodes[node]
        old = statuses.get(op)
        if old is None or _SEVERITY[row.status] > _SEVERITY[old]:
            statuses[op] = row.status
    return statuses


def _line_statuses(printed: PrintedModule, ops: Mapping[int, RowStatus]) -> list[LineStatus]:
    """Each line's status: its op's, on the op's own line."""
    out: list[LineStatus] = [""] * len(printed.lines)
    for op, status in ops.items():
        if 0 <= op < len(printed.op_line) and printed.own_line[op]:
            line = printed.op_line[op]
            if line >= 0:
                out[line] = status
    return out


def _increasing(pairs: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """The longest run of `pairs` (sorted by their first item) whose second items
    increase too: the anchors that can share rows without crossing."""
    tails: list[int] = []  # index into pairs of the smallest tail of each length
    previous = [-1] * len(pairs)
    for index, (_, second) in enumerate(pairs):
        low, high = 0, len(tails)
        while low < high:
            middle = (low + high) // 2
            if pairs[tails[middle]][1] < second:
                low = middle + 1
            else:
                high = middle
        previous[index] = tails[low - 1] if low > 0 else -1
        if low == len(tails):
            tails.append(index)
        else:
            tails[low] = index
    chain: list[tuple[int, int]] = []
    index = tails[-1] if tails else -1
    while index >= 0:
        chain.append(pairs[index])
        index = previous[index]
    chain.reverse()
    return chain


def align_printed(diff: ModuleDiff, a: PrintedModule, b: PrintedModule) -> AlignedLines:
    """Lay the printed modules A and B side by side for the diff `diff` of them.

    Matched ops (and the headers of matched functions, and the modules' first
    lines) are anchors: the largest set of them whose lines increase on both sides
    shares rows. Between two anchors, lines that are no op of the diff and read the
    same (closing braces, block labels) share rows too, a removed op may face an
    added one (as a side-by-side diff shows a replaced block), and every other line
    faces a blank row: lines side by side are a match, or a replacement. Every line
    of each module appears once, in order.
    """
    ops_a = _op_statuses(diff.rows, diff.a.ops, "a")
    ops_b = _op_statuses(diff.rows, diff.b.ops, "b")
    lines_a = _line_statuses(a, ops_a)
    lines_b = _line_statuses(b, ops_b)

    anchors: dict[int, int] = {}
    used_b: set[int] = set()

    def anchor(line_a: int, line_b: int) -> None:
        if line_a >= 0 and line_b >= 0 and line_a not in anchors and line_b not in used_b:
            anchors[line_a] = line_b
            used_b.add(line_b)

    if a.lines and b.lines:
        anchor(0, 0)
    for pair in diff.functions:
        if pair.a is not None and pair.b is not None:
            anchor(a.function_lines.get(pair.a, -1), b.function_lines.get(pair.b, -1))
    for row in diff.rows:
        if row.a < 0 or row.b < 0:
            continue
        op_a, op_b = diff.a.ops[row.a], diff.b.ops[row.b]
        if a.own_line[op_a] and b.own_line[op_b]:
            anchor(a.op_line[op_a], b.op_line[op_b])
    chain = _increasing(sorted(anchors.items()))

    rows_a: list[int] = []
    rows_b: list[int] = []

    def gap(lines_of_a: range, lines_of_b: range) -> None:
        if not lines_of_a or not lines_of_b:
            rows_a.extend(lines_of_a)
            rows_b.extend([-1] * len(lines_of_a))
            rows_a.extend([-1] * len(lines_of_b))
            rows_b.extend(lines_of_b)
            return
        if len(lines_of_a) * len(lines_of_b) <= MAX_GAP_PRODUCT:
            keys_a = [a.lines[n].strip() if not lines_a[n] else f"a{n}" for n in lines_of_a]
            keys_b = [b.lines[n].strip() if not lines_b[n] else f"b{n}" for n in lines_of_b]
            blocks = difflib.SequenceMatcher(None, keys_a, keys_b, autojunk=False).get_opcodes()
        else:
            blocks = [("replace", 0, len(lines_of_a), 0, len(lines_of_b))]
        for tag, i1, i2, j1, j2 in blocks:
            if tag == "equal":
                rows_a.extend(lines_of_a[i1:i2])
                rows_b.extend(lines_of_b[j1:j2])
                continue
            # A removed op faces an added one; anything else faces a blank row, so
            # that lines side by side are never taken for a match.
            while (
                i1 < i2
                and j1 < j2
                and lines_a[lines_of_a[i1]] == REMOVED
                and lines_b[lines_of_b[j1]] == ADDED
            ):
                rows_a.append(lines_of_a[i1])
                rows_b.append(lines_of_b[j1])
                i1, j1 = i1 + 1, j1 + 1
            rows_a.extend(lines_of_a[i1:i2])
            rows_b.extend([-1] * (i2 - i1))
            rows_a.extend([-1] * (j2 - j1))
            rows_b.extend(lines_of_b[j1:j2])

    next_a = next_b = 0
    for line_a, line_b in chain:
        gap(range(next_a, line_a), range(next_b, line_b))
        rows_a.append(line_a)
        rows_b.append(line_b)
        next_a, next_b = line_a + 1, line_b + 1
    gap(range(next_a, len(a.lines)), range(next_b, len(b.lines)))

    status_a = tuple(lines_a[n] if n >= 0 else "" for n in rows_a)
    status_b = tuple(lines_b[n] if n >= 0 else "" for n in rows_b)
    stops: list[int] = []
    previous = False
    for index in range(len(rows_a)):
        change = status_a[index] in CHANGE_STATUSES or status_b[index] in CHANGE_STATUSES
        if change and not previous:
            stops.append(index)
        previous = change
    return AlignedLines(
        a=tuple(rows_a),
        b=tuple(rows_b),
        status_a=status_a,
        status_b=status_b,
        stops=tuple(stops),
    )


def group_rows(
    diff: ModuleDiff, a: PrintedModule, b: PrintedModule, aligned: AlignedLines
) -> tuple[int, ...]:
    """The row of each change group's first occurrence that has a line of its own (an
    op's), or -1 (a parameter, a result, an op printed inside another's line)."""
    row_a = {line: row for row, line in enumerate(aligned.a) if line >= 0}
    row_b = {line: row for row, line in enumerate(aligned.b) if line >= 0}
    out: list[int] = []
    for group in diff.groups:
        found = -1
        for change in group.changes:
            for node, nodes, printed, rows in (
                (change.a, diff.a.ops, a, row_a),
                (change.b, diff.b.ops, b, row_b),
            ):
                if node is None:
                    continue
                op = nodes[node]
                if 0 <= op < len(printed.op_line) and printed.own_line[op]:
                    found = rows.get(printed.op_line[op], -1)
                if found >= 0:
                    break
            if found >= 0:
                break
        out.append(found)
    return tuple(out)

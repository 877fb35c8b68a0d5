"""Two printed modules side by side for the diff screen: the rows of each, matched
ops on one row, and what each line's op is in the diff.

Every pair of the diff (a matched or changed op) is on one row, wherever its two
ops are printed: the diff matches across functions (an inlined call against the
function it calls), so a pair can cross the order of the others. Such a pair is
shown at B's place with a copy of A's line beside it; A's line keeps its own place
too, facing a blank and shown as moved, so that each side reads in its own order.

Only the browser's diff screen lays modules out this way; the diff itself
(`hloscope.analyses.diff`) knows nothing of printed lines. No textual here: the
layout is a pure function of the diff and the two printed modules, tested on its own.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Iterable, Mapping, Sequence
from typing import Final, Literal

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

MOVED: Final = "moved"
LineStatus = Literal[RowStatus, "moved", ""]
"""A printed line's status: its op's status in the diff, `moved` at the own place of
a line whose pairs are all shown elsewhere, or empty for a line that is no op of the
diff."""

# What a line's status means for the side-by-side view: a change, and how bad.
CHANGE_STATUSES = frozenset({ADDED, REMOVED, CHANGED})
_SEVERITY: dict[LineStatus, int] = {SAME: 0, NORMALIZED: 1, ADDED: 2, REMOVED: 2, CHANGED: 3}
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
    copy_a: tuple[bool, ...]
    """Whether A's line on each row is a copy: a line shown again beside its pair,
    which crosses the order of the other pairs; its own place is another row."""
    copy_b: tuple[bool, ...]
    """The same for B (a B line paired with several of A's, e.g. a function A inlined
    twice that B calls twice)."""
    stops: tuple[int, ...]
    """The rows that hold a change (added, removed or changed, on either side): what
    `]` and `[` go to, one change at a time."""

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


def _returns(printed: PrintedModule, statuses: Sequence[LineStatus]) -> dict[int, int]:
    """Function header line -> the line of its return: the op line just before the
    function's closing brace, when it is no op of the diff (MLIR's `return`; XLA's
    ROOT is an op of the diff)."""
    headers = {printed.line_op[line]: line for line in printed.function_lines.values()}
    headers.pop(-1, None)
    closing: dict[int, int] = {}
    for line, op in enumerate(printed.line_op):
        if op in headers:
            closing[op] = line
    out: dict[int, int] = {}
    for function, header in headers.items():
        last = closing.get(function, -1) - 1
        if last <= header:
            continue
        op = printed.line_op[last]
        own = op >= 0 and printed.own_line[op] and printed.op_line[op] == last
        if own and not statuses[last]:
            out[header] = last
    return out


def align_printed(diff: ModuleDiff, a: PrintedModule, b: PrintedModule) -> AlignedLines:
    """Lay the printed modules A and B side by side for the diff `diff` of them.

    Matched ops (and the headers and returns of matched functions, and the modules'
    first lines) are anchors: the largest set of them whose lines increase on both
    sides shares rows. Between two anchors, lines that are no op of the diff and
    read the same (closing braces, block labels) share rows too, a removed op may
    face an added one (as a side-by-side diff shows a replaced block), and every
    other line faces a blank row: lines side by side are a match, or a replacement.
    Every line of each module appears once in its own place, in order. A pair of
    the diff that crosses the anchors is shown at B's line, beside a copy of A's
    line (`copy_a`); A's line, at its own place, is `moved` when that was its only
    part in the diff.
    """
    ops_a = _op_statuses(diff.rows, diff.a.ops, "a")
    ops_b = _op_statuses(diff.rows, diff.b.ops, "b")
    lines_a = _line_statuses(a, ops_a)
    lines_b = _line_statuses(b, ops_b)

    # The diff's pairs, by their lines: each pair's worst status; the A ops the diff
    # also saw unpaired (a function called twice, one call removed).
    pairs: dict[tuple[int, int], RowStatus] = {}
    unpaired_a: set[int] = set()
    for row in diff.rows:
        if row.a >= 0 and row.b < 0:
            unpaired_a.add(diff.a.ops[row.a])
        if row.a < 0 or row.b < 0:
            continue
        op_a, op_b = diff.a.ops[row.a], diff.b.ops[row.b]
        if a.own_line[op_a] and b.own_line[op_b]:
            key = (a.op_line[op_a], b.op_line[op_b])
            old = pairs.get(key)
            if old is None or _SEVERITY[row.status] > _SEVERITY[old]:
                pairs[key] = row.status

    anchors: dict[int, int] = {}
    used_b: set[int] = set()

    def anchor(line_a: int, line_b: int) -> None:
        if line_a >= 0 and line_b >= 0 and line_a not in anchors and line_b not in used_b:
            anchors[line_a] = line_b
            used_b.add(line_b)

    if a.lines and b.lines:
        anchor(0, 0)
    returns_a, returns_b = _returns(a, lines_a), _returns(b, lines_b)
    for pair in diff.functions:
        if pair.a is not None and pair.b is not None:
            header_a = a.function_lines.get(pair.a, -1)
            header_b = b.function_lines.get(pair.b, -1)
            anchor(header_a, header_b)
            anchor(returns_a.get(header_a, -1), returns_b.get(header_b, -1))
    for line_a, line_b in pairs:
        anchor(line_a, line_b)
    chain = _increasing(sorted(anchors.items()))

    # Pairs off the chain: shown at B's line, in A's order for each B line.
    in_chain = set(chain)
    elsewhere: dict[int, list[int]] = {}
    for line_a, line_b in sorted(pairs):
        if (line_a, line_b) not in in_chain:
            elsewhere.setdefault(line_b, []).append(line_a)
    at_home_a = {line_a for line_a, line_b in in_chain if (line_a, line_b) in pairs}
    for line_a, _ in pairs:
        if line_a not in at_home_a and a.line_op[line_a] not in unpaired_a:
            lines_a[line_a] = MOVED

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

    # The pairs off the chain, beside their B lines: on B's row where A's side is
    # blank, then on rows of their own below it (B's line copied).
    out_a: list[int] = []
    out_b: list[int] = []
    copy_a: list[bool] = []
    copy_b: list[bool] = []
    status_a: list[LineStatus] = []
    status_b: list[LineStatus] = []
    for line_a, line_b in zip(rows_a, rows_b, strict=True):
        partners = elsewhere.get(line_b, []) if line_b >= 0 else []
        copied = line_a < 0 and bool(partners)
        if copied:
            line_a = partners[0]
        out_a.append(line_a)
        out_b.append(line_b)
        copy_a.append(copied)
        copy_b.append(False)
        status_a.append(pairs[line_a, line_b] if copied else lines_a[line_a] if line_a >= 0 else "")
        status_b.append(lines_b[line_b] if line_b >= 0 else "")
        for partner in partners[1:] if copied else partners:
            out_a.append(partner)
            out_b.append(line_b)
            copy_a.append(True)
            copy_b.append(True)
            status_a.append(pairs[partner, line_b])
            status_b.append(pairs[partner, line_b])

    # Each changed row is a stop: three adjacent changed ops are three changes, each
    # described in turn, not one run whose rows below the first go unsaid.
    stops = [
        index
        for index in range(len(out_a))
        if status_a[index] in CHANGE_STATUSES or status_b[index] in CHANGE_STATUSES
    ]
    return AlignedLines(
        a=tuple(out_a),
        b=tuple(out_b),
        status_a=tuple(status_a),
        status_b=tuple(status_b),
        copy_a=tuple(copy_a),
        copy_b=tuple(copy_b),
        stops=tuple(stops),
    )


def group_rows(
    diff: ModuleDiff, a: PrintedModule, b: PrintedModule, aligned: AlignedLines
) -> tuple[int, ...]:
    """The row of each change group's first occurrence that has a line of its own (an
    op's): a changed op's row beside its pair, else its own line's; or -1 (a
    parameter, a result, an op printed inside another's line)."""
    row_a: dict[int, int] = {}
    row_b: dict[int, int] = {}
    pair_row: dict[tuple[int, int], int] = {}
    for row, (line_a, line_b) in enumerate(zip(aligned.a, aligned.b, strict=True)):
        if line_a >= 0 and not aligned.copy_a[row]:
            row_a[line_a] = row
        if line_b >= 0 and not aligned.copy_b[row]:
            row_b[line_b] = row
        if line_a >= 0 and line_b >= 0:
            pair_row.setdefault((line_a, line_b), row)

    def own(node: int | None, nodes: Sequence[int], printed: PrintedModule) -> int:
        if node is None:
            return -1
        op = nodes[node]
        return (
            printed.op_line[op] if 0 <= op < len(printed.op_line) and printed.own_line[op] else -1
        )

    out: list[int] = []
    for group in diff.groups:
        found = -1
        for change in group.changes:
            line_a, line_b = own(change.a, diff.a.ops, a), own(change.b, diff.b.ops, b)
            found = pair_row.get((line_a, line_b), -1)
            if found < 0:
                found = row_a.get(line_a, -1) if line_a >= 0 else row_b.get(line_b, -1)
            if found < 0 and line_b >= 0:
                found = row_b.get(line_b, -1)
            if found >= 0:
                break
        out.append(found)
    return tuple(out)

"""The text check: both modules printed without locations, names renumbered, and
compared line by line."""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence

from hloscope.analyses.aot.report import (
    OPS,
    PARAMETERS,
    PLACEMENT,
    TEXT,
    Check,
    Difference,
    Program,
    plural,
)

_MODULE_NAME = re.compile(r'^(\s*module\s+@)(?:"(?:[^"\\]|\\.)*"|[\w.$-]+)')
_SSA_NAME = re.compile(r"%([A-Za-z0-9_$.\-]+)")


def normalized_text(text: str) -> list[str]:
    """The module's lines with its name and SSA value names normalised away: the
    module is `@module`, and values are `%0`, `%1`, ... in order of first
    appearance (`%arg0`, `%cst_2` and `%5` alike). Locations are expected printed
    off; blank lines and location aliases (`#loc...`) are dropped."""
    names: dict[str, str] = {}

    def rename(match: re.Match[str]) -> str:
        return "%" + names.setdefault(match.group(1), str(len(names)))

    lines = []
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#loc"):
            continue
        stripped = _MODULE_NAME.sub(r"\1module", stripped)
        lines.append(_SSA_NAME.sub(rename, stripped))
    return lines


def compare_text(
    call: Program,
    aot: Program,
    differences: list[Difference],
    checks: dict[str, Check],
    extra: Difference | None,
) -> None:
    if call.name != aot.name:
        checks[TEXT] = Check(
            TEXT,
            False,
            None,
            f"not compared: the call compiled {call.name} and the AOT path {aot.name}, "
            "another function around it (a jit nested in a module prints differently)",
        )
        return
    mine, theirs = normalized_text(call.text), normalized_text(aot.text)
    if mine == theirs:
        checks[TEXT] = Check(TEXT, True, True, f"{plural(len(mine), 'line')}, identical")
        return
    changed, first = line_changes(mine, theirs)
    line, call_line, aot_line = first
    checks[TEXT] = Check(
        TEXT, True, False, f"{plural(changed, 'line')} {'differs' if changed == 1 else 'differ'}"
    )
    module_level = any(
        d.kind in (PLACEMENT, PARAMETERS, OPS) and d is not extra for d in differences
    )
    cause = (
        "the differences above, as they show in the text"
        if module_level
        else "the same ops, placement and parameters, wired or configured differently "
        "(operand order, attributes, constants or types): the call's jit traced the "
        "function with other static arguments, constants or settings"
    )
    differences.append(
        Difference(
            TEXT,
            f"{plural(changed, 'line')} of {max(len(mine), len(theirs))} "
            f"{'differs' if changed == 1 else 'differ'}; first at "
            f"line {line}: call `{_clip(call_line)}`, AOT `{_clip(aot_line)}`",
            cause,
        )
    )


# Beyond this many lines, lines are compared position by position: a line-matching
# diff of two large modules that differ throughout takes quadratic time.
MAX_DIFFED_LINES = 20_000


def line_changes(mine: Sequence[str], theirs: Sequence[str]) -> tuple[int, tuple[int, str, str]]:
    """Lines that differ, and the first difference (line number, call's line, AOT's
    line); the texts must differ."""
    if max(len(mine), len(theirs)) > MAX_DIFFED_LINES:
        pairs = list(zip(mine, theirs, strict=False))
        differing = [i for i, (a, b) in enumerate(pairs) if a != b]
        changed = len(differing) + abs(len(mine) - len(theirs))
        index = differing[0] if differing else len(pairs)
        return changed, (
            index + 1,
            mine[index] if index < len(mine) else "(nothing)",
            theirs[index] if index < len(theirs) else "(nothing)",
        )
    changed = 0
    first: tuple[int, str, str] | None = None
    matcher = difflib.SequenceMatcher(None, mine, theirs, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        changed += max(i2 - i1, j2 - j1)
        if first is None:
            first = (
                i1 + 1,
                mine[i1] if i1 < i2 else "(nothing)",
                theirs[j1] if j1 < j2 else "(nothing)",
            )
    assert first is not None
    return changed, first


def _clip(text: str, limit: int = 160) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"

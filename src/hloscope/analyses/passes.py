"""XLA's optimization pipeline, pass by pass, from its per-pass dumps.

With `xla_dump_hlo_pass_re=.*`, XLA writes the module after every pass that
changed it (and at each pipeline's start): hundreds of HLO text files for one
compilation. Listing them must stay fast on modules of thousands of ops, so a
file is not parsed into the model here: `census` reads its instruction lines
with one regular expression (`%name = shape opcode(operands), attributes`),
counting instructions by opcode, and, when a pattern is searched for, the
instructions that match it. A pass's module is parsed in full only when it is
opened or diffed (by the loader, elsewhere).

Instructions of fused computations (those a `fusion` instruction `calls=`) are
counted apart as well, so that a find tells "moved into a fusion" from "gone".

`pass_table` turns the censuses of the files, in pipeline order, into each
pass's change (ops added or removed, kinds that changed); `find_in_passes`
tells where a pattern's count changed, where it first appeared and where it was
gone for good.
"""

from __future__ import annotations

import bisect
import dataclasses
import re
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from types import MappingProxyType
from typing import Literal

PatternKind = Literal["op", "custom-call", "source-line", "text"]
"""What a find pattern names: an op kind (`all-gather`), a custom-call target
(`annotate_device_placement`), a source line (`model.py:42`), or any text of an
instruction line (`_xla_compute_type`)."""

# The regular expressions start at a newline (the text is read with one in front),
# which lets the engine jump from line to line instead of trying every position.
# Column 0: a computation's header, `%name (params) -> shape {` or `ENTRY %main ...`.
# (Other lines at column 0, the module's header and its tables, hold no ` (`.)
_HEADER = re.compile(r"\n(?:ENTRY )?%?(?P<computation>[^\s(=%]+) \(")
# Indented: an instruction, `%name = shape opcode(...)` (`ROOT` first for the root);
# the shape is a tuple in parentheses, or one token (TPU layouts hold parentheses:
# `f32[8]{0:T(8)S(5)}`).
_INSTRUCTION = re.compile(
    r"\n[ \t]+(?:ROOT )?%?[^\s=]+ = (?:\([^\n]*?\)|\S+) (?P<op>[a-z][a-z0-9-]*)\("
)
_OPCODE = re.compile(r"[a-z][a-z0-9-]*")
_FUSION_CALLS = re.compile(r"kind=k\w+, calls=%?([^\s,})]+)")
_CUSTOM_CALL_TARGET = re.compile(r'custom_call_target="(?P<target>[^"]*)"')
_SOURCE_PATTERN = re.compile(r"^(?P<file>.+\.\w+):(?P<line>\d+)$")
_SOURCE_METADATA = re.compile(r'source_file="(?P<file>[^"]*)"\s+source_line=(?P<line>\d+)')
_STACK_FRAME = re.compile(r"\bstack_frame_id=(?P<id>\d+)")
# The tables newer XLA prints before the computations, naming every stack frame.
_FILE_NAME = re.compile(r'^(?P<id>\d+) "(?P<name>[^"]*)"$', re.MULTILINE)
_FILE_LOCATION = re.compile(
    r"^(?P<id>\d+) \{file_name_id=(?P<file>\d+)[^\n]*?\bline=(?P<line>\d+)", re.MULTILINE
)
_STACK_FRAME_ROW = re.compile(
    r"^(?P<id>\d+) \{file_location_id=(?P<location>\d+)(?: parent_frame_id=(?P<parent>\d+))?",
    re.MULTILINE,
)


def pattern_kind(pattern: str, kinds: frozenset[str] = frozenset()) -> PatternKind:
    """What `pattern` names, given the op kinds the modules hold: a source line
    (`file.py:42`), an op kind, else text (`text` matches custom-call targets too;
    `census` tells them apart by counting both)."""
    if _SOURCE_PATTERN.match(pattern):
        return "source-line"
    if pattern in kinds:
        return "op"
    return "text"


@dataclasses.dataclass(frozen=True)
class Census:
    """What one HLO text holds, counted without parsing it."""

    ops: int
    """Instructions in every computation (parameters and fused computations too)."""
    kinds: Mapping[str, int]
    """Instructions by opcode (`fusion`, `all-gather`, `copy`)."""
    fused_ops: int
    """Instructions inside fused computations (the bodies of `fusion` ops)."""
    fused_kinds: Mapping[str, int]
    """Instructions by opcode inside fused computations."""
    text_matches: int = 0
    """Instruction lines holding the searched text, when a pattern was given."""
    text_matches_fused: int = 0
    """Of them, those inside fused computations."""
    custom_call_matches: int = 0
    """Custom calls whose target is the searched pattern."""
    custom_call_matches_fused: int = 0
    """Of them, those inside fused computations."""
    source_matches: int = 0
    """Instructions made by the searched source line (any frame of their stack)."""
    source_matches_fused: int = 0
    """Of them, those inside fused computations."""

    def matches(self, kind: PatternKind, pattern: str) -> tuple[int, int]:
        """Occurrences of the pattern (all, and those inside fused computations)."""
        if kind == "op":
            return self.kinds.get(pattern, 0), self.fused_kinds.get(pattern, 0)
        if kind == "custom-call":
            return self.custom_call_matches, self.custom_call_matches_fused
        if kind == "source-line":
            return self.source_matches, self.source_matches_fused
        return self.text_matches, self.text_matches_fused


def looks_like_op_kind(pattern: str) -> bool:
    """Whether `pattern` is spelled like an opcode (`all-gather`): counted by kind,
    it needs no search of the text when the modules hold that kind."""
    return _OPCODE.fullmatch(pattern) is not None


def census(text: str, pattern: str | None = None) -> Census:
    """Count the instructions of an HLO module's text by opcode, and those matching
    `pattern` (as text, as a custom-call target and as a source line; an op kind is
    counted by kind whatever the pattern)."""
    text = "\n" + text
    fused_names = _fused_computations(text)
    # One `findall` per computation's span of the text, and no Python work per
    # instruction: match objects one by one cost several times more.
    headers = [(m.start(), m["computation"]) for m in _HEADER.finditer(text)]
    spans = list(
        zip(
            [0] + [start for start, _ in headers],
            [start for start, _ in headers] + [len(text)],
            [""] + [name for _, name in headers],
            strict=True,
        )
    )
    unfused: list[str] = []
    fused_ops: list[str] = []
    for start, end, name in spans:
        (fused_ops if name in fused_names else unfused).extend(
            _INSTRUCTION.findall(text, start, end)
        )
    fused_kinds = Counter(fused_ops)
    kinds = Counter(unfused)
    kinds.update(fused_kinds)
    hits = {"text": [0, 0], "custom-call": [0, 0], "source-line": [0, 0]}
    if pattern:
        fused_spans = [(start, end) for start, end, name in spans if name in fused_names]
        for kind, line_start, op, line in _matching_lines(text, pattern):
            if op is None:
                continue
            index = bisect.bisect_right(fused_spans, (line_start, len(text))) - 1
            fused = index >= 0 and fused_spans[index][0] <= line_start < fused_spans[index][1]
            hits[kind][0] += 1
            hits[kind][1] += int(fused)
            if kind == "text" and op == "custom-call":
                target = _CUSTOM_CALL_TARGET.search(line)
                if target is not None and target["target"] == pattern:
                    hits["custom-call"][0] += 1
                    hits["custom-call"][1] += int(fused)
    return Census(
        ops=sum(kinds.values()),
        kinds=MappingProxyType(dict(kinds)),
        fused_ops=sum(fused_kinds.values()),
        fused_kinds=MappingProxyType(dict(fused_kinds)),
        text_matches=hits["text"][0],
        text_matches_fused=hits["text"][1],
        custom_call_matches=hits["custom-call"][0],
        custom_call_matches_fused=hits["custom-call"][1],
        source_matches=hits["source-line"][0],
        source_matches_fused=hits["source-line"][1],
    )


def _line_at(text: str, position: int) -> tuple[int, str]:
    """The start (its newline) and text of the line holding `position`."""
    start = text.rfind("\n", 0, position)
    end = text.find("\n", position)
    return start, text[start : end if end != -1 else len(text)]


def _fused_computations(text: str) -> frozenset[str]:
    """The computations that `fusion` instructions call (`kind=kLoop, calls=%name`)."""
    return frozenset(_FUSION_CALLS.findall(text))


def _matching_lines(text: str, pattern: str) -> Iterator[tuple[str, int, str | None, str]]:
    """For each instruction line `pattern` matches, once per line and way of matching
    (`text`, or `source-line`): the way, the line's start, its opcode (None when the
    line is not an instruction) and its text."""
    seen: set[int] = set()
    position = text.find(pattern)
    while position != -1:
        start, line = _line_at(text, position)
        if start not in seen:
            seen.add(start)
            instruction = _INSTRUCTION.match(text, start)
            yield "text", start, instruction["op"] if instruction else None, line
        position = text.find(pattern, position + max(len(pattern), 1))
    source = _SOURCE_PATTERN.match(pattern)
    if source is None:
        return
    frames = _frames_at(text, source["file"], int(source["line"]))
    wanted = [rf"source_line={source['line']}\b"]
    if frames:
        wanted.append(r"stack_frame_id=(?:" + "|".join(map(str, sorted(frames))) + r")\b")
    seen.clear()
    for match in re.finditer("|".join(wanted), text):
        start, line = _line_at(text, match.start())
        if start in seen:
            continue
        seen.add(start)
        if _made_by(line, source, frames):
            instruction = _INSTRUCTION.match(text, start)
            yield "source-line", start, instruction["op"] if instruction else None, line


def _same_file(path: str, wanted: str) -> bool:
    return path == wanted or path.endswith("/" + wanted)


def _made_by(rest: str, source: re.Match[str], frames: frozenset[int]) -> bool:
    metadata = _SOURCE_METADATA.search(rest)
    if (
        metadata is not None
        and metadata["line"] == source["line"]
        and _same_file(metadata["file"], source["file"])
    ):
        return True
    if frames:
        frame = _STACK_FRAME.search(rest)
        return frame is not None and int(frame["id"]) in frames
    return False


def _frames_at(text: str, file: str, line: int) -> frozenset[int]:
    """The stack frames (of the tables newer XLA prints) whose stack passes through
    `file:line`."""
    head_end = text.find("\n%")
    head = text[: head_end if head_end != -1 else len(text)]
    head = head[: head.find("\nENTRY")] if "\nENTRY" in head else head
    start = head.find("\nFileNames\n")
    end = head.find("\n\n", start + 1) if start != -1 else -1
    file_names = head[start:end] if start != -1 and end != -1 else ""
    names = {int(m["id"]): m["name"] for m in _FILE_NAME.finditer(file_names)}
    locations = {
        int(m["id"])
        for m in _FILE_LOCATION.finditer(head)
        if int(m["line"]) == line and _same_file(names.get(int(m["file"]), ""), file)
    }
    if not locations:
        return frozenset()
    rows = {
        int(m["id"]): (int(m["location"]), int(m["parent"]) if m["parent"] else None)
        for m in _STACK_FRAME_ROW.finditer(head)
    }
    found = set()
    for frame in rows:
        seen: set[int] = set()
        current: int | None = frame
        while current is not None and current in rows and current not in seen:
            seen.add(current)
            location, parent = rows[current]
            if location in locations:
                found.add(frame)
                break
            current = parent if parent != current else None
    return frozenset(found)


# --------------------------------------------------------------------------- the table


@dataclasses.dataclass(frozen=True)
class PassName:
    """What a per-pass file's name says."""

    step: int
    """XLA's dump number of the module (`0013`): the order of the files."""
    pipeline: str
    """The pass pipeline (`simplification`, `spmd-partitioning`); for a dump made
    during a pass (copy insertion's steps), the pass itself."""
    after: str
    """The pass after which the module was dumped (`algsimp`, `fusion`;
    `pipeline-start` for the module as a pipeline began; a step's name for a dump
    made during a pass)."""
    before: str | None
    """The pass that runs next (`pipeline-end` at a pipeline's end), when named."""
    file: str
    """The file's name."""


@dataclasses.dataclass(frozen=True)
class KindChange:
    """An op kind whose count a pass changed."""

    kind: str
    """The opcode (`fusion`, `multiply`)."""
    before: int
    """Instructions of that kind before the pass."""
    after: int
    """Instructions of that kind after it."""

    @property
    def delta(self) -> int:
        return self.after - self.before


@dataclasses.dataclass(frozen=True)
class PassStep:
    """One pass of the pipeline: the module after it, against the one before it."""

    index: int
    """Position in the pipeline (0 for the first per-pass file)."""
    name: PassName
    """What the file's name says (step, pipeline, pass, next pass)."""
    ops: int
    """Instructions in the module after the pass."""
    ops_delta: int | None
    """Instructions added (positive) or removed by the pass; None for the first
    file when the module before optimizations is not at hand."""
    changed_kinds: tuple[KindChange, ...]
    """The op kinds whose count the pass changed, largest change first."""
    fusions: int
    """`fusion` instructions after the pass."""

    @property
    def pipeline(self) -> str:
        return self.name.pipeline

    @property
    def pass_name(self) -> str:
        return self.name.after

    @property
    def changed(self) -> bool:
        """Whether the pass changed the op counts (a pass that only rewrote attributes,
        layouts or names did not)."""
        return bool(self.changed_kinds)


@dataclasses.dataclass(frozen=True)
class PassTable:
    """The pipeline in order, with each pass's change."""

    steps: tuple[PassStep, ...]
    """The passes, in pipeline order."""
    input_ops: int | None
    """Instructions of the module given to XLA (before optimizations), when at hand."""
    output_ops: int | None
    """Instructions of the optimized module (after optimizations), when at hand."""
    pipelines: tuple[str, ...]
    """The pipelines, in the order they first ran."""


def _kind_changes(before: Mapping[str, int], after: Mapping[str, int]) -> tuple[KindChange, ...]:
    changes = [
        KindChange(kind, before.get(kind, 0), after.get(kind, 0))
        for kind in sorted(set(before) | set(after))
        if before.get(kind, 0) != after.get(kind, 0)
    ]
    changes.sort(key=lambda change: (-abs(change.delta), change.kind))
    return tuple(changes)


def pass_table(
    names: Sequence[PassName],
    censuses: Sequence[Census],
    input_census: Census | None = None,
    output_census: Census | None = None,
) -> PassTable:
    """Each pass's change: its module's census against the previous one's (the first
    against the module before optimizations, when given)."""
    steps = []
    previous = input_census
    for index, (name, counted) in enumerate(zip(names, censuses, strict=True)):
        steps.append(
            PassStep(
                index=index,
                name=name,
                ops=counted.ops,
                ops_delta=None if previous is None else counted.ops - previous.ops,
                changed_kinds=(
                    () if previous is None else _kind_changes(previous.kinds, counted.kinds)
                ),
                fusions=counted.kinds.get("fusion", 0),
            )
        )
        previous = counted
    return PassTable(
        steps=tuple(steps),
        input_ops=input_census.ops if input_census is not None else None,
        output_ops=output_census.ops if output_census is not None else None,
        pipelines=tuple(dict.fromkeys(name.pipeline for name in names)),
    )


# --------------------------------------------------------------------------- find


@dataclasses.dataclass(frozen=True)
class FindChange:
    """A pass that changed how often the pattern occurs."""

    index: int
    """The pass's position in the pipeline."""
    pass_name: str
    """The pass (`fusion`)."""
    pipeline: str
    """Its pipeline."""
    before: int
    """Occurrences before the pass."""
    after: int
    """Occurrences after it."""
    fused_before: int
    """Of the occurrences before, those inside fused computations."""
    fused_after: int
    """Of the occurrences after, those inside fused computations."""


@dataclasses.dataclass(frozen=True)
class FoundAt:
    """A point of the pipeline: a pass, or the module given to XLA."""

    index: int | None
    """The pass's position; None for the module before optimizations."""
    pass_name: str
    """The pass, or `before_optimizations`."""


@dataclasses.dataclass(frozen=True)
class PassFind:
    """Where in the pipeline a pattern appears, changes and vanishes."""

    pattern: str
    """What was searched for."""
    kind: PatternKind
    """What the pattern was taken to name."""
    counts: tuple[int, ...]
    """Occurrences after each pass, in pipeline order."""
    input_count: int | None
    """Occurrences in the module before optimizations, when at hand."""
    first_seen: FoundAt | None
    """Where it first occurs; None when it never does."""
    gone_at: FoundAt | None
    """The pass after which it no longer occurs, to the end; None when it is still
    there at the end, or never was."""
    changes: tuple[FindChange, ...]
    """The passes that changed its count (or moved it into or out of fusions)."""

    def changed_at(self, index: int) -> FindChange | None:
        """The change the pass at `index` made, if any."""
        return next((change for change in self.changes if change.index == index), None)


def classify_pattern(
    pattern: str, censuses: Sequence[Census], input_census: Census | None = None
) -> PatternKind:
    """What `pattern` names, given every module's census."""
    every = [*censuses, *([input_census] if input_census is not None else [])]
    kinds = frozenset(kind for counted in every for kind in counted.kinds)
    kind = pattern_kind(pattern, kinds)
    if kind == "text" and any(counted.custom_call_matches for counted in every):
        return "custom-call"
    return kind


def find_in_passes(
    pattern: str,
    names: Sequence[PassName],
    censuses: Sequence[Census],
    input_census: Census | None = None,
) -> PassFind:
    """Where `pattern` (counted in each census) appears, changes and is gone."""
    kind = classify_pattern(pattern, censuses, input_census)
    counts = [counted.matches(kind, pattern) for counted in censuses]
    previous = input_census.matches(kind, pattern) if input_census is not None else None
    first_seen = (
        FoundAt(None, "before_optimizations") if previous is not None and previous[0] else None
    )
    gone_at: FoundAt | None = None
    changes = []
    for index, (name, now) in enumerate(zip(names, counts, strict=True)):
        if first_seen is None and now[0]:
            first_seen = FoundAt(index, name.after)
        if previous is not None and previous != now:
            changes.append(
                FindChange(
                    index, name.after, name.pipeline, previous[0], now[0], previous[1], now[1]
                )
            )
            if previous[0] and not now[0]:
                gone_at = FoundAt(index, name.after)
        if now[0]:
            gone_at = None
        previous = now
    return PassFind(
        pattern=pattern,
        kind=kind,
        counts=tuple(count for count, _ in counts),
        input_count=input_census.matches(kind, pattern)[0] if input_census is not None else None,
        first_seen=first_seen,
        gone_at=gone_at,
        changes=tuple(changes),
    )

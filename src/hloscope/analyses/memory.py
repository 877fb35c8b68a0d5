"""What is live at the memory peak, and which line of code put it there.

XLA decides at compile time where every value of a program lives: its buffer
assignment places each value (`HloValue`: an instruction's result, or a part of a
tuple) in an allocation, and its live-range analysis knows, for each value, from
which position of the schedule to which one it is live, and where the peak of
live bytes falls ("Live ranges at T (peak)"). The numbers here are XLA's:

- the peak and the values live at it are the ones XLA's live-range dump lists;
- the profile is, at each position of the schedule, the bytes of the values XLA
  says are live there (its ranges include both ends, as its peak listing counts
  them), each byte of an allocation counted once: XLA places values that are live
  at the same position in the same bytes where one hands over to the other (a
  loop's carry passed from one value to the next, a result written into the
  buffer of the operand that dies there), so counting each value would hold more
  than XLA allocates;
- the totals are `memory_analysis()`'s, where they are known.

Each buffer is named by what made it: its defining HLO instruction, the fusion it
is (or the op), JAX's op name and the source lines of the ops (from the optimized
module's locations, as `analyses.fusions` reads them), the user's own line
(`user_source`: the one of the fusion or op that made it), and, for parameters, the
pytree path of the argument (`analyses.params`). Its kind says whose memory it is:
`parameter` (an argument's buffer), `alias` (a donated argument's buffer, reused
for a result), `output`, `temporary`, `constant` or `thread-local`.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from typing import Literal

from hloscope.analyses.fusions import (
    FusionAnalysis,
    LoweredFrames,
    UserSourceFrom,
    analyze_fusions,
    jax_op_name,
    library_lines,
    op_source,
    op_user_source,
)
from hloscope.ir.model import Module, Op
from hloscope.ir.xla_buffers import Allocation, AssignedValue, BufferAssignment, LiveRanges
from hloscope.stages import CompiledFor

BufferKind = Literal["parameter", "alias", "output", "temporary", "constant", "thread-local"]
"""Whose memory a buffer is (see the module's docstring)."""

PROFILE_POINTS = 64
"""The profile of a longer schedule is bucketed into this many points (each the
largest live bytes in its bucket, so the peak stays visible)."""

TOTAL_KEYS = (
    ("argument_bytes", "argument_size_in_bytes"),
    ("output_bytes", "output_size_in_bytes"),
    ("temp_bytes", "temp_size_in_bytes"),
    ("alias_bytes", "alias_size_in_bytes"),
    ("generated_code_bytes", "generated_code_size_in_bytes"),
    ("host_argument_bytes", "host_argument_size_in_bytes"),
    ("host_output_bytes", "host_output_size_in_bytes"),
    ("host_temp_bytes", "host_temp_size_in_bytes"),
)
"""The totals shown, and the key of `memory_analysis()`'s stats each one reads."""


@dataclasses.dataclass(frozen=True)
class LiveBuffer:
    """One value live at the peak."""

    name: str
    """As XLA's live-range dump names it: `sort.0{}`."""
    bytes: int
    """Its bytes, as XLA lists it at the peak."""
    shape: str
    """With layout: `f32[1024,1024]{1,0}`; empty when the buffer assignment does not
    place it."""
    kind: BufferKind
    """Whose memory it is: `parameter`, `alias`, `output`, `temporary`, ..."""
    instruction: str
    """The HLO instruction that defines it: `sort.0`."""
    opcode: str | None
    """That instruction's op in the model (`sort`, `fusion`); None for parameters."""
    fusion: str | None
    """The fusion it is the result of (`multiply_exponential_fusion`), if any."""
    op_name: str | None
    """JAX's op name of the instruction: `jit(f)/jit(sort)/sort`."""
    sources: tuple[str, ...]
    """`file.py:LINE` of the code that made it (every line of a fusion's ops)."""
    parameter: int | None
    """The entry parameter whose buffer it is."""
    path: str | None
    """That parameter's pytree path in the Python call (`params['w']`)."""
    memory_space: int
    """XLA's memory space (color): 0 the default memory."""
    allocation: int | None
    """The allocation XLA placed it in."""
    live_from: int
    """First position of the schedule where it is live."""
    live_to: int
    """Last position where it is live."""
    op_id: int | None
    """Its defining op's id in the model (for the browser)."""
    user_source: str | None
    """`file.py:LINE` of the innermost frame in the user's own code: that of the
    fusion or op that made it (see `analyses.fusions.Fusion.user_source`)."""
    user_source_from: UserSourceFrom | None
    """`optimized` or `lowered`: which module's frames `user_source` was read from."""
    shares: str | None = None
    """The value live beside it whose bytes XLA placed it in (a result written into
    the buffer of an operand that dies at this position, a loop's carry handed
    over), the one live first: their bytes are counted once. None when it has
    bytes of its own."""

    @property
    def library_sources(self) -> tuple[str, ...]:
        """The `sources` in libraries' files (`analyses.fusions.library_lines`)."""
        return library_lines(self.sources)


@dataclasses.dataclass(frozen=True)
class ProfilePoint:
    """Live bytes at one position of the schedule (the first of its bucket)."""

    index: int
    """Position in the schedule."""
    bytes: int
    """Live bytes there (the largest of its bucket)."""


@dataclasses.dataclass(frozen=True)
class MemorySpace:
    """One memory space (XLA's color) of its own: where its live bytes peak, and what
    is live there. Each space is a memory of its own (a TPU's HBM, and its core's
    on-chip VMEM where XLA's memory-space assignment placed values there): its bytes
    are never added to another's."""

    color: int
    """XLA's memory space number (0 the default memory; `S(n)` in a layout)."""
    bytes: int
    """Live bytes in this space at the position XLA's live-range dump marks as its
    peak (`MemoryAnalysis.peak_index`), each byte of an allocation counted once."""
    buffers: int
    """Buffers of this space live at that position."""
    name: str | None = None
    """XLA's name of the space (its memory-usage report): `default` (HBM on a TPU),
    `vmem` (a TPU core's on-chip memory), `smem`, `host`; None where XLA wrote none."""
    peak_bytes: int = 0
    """The most bytes XLA's live ranges hold in this space at any position, each byte
    of an allocation counted once: the maximum of `profile`."""
    peak_index: int = 0
    """The first position where they hold `peak_bytes`."""
    peak_instruction: str | None = None
    """The instruction at that position."""
    buffers_at_peak: tuple[LiveBuffer, ...] = ()
    """The values of this space live at `peak_index`, largest first."""
    profile: tuple[ProfilePoint, ...] = ()
    """This space's live bytes over the schedule, bucketed as `MemoryAnalysis.profile`."""
    allocated_bytes: int = 0
    """The sum of XLA's allocations in this space (its memory-usage report's `Total
    bytes`)."""

    @property
    def label(self) -> str:
        """`vmem (space 1)`, `space 3`."""
        return f"{self.name} (space {self.color})" if self.name else f"space {self.color}"


@dataclasses.dataclass(frozen=True)
class DonatedBuffer:
    """A donated argument: its buffer is reused for a result."""

    parameter: int
    """The entry parameter (HLO number)."""
    path: str | None
    """The argument's pytree path in the Python call."""
    bytes: int
    """The allocation's size."""
    holds: tuple[str, ...]
    """The values XLA places in it after the argument (`ynn_fusion{}`): the result
    and the temporaries, in the order they become live."""
    result: int | None = None
    """The output XLA aliases the argument's buffer to (the compiled module's
    `input_output_alias`); None where it names none."""
    result_name: str | None = None
    """That output's path in the function's results (JAX's `jax.result_info`:
    `result[0]['w']`); None where unknown (a dump folder)."""
    result_value: str | None = None
    """The value XLA writes there as that output: the one the buffer holds when the
    program ends (`multiply_add_fusion{}`)."""
    temporaries: tuple[str, ...] = ()
    """The other values XLA placed in the buffer once the argument was read, before
    the result: its bytes reused for temporaries."""


@dataclasses.dataclass(frozen=True)
class Busiest:
    """The position of the schedule where XLA's live ranges hold the most bytes, when
    that is more than at the peak XLA reports. XLA picks its peak by a count of its
    own (`HloLiveRange::ComputePeakMemoryMoment`): it counts each value placed in the
    same bytes as another, adds the values that start at a position before it drops
    those that ended at the one before, and sizes a value by its defining
    instruction's whole result, so a value inside a tuple (a loop's carried value)
    counts as the tuple's table of pointers, not its own bytes."""

    index: int
    """Position in the schedule."""
    instruction: str | None
    """The instruction there."""
    bytes: int
    """The bytes live there, each byte of an allocation counted once."""
    buffers: tuple[LiveBuffer, ...]
    """The values live there, largest first."""


@dataclasses.dataclass(frozen=True)
class MemoryAnalysis:
    """The memory of a compiled module: XLA's totals, its peak and what is live there."""

    totals: Mapping[str, int] | None
    """`memory_analysis()`'s totals (`argument_bytes`, `output_bytes`, `temp_bytes`,
    `alias_bytes`, `generated_code_bytes`, and the host's); None when unknown (a dump
    folder)."""
    peak_bytes: int
    """The live bytes at XLA's peak: the values its live-range dump lists there,
    each byte of an allocation counted once (XLA's own total counts two values
    placed in the same bytes twice; a note says so where they differ)."""
    peak_index: int
    """Where in the schedule XLA puts the peak."""
    peak_instruction: str | None
    """The instruction at that position."""
    schedule_length: int
    """Positions in XLA's schedule (its live ranges' `max N`)."""
    buffers_at_peak: tuple[LiveBuffer, ...]
    """Largest first."""
    profile: tuple[ProfilePoint, ...]
    """Live bytes over the schedule, bucketed for long schedules."""
    profile_bucket: int
    """Positions per profile point (1: one point per instruction)."""
    memory_spaces: tuple[MemorySpace, ...]
    """Each memory space apart, when there are several (the first the default
    memory, space 0); empty when there is one. The fields above then are those of
    XLA's live-range dump's peak over all spaces together, each byte counted once."""
    donated: tuple[DonatedBuffer, ...]
    """Donated arguments whose buffers hold results."""
    busiest: Busiest | None
    """Where XLA's live ranges hold more than at the peak XLA reports, if anywhere."""
    allocated_bytes: int
    """The sum of XLA's allocations (every buffer of the program, reuse included)."""
    notes: tuple[str, ...]
    """What is worth knowing about these numbers."""
    reported_peak_bytes: int | None = None
    """`memory_analysis()`'s `peak_memory_in_bytes`, where known: the compiler's own
    figure (on a TPU it counts the on-chip space's bytes too)."""

    @property
    def default_space(self) -> MemorySpace | None:
        """The default memory's picture (space 0: a TPU's HBM) when there are several
        spaces; None when there is one (the fields of the analysis are its own)."""
        return next((s for s in self.memory_spaces if s.color == 0), None)


def analyze_memory(
    assignment: BufferAssignment,
    live: LiveRanges,
    module: Module,
    parameter_paths: Mapping[int, str],
    totals: Mapping[str, int] | None,
    source_root: str | None = None,
    lowered: LoweredFrames | None = None,
    result_names: Mapping[int, str] | None = None,
    space_names: Mapping[int, str] | None = None,
) -> MemoryAnalysis:
    """Name what is live at XLA's peak, and draw the live bytes over the schedule.
    `parameter_paths`: pytree path of each HLO parameter; `totals`: the stats of
    `memory_analysis()` (`argument_size_in_bytes`, ...) where known; `lowered`: the
    lowered module's user frames (`analyses.fusions.lowered_user_frames`), None
    without a lowered module; `result_names`: the path of each result
    (`jax.result_info`) where the module's own results do not say it; `space_names`:
    XLA's name of each memory space (`ir.xla_buffers.NamedSpace`)."""
    values = assignment.values()
    fusions = analyze_fusions(module, source_root=source_root, lowered=lowered)
    makers = _Makers(module, fusions, source_root, lowered)
    ranges = {r.name: r for r in live.ranges}
    notes: list[str] = []

    def live_buffer(name: str, size: int, shares: str | None = None) -> LiveBuffer:
        placed = values.get(name)
        value, allocation = placed if placed else (None, None)
        instruction = name.partition("{")[0]
        live_range = ranges.get(name)
        made = makers.find(instruction)
        parameter = allocation.parameter if allocation is not None else None
        return LiveBuffer(
            name=name,
            bytes=size,
            shape=value.shape if value is not None else "",
            kind=_kind(value, allocation),
            instruction=instruction,
            opcode=made.opcode,
            fusion=made.fusion,
            op_name=made.op_name,
            sources=made.sources,
            parameter=parameter,
            path=parameter_paths.get(parameter) if parameter is not None else None,
            memory_space=value.color if value is not None else 0,
            allocation=allocation.index if allocation is not None else None,
            live_from=live_range.start if live_range else live.peak_index,
            live_to=live_range.end if live_range else live.peak_index,
            op_id=made.op_id,
            user_source=made.user_source,
            user_source_from=made.user_source_from,
            shares=shares,
        )

    # A value XLA lists at its peak has the size it lists (its shape's bytes, where the
    # assignment may pad it), so that the peak is XLA's.
    sizes = {name: v.size for name, (v, _) in values.items()}
    sizes.update({p.name: p.bytes for p in live.peak_values})
    spans = _spans(values, sizes)
    starts = {r.name: r.start for r in live.ranges}

    def live_buffers(names_sizes: Iterable[tuple[str, int]]) -> tuple[list[LiveBuffer], int]:
        """The values, largest first, each naming the value live first whose bytes it
        shares; and their bytes, counted once."""
        listed = list(names_sizes)
        shared = _shared(sorted((n for n, _ in listed), key=lambda n: (starts.get(n, 0), n)), spans)
        found = [live_buffer(n, size, shared.get(n)) for n, size in listed]
        found.sort(key=lambda b: (-b.bytes, b.name))
        return found, _covered(spans[n] for n, _ in listed if n in spans)

    buffers, peak_bytes = live_buffers((p.name, p.bytes) for p in live.peak_values)
    if any(b.shares is not None for b in buffers):
        pairs = ", ".join(
            f"{b.name} in the buffer of {b.shares}" for b in buffers if b.shares is not None
        )
        notes.append(
            f"XLA's live-range dump totals {live.peak_bytes:,} bytes at its peak, counting "
            f"twice the bytes it placed two values in ({pairs}); counted once here: "
            f"{peak_bytes:,} bytes"
        )

    unsized = sorted(r.name for r in live.ranges if r.name not in sizes)
    if unsized:
        notes.append(
            f"{len(unsized)} live value(s) have no size in the buffer assignment and count "
            f"as 0 bytes in the profile: {', '.join(unsized[:5])}"
        )
    length = max(live.schedule_end, len(live.sequence), 1)
    live_bytes = _live_bytes(live, spans, length)
    bucket = max(1, -(-length // PROFILE_POINTS))
    profile = tuple(
        ProfilePoint(index=start, bytes=max(live_bytes[start : start + bucket]))
        for start in range(0, length, bucket)
    )
    highest = max(range(length), key=lambda i: (live_bytes[i], -i))
    busiest = None
    colors = sorted({a.color for a in assignment.allocations})
    several = len(colors) > 1
    reported = (totals or {}).get("peak_memory_in_bytes")
    if live_bytes[highest] > peak_bytes and not several:
        at_highest, _ = live_buffers(
            (r.name, sizes.get(r.name, 0)) for r in live.ranges if r.start <= highest <= r.end
        )
        busiest = Busiest(
            index=highest,
            instruction=live.sequence[highest] if highest < len(live.sequence) else None,
            bytes=live_bytes[highest],
            buffers=tuple(at_highest),
        )
        # XLA gives two peaks: its live-range dump's position, and memory_analysis()'s
        # bytes, which may be this busier position's: said so only where they are equal.
        said = (
            f"the {reported:,} bytes memory_analysis() reports as the peak"
            if reported == live_bytes[highest]
            else f"more ({live_bytes[highest]:,} bytes)"
        )
        notes.append(
            f"by XLA's live ranges, position {highest} holds {said}, where XLA's "
            f"live-range dump marks its peak at {live.peak_index} ({peak_bytes:,} bytes): "
            "the dump picks its peak by a count of its own, which counts each value placed "
            "in the same bytes as another, adds the values that start at a position before "
            "dropping those that ended at the one before, and sizes a value inside a tuple "
            "(a loop's carried value) as the tuple's table of pointers (what is live there "
            "is listed too)"
        )

    memory_spaces: tuple[MemorySpace, ...] = ()
    if several:
        # A space's own picture counts the bytes XLA allocated each value (its
        # listing at the dump's peak gives some values their shape's bytes instead).
        allocated = {name: v.size for name, (v, _) in values.items()}
        assigned = _spans(values, {**sizes, **allocated})
        memory_spaces = tuple(
            _space(
                color,
                (space_names or {}).get(color),
                assignment,
                live,
                {n: sp for n, sp in assigned.items() if _color_of(n, values) == color},
                length,
                bucket,
                live_buffers,
                [b for b in buffers if b.name in spans and _color_of(b.name, values) == color],
                spans,
            )
            for color in colors
        )
        notes.append(_spaces_note(live, peak_bytes, memory_spaces, reported))
    peak_instruction = (
        live.sequence[live.peak_index] if 0 <= live.peak_index < len(live.sequence) else None
    )
    names = dict(result_names or {})
    if module.entry is not None:
        names.update({r.index: r.info for r in module.entry.results if r.info})
    donated = _donated(assignment, live, parameter_paths, module.input_output_aliases, names)
    reused = sum(len(d.temporaries) for d in donated)
    if reused:
        notes.append(
            f"XLA places {reused} {'temporary' if reused == 1 else 'temporaries'} in the "
            "donated buffers too, between the argument and its result (--json: "
            "aliases[].temporaries)"
        )
    return MemoryAnalysis(
        totals=_totals(totals),
        peak_bytes=peak_bytes,
        peak_index=live.peak_index,
        peak_instruction=peak_instruction,
        schedule_length=length,
        buffers_at_peak=tuple(buffers),
        profile=profile,
        profile_bucket=bucket,
        memory_spaces=memory_spaces,
        donated=donated,
        busiest=busiest,
        allocated_bytes=sum(a.size for a in assignment.allocations),
        notes=tuple(notes),
        reported_peak_bytes=reported,
    )


def _color_of(name: str, values: Mapping[str, tuple[AssignedValue, Allocation]]) -> int:
    """A value's memory space: its allocation's (0 for one the assignment does not
    place)."""
    placed = values.get(name)
    return placed[1].color if placed is not None else 0


def _space(
    color: int,
    name: str | None,
    assignment: BufferAssignment,
    live: LiveRanges,
    spans: Mapping[str, _Span],
    length: int,
    bucket: int,
    live_buffers: Callable[[Iterable[tuple[str, int]]], tuple[list[LiveBuffer], int]],
    at_xla_peak: Sequence[LiveBuffer],
    listed: Mapping[str, _Span],
) -> MemorySpace:
    """One space's own picture: its live bytes over the schedule (its values alone,
    `spans`), their maximum, and what is live there; and its share of XLA's dump's
    peak (`at_xla_peak`, sized as `listed`)."""
    live_bytes = _live_bytes(live, spans, length)
    highest = max(range(length), key=lambda i: (live_bytes[i], -i))
    at_highest, _ = live_buffers(
        (r.name, spans[r.name][2] - spans[r.name][1])
        for r in live.ranges
        if r.name in spans and r.start <= highest <= r.end
    )
    return MemorySpace(
        color=color,
        bytes=_covered(listed[b.name] for b in at_xla_peak),
        buffers=len(at_xla_peak),
        name=name,
        peak_bytes=live_bytes[highest],
        peak_index=highest,
        peak_instruction=live.sequence[highest] if highest < len(live.sequence) else None,
        buffers_at_peak=tuple(at_highest),
        profile=tuple(
            ProfilePoint(index=start, bytes=max(live_bytes[start : start + bucket]))
            for start in range(0, length, bucket)
        ),
        allocated_bytes=sum(a.size for a in assignment.allocations if a.color == color),
    )


def _spaces_note(
    live: LiveRanges, peak_bytes: int, spaces: Sequence[MemorySpace], reported: int | None
) -> str:
    """Where XLA's own peaks stand beside each space's: its live-range dump's, over
    all spaces together, and memory_analysis()'s."""
    note = (
        f"each memory space is shown apart, at the position its own live bytes peak; "
        f"XLA's live-range dump marks one peak over all spaces together, at position "
        f"{live.peak_index} ({peak_bytes:,} bytes, each byte once; --json: peak_bytes)"
    )
    default = next((s for s in spaces if s.color == 0), None)
    if reported is not None and default is not None and reported > default.allocated_bytes:
        note += (
            f"; memory_analysis()'s peak_memory_in_bytes, {reported:,}, is more than all "
            f"of {default.label}'s allocations ({default.allocated_bytes:,} bytes): it "
            "counts the other spaces' bytes too"
        )
    return note


def _totals(stats: Mapping[str, int] | None) -> Mapping[str, int] | None:
    if not stats:
        return None
    return {ours: stats[theirs] for ours, theirs in TOTAL_KEYS if theirs in stats}


def _kind(value: AssignedValue | None, allocation: Allocation | None) -> BufferKind:
    if value is None or allocation is None:
        return "temporary"
    if allocation.parameter is not None:
        return "alias" if allocation.maybe_live_out else "parameter"
    if allocation.maybe_live_out or allocation.output_shape is not None:
        return "output"
    if allocation.constant:
        return "constant"
    if allocation.thread_local:
        return "thread-local"
    return "temporary"


def _donated(
    assignment: BufferAssignment,
    live: LiveRanges,
    parameter_paths: Mapping[int, str],
    aliases: Mapping[int, int],
    result_names: Mapping[int, str],
) -> tuple[DonatedBuffer, ...]:
    ranges = {r.name: (r.start, r.end) for r in live.ranges}
    donated = []
    for allocation in assignment.allocations:
        if allocation.parameter is None or not allocation.maybe_live_out:
            continue
        # The parameter's own value is live from the start of the computation: the
        # values XLA places in its buffer after it start later; the result is the one
        # live at the end.
        ordered = sorted(allocation.values, key=lambda v: (ranges.get(v.name, (0, 0)), v.id))
        later = ordered[1:]
        last = max(later, key=lambda v: (ranges.get(v.name, (0, 0))[1], v.id), default=None)
        result = aliases.get(allocation.parameter)
        donated.append(
            DonatedBuffer(
                parameter=allocation.parameter,
                path=parameter_paths.get(allocation.parameter),
                bytes=allocation.size,
                holds=tuple(v.name for v in later),
                result=result,
                result_name=result_names.get(result) if result is not None else None,
                result_value=last.name if last is not None else None,
                temporaries=tuple(v.name for v in later if v is not last),
            )
        )
    return tuple(sorted(donated, key=lambda d: d.parameter))


_Span = tuple[Hashable, int, int]
"""Where a value's bytes are: its allocation (or, for a value the buffer assignment
does not place, its own name), and its first and last-plus-one byte there."""


def _spans(
    values: Mapping[str, tuple[AssignedValue, Allocation]], sizes: Mapping[str, int]
) -> dict[str, _Span]:
    spans: dict[str, _Span] = {}
    for name, size in sizes.items():
        placed = values.get(name)
        if placed is not None:
            value, allocation = placed
            spans[name] = (allocation.index, value.offset, value.offset + size)
        elif size:
            spans[name] = (("unplaced", name), 0, size)
    return spans


def _covered(spans: Iterable[_Span]) -> int:
    """The bytes the spans cover, each byte of an allocation once."""
    by_allocation: dict[Hashable, list[tuple[int, int]]] = {}
    for allocation, start, end in spans:
        by_allocation.setdefault(allocation, []).append((start, end))
    return sum(_union(intervals) for intervals in by_allocation.values())


def _union(intervals: Iterable[tuple[int, int]]) -> int:
    total, reached = 0, None
    for start, end in sorted(intervals):
        if reached is None or start >= reached:
            total += end - start
            reached = end
        elif end > reached:
            total += end - reached
            reached = end
    return total


def _shared(names: Sequence[str], spans: Mapping[str, _Span]) -> dict[str, str]:
    """Of values live together, in the order they became live: each one whose bytes
    overlap those of one before it, and the first such one."""
    seen: list[tuple[str, _Span]] = []
    shared: dict[str, str] = {}
    for name in names:
        span = spans.get(name)
        if span is None:
            continue
        allocation, start, end = span
        for other, (other_allocation, other_start, other_end) in seen:
            if other_allocation == allocation and start < other_end and other_start < end:
                shared[name] = other
                break
        seen.append((name, span))
    return shared


def _live_bytes(live: LiveRanges, spans: Mapping[str, _Span], length: int) -> list[int]:
    """The live bytes at each position: the values live there (from their start to
    their end, both included, as XLA's peak listing counts them), each byte of an
    allocation counted once. A sweep over the schedule that recounts an allocation's
    bytes where a value starts or ends in it."""
    starting: dict[int, list[_Span]] = {}
    ending: dict[int, list[_Span]] = {}
    for value in live.ranges:
        span = spans.get(value.name)
        if span is None:
            continue
        start = min(max(value.start, 0), length - 1)
        end = min(max(value.end, start), length - 1)
        starting.setdefault(start, []).append(span)
        ending.setdefault(end, []).append(span)
    held: dict[Hashable, Counter[tuple[int, int]]] = {}
    covered: dict[Hashable, int] = {}
    total = 0

    def change(spans_changed: list[_Span], step: int) -> None:
        nonlocal total
        touched = set()
        for allocation, start, end in spans_changed:
            intervals = held.setdefault(allocation, Counter())
            intervals[(start, end)] += step
            if not intervals[(start, end)]:
                del intervals[(start, end)]
            touched.add(allocation)
        for allocation in touched:
            now = _union(held[allocation])
            total += now - covered.get(allocation, 0)
            covered[allocation] = now

    out = []
    for position in range(length):
        change(starting.get(position, []), 1)
        out.append(total)
        change(ending.get(position, []), -1)
    return out


def _short(name: str) -> str:
    """An op's name without its dialect (`Module.shown_name`'s: `copy-start` for the
    converted form's `async_start` of one)."""
    return name.partition(".")[2] or name


@dataclasses.dataclass(frozen=True)
class _Made:
    opcode: str | None = None
    fusion: str | None = None
    op_name: str | None = None
    sources: tuple[str, ...] = ()
    op_id: int | None = None
    user_source: str | None = None
    user_source_from: UserSourceFrom | None = None


class _Makers:
    """Which op of the model made an instruction, by its HLO name."""

    def __init__(
        self,
        module: Module,
        fusions: FusionAnalysis,
        root: str | None,
        lowered: LoweredFrames | None,
    ) -> None:
        self._module = module
        self._root = root
        self._lowered = lowered
        self._fusions = {f.name: f for f in fusions.fusions}
        self._unfused = {u.name: u for u in fusions.unfused}
        self._ops: dict[str, Op] = {}
        for op in module.ops:
            # The last op of a name is the one in the running functions: the copies
            # of fused computations the conversion leaves come first.
            if op.hlo_name is not None:
                self._ops[op.hlo_name] = op

    def find(self, instruction: str) -> _Made:
        ops: Sequence[Op] = self._module.ops
        fusion = self._fusions.get(instruction)
        if fusion is not None:
            return _Made(
                opcode="fusion",
                fusion=fusion.name,
                op_name=jax_op_name(ops[fusion.op_id]) or next(iter(fusion.op_names), None),
                sources=fusion.sources,
                op_id=fusion.op_id,
                user_source=fusion.user_source,
                user_source_from=fusion.user_source_from,
            )
        unfused = self._unfused.get(instruction)
        if unfused is not None:
            return _Made(
                opcode=_short(unfused.op),
                op_name=unfused.op_name,
                sources=unfused.sources,
                op_id=unfused.op_id,
                user_source=unfused.user_source,
                user_source_from=unfused.user_source_from,
            )
        op = self._ops.get(instruction)
        if op is None:
            # An instruction the conversion to MLIR folds away (the entry's root tuple):
            # its opcode as XLA names it, as XLA's own form shows the op.
            return _Made(opcode=self._module.hlo_opcodes.get(instruction))
        source = op_source(op, self._root)
        user_source, user_from = op_user_source(op, self._root, self._lowered)
        return _Made(
            opcode=_short(self._module.shown_name(op)),
            op_name=jax_op_name(op),
            sources=(source,) if source else (),
            op_id=op.id,
            user_source=user_source,
            user_source_from=user_from,
        )


@dataclasses.dataclass(frozen=True)
class DeviceFit:
    """Whether the program fits one device's memory on the platform it was compiled for
    (`--for`): "will it fit"."""

    fits: bool | None
    """False when XLA refused it (out of memory) or it needs more than the device has;
    None when the device's memory is not known (a GPU spec without it)."""
    required_bytes: int
    """What one device needs: XLA's memory analysis (arguments + outputs + temporaries
    + generated code − aliased), or, when XLA refused, what its buffer assignment
    allocated before refusing."""
    required_from: str
    """Which of the two: `memory analysis`, `buffer assignment`."""
    device_bytes: int | None
    """One device's memory (the TPU generation's HBM, the GPU spec's memory)."""
    memory_name: str
    """`HBM`, `GPU memory`."""
    device: str
    """The device, as XLA names it: `TPU v5 lite`."""
    refused: str | None
    """XLA's sentence when it refused to compile the program (RESOURCE_EXHAUSTED)."""


def device_fit(
    analysis: MemoryAnalysis, compiled_for: CompiledFor | None, refused: str | None = None
) -> DeviceFit | None:
    """Whether the program of `analysis` fits a device of what it was compiled for;
    None when it was compiled for the local backend (nothing to foresee: it ran here)."""
    if compiled_for is None or compiled_for.spec is None:
        return None
    totals = analysis.totals
    if totals is not None and refused is None:
        required = (
            totals.get("argument_bytes", 0)
            + totals.get("output_bytes", 0)
            + totals.get("temp_bytes", 0)
            + totals.get("generated_code_bytes", 0)
            - totals.get("alias_bytes", 0)
        )
        required_from = "memory analysis"
    else:
        required, required_from = analysis.allocated_bytes, "buffer assignment"
    device_bytes = compiled_for.memory_bytes
    fits: bool | None
    if refused is not None:
        fits = False
    elif device_bytes is None:
        fits = None
    else:
        fits = required <= device_bytes
    return DeviceFit(
        fits=fits,
        required_bytes=required,
        required_from=required_from,
        device_bytes=device_bytes,
        memory_name=compiled_for.memory_name,
        device=compiled_for.device_kind,
        refused=refused,
    )

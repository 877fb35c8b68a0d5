"""XLA's buffer assignment and live ranges, read from the text files it dumps.

With `xla_dump_to`, XLA writes beside the optimized module
(`module_0004.jit_f.cpu_after_optimizations.txt`):

- `...-buffer-assignment.txt`: `BufferAssignment:`, then every allocation
  (`allocation 2: size 1048576, parameter 0, shape |f32[1024,256]| at ShapeIndex {},
  maybe-live-out:`) with the values placed in it (` value: <31 x.1 @0>
  (size=1048576,offset=0): f32[1024,256]{1,0}`); older XLA adds `Total bytes used`
  and a `Used values:` listing;
- `...-live-range.txt` (with `xla_dump_buffer_assignment_analysis`, on by default;
  the XLA of jaxlib 0.8 and 0.9 writes it at the end of the buffer assignment instead,
  after `Used values:`, see `embedded_live_ranges`): `HloLiveRange (max N):`, the
  schedule (`InstructionSequence`), the live range of every value (`BufferLiveRange`,
  `name{index}:start-end`, both ends included), and `Live ranges at T (peak):`
  listing the values live at XLA's peak with their bytes and the running total.

- `...-memory-usage-report.txt`: per memory space, its name and number
  (`Memory Space: vmem (color=1)`), the bytes of its allocations (`Total bytes:
  43947008 (41.91MiB)`), and tables of its largest allocations (read past: the
  buffer assignment lists them whole).

XLA has no Python API for these, so they are read here: strictly. A line that is
none of the forms above is refused with its file and line, never guessed at. Pure
functions of text: the files are found by `sources.dumps`.
"""

from __future__ import annotations

import dataclasses
import re
from typing import NoReturn

from hloscope.errors import HloscopeError

BUFFER_ASSIGNMENT_SUFFIX = "-buffer-assignment.txt"
LIVE_RANGE_SUFFIX = "-live-range.txt"
MEMORY_USAGE_SUFFIX = "-memory-usage-report.txt"
DUMP_FLAGS_HINT = (
    "XLA writes them with --xla_dump_to=DIR (add --xla_dump_buffer_assignment_analysis=true "
    "where it is off), in XLA_FLAGS or in .compile(compiler_options={'xla_dump_to': DIR})"
)
"""Which XLA flags produce the files read here."""


@dataclasses.dataclass(frozen=True)
class AssignedValue:
    """One value XLA placed in an allocation (an `HloValue`)."""

    id: int
    """XLA's value id (`<31 ...>`)."""
    instruction: str
    """The HLO instruction that defines it: `sort.0`, `x.1`."""
    index: str
    """Its shape index in the instruction's result: `{}`, or `{1}` in a tuple."""
    color: int
    """Its memory space (XLA's color: 0 the default memory; the `@N` printed)."""
    size: int
    """Bytes XLA assigned it."""
    offset: int
    """Its offset in the allocation."""
    shape: str
    """Its shape with layout: `f32[1024,256]{1,0}`."""

    @property
    def name(self) -> str:
        """The name the live-range dump gives it: `sort.0{}`, `tuple{1}`."""
        return f"{self.instruction}{self.index}"


@dataclasses.dataclass(frozen=True)
class Allocation:
    """One buffer allocation: a block of memory values share over time."""

    index: int
    """XLA's allocation number."""
    size: int
    """Bytes."""
    color: int
    """Its memory space (0 unless XLA printed `color N`)."""
    parameter: int | None
    """The entry parameter it holds, if any."""
    parameter_index: str | None
    """The shape index within that parameter (`{}`)."""
    output_shape: str | None
    """For the allocation of the entry computation's result: the result's shape."""
    constant: bool
    """Holds a constant."""
    thread_local: bool
    """Holds values of a computation called per element (a reducer, a comparator)."""
    maybe_live_out: bool
    """Holds (part of) the result: it outlives the program."""
    preallocated_temp: bool
    """XLA's block of temporaries, allocated once per run."""
    values: tuple[AssignedValue, ...]
    """The values placed in it, by id."""


@dataclasses.dataclass(frozen=True)
class BufferAssignment:
    """XLA's buffer assignment of one module."""

    allocations: tuple[Allocation, ...]
    """In XLA's order."""
    total_bytes: int | None
    """`Total bytes used`, where XLA printed it."""

    def values(self) -> dict[str, tuple[AssignedValue, Allocation]]:
        """Every value by its live-range name (`sort.0{}`), with its allocation."""
        return {v.name: (v, a) for a in self.allocations for v in a.values}


@dataclasses.dataclass(frozen=True)
class LiveRange:
    """When one value is live: from `start` to `end` in the schedule, both included."""

    name: str
    """`sort.0{}`: the defining instruction and the shape index."""
    start: int
    """First position in the schedule."""
    end: int
    """Last position."""


@dataclasses.dataclass(frozen=True)
class PeakValue:
    """One value XLA lists as live at its peak."""

    name: str
    """`sort.0{}`."""
    bytes: int
    """Its size as XLA lists it."""
    cumulative: int
    """XLA's running total down the list."""


@dataclasses.dataclass(frozen=True)
class LiveRanges:
    """XLA's live ranges of one module's values over its schedule, and its peak."""

    schedule_end: int
    """`max N`: one past the last position of the schedule."""
    sequence: tuple[str, ...]
    """The instructions in schedule order (nested computations flattened in)."""
    ranges: tuple[LiveRange, ...]
    """Every value's live range, in XLA's order."""
    peak_index: int
    """Where in the schedule XLA puts the peak."""
    peak_values: tuple[PeakValue, ...]
    """The values live there, largest first, as XLA lists them."""

    @property
    def peak_bytes(self) -> int:
        """The live bytes at the peak: the last running total XLA prints."""
        return self.peak_values[-1].cumulative if self.peak_values else 0


# --------------------------------------------------------------------------- buffer assignment

_ALLOCATION = re.compile(r"allocation (\d+): (?:0x[0-9a-fA-F]+, )?size (\d+)(.*):")
_VALUE = re.compile(
    r" value: <(\d+) ([^\s<>{}@]+)(\{[\d,]*\})?(?: \(phi\))?(?: @(\d+))?> "
    r"\(size=(\d+),offset=(\d+)\): (\S.*)"
)
_SHAPE_INDEX = r"\{[\d,]*\}"
_FLAGS = re.compile(
    r", color (?P<color>\d+)"
    r"|, parameter (?P<parameter>\d+)(?:, shape \|[^|]*\|)?"
    rf"(?: at ShapeIndex (?P<pindex>{_SHAPE_INDEX}))?"
    r"|, output shape is \|(?P<output>[^|]*)\|"
    r"|, (?P<flag>constant|thread-local|maybe-live-out|preallocated-temp)"
)
_TOTAL = re.compile(r"Total bytes used: (\d+)(?: \(.*\))?")


def parse_buffer_assignment(text: str, where: str) -> BufferAssignment:
    """Read a `-buffer-assignment.txt` file; `where` names it in errors."""
    lines = text.splitlines()
    number = _skip_blank(lines, 0)
    if number >= len(lines) or lines[number].rstrip() != "BufferAssignment:":
        _refuse(where, number, lines, "expected 'BufferAssignment:' (an XLA buffer assignment)")
    number += 1
    allocations: list[Allocation] = []
    current: dict[str, object] | None = None
    values: list[AssignedValue] = []
    total: int | None = None

    def close() -> None:
        if current is not None:
            allocations.append(Allocation(**current, values=tuple(values)))  # type: ignore[arg-type]

    while number < len(lines):
        line = lines[number].rstrip()
        if _LIVE_HEADER.fullmatch(line):
            break  # the live ranges older XLA appends (`embedded_live_ranges`)
        header = _ALLOCATION.fullmatch(line)
        value = _VALUE.fullmatch(line)
        if header:
            close()
            current = _allocation_fields(header, where, number)
            values = []
        elif value:
            if current is None:
                _refuse(where, number, lines, "a value before any allocation")
            values.append(
                AssignedValue(
                    id=int(value[1]),
                    instruction=value[2],
                    index=value[3] or "{}",
                    color=int(value[4] or 0),
                    size=int(value[5]),
                    offset=int(value[6]),
                    shape=value[7].strip(),
                )
            )
        elif not line.strip():
            pass
        elif _TOTAL.fullmatch(line):
            total = int(_TOTAL.fullmatch(line)[1])  # type: ignore[index]
        elif line == "Used values:":
            # Older XLA lists every value's positions and uses after the allocations:
            # nothing the allocations do not already say.
            number = _skip_used_values(lines, number + 1, where)
            continue
        else:
            _refuse(where, number, lines, "not an allocation or value line XLA writes")
        number += 1
    close()
    if not allocations:
        raise HloscopeError("the buffer assignment lists no allocations", where=where)
    return BufferAssignment(allocations=tuple(allocations), total_bytes=total)


def _allocation_fields(header: re.Match[str], where: str, number: int) -> dict[str, object]:
    fields: dict[str, object] = {
        "index": int(header[1]),
        "size": int(header[2]),
        "color": 0,
        "parameter": None,
        "parameter_index": None,
        "output_shape": None,
        "constant": False,
        "thread_local": False,
        "maybe_live_out": False,
        "preallocated_temp": False,
    }
    rest = header[3]
    position = 0
    while position < len(rest):
        flag = _FLAGS.match(rest, position)
        if flag is None:
            raise HloscopeError(
                f"unknown allocation attribute '{_clip(rest[position:])}'",
                where=f"{where}:{number + 1}",
            )
        if flag["color"] is not None:
            fields["color"] = int(flag["color"])
        elif flag["parameter"] is not None:
            fields["parameter"] = int(flag["parameter"])
            fields["parameter_index"] = flag["pindex"] or "{}"
        elif flag["output"] is not None:
            fields["output_shape"] = flag["output"]
        else:
            fields[flag["flag"].replace("-", "_")] = True
        position = flag.end()
    return fields


_USED_VALUE_LINE = re.compile(
    r"<\d+ [^>]+>|  ?(?:positions|uses):|   ?\S.*|  ?from instruction: .*"
)


def _skip_used_values(lines: list[str], number: int, where: str) -> int:
    while number < len(lines):
        line = lines[number].rstrip()
        if line and not _USED_VALUE_LINE.fullmatch(line):
            if line.startswith("HloLiveRange"):
                return number
            _refuse(where, number, lines, "not a line of XLA's 'Used values' listing")
        number += 1
    return number


# --------------------------------------------------------------------------- live ranges

_LIVE_HEADER = re.compile(r"HloLiveRange \(max (\d+)\):")
_SEQUENCE = re.compile(r" {4}(\d+):(\S+)")
_RANGE = re.compile(r" {4}([^\s{}:]+)(\{[\d,]*\}):(-?\d+)-(-?\d+)")
_PEAK_HEADER = re.compile(r" {2}Live ranges at (\d+) \(peak\):")
_PEAK_VALUE = re.compile(r" {4}([^\s{}:]+)(\{[\d,]*\}): (\d+) bytes \(cumulative: (\d+) bytes\)")
_STACK_HEADER = re.compile(r" {2}Stack trace breakdown for peak usage: .*")


def embedded_live_ranges(buffer_assignment: str) -> str | None:
    """The live ranges that the XLA of jaxlib 0.8 and 0.9 writes at the end of the
    buffer assignment (from `HloLiveRange (max N):` on), for `parse_live_ranges`, with
    the lines before them blank so that errors name the line of the file; None where
    the file holds none."""
    lines = buffer_assignment.splitlines()
    for number, line in enumerate(lines):
        if _LIVE_HEADER.fullmatch(line.rstrip()):
            return "\n" * number + "\n".join(lines[number:])
    return None


def parse_live_ranges(text: str, where: str) -> LiveRanges:
    """Read a `-live-range.txt` file; `where` names it in errors."""
    lines = text.splitlines()
    number = _skip_blank(lines, 0)
    if number < len(lines) and lines[number].startswith("HloLiveRange not available"):
        raise HloscopeError(
            f"XLA wrote no live ranges here ({_clip(lines[number])})", where=f"{where}:{number + 1}"
        )
    header = _LIVE_HEADER.fullmatch(lines[number].rstrip()) if number < len(lines) else None
    if header is None:
        _refuse(where, number, lines, "expected 'HloLiveRange (max N):' (an XLA live-range dump)")
    schedule_end = int(header[1])
    number += 1
    section: str | None = None
    sequence: list[str] = []
    ranges: list[LiveRange] = []
    peak_index: int | None = None
    peak: list[PeakValue] = []
    while number < len(lines):
        line = lines[number].rstrip()
        if line == "  InstructionSequence:" and section is None:
            section = "sequence"
        elif line == "  BufferLiveRange:" and section == "sequence":
            section = "ranges"
        elif (match := _PEAK_HEADER.fullmatch(line)) and section == "ranges":
            section, peak_index = "peak", int(match[1])
        elif _STACK_HEADER.fullmatch(line) and section == "peak":
            # A tree of JAX op names by their share of the peak: the same bytes as
            # the listing above, grouped; nothing more to read.
            break
        elif section == "sequence" and (match := _SEQUENCE.fullmatch(line)):
            if int(match[1]) != len(sequence):
                _refuse(where, number, lines, f"schedule position {match[1]} out of order")
            sequence.append(match[2])
        elif section == "ranges" and (match := _RANGE.fullmatch(line)):
            ranges.append(LiveRange(match[1] + match[2], int(match[3]), int(match[4])))
        elif section == "peak" and (match := _PEAK_VALUE.fullmatch(line)):
            peak.append(PeakValue(match[1] + match[2], int(match[3]), int(match[4])))
        elif line.strip():
            _refuse(where, number, lines, "not a line XLA's live-range dump holds here")
        number += 1
    if peak_index is None:
        raise HloscopeError(
            "the live-range dump has no 'Live ranges at N (peak)' section (XLA of this "
            "version does not report its peak)",
            where=where,
        )
    running = 0
    for value in peak:
        running += value.bytes
        if running != value.cumulative:
            raise HloscopeError(
                f"the running total at {value.name} is {value.cumulative} bytes and its "
                f"values add up to {running}",
                where=where,
            )
    return LiveRanges(
        schedule_end=schedule_end,
        sequence=tuple(sequence),
        ranges=tuple(ranges),
        peak_index=peak_index,
        peak_values=tuple(peak),
    )


# --------------------------------------------------------------------------- memory spaces


@dataclasses.dataclass(frozen=True)
class NamedSpace:
    """One memory space as XLA's memory-usage report names it."""

    color: int
    """XLA's number of the space (its color; the `S(n)` of a layout)."""
    name: str
    """XLA's name of it: `default` (the device's main memory: HBM on a TPU), `vmem`
    (the TPU core's on-chip vector memory), `smem`, `host`, `color_6`."""
    total_bytes: int
    """`Total bytes`: the sum of the space's allocations."""


_SPACE_HEADER = re.compile(r"Memory Space: (\S+) \(color=(\d+)\)")
_SPACE_TOTAL = re.compile(r"Total bytes: (\d+)(?: \(.*\))?")
_USAGE_LINE = re.compile(
    r" +cumulative_size; +size; +offset; +used_by_n_values; +shapes_list"
    r"| *-+"
    r"| *\S+\( *\d+%\); +\S+; +\d+; +\d+; .*"
    r"| +The rest \d+ values are less than .*"
)


_OLDER_TOTAL = re.compile(r"Total bytes used: (\d+)(?: \(.*\))?")
"""The first line of the report of an older XLA (jaxlib 0.8), which lists every
allocation together and names no memory space."""


def parse_memory_usage_report(text: str, where: str) -> tuple[NamedSpace, ...]:
    """Read a `-memory-usage-report.txt` file's spaces; `where` names it in errors. An
    older XLA's report names none: no names, as without the file."""
    lines = text.splitlines()
    first = next((line.strip() for line in lines if line.strip()), "")
    if _OLDER_TOTAL.fullmatch(first):
        return ()
    spaces: list[NamedSpace] = []
    header: re.Match[str] | None = None
    for number, raw in enumerate(lines):
        line = raw.rstrip()
        if (match := _SPACE_HEADER.fullmatch(line)) is not None:
            if header is not None:
                _refuse(where, number, lines, "a memory space without its 'Total bytes'")
            header = match
        elif (total := _SPACE_TOTAL.fullmatch(line)) is not None and header is not None:
            spaces.append(NamedSpace(int(header[2]), header[1], int(total[1])))
            header = None
        elif line.strip() and not (spaces and header is None and _USAGE_LINE.fullmatch(line)):
            _refuse(where, number, lines, "not a line of XLA's memory-usage report")
    if header is not None or not spaces:
        raise HloscopeError("the memory-usage report names no memory space", where=where)
    return tuple(spaces)


# --------------------------------------------------------------------------- helpers


def _skip_blank(lines: list[str], number: int) -> int:
    while number < len(lines) and not lines[number].strip():
        number += 1
    return number


def _clip(text: str, limit: int = 80) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _refuse(where: str, number: int, lines: list[str], why: str) -> NoReturn:
    found = _clip(lines[number]) if number < len(lines) else "the end of the file"
    raise HloscopeError(f"{why}; found '{found}'", where=f"{where}:{number + 1}")

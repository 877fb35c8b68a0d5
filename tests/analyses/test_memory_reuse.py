"""Buffers XLA reuses, against XLA's own answers: the live bytes count each slice of an
allocation once (a loop's carry handed from one value to the next, a value written
into the buffer of the operand that dies there), so no position holds more than
`memory_analysis()` says the program can ever have; the peak is the one XLA's
live-range dump reports.

XLA's buffer assignment and live ranges are read here on their own (the dump files
of a compilation JAX runs here), with a few patterns of their printed lines."""

from __future__ import annotations

import importlib.util
import re
from collections import defaultdict
from pathlib import Path

import pytest

from hloscope import reports
from hloscope.sources.loader import LoadOptions
from hloscope.sources.memory import memory_dumps

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "memory_targets.py"
TARGETS = "tests/fixtures/memory_targets.py"
PROGRAMS = {
    # The gradient of a rematerialized scan: the backward loop's carry
    # (`wide.wide.arg_tuple.2{2}`, then `.3{2}`) is one slice of one allocation.
    "scan": ("scan_step", "scan_args"),
    # A Flax NNX train step, model and optimizer donated.
    "nnx": ("nnx_train_step", "nnx_args"),
    # The same step without donation: XLA's peak listing counts a value and the one
    # written into its buffer at the same position both.
    "nnx_kept": ("nnx_train_step_kept", "nnx_args"),
}


def _fixture():
    spec = importlib.util.spec_from_file_location("memory_targets_reuse", FIXTURE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Xla:
    """One program compiled by JAX here with XLA dumping: its `memory_analysis()`,
    HLO text, and buffer assignment and live ranges as read here."""

    def __init__(self, name: str, folder: Path):
        function, args = PROGRAMS[name]
        fixture = _fixture()
        compiled = (
            getattr(fixture, function)
            .lower(*getattr(fixture, args)())
            .compile(compiler_options={"xla_dump_to": str(folder)})
        )
        self.stats = compiled.memory_analysis()
        self.hlo = compiled.as_text()
        [assignment] = folder.glob("*after_optimizations-buffer-assignment.txt")
        [live] = folder.glob("*after_optimizations-live-range.txt")
        # name -> (allocation, offset, size)
        self.slices: dict[str, tuple[int, int, int]] = {}
        self.allocations: dict[int, list[str]] = defaultdict(list)
        allocation = -1
        for line in assignment.read_text().splitlines():
            if header := re.match(r"allocation (\d+): ", line):
                allocation = int(header[1])
            elif value := re.match(
                r" value: <\d+ (\S+?)(\{[\d,]*\})?(?: \(phi\))?(?: @\d+)?> "
                r"\(size=(\d+),offset=(\d+)\)",
                line,
            ):
                name = value[1] + (value[2] or "{}")
                self.slices[name] = (allocation, int(value[4]), int(value[3]))
                self.allocations[allocation].append(name)
        text = live.read_text()
        self.ranges = {
            m[1]: (int(m[2]), int(m[3]))
            for m in re.finditer(r"^ {4}(\S+\{[\d,]*\}):(-?\d+)-(-?\d+)$", text, re.M)
        }
        self.length = int(re.search(r"HloLiveRange \(max (\d+)\)", text)[1])
        self.peak_index = int(re.search(r"Live ranges at (\d+) \(peak\)", text)[1])
        self.peak_listed = [
            (m[1], int(m[2]))
            for m in re.finditer(r"^ {4}(\S+\{[\d,]*\}): (\d+) bytes \(cumulative", text, re.M)
        ]

    @property
    def bound(self) -> int:
        """The most that can ever be live: arguments + outputs + temporaries − aliased."""
        s = self.stats
        return (
            s.argument_size_in_bytes
            + s.output_size_in_bytes
            + s.temp_size_in_bytes
            - s.alias_size_in_bytes
        )

    def bytes_of(self, names) -> int:
        """The bytes of values counted once per byte of each allocation they occupy."""
        spans: dict[int, list[tuple[int, int]]] = defaultdict(list)
        for name in names:
            allocation, offset, size = self.slices[name]
            spans[allocation].append((offset, offset + size))
        total = 0
        for intervals in spans.values():
            end = 0
            for start, stop in sorted(intervals):
                total += max(stop - max(start, end), 0)
                end = max(end, stop)
        return total

    def live_at(self, position: int) -> list[str]:
        return [n for n, (a, b) in self.ranges.items() if a <= position <= b and n in self.slices]


@pytest.fixture(scope="module")
def programs(tmp_path_factory):
    """Each program by name, as XLA compiles it here and as `memory` reports it."""
    made: dict[str, tuple[str, Xla, reports.MemoryReport]] = {}

    def get(name: str):
        if name not in made:
            function, args = PROGRAMS[name]
            report = reports.memory_report(
                memory_dumps(f"{TARGETS}:{function}", LoadOptions(args_factory=f"{TARGETS}:{args}"))
            )
            made[name] = (name, Xla(name, tmp_path_factory.mktemp(name)), report)
        return made[name]

    return get


@pytest.fixture(params=sorted(PROGRAMS))
def program(request, programs):
    name, xla, report = programs(request.param)
    return name, xla, report.analysis


def test_no_position_holds_more_than_xla_allocates(program):
    _, xla, analysis = program
    highest = max(p.bytes for p in analysis.profile)
    assert highest <= xla.bound
    assert analysis.peak_bytes <= xla.bound
    if analysis.busiest is not None:
        assert analysis.busiest.bytes <= xla.bound


def test_each_slice_of_an_allocation_counts_once(program):
    _, xla, analysis = program
    counted = [xla.bytes_of(xla.live_at(i)) for i in range(analysis.schedule_length)]
    bucket = analysis.profile_bucket
    assert [p.bytes for p in analysis.profile] == [
        max(counted[i : i + bucket]) for i in range(0, analysis.schedule_length, bucket)
    ]
    highest = max(counted)
    if highest > analysis.peak_bytes:
        assert analysis.busiest is not None
        assert analysis.busiest.bytes == highest
        assert analysis.busiest.index == counted.index(highest)
    else:
        assert analysis.busiest is None


def test_the_peak_is_xlas(program):
    name, xla, analysis = program
    assert analysis.peak_index == xla.peak_index
    listed = [n for n, _ in xla.peak_listed]
    assert sorted(b.name for b in analysis.buffers_at_peak) == sorted(listed)
    xla_total = sum(size for _, size in xla.peak_listed)
    assert analysis.peak_bytes == xla.bytes_of(listed)
    if name == "nnx_kept":
        # XLA lists a value and the one written into its buffer there, both.
        assert analysis.peak_bytes < xla_total
        assert any(f"{xla_total:,}" in note for note in analysis.notes)
        shared = [b for b in analysis.buffers_at_peak if b.shares is not None]
        assert shared and all(xla.slices[b.name][0] == b.allocation for b in shared)
        for buffer in shared:
            other = xla.slices[buffer.shares]
            mine = xla.slices[buffer.name]
            assert other[0] == mine[0]  # the same allocation
            assert mine[1] < other[1] + other[2] and other[1] < mine[1] + mine[2]
    else:
        assert analysis.peak_bytes == xla_total
        assert all(b.shares is None for b in analysis.buffers_at_peak)


def test_the_scans_loop_carry_is_one_buffer(programs):
    _, xla, _ = programs("scan")
    # Both values of the backward loop's carry, live at the position where one hands
    # over to the other, are the same bytes of the same allocation.
    first, second = "wide.wide.arg_tuple.2{2}", "wide.wide.arg_tuple.3{2}"
    assert xla.slices[first] == xla.slices[second]
    handover = xla.ranges[second][0]
    assert xla.ranges[first][1] == handover
    live = xla.live_at(handover)
    assert {first, second} <= set(live)
    counted = xla.bytes_of(live)
    per_value = sum(xla.slices[n][2] for n in live)
    assert per_value > xla.bound >= counted  # counted per value, it held more than XLA can


def xla_peak_search(xla: Xla) -> int:
    """XLA's own choice of its peak (`HloLiveRange::ComputePeakMemoryMoment`), done
    again here: each value sized by its defining instruction's whole result (a tuple's
    element by the tuple), the values starting at a position added before those that
    ended at the one before are dropped, the first position of the highest count."""
    events = []
    for name, (start, end) in xla.ranges.items():
        instruction = name.partition("{")[0]
        placed = xla.slices.get(instruction + "{}") or xla.slices.get(name)
        size = placed[2] if placed else 0
        events += [(start, False, size), (end + 1, True, size)]
    usage = highest = 0
    chosen = 0
    for time, is_end, size in sorted(events):
        usage += -size if is_end else size
        if usage > highest:
            highest, chosen = usage, time
    return chosen


def test_why_xla_reports_another_peak(program):
    # The note's account of XLA's peak search, done again here, picks XLA's position;
    # the scan's live ranges hold more elsewhere.
    name, xla, analysis = program
    assert xla_peak_search(xla) == xla.peak_index
    if name == "scan":
        assert analysis.busiest is not None and analysis.busiest.index != analysis.peak_index
    if analysis.busiest is not None:
        [note] = [n for n in analysis.notes if "holds more" in n]
        assert "table of pointers" in note and "before dropping" in note


# ---------------------------------------------------------------- donated buffers


def input_output_alias(hlo: str) -> dict[int, int]:
    """Parameter -> output index, from the compiled module's `input_output_alias`
    config (`{3}: (3, {}, may-alias)`), as XLA prints it."""
    header = hlo.splitlines()[0]
    config = re.search(r"input_output_alias=\{(.*?)\}(?:, \w+=|$)", header)
    assert config is not None
    return {
        int(m[2]): int(m[1]) for m in re.finditer(r"\{(\d+)\}: \((\d+), \{\}, [\w-]+\)", config[1])
    }


def root_operands(hlo: str) -> list[str]:
    """The instructions the entry's ROOT tuple returns, in order."""
    entry = hlo[hlo.index("\nENTRY") :]
    root = next(line for line in entry.splitlines() if "ROOT" in line)
    operands = re.sub(r"/\*index=\d+\*/", "", root[root.rindex(" tuple(") + 7 : root.rindex(")")])
    return [o.strip().lstrip("%") for o in operands.split(",")]


def test_a_donated_argument_becomes_the_result_xla_aliases(programs):
    _, xla, report = programs("nnx")
    donated = {d.parameter: d for d in report.analysis.donated}
    aliases = input_output_alias(xla.hlo)
    assert aliases and set(donated) == set(aliases)
    results = root_operands(xla.hlo)
    for parameter, output in aliases.items():
        buffer = donated[parameter]
        assert buffer.result == output
        # The value XLA writes into the donated buffer is the one the ROOT returns.
        assert buffer.result_value == results[output] + "{}"
        assert buffer.result_value not in buffer.temporaries
        assert set(buffer.holds) == {buffer.result_value, *buffer.temporaries}
    # The result is named by its path, as placement names results (one naming): the
    # donated kernel becomes the updated kernel, not JAX's result[0][0].states[0][N].
    kernel = next(d for d in donated.values() if d.path == "model.blocks[0].up.kernel")
    assert kernel.result_name == "model.blocks[0].up.kernel"
    # Every donated argument of the step (model and optimizer state) is updated in place:
    # it becomes the result of the same path.
    for buffer in donated.values():
        assert buffer.result_name == buffer.path
    # Its buffer held activations before the updated kernel: temporaries, not results.
    assert kernel.temporaries


def test_the_donated_line_shows_results_not_temporaries(programs):
    import io

    from rich.console import Console

    from hloscope.render.text.memory import render_memory

    _, _, report = programs("nnx")
    out = io.StringIO()
    render_memory(report, Console(file=out, width=400, color_system=None))
    text = " ".join(out.getvalue().split())
    donated = text[text.index("allocations donated ") : text.index("Live bytes over")]
    buffers = report.analysis.donated
    # Many donated arguments are one line, counted (the table of `params` lists them);
    # each is written over by its result, never named by a temporary.
    assert f"donated {len(buffers)} arguments" in donated
    for buffer in buffers:
        assert buffer.result_name is not None and buffer.result_value not in buffer.temporaries
        for temporary in buffer.temporaries:
            assert f"({temporary.removesuffix('{}')})" not in donated
    count = sum(len(b.temporaries) for b in report.analysis.donated)
    assert f"{count} temporaries" in text

"""Where the run time goes: JAX's profiler events joined to the optimized module.

Each event of the trace is one execution of one XLA instruction, named as in the
compiled module (`hloscope.stages.TraceEvent`). The join is by that name with the
fusions and unfused ops of the module (`analyses.fusions`), which know each
instruction's kind, its source lines and the user's own line (`user_source`).

An instruction's time is its self time: events of one trace line nest (a while
loop's event holds the events of its body's instructions run on that thread), and
what a nested event took is counted once, for the nested instruction. Times are per
run and per device: summed over the measured runs and the devices, then divided by
both (an SPMD program runs every instruction on every device). A line's time is that
of the instructions whose `user_source` it is: a fusion counts for one line, though
it may hold ops of several (its `sources`): that of the matmul or convolution it is
built around, where it holds one (XLA fuses the elementwise ops after a matmul into
its epilogue, and the kernel's time is the matmul's), else the fusion's
`user_source`, as `fusions` shows it.

The run time and the instructions' time are both medians over the measured runs
(one run slowed by the machine's load moves them little): the median of the runs'
wall times, and the median of each run's instructions' time. Each run's instructions
take no more than the run when they run one after another, and then neither do their
medians: `coverage`, the one over the other, is near 1 when the call does little
else, lower when the time goes to dispatch, waiting, or instructions the trace does
not name. The rest of the run (`overhead_seconds`) is the time around the
instructions: Python's dispatch, argument handling, the wait for results. Above 1,
the instructions overlap: XLA's CPU runtime runs independent instructions on its
thread pool, so their self times add up to more than the run, and there is no time
around them to tell. An instruction's (and a line's) time is its mean over the runs,
so that the instructions' times add up: their shares are of that sum.
"""

from __future__ import annotations

import dataclasses
import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence

from hloscope.analyses.fusions import FusionAnalysis, library_lines
from hloscope.runs import ProfiledRuns, ProgramRun, RecordedCompile, TraceEvent


@dataclasses.dataclass(frozen=True)
class RunTimes:
    """Wall time of one run, over the measured runs."""

    median: float
    min: float
    max: float


@dataclasses.dataclass(frozen=True)
class ProfiledOp:
    """One XLA instruction of the compiled module, by its run time."""

    name: str
    """The instruction (`tanh_add_fusion`, `while.6`), as the module and the trace
    name it."""
    kind: str
    """A fusion's kind (`kLoop`, `__ynn_fusion`, the backend's own where it names
    one), else the instruction's opcode (`sort`, `copy`, `while`, `custom_call`);
    `unknown` for a name the module does not hold."""
    calls: int
    """Executions per run (a while body's instructions run once per iteration)."""
    seconds: float
    """Self time per run (and per device)."""
    share: float
    """Of all the instructions' time."""
    user_source: str | None
    """`file.py:LINE` of the user's own code that made it: for a fusion, the line of
    the matmul or convolution it is built around where it holds one
    (`Fusion.hero_source`), else its `user_source`."""
    sources: tuple[str, ...]
    """Every line XLA's metadata gives it, libraries' included."""
    function: str | None
    """The module's function it is in (`main`, a while body's)."""

    @property
    def library_sources(self) -> tuple[str, ...]:
        """The `sources` in libraries' files."""
        return library_lines(self.sources)


@dataclasses.dataclass(frozen=True)
class ProfiledLine:
    """One line of the user's code, by the run time of the instructions it made."""

    source: str | None
    """`file.py:LINE`; None for the instructions no line of the user's made."""
    seconds: float
    share: float
    ops: tuple[str, ...]
    """Its instructions, most time first."""


@dataclasses.dataclass(frozen=True)
class ProfileAnalysis:
    """Where the run time of a compiled program goes."""

    module: str
    runs: int
    """Measured runs."""
    warmup: int
    seconds_per_run: RunTimes
    ops: tuple[ProfiledOp, ...]
    """Most time first."""
    lines: tuple[ProfiledLine, ...]
    """Most time first."""
    op_seconds: float
    """The instructions' time per run (and per device): the median over the runs of
    each run's, as `seconds_per_run.median` is of the runs' wall times."""
    coverage: float | None
    """`op_seconds` over `seconds_per_run.median`; above 1 when the instructions
    overlap (`overlapping`); None when no run took time."""
    overhead_seconds: float
    """Per run, the time around the instructions: `seconds_per_run.median` less
    `op_seconds`; 0 when the instructions overlap."""
    devices: int
    """Devices the instructions ran on."""
    unknown_ops: tuple[str, ...]
    """Names in the trace that the module does not hold."""
    inputs: str
    """`given`, `generated` (seeded random values for shapes), or both."""
    trace_file: str | None

    @property
    def overlapping(self) -> bool:
        """Whether the instructions' self times add up to more than the run: they ran
        in parallel (XLA's CPU runtime's thread pool, several streams)."""
        return self.coverage is not None and self.coverage > 1


@dataclasses.dataclass(frozen=True)
class _Instruction:
    kind: str
    user_source: str | None
    sources: tuple[str, ...]
    function: str | None


def self_times(events: Sequence[TraceEvent]) -> list[float]:
    """Each event's duration less that of the events nested directly in it on the same
    trace line (in the order of `events`)."""
    own = [event.duration_ns for event in events]
    by_line: dict[tuple[int, int], list[int]] = defaultdict(list)
    for index, event in enumerate(events):
        by_line[(event.run, event.thread)].append(index)
    for indices in by_line.values():
        indices.sort(key=lambda i: (events[i].start_ns, -events[i].duration_ns))
        open_: list[int] = []
        for index in indices:
            event = events[index]
            while open_ and _end(events[open_[-1]]) <= event.start_ns:
                open_.pop()
            if open_ and event.start_ns + event.duration_ns <= _end(events[open_[-1]]):
                own[open_[-1]] -= event.duration_ns
            open_.append(index)
    return [max(seconds, 0.0) for seconds in own]


def _end(event: TraceEvent) -> float:
    return event.start_ns + event.duration_ns


def _instructions(fusions: FusionAnalysis) -> Mapping[str, _Instruction]:
    table: dict[str, _Instruction] = {}
    for fusion in fusions.fusions:
        table[fusion.name] = _Instruction(
            fusion.backend_kind or fusion.kind,
            fusion.hero_source,
            fusion.sources,
            fusion.function,
        )
    for op in fusions.unfused:
        opcode = op.op.rpartition(".")[2]
        table[op.name] = _Instruction(opcode, op.user_source, op.sources, op.function)
    return table


def analyze_profile(runs: ProfiledRuns, fusions: FusionAnalysis) -> ProfileAnalysis:
    """Join the profiled runs' events to the optimized module's instructions."""
    table = _instructions(fusions)
    events = runs.events
    measured = len(runs.run_seconds)
    devices = len({event.device for event in events}) or 1
    scale = 1e-9 / (max(measured, 1) * devices)
    seconds: dict[str, float] = defaultdict(float)
    executions: dict[str, int] = defaultdict(int)
    per_run: dict[int, float] = defaultdict(float)
    for event, own in zip(events, self_times(events), strict=True):
        seconds[event.name] += own * scale
        executions[event.name] += 1
        per_run[event.run] += own * 1e-9 / devices
    total = sum(seconds.values())
    unknown = _Instruction("unknown", None, (), None)
    ops = tuple(
        sorted(
            (
                ProfiledOp(
                    name=name,
                    kind=table.get(name, unknown).kind,
                    calls=round(executions[name] / (max(measured, 1) * devices)),
                    seconds=spent,
                    share=spent / total if total > 0 else 0.0,
                    user_source=table.get(name, unknown).user_source,
                    sources=table.get(name, unknown).sources,
                    function=table.get(name, unknown).function,
                )
                for name, spent in seconds.items()
            ),
            key=lambda op: (-op.seconds, op.name),
        )
    )
    times = runs.run_seconds or (0.0,)
    median = statistics.median(times)
    # Each measured run's instructions' time, a run the trace holds nothing of at 0.
    op_median = statistics.median([per_run.get(run, 0.0) for run in range(measured)] or [0.0])
    return ProfileAnalysis(
        module=runs.module,
        runs=measured,
        warmup=runs.warmup,
        seconds_per_run=RunTimes(median=median, min=min(times), max=max(times)),
        ops=ops,
        lines=_lines(ops, total),
        op_seconds=op_median,
        coverage=op_median / median if median > 0 else None,
        overhead_seconds=max(median - op_median, 0.0),
        devices=devices,
        unknown_ops=tuple(sorted(name for name in seconds if name not in table)),
        inputs=runs.inputs,
        trace_file=runs.trace_file,
    )


def _lines(ops: Iterable[ProfiledOp], total: float) -> tuple[ProfiledLine, ...]:
    by_line: dict[str | None, list[ProfiledOp]] = defaultdict(list)
    for op in ops:
        by_line[op.user_source].append(op)
    lines = [
        ProfiledLine(
            source=source,
            seconds=(spent := sum(op.seconds for op in members)),
            share=spent / total if total > 0 else 0.0,
            ops=tuple(op.name for op in members),
        )
        for source, members in by_line.items()
    ]
    return tuple(sorted(lines, key=lambda line: (-line.seconds, line.source or "")))


# --------------------------------------------------------------------------- scripts


@dataclasses.dataclass(frozen=True)
class FunctionProfile:
    """One jitted function of a script: how often it compiled and ran, and the time
    each took."""

    function: str
    """Its qualified name, as `compiles` names it."""
    source: str | None
    """`file.py:LINE` of its definition, where JAX says."""
    calls: int
    """Executions of its compiled programs (an inner jit traced into an outer one
    runs as part of the outer one's program, and is not counted)."""
    compiles: int
    compile_seconds: float
    run_seconds: float
    """Summed over its executions, each from its first instruction's start to its last
    one's end: the time its programs ran, without Python's dispatch."""
    seconds_per_call: float | None
    """`run_seconds` over `calls`; None when it never ran."""


@dataclasses.dataclass(frozen=True)
class EagerProfile:
    """The ops run outside any jit, each compiled and run as a program of its own."""

    calls: int
    compiles: int
    compile_seconds: float
    seconds: float
    """Their programs' run time, as `FunctionProfile.run_seconds`."""


@dataclasses.dataclass(frozen=True)
class ScriptProfile:
    """Every jitted function a script ran, by run time, and its eager ops."""

    functions: tuple[FunctionProfile, ...]
    """In the order they first compiled."""
    eager: EagerProfile
    wall_seconds: float
    """The script's whole run."""
    run_seconds: float
    """Every program's run time."""
    unmatched: tuple[str, ...]
    """Modules that ran with no compilation recorded for them (compiled before the
    recording began, or sharing the name of a function's module)."""


def analyze_script_profile(
    compiles: Sequence[RecordedCompile], programs: Sequence[ProgramRun], wall_seconds: float
) -> ScriptProfile:
    """Join the executions of a script's programs to the compilations that made them,
    by module name (`jit_step`)."""
    runs_of: dict[str, list[float]] = defaultdict(list)
    for run in programs:
        runs_of[run.module].append((run.end_ns - run.start_ns) * 1e-9)
    groups: dict[tuple[str, str | None], list[RecordedCompile]] = defaultdict(list)
    eager = [c for c in compiles if c.eager]
    for compile_ in compiles:
        if not compile_.eager:
            groups[(compile_.function, compile_.source)].append(compile_)
    functions = []
    for (function, source), made in groups.items():
        times = _run_times(made, runs_of)
        functions.append(
            FunctionProfile(
                function=function,
                source=source,
                calls=len(times),
                compiles=len(made),
                compile_seconds=sum(c.compile_seconds or 0.0 for c in made),
                run_seconds=sum(times),
                seconds_per_call=sum(times) / len(times) if times else None,
            )
        )
    eager_times = _run_times(eager, runs_of)
    known = {c.module_name for c in compiles}
    return ScriptProfile(
        functions=tuple(functions),
        eager=EagerProfile(
            calls=len(eager_times),
            compiles=len(eager),
            compile_seconds=sum(c.compile_seconds or 0.0 for c in eager),
            seconds=sum(eager_times),
        ),
        wall_seconds=wall_seconds,
        run_seconds=sum(sum(times) for times in runs_of.values()),
        unmatched=tuple(sorted(set(runs_of) - known)),
    )


def _run_times(made: Sequence[RecordedCompile], runs_of: Mapping[str, list[float]]) -> list[float]:
    names = {c.module_name for c in made if c.module_name is not None}
    return [seconds for name in sorted(names) for seconds in runs_of.get(name, ())]

"""The facts `hloscope check` guards, measured on one compiled program.

Every fact is read from the modules and from XLA's own answers (its memory and cost
analyses, its buffer assignment), never estimated: op counts by kind of the lowered
and the optimized module, fusions by kind, collectives and copies (count, bytes, how
many sit in loops), host transfers and memory kinds, parameters (used, unused,
pruned, donated, and the result each donated buffer becomes), memory, cost and
compile time. Fact names are dotted (`memory.temp_bytes`,
`collectives.all-gather.count`); docs/commands/check.md lists them.

Beside the numbers, a measurement keeps what explains a change, compactly: for the
facts that count ops, how many come from each line of the user's code (`sites`), and
the buffers live at the memory peak. Line numbers never enter a fact, so moving code
around or renaming a variable changes no fact.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from types import MappingProxyType

from hloscope.analyses.estimate import EstimateAnalysis
from hloscope.analyses.fusions import FusionAnalysis, LoweredFrames, op_user_source
from hloscope.analyses.memory import MemoryAnalysis
from hloscope.analyses.params import ParameterUsage
from hloscope.analyses.placement import Placement
from hloscope.analyses.placement.collectives import program_collectives
from hloscope.analyses.placement.loops import RunsPerCall
from hloscope.analyses.profile import ProfileAnalysis
from hloscope.analyses.remat import RematAnalysis
from hloscope.analyses.structure import Structure, holding_function
from hloscope.ir.model import Module, Op

FactValue = int | float

UNKNOWN_SITE = "(no source line)"
"""The site of ops whose metadata names no line of the user's code."""


def line_site(site: str) -> str:
    """`site` where it is a line (`file.py:LINE`), else `UNKNOWN_SITE`: baselines
    recorded before sites were only lines hold JAX's op names too."""
    file, _, line = site.rpartition(":")
    return site if file and line.isdigit() else UNKNOWN_SITE


PEAK_BUFFERS_KEPT = 24
"""Buffers at the memory peak a measurement keeps (the largest): enough to say which
grew, few enough for a file meant to be committed."""

# XLA's memory analysis, by the name each number has as a fact.
_MEMORY_TOTALS = (
    ("argument_size_in_bytes", "memory.argument_bytes"),
    ("output_size_in_bytes", "memory.output_bytes"),
    ("alias_size_in_bytes", "memory.alias_bytes"),
    ("temp_size_in_bytes", "memory.temp_bytes"),
    ("generated_code_size_in_bytes", "memory.generated_code_bytes"),
    ("host_argument_size_in_bytes", "memory.host_argument_bytes"),
    ("host_output_size_in_bytes", "memory.host_output_bytes"),
    ("host_temp_size_in_bytes", "memory.host_temp_bytes"),
    ("host_alias_size_in_bytes", "memory.host_alias_bytes"),
)
_COST = (
    ("flops", "cost.flops"),
    ("bytes_accessed", "cost.bytes_accessed"),
    ("transcendentals", "cost.transcendentals"),
)


@dataclasses.dataclass(frozen=True)
class PeakBuffer:
    """A buffer live at the memory peak, as a measurement keeps it."""

    bytes: int
    shape: str
    kind: str
    """`parameter`, `output`, `temporary`, ... (XLA's buffer assignment)."""
    source: str | None
    """`file.py:LINE` of the user's code that made it (`user_source`)."""
    op_name: str | None
    """JAX's op name (`jit(step)/dot_general`), where the metadata holds one."""

    @property
    def site(self) -> str:
        """What groups it with the buffers of the same code in another measurement:
        its line, never JAX's op name (not a line: `UNKNOWN_SITE`)."""
        return self.source or UNKNOWN_SITE


@dataclasses.dataclass(frozen=True)
class ArgumentState:
    """How the program takes one argument leaf: what a change of the call moves (a
    sharding, a donation), kept to name it as the cause of the facts it moves."""

    path: str
    """Its pytree path (`params['w1']`)."""
    sharding: str | None
    """As `params` reads it (`P('data', 'model') over mesh(data=2, model=4)`)."""
    donated: bool
    source: str | None
    """`file.py:LINE` of the user's code that built its sharding (the `--args`
    factory's `jax.device_put`); None where unknown."""


@dataclasses.dataclass(frozen=True)
class Measurement:
    """The facts of one compiled program, and what explains them."""

    facts: Mapping[str, FactValue]
    """Each fact's value, by dotted name, sorted by name."""
    sites: Mapping[str, Mapping[str, int]]
    """For the facts that count ops: how many come from each site (the user's
    `file.py:LINE`, else `UNKNOWN_SITE`)."""
    peak_buffers: tuple[PeakBuffer, ...]
    """The largest buffers live at the memory peak, largest first (empty without a
    buffer assignment)."""
    arguments: tuple[ArgumentState, ...] = ()
    """The program's argument leaves, in order (empty for a dump, and in a baseline
    recorded before they were kept)."""


@dataclasses.dataclass(frozen=True)
class Compiled:
    """What one compiled program gives the measurement."""

    optimized: Module
    structure: Structure
    """Of the optimized module."""
    fusions: FusionAnalysis
    placement: Placement
    """Of the optimized module: collectives, transfers, memory kinds."""
    params: ParameterUsage
    """Of the optimized module, with the lowering's paths: XLA's aliases."""
    memory: MemoryAnalysis | None
    """XLA's buffer assignment at the peak; None where none was read."""
    memory_totals: Mapping[str, int] | None
    """XLA's memory analysis of the executable."""
    cost: Mapping[str, float] | None
    """XLA's cost analysis of the optimized module."""
    compile_seconds: float | None
    lowered: Module | None
    """The module JAX handed XLA; None for a dump read after optimization."""
    lowered_structure: Structure | None
    lowered_frames: LoweredFrames | None
    source_root: str | None
    """Paths under it are shown relative to it (the working directory)."""
    remat: RematAnalysis | None = None
    """Where the target is a gradient: the residuals of its loss (`hloscope remat`)."""


def measure(compiled: Compiled) -> Measurement:
    """The facts of `compiled`."""
    facts: dict[str, FactValue] = {}
    sites: dict[str, Counter[str]] = {}
    root, frames = compiled.source_root, compiled.lowered_frames
    fusions = compiled.fusions
    # The optimized module's fusions and unfused ops are at the line `fusions` gives
    # them (read from the ops inside too), so that both reports name the same line.
    optimized_lines = {f.op_id: f.user_source for f in fusions.fusions}
    optimized_lines.update((u.op_id, u.user_source) for u in fusions.unfused)

    def site(op: Op, lines: Mapping[int, str | None] = optimized_lines) -> str:
        if op.id in lines:
            return lines[op.id] or UNKNOWN_SITE
        source, _ = op_user_source(op, root, frames)
        return source or UNKNOWN_SITE

    for stage, module, structure in (
        ("lowered", compiled.lowered, compiled.lowered_structure),
        ("optimized", compiled.optimized, compiled.structure),
    ):
        if module is None or structure is None:
            continue
        facts[f"ops.{stage}.total"] = structure.total_ops
        counted = set(structure.op_counts)
        for name, count in structure.op_counts.items():
            facts[f"ops.{stage}.{name}"] = count
        # The functions whose ops count: the reachable ones, and in XLA's own form the
        # computations their instructions hold (`structure.holding_function`).
        roots = {f.name for f in structure.functions if f.reachable}
        reachable = {
            f.name for f in structure.functions if holding_function(module, f.name) in roots
        }
        lines = optimized_lines if stage == "optimized" else {}
        for op in module.ops:
            if op.name in counted and op.function in reachable:
                sites.setdefault(f"ops.{stage}.{op.name}", Counter())[site(op, lines)] += 1

    facts["fusions.count"] = len(fusions.fusions)
    for kind, count in fusions.by_kind.items():
        facts[f"fusions.{kind}.count"] = count
    for fusion in fusions.fusions:
        where = fusion.user_source or UNKNOWN_SITE
        sites.setdefault(f"fusions.{fusion.kind}.count", Counter())[where] += 1

    module = compiled.optimized
    runs = RunsPerCall(module)
    for collective in compiled.placement.collectives:
        # Across slices: their own facts, the slow traffic compared apart.
        network = "dcn." if collective.across_slices else ""
        prefix = f"collectives.{network}{collective.op.replace('_', '-')}"
        facts[f"{prefix}.count"] = collective.count
        facts[f"{prefix}.in_loops"] = collective.in_loops
        if collective.bytes is not None:
            facts[f"{prefix}.bytes"] = collective.bytes
        if collective.per_call is not None:
            facts[f"{prefix}.per_call"] = collective.per_call
        if collective.bytes_per_call is not None:
            facts[f"{prefix}.bytes_per_call"] = collective.bytes_per_call
    # Each collective's line, as placement counts them (`program_collectives`).
    for running in program_collectives(module, runs):
        network = "dcn." if running.across_slices else ""
        name = f"collectives.{network}{running.kind.replace('_', '-')}.count"
        sites.setdefault(name, Counter())[site(module.ops[running.op_id])] += 1

    copies = [u for u in fusions.unfused if u.category == "copy"]
    facts["copies.count"] = len(copies)
    facts["copies.bytes"] = sum(u.result_bytes or 0 for u in copies)
    facts["copies.in_loops"] = sum(runs.in_loop(module.ops[u.op_id]) for u in copies)
    for copy in copies:
        where = copy.user_source or UNKNOWN_SITE
        sites.setdefault("copies.count", Counter())[where] += 1

    placement = compiled.placement
    facts["transfers.count"] = len(placement.transfers)
    for transfer_kind, count in Counter(t.kind for t in placement.transfers).items():
        facts[f"transfers.{transfer_kind}.count"] = count
    for transfer in placement.transfers:
        where = _first(transfer.sources) or UNKNOWN_SITE
        sites.setdefault(f"transfers.{transfer.kind}.count", Counter())[where] += 1
    for memory_kind, count in Counter(m.memory_kind for m in placement.memory).items():
        facts[f"memory_kinds.{memory_kind}.count"] = count

    facts.update(_parameter_facts(compiled.params))

    totals = compiled.memory_totals or {}
    for key, name in _MEMORY_TOTALS:
        if key in totals and (totals[key] or not key.startswith("host_")):
            facts[name] = int(totals[key])
    peak: tuple[PeakBuffer, ...] = ()
    if compiled.memory is not None:
        facts["memory.peak_bytes"] = compiled.memory.peak_bytes
        peak = tuple(
            PeakBuffer(
                bytes=b.bytes,
                shape=b.shape,
                kind=b.kind,
                source=b.user_source,
                op_name=b.op_name,
            )
            for b in compiled.memory.buffers_at_peak[:PEAK_BUFFERS_KEPT]
        )
    if compiled.remat is not None:
        facts.update(_remat_facts(compiled.remat, sites))
    cost = compiled.cost or {}
    for key, name in _COST:
        if key in cost:
            facts[name] = _number(cost[key])
    if compiled.compile_seconds is not None:
        facts["compile.seconds"] = _seconds(compiled.compile_seconds)

    arguments = tuple(
        ArgumentState(p.path, p.sharding, p.donated, p.sharding_source)
        for p in compiled.params.parameters
    )
    return _measurement(facts, sites, peak, arguments)


def program_facts(compiles: Iterable[tuple[str, float | None]]) -> Measurement:
    """The facts of a program run (a script): how many programs JAX compiled, per
    function, and their compile time together. `compiles` holds each compilation's
    function name and compile seconds, in order."""
    facts: dict[str, FactValue] = {}
    per_function: Counter[str] = Counter()
    seconds = 0.0
    for function, compile_seconds in compiles:
        per_function[function] += 1
        seconds += compile_seconds or 0.0
    facts["programs.count"] = sum(per_function.values())
    for function, count in per_function.items():
        facts[f"programs.{function}.count"] = count
    facts["compile.seconds"] = _seconds(seconds)
    return _measurement(facts, {}, ())


def comparison_facts(rows: Iterable[tuple[str, Mapping[str, FactValue]]]) -> Measurement:
    """A comparison's rows as facts, `compare.<label>.<fact>` (`compare.LLM_MESH=4x4 @
    tpu:v5e:4x4.estimate.seconds`): a configuration that stops fitting or compiling, or
    gets slower or bigger, regresses (`compare --baseline`)."""
    facts = {f"compare.{label}.{name}": value for label, row in rows for name, value in row.items()}
    return _measurement(facts, {}, ())


RUNTIME_SECONDS = "runtime.seconds_per_run"
RUNTIME_SPREAD = "runtime.spread"
"""How far the runs measured with it spread ((max - min) / median): not a fact to
compare but the noise its tolerance is derived from (`tolerance.runtime_tolerance`)."""
RUNTIME_LINES_KEPT = 8
ESTIMATED_SECONDS = "runtime.estimated_seconds"
"""`check --for SPEC --runtime`: the step's time estimated for that platform
(`analyses.estimate`), never measured."""
EXPOSED_SECONDS = "runtime.exposed_communication_seconds"
"""... and the communication nothing in its schedule hides: a sharding change that
exposes a collective moves it."""


def with_runtime(measurement: Measurement, profile: ProfileAnalysis) -> Measurement:
    """A measurement with the run time the profile measured (`check --runtime`): the
    median seconds per run, their spread, and the instructions' time of the user's
    top lines as the sites of the run time, in microseconds (which lines got slower)."""
    times = profile.seconds_per_run
    facts = dict(measurement.facts)
    facts[RUNTIME_SECONDS] = round(times.median, 6)
    facts[RUNTIME_SPREAD] = round((times.max - times.min) / times.median, 2) if times.median else 0
    lines: Counter[str] = Counter()
    for line in profile.lines[:RUNTIME_LINES_KEPT]:
        lines[line.source or UNKNOWN_SITE] += round(line.seconds * 1e6)
    sites = {**{k: Counter(v) for k, v in measurement.sites.items()}, RUNTIME_SECONDS: lines}
    return _measurement(facts, sites, measurement.peak_buffers, measurement.arguments)


def with_estimate(measurement: Measurement, estimate: EstimateAnalysis) -> Measurement:
    """A measurement with a step's estimate for the platform it was compiled for
    (`check --for SPEC --runtime`): the step's seconds and its exposed communication,
    with the user's top lines (microseconds of their kernels' and exposed
    collectives' time) and the exposed collectives' lines as their sites."""
    facts = dict(measurement.facts)
    facts[ESTIMATED_SECONDS] = round(estimate.seconds, 9)
    facts[EXPOSED_SECONDS] = round(estimate.exposed_communication_seconds, 9)
    lines: Counter[str] = Counter()
    for line in estimate.lines[:RUNTIME_LINES_KEPT]:
        lines[line.source or UNKNOWN_SITE] += round(line.seconds * 1e6)
    exposed: Counter[str] = Counter()
    for collective in estimate.collectives:
        if collective.exposed_seconds > 0:
            where = collective.user_source or UNKNOWN_SITE
            exposed[where] += round(collective.exposed_seconds * 1e6)
    sites = {
        **{k: Counter(v) for k, v in measurement.sites.items()},
        ESTIMATED_SECONDS: lines,
        EXPOSED_SECONDS: exposed,
    }
    return _measurement(facts, sites, measurement.peak_buffers, measurement.arguments)


def _measurement(
    facts: Mapping[str, FactValue],
    sites: Mapping[str, Counter[str]],
    peak: tuple[PeakBuffer, ...],
    arguments: tuple[ArgumentState, ...] = (),
) -> Measurement:
    """Facts sorted by name, and each fact's sites most ops first: the order a
    baseline file is written in, so that recording again changes no line needlessly."""
    return Measurement(
        facts=MappingProxyType(dict(sorted(facts.items()))),
        sites=MappingProxyType({name: _sorted(counter) for name, counter in sorted(sites.items())}),
        peak_buffers=peak,
        arguments=arguments,
    )


def _parameter_facts(usage: ParameterUsage) -> dict[str, FactValue]:
    totals = usage.totals
    facts: dict[str, FactValue] = {
        "params.used": totals.used,
        "params.unused": totals.unused,
        "params.pruned": totals.pruned,
        "params.donated": sum(1 for p in usage.parameters if p.donated),
        "params.donated_bytes": totals.bytes_donated,
        "params.bytes_passed": totals.bytes_passed,
        "params.donations_dropped": totals.donations_dropped,
    }
    for parameter in usage.parameters:
        if parameter.donated and parameter.aliases_output is not None:
            facts[f"params.aliases.{parameter.path}"] = parameter.aliases_output
    return facts


def _remat_facts(remat: RematAnalysis, sites: dict[str, Counter[str]]) -> dict[str, FactValue]:
    """What the backward pass keeps (JAX's residuals of the loss a gradient
    differentiates), by the line that made each residual, and what its checkpoint
    regions recompute: a policy that stops matching its names changes them."""
    for residual in remat.residuals:
        sites.setdefault("remat.residuals", Counter())[residual.source or UNKNOWN_SITE] += 1
    for region in remat.regions:
        for op in region.fact.recomputed:
            where = op.source or UNKNOWN_SITE
            sites.setdefault("remat.recomputed_ops", Counter())[where] += op.count
    return {
        "remat.residuals": len(remat.residuals),
        "remat.device_bytes": remat.device_bytes,
        "remat.host_bytes": remat.host_bytes,
        "remat.recomputed_ops": sum(op.count for r in remat.regions for op in r.fact.recomputed),
        "remat.unmatched_names": len(remat.unmatched),
    }


def _first(items: Sequence[str]) -> str | None:
    return items[0] if items else None


def _seconds(value: float) -> float:
    """Compile time to a tenth of a second: finer is noise, and a baseline recorded
    again for an unchanged program then reads the same."""
    return round(value, 1)


def _number(value: float) -> FactValue:
    """A cost as an int where it is one (XLA reports floats)."""
    return int(value) if float(value).is_integer() else round(float(value), 3)


def _sorted(counter: Counter[str]) -> Mapping[str, int]:
    return MappingProxyType(dict(sorted(counter.items(), key=lambda kv: (-kv[1], kv[0]))))

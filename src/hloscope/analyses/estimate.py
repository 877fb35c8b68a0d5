"""Where a step's time would go on a TPU or GPU, estimated without the device
(`profile --for`): never a measurement, each number from the compiler or a cited
figure (`hloscope.hardware_figures`).

- A kernel the TPU's compiler estimated (`estimated_cycles` in its backend config)
  takes those cycles over the chip's clock: basis `compiler`.
- Any other kernel (every GPU kernel, a TPU op without an estimate) takes the larger
  of its flops over the peak for its matmul's type (the vector peak without one) and
  its bytes accessed over the memory bandwidth, both from XLA's own cost analysis of
  the kernel alone (`ir.kernel_costs.kernel_costs`): basis `roofline`. Its bound is
  whichever of the two is larger.
- A collective moves, per device, the bytes of the ring algorithm (the JAX scaling
  book's "Sharded Matrices" chapter; nccl-tests' bus bandwidth): an all-gather
  (n-1)/n of its result, a reduce-scatter (n-1) times its result (its input's
  (n-1)/n), an all-reduce twice an all-gather's, an all-to-all (n-1)/n of its result,
  a permute its result, over the interconnect: a GPU's NVLink, one way; a TPU's ICI
  ring, its time the busiest link's bytes one way (`ring_link_bytes`: an all-gather's
  data split over both ways, an all-to-all's 1/n parts and a permute's pairs each
  sent the shorter way round); between TPU slices (libtpu's
  sends tagged `_xla_megascale_transfer_type`), a ring over the slices on the
  data-centre network, at its bandwidth per chip. Basis `interconnect`, bound
  `network`. The n is its replica groups' size, else for an all-gather or
  reduce-scatter its result's ratio to its operand.
- Overlap from the compiled schedule: an asynchronous collective (a `-start`/`-done`
  pair, or the TPU's async collective start and done fusions) overlaps the kernels
  scheduled between its start and its done in the same computation; the part of its
  time they do not cover is exposed. A synchronous collective is exposed whole.
  Several collectives in flight at once each count the same kernels (an optimistic
  bound).
- Asynchronous copies (`copy-start`/`copy-done`: the TPU's prefetches between memory
  spaces) are not priced: the schedule overlaps them with compute.
- Each kernel and collective runs once per call of its computation, a loop body's
  once per iteration (`RunsPerCall`); with no trip count known it counts once, and
  the report says so.

The step's time is the kernels' time plus the exposed communication. The step's
flops are XLA's cost analysis of each kernel times its runs per step (per device, as
the SPMD module is): XLA's cost analysis of the whole program counts a loop's body
once, whatever its trip count, and is kept beside it (`cost_analysis_flops`); the two
agree on a program without loops, and with loops the kernels' flops per call add up
to it.

Utilization, as PaLM (Chowdhery et al. 2022, appendix B) names it, over the time
times the bf16 peak: HFU (hardware FLOPs utilization) of the flops the step executes,
a `jax.checkpoint` region's recomputed forward included; MFU (model FLOPs
utilization) of the model's flops, what the step computes without recomputing
anything. The model's flops are the user's (`--model-flops`); for a step with no
`jax.checkpoint` region (nothing recomputed), the executed flops; else the executed
flops (`step_flops`) of the same step compiled with every checkpoint saving
everything, where that could be compiled; else they are not known and MFU is None.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Literal

from hloscope.analyses.fusions import FusionAnalysis
from hloscope.analyses.kernels import ControlComputation, Kernel, done_of
from hloscope.analyses.placement.loops import RunsPerCall
from hloscope.hardware_figures import Figures
from hloscope.ir.model import Module

Basis = Literal["compiler", "roofline", "interconnect"]
Bound = Literal["compute", "memory", "network"]
ModelFlopsFrom = Literal["given", "no recomputation", "saving everything"]
"""Where the model's flops come from: the user's `--model-flops`; the executed flops
of a step that recomputes nothing; those of the same step compiled with every
`jax.checkpoint` saving everything (`step_flops` of that program)."""


@dataclasses.dataclass(frozen=True)
class EstimatedOp:
    """One kernel or collective of the compiled module, by its estimated time."""

    name: str
    """The instruction, as XLA names it."""
    kind: str
    """A fusion's kind, else the opcode; a collective's opcode."""
    calls: int
    """Runs per step (a loop body's once per iteration)."""
    seconds: float
    """Estimated time per step (`calls` runs), per device."""
    share: float
    """Of the step's estimated time (compute and exposed communication)."""
    cycles: int | None
    """The TPU compiler's `estimated_cycles` of one run, as it wrote them; None
    where it wrote none."""
    basis: Basis
    bound: Bound
    flops: float | None
    """Per step, from XLA's cost analysis of the kernel; None where it gave none."""
    bytes: float | None
    """Bytes accessed per step (a collective's: moved over the interconnect); None
    where XLA's cost analysis says it does not know (-1)."""
    user_source: str | None
    sources: tuple[str, ...]
    function: str | None
    """The model's function it is in (`main`; a loop body's in XLA's own form)."""


@dataclasses.dataclass(frozen=True)
class EstimatedCollective:
    """One collective and how much of its time the schedule hides."""

    name: str
    op: str
    """`all-gather`, `all-reduce`, ..."""
    bytes: float
    """Moved per device per step by the ring algorithm."""
    result_bytes: int
    """Its result's bytes, per device, one run."""
    group_size: int | None
    calls: int
    seconds: float
    """Per step, over the interconnect."""
    basis: Basis
    exposed_seconds: float
    """Per step, the part no kernel scheduled between its start and done covers."""
    asynchronous: bool
    across_slices: bool
    """Between slices, over the data-centre network (DCN bandwidth per chip)."""
    overlapped_by: tuple[str, ...]
    """The kernels scheduled between its start and its done."""
    user_source: str | None
    sources: tuple[str, ...]
    collective: str = ""
    """XLA's name of the collective instruction (`all-reduce.38`), where `name` is the
    instruction launched for it (the fusion holding it, its `-start`)."""
    in_loop: bool = False
    """It sits in a loop (`calls` counts its iterations)."""

    @property
    def hidden(self) -> bool:
        return self.exposed_seconds <= 0.0


@dataclasses.dataclass(frozen=True)
class EstimatedLine:
    """One line of the user's code, by the estimated time of what it made."""

    source: str | None
    seconds: float
    share: float
    ops: tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class EstimateAnalysis:
    """Where a step's time would go, estimated."""

    seconds: float
    """The step: `compute_seconds` + `exposed_communication_seconds`."""
    compute_seconds: float
    communication_seconds: float
    exposed_communication_seconds: float
    flops: float
    """The step's flops, per device: XLA's cost analysis of each kernel, times its
    runs per step."""
    cost_analysis_flops: float | None
    """XLA's cost analysis of the whole program, where the compiler gives one: it
    counts a loop's body once, not once per iteration, so it is below `flops` for a
    program with loops (equal without)."""
    mfu: float | None
    """Model FLOPs utilization: `model_flops` over the step's time times the bf16
    peak; None where the model's flops are not known (a step with `jax.checkpoint`
    regions, without `--model-flops`)."""
    ops: tuple[EstimatedOp, ...]
    """Kernels and collectives, most time first."""
    lines: tuple[EstimatedLine, ...]
    collectives: tuple[EstimatedCollective, ...]
    """In schedule order."""
    figures: Figures
    unknown_trip_counts: tuple[str, ...]
    """Kernels in loops of no known trip count, counted once."""
    uncosted: tuple[str, ...]
    """Kernels XLA's cost analysis could not read alone: their bytes are their
    operands' and result's, their flops 0."""
    unknown_costs: tuple[str, ...] = ()
    """Kernels whose cost XLA's cost analysis does not know (it says -1): their flops
    and bytes are None, and count nothing."""
    hfu: float | None = None
    """Hardware FLOPs utilization: `flops` (executed, recomputation included) over the
    step's time times the bf16 peak; None for a step of no time."""
    model_flops: float | None = None
    """The step's flops without recomputation, per device; None where not known."""
    model_flops_from: ModelFlopsFrom | None = None


@dataclasses.dataclass(frozen=True)
class _Info:
    kind: str
    user_source: str | None
    sources: tuple[str, ...]


def _info(fusions: FusionAnalysis) -> dict[str, _Info]:
    table: dict[str, _Info] = {}
    for fusion in fusions.fusions:
        table[fusion.name] = _Info(
            fusion.backend_kind or fusion.kind, fusion.hero_source, fusion.sources
        )
    for op in fusions.unfused:
        table[op.name] = _Info(op.op.rpartition(".")[2], op.user_source, op.sources)
    return table


_PEAK_TYPES = {"bf16": "bf16", "f16": "bf16", "f32": "f32", "tf32": "f32"}


def _peak(figures: Figures, matmul_type: str | None) -> float:
    if matmul_type is None:
        key = "vector"
    elif matmul_type.startswith("f8"):
        key = "f8"
    else:
        key = _PEAK_TYPES.get(matmul_type, "bf16")
    return figures.peak_flops_by_type.get(key) or figures.peak_flops


def ring_bytes(op: str, result_bytes: int, operand_bytes: int | None, n: int | None) -> float:
    """Bytes one device moves for a collective by the ring algorithm (module doc)."""
    if n is None and operand_bytes:
        if op == "all-gather":
            n = max(round(result_bytes / operand_bytes), 1)
        elif op == "reduce-scatter" and result_bytes:
            n = max(round(operand_bytes / result_bytes), 1)
    n = n or 1
    if op in ("all-gather", "all-to-all", "ragged-all-to-all"):
        return result_bytes * (n - 1) / n
    if op == "reduce-scatter":
        return float(result_bytes * (n - 1))
    if op == "all-reduce":
        return 2.0 * result_bytes * (n - 1) / n
    return float(result_bytes) if n > 1 or op.startswith("collective") else 0.0


def ring_link_bytes(
    op: str,
    moved: float,
    result_bytes: int,
    n: int | None,
    pairs: Sequence[Sequence[int]] = (),
) -> float:
    """Bytes the busiest ICI link carries one way for a collective over a TPU's ring of
    `n` devices (module doc), of which one device moves `moved` (`ring_bytes`): an
    all-gather, reduce-scatter or all-reduce splits its data over both directions of
    the ring (half each way); an all-to-all sends each device its 1/n of the result
    the shorter way round, a tie split, which loads each link with the result times
    the ring's summed distances over 2n (n/8 of it for an even n: the scaling book's
    AllToAll, V / 4 W_ici of the whole array V over a link's bandwidth both ways); a
    collective-permute sends each source's result to its target the shorter way round
    the ring of the devices its pairs name, the busiest link carrying what its pairs
    route over it (a shift to the next device: each link one way, its whole result);
    anything else (a collective-broadcast) sends all it moves over each link."""
    if op in ("all-to-all", "ragged-all-to-all"):
        size = n or 1
        distances = sum(min(k, size - k) for k in range(1, size))
        return result_bytes * distances / (2 * size)
    if op.startswith("collective-permute") and pairs:
        return _busiest_link(pairs, result_bytes)
    if op in ("all-gather", "reduce-scatter", "all-reduce"):
        return moved / 2
    return moved  # a broadcast sends its whole result each way: no split


def _busiest_link(pairs: Sequence[Sequence[int]], nbytes: float) -> float:
    """The most bytes one link carries one way when each (source, target) of `pairs`
    sends `nbytes` the shorter way round the ring of their devices (in id order), a
    tie split between the two ways."""
    devices = sorted({device for pair in pairs for device in pair})
    place = {device: i for i, device in enumerate(devices)}
    size = len(devices)
    load: dict[tuple[int, int], float] = defaultdict(float)
    for pair in pairs:
        source, target = place[pair[0]], place[pair[-1]]
        ahead = (target - source) % size
        ways = [(1, ahead), (-1, size - ahead)]
        shortest = min(ahead, size - ahead)
        routes = [(step, hops) for step, hops in ways if hops == shortest and hops]
        for step, hops in routes:
            at = source
            for _ in range(hops):
                load[(at, step)] += nbytes / len(routes)
                at = (at + step) % size
    return max(load.values(), default=0.0)


def analyze_estimate(
    module: Module,
    computations: Sequence[ControlComputation],
    costs: Mapping[str, Mapping[str, float]],
    figures: Figures,
    fusions: FusionAnalysis,
    program_flops: float | None = None,
    slices: int = 1,
    given_model_flops: float | None = None,
    recomputes: bool | None = None,
    model_flops_from: ModelFlopsFrom = "given",
) -> EstimateAnalysis:
    """Estimate each kernel and collective of the compiled module (module doc), on
    `slices` TPU slices: `computations` its control computations
    (`kernels.program_kernels`), `costs` XLA's cost analysis of each kernel alone, by
    name. MFU's flops are `given_model_flops` (per device; from where
    `model_flops_from` says) where given, else the executed flops where the step
    `recomputes` nothing (False; None: not known)."""
    info = _info(fusions)
    runs = RunsPerCall(module)
    unknown_trips: list[str] = []
    uncosted: list[str] = []
    unknown: list[str] = []
    clock = figures.clock_hz
    link = figures.interconnect_bytes_per_second
    tpu = figures.platform == "tpu"

    def counted(name: str, times: int | None) -> int:
        if times is None:
            unknown_trips.append(name)
            return 1
        return times

    ops: list[EstimatedOp] = []
    collectives: list[EstimatedCollective] = []
    for computation in computations:
        schedule = computation.kernels
        one_run: dict[int, float] = {}
        for index, kernel in enumerate(schedule):
            if not kernel.collectives and kernel.runs_kernel:
                one_run[index] = _kernel(kernel, costs, figures, clock, uncosted, [])[0]
        for index, kernel in enumerate(schedule):
            known = info.get(kernel.name, _Info(kernel.opcode, None, ()))
            for collective in kernel.collectives:
                calls = counted(kernel.name, collective.runs_per_call)
                op = collective.kind.replace("_", "-")
                result = collective.result_bytes or 0
                if collective.across_slices:
                    # Between slices: a ring over the slices, on the data-centre network.
                    moved = ring_bytes(op, result, result, slices)
                    seconds = moved / (figures.dcn_bytes_per_second or (2 if tpu else 1) * link)
                else:
                    moved = ring_bytes(op, result, collective.operand_bytes, collective.group_size)
                    # A TPU's ICI ring: the busiest link, one way; a GPU's NVLink: what
                    # each GPU sends, one way.
                    if tpu:
                        pairs = module.ops[collective.op_id].source_target_pairs
                        size = collective.group_size
                        seconds = ring_link_bytes(op, moved, result, size, pairs) / link
                    else:
                        seconds = moved / link
                between: tuple[int, ...] = ()
                if collective.asynchronous:
                    done = done_of(module, computation, index)
                    end = done if done is not None else index + 1
                    between = tuple(i for i in range(index + 1, end) if i in one_run)
                covered = sum(one_run[i] for i in between)
                exposed = max(seconds - covered, 0.0) if collective.asynchronous else seconds
                # Named by the instruction launched for it, unless it launches several.
                name = kernel.name if len(kernel.collectives) == 1 else collective.name
                collectives.append(
                    EstimatedCollective(
                        name=name,
                        op=op,
                        bytes=moved * calls,
                        result_bytes=result,
                        group_size=slices if collective.across_slices else collective.group_size,
                        calls=calls,
                        seconds=seconds * calls,
                        basis="interconnect",
                        exposed_seconds=exposed * calls,
                        asynchronous=collective.asynchronous,
                        across_slices=collective.across_slices,
                        overlapped_by=tuple(schedule[i].name for i in between),
                        user_source=known.user_source,
                        sources=known.sources,
                        collective=collective.name,
                        in_loop=collective.in_loop,
                    )
                )
                ops.append(
                    EstimatedOp(
                        name=name,
                        kind=op,
                        calls=calls,
                        seconds=seconds * calls,
                        share=0.0,
                        cycles=None,
                        basis="interconnect",
                        bound="network",
                        flops=None,
                        bytes=moved * calls,
                        user_source=known.user_source,
                        sources=known.sources,
                        function=kernel.function,
                    )
                )
            if kernel.collectives or not kernel.runs_kernel:
                continue
            calls = counted(kernel.name, runs.of(module.ops[kernel.op_id]))
            seconds, basis, bound, flops, accessed = _kernel(
                kernel, costs, figures, clock, uncosted, unknown
            )
            ops.append(
                EstimatedOp(
                    name=kernel.name,
                    kind=known.kind,
                    calls=calls,
                    seconds=seconds * calls,
                    share=0.0,
                    cycles=kernel.cycles,
                    basis=basis,
                    bound=bound,
                    flops=flops * calls if flops is not None else None,
                    bytes=accessed * calls if accessed is not None else None,
                    user_source=known.user_source,
                    sources=known.sources,
                    function=kernel.function,
                )
            )
    compute = sum(op.seconds for op in ops if op.basis != "interconnect")
    communication = sum(c.seconds for c in collectives)
    exposed = sum(c.exposed_seconds for c in collectives)
    step = compute + exposed
    # A share of the step: a collective's is its exposed part's.
    exposed_of = {c.name: c.exposed_seconds for c in collectives}
    ops = [
        dataclasses.replace(
            op,
            share=(exposed_of.get(op.name, op.seconds) / step) if step > 0 else 0.0,
        )
        for op in ops
    ]
    ops.sort(key=lambda op: (-op.seconds, op.name))
    flops = sum(op.flops or 0.0 for op in ops)
    model_flops: float | None = None
    if given_model_flops is not None:
        model_flops = given_model_flops
    elif recomputes is False:
        model_flops, model_flops_from = flops, "no recomputation"
    capacity = step * figures.peak_flops
    return EstimateAnalysis(
        seconds=step,
        compute_seconds=compute,
        communication_seconds=communication,
        exposed_communication_seconds=exposed,
        flops=flops,
        cost_analysis_flops=program_flops,
        mfu=model_flops / capacity if model_flops is not None and step > 0 else None,
        hfu=flops / capacity if step > 0 else None,
        model_flops=model_flops,
        model_flops_from=model_flops_from if model_flops is not None else None,
        ops=tuple(ops),
        lines=_lines(ops, exposed_of, step),
        collectives=tuple(collectives),
        figures=figures,
        unknown_trip_counts=tuple(dict.fromkeys(unknown_trips)),
        uncosted=tuple(dict.fromkeys(uncosted)),
        unknown_costs=tuple(dict.fromkeys(unknown)),
    )


def step_flops(
    module: Module,
    computations: Sequence[ControlComputation],
    costs: Mapping[str, Mapping[str, float]],
) -> float:
    """The flops a step executes, per device, as `analyze_estimate` counts them: XLA's
    cost analysis of each kernel alone times its runs per step (once in a loop of no
    known trip count; nothing where the cost is not known)."""
    runs = RunsPerCall(module)
    total = 0.0
    for computation in computations:
        for kernel in computation.kernels:
            cost = costs.get(kernel.name)
            if kernel.collectives or not kernel.runs_kernel or cost is None:
                continue
            flops = _known(cost.get("flops", 0.0)) or 0.0
            total += flops * (runs.of(module.ops[kernel.op_id]) or 1)
    return total


def _kernel(
    kernel: Kernel,
    costs: Mapping[str, Mapping[str, float]],
    figures: Figures,
    clock: float | None,
    uncosted: list[str],
    unknown: list[str],
) -> tuple[float, Basis, Bound, float | None, float | None]:
    """One run's (seconds, basis, bound, flops, bytes accessed); a cost XLA says it
    does not know (-1) is None and counts nothing, the kernel listed in `unknown`."""
    cost = costs.get(kernel.name)
    accessed: float | None
    if cost is None:
        uncosted.append(kernel.name)
        flops: float | None = None
        accessed = float(kernel.operand_bytes + kernel.result_bytes)
    else:
        flops = _known(cost.get("flops", 0.0))
        accessed = _known(cost.get("bytes accessed", kernel.operand_bytes + kernel.result_bytes))
        if flops is None or accessed is None:
            unknown.append(kernel.name)
    compute = (flops or 0.0) / _peak(figures, kernel.matmul_type)
    memory = (accessed or 0.0) / figures.hbm_bytes_per_second
    bound: Bound = "compute" if compute >= memory else "memory"
    if kernel.cycles is not None and clock:
        return kernel.cycles / clock, "compiler", bound, flops, accessed
    return max(compute, memory), "roofline", bound, flops, accessed


def _known(value: float) -> float | None:
    """A cost of XLA's cost analysis; None for its "unknown" (a negative value: -1)."""
    return float(value) if value >= 0 else None


def _lines(
    ops: Sequence[EstimatedOp], exposed_of: Mapping[str, float], step: float
) -> tuple[EstimatedLine, ...]:
    by_line: dict[str | None, list[EstimatedOp]] = defaultdict(list)
    for op in ops:
        by_line[op.user_source].append(op)
    lines = []
    for source, members in by_line.items():
        spent = sum(exposed_of.get(op.name, op.seconds) for op in members)
        lines.append(
            EstimatedLine(
                source=source,
                seconds=spent,
                share=spent / step if step > 0 else 0.0,
                ops=tuple(op.name for op in members),
            )
        )
    return tuple(sorted(lines, key=lambda line: (-line.seconds, line.source or "")))

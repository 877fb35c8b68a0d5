"""Collectives: all-reduce, all-gather, reduce-scatter, all-to-all,
collective-permute, collective-broadcast and ragged all-to-all, counted per kind
with their async forms (inside async start/done pairs, HLO's `-start` ops, or the
TPU's async collective fusions), and how many run per call of the module when some
sit inside loops (`loops.py`).

The TPU runs a collective asynchronously by fusing it: a kCustom fusion
`async-collective-start` calls a computation whose root is the custom call
`AsyncCollectiveStart` of the collective, `async-collective-done` one ending in
`AsyncCollectiveDone`, and the compute fusions in between that move it on (their
backend config has a `continuation_config`) call computations named
`async_collective_fusion`, each holding a copy of the collective.

`program_collectives` decides, once per module, the collectives a program runs as XLA
runs them, and every view reads its answer (placement's counts, `--why`'s sites,
check's facts, the estimate, diff's summary): one collective per channel where the
TPU carries one through several fusions, counted at its start; its kind by what it
computes (an all-reduce the TPU fused with the slice each device keeps, the emitter
`...AllReduceScatterFusion`, is a reduce-scatter of the all-reduce's array to the
fusion's result; libtpu's megascale sends are the collective they carry out, across
slices); XLA's name of it and of the instruction that launches it (itself, its
`-start`, the fusion holding it); its device groups, bytes, whether it runs
asynchronously and how often per call.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping, Sequence

from hloscope.analyses.placement.loops import RunsPerCall, TripCountSource
from hloscope.analyses.placement.report import COLLECTIVES, Collective, CollectiveOp
from hloscope.analyses.placement.values import sum_bytes, unique
from hloscope.analyses.structure import clone_base, holding_function, op_callees, scan_ops
from hloscope.ir.model import Module, Op

# A quick filter on op names before `collective_kind` looks closer.
_COLLECTIVE_NAME = re.compile(r"all[_-]|reduce[_-]scatter|collective|custom[_-]call")


def may_be_collective(name: str) -> bool:
    """Whether ops of this name can be collectives (`collective_kind` looks closer)."""
    return _COLLECTIVE_NAME.search(name) is not None


def collective_kind(op: Op) -> tuple[CollectiveOp, bool] | None:
    """(kind, async) when `op` is a collective; None otherwise. HLO's `-done` halves
    are not collectives of their own."""
    if _COLLECTIVE_NAME.search(op.name) is None:
        return None
    short = op.short_name.replace("-", "_")
    is_async = False
    if op.dialect == "hlo":
        if short.endswith("_done"):
            return None
        if short.endswith("_start"):
            short, is_async = short[: -len("_start")], True
    target = op.custom_call_target
    if target is not None:
        short = target.replace("-", "_")
    if short in COLLECTIVES:
        return short, is_async
    return None


ASYNC_COLLECTIVE_DONE = "AsyncCollectiveDone"
"""The custom call that ends the TPU's async collective done fusion."""
ASYNC_COLLECTIVE_TARGETS = frozenset({"AsyncCollectiveStart", ASYNC_COLLECTIVE_DONE})
"""The custom calls that end the TPU's async collective start and done fusions."""
ASYNC_COLLECTIVE_FUSION = "async_collective_fusion"
"""The name (less XLA's suffixes) the TPU gives the computations of the compute
fusions that move an async collective on."""


def _continues_collective(module: Module, op: Op) -> bool:
    """Whether `op` is a fusion whose backend config has a `continuation_config`
    (the TPU's fusion that moves an async collective on)."""
    return module.annotations(op).continues_collective


class _AsyncScopes:
    """Where a collective runs asynchronously: in the functions and regions that
    async start ops call, and in the TPU's async collective fusions (module doc)."""

    def __init__(self, module: Module, ops: Sequence[Op], tpu_only: bool = False) -> None:
        """`tpu_only`: the TPU's async collective fusions alone, not async start ops."""
        names = module.functions
        self.module = module
        self.tpu_only = tpu_only
        self.functions: set[str] = {n for n in names if clone_base(n) == ASYNC_COLLECTIVE_FUSION}
        self.regions: set[int] = set()
        """Ids of fusion ops (MLIR's form) holding an async collective's custom call."""
        for op in ops:
            if op.short_name in ("async_start", "async-start"):
                if not tpu_only:
                    self.functions.update(op_callees(op, names, fused=True))
            elif op.custom_call_target in ASYNC_COLLECTIVE_TARGETS:
                # The computation it ends: a function in XLA's own form, the fusion
                # op's region once converted to MLIR.
                if op.parent is not None and op.parent.name != "func.func":
                    self.regions.add(op.parent.id)
                else:
                    self.functions.add(op.function or "")
            elif "calls" in op.attributes and _continues_collective(module, op):
                self.functions.update(op_callees(op, names, fused=True))

    def holds(self, op: Op) -> bool:
        """Whether `op` runs inside an async start/done pair or async collective fusion."""
        if op.function in self.functions:
            return True
        parent = op.parent
        while parent is not None and parent.name != "func.func":
            if (
                (not self.tpu_only and parent.short_name in ("async_start", "async-start"))
                or parent.id in self.regions
                or _continues_collective(self.module, parent)
            ):
                return True
            parent = parent.parent
        return False


def collective_copies(module: Module, ops: Iterable[Op]) -> frozenset[int]:
    """Ids of the collectives among `ops` that are another's copy, not collectives of
    their own: the TPU carries one async collective from its start fusion through the
    fusions that move it on (`async_collective_fusion`) to its done fusion, each
    holding a copy of it with its channel, and it runs once. Each is counted once, at
    its start (the copy outside the fusions that move it on, else the first). Only
    there: elsewhere a shared channel (a hand-written module's) is not a copy."""
    ops = list(ops)
    scopes = _AsyncScopes(module, ops, tpu_only=True)
    by_channel: dict[tuple[str, int], list[Op]] = {}
    for op in ops:
        kind = collective_kind(op)
        channel = op.channel_id if kind is not None else None
        if kind is not None and channel is not None and scopes.holds(op):
            by_channel.setdefault((kind[0], channel), []).append(op)
    copies: set[int] = set()
    for group in by_channel.values():
        if len(group) > 1:
            kept = min(
                group,
                key=lambda op: (clone_base(op.function or "") == ASYNC_COLLECTIVE_FUSION, op.id),
            )
            copies.update(op.id for op in group if op is not kept)
    return frozenset(copies)


MEGASCALE_TRANSFER = "_xla_megascale_transfer_type"
"""The frontend attribute libtpu tags a multi-slice program's sends and receives with:
the collective across slices (over the data-centre network) the pair carries out
(`ALL_REDUCE`), with `_xla_megascale_reduce_operation` its reduction."""


def megascale_kind(op: Op) -> CollectiveOp | None:
    """The collective across slices that `op` carries out, where it is the send of a
    pair libtpu made of one (`MEGASCALE_TRANSFER`); None for any other op. The
    receive is the same collective's other half."""
    if op.short_name != "send":
        return None
    tag = op.frontend_attributes.get(MEGASCALE_TRANSFER)
    name = tag.lower() if tag is not None else None
    name = _MEGASCALE_KINDS.get(name, name) if name is not None else None
    return name if name in COLLECTIVES else None


_MEGASCALE_KINDS = {"one_to_one": "collective_permute"}
"""libtpu's transfer types that are not spelled as the collective they carry out:
`ONE_TO_ONE`, a transfer from each device to one device of another slice."""


def done_ops(ops: Sequence[Op]) -> dict[int, Op]:
    """XLA's `-done` halves among `ops`, by the value of the `-start` they finish."""
    return {
        op.operands[0]: op
        for op in ops
        if op.dialect == "hlo" and op.short_name.endswith(("_done", "-done")) and op.operands
    }


def result_bytes(module: Module, op: Op, dones: Mapping[int, Op]) -> int | None:
    """The bytes a collective makes: its results', or for XLA's `-start`, whose result
    holds its inputs too (`all-gather-start = (inputs, results)`, combined ones
    `((3 x f32[512,256]), (3 x f32[512,512]))`), those of the `-done` finishing it."""
    done = dones.get(op.results[0]) if op.results else None
    return sum_bytes(module, (done or op).results)


SCATTER_EMITTER = "AllReduceScatter"
"""In the `emitter` of a TPU fusion's `collective_algorithm_config`
(`SingleInputAllReduceScatterFusion`): an all-reduce fused with the slice each device
keeps, which is a reduce-scatter."""

_FUSED = frozenset({"fusion", "fusion-start"})
_WRAPPERS = _FUSED | {"async-start", "async_start"}
"""Ops that launch the computation they hold or call as one instruction."""


@dataclasses.dataclass(frozen=True)
class RunningCollective:
    """One collective the program runs, as XLA runs it (module doc)."""

    op_id: int
    """The collective instruction: its device groups, channel and source line."""
    kernel_id: int
    """The instruction the program launches for it: itself, the fusion holding it
    (the TPU's async start fusion, an all-reduce-scatter fusion), or the
    `async-start` wrapping it."""
    name: str
    """XLA's name of the collective instruction (`all-reduce.66`); its value's name
    where the module names no HLO instructions (a lowered module)."""
    kernel: str
    """XLA's name of the instruction that launches it."""
    kind: CollectiveOp
    """What it computes."""
    asynchronous: bool
    """It runs between a start and a done (XLA's `-start`, an async start op, the
    TPU's async collective fusions, a send across slices)."""
    across_slices: bool
    """It crosses the data-centre network between slices (libtpu's megascale send)."""
    result_bytes: int | None
    """What it makes per device: the gathered, reduced or scattered array (a
    `-start`'s, its `-done`'s result; an all-reduce-scatter fusion's, the fusion's
    result; a send across slices', the data it sends)."""
    operand_bytes: int | None
    """What each device gives it (an all-reduce-scatter fusion's, its all-reduce's
    array)."""
    groups: tuple[tuple[int, ...], ...] | None
    """The devices of each of its groups (`Module.device_groups`); None where it names
    none (every device) or they cannot be told."""
    channel_id: int | None
    function: str
    """The function (computation) it is in: the fusion's, where a fusion holds it (as
    the converted form's fusion region is), not the fused computation's."""
    runs_per_call: int | None
    """How often it runs per call of the module, loops' trip counts counted; None
    where a trip count is unknown."""
    in_loop: bool
    """It sits in a loop, directly or through the calls to its function."""
    trip_counts_from: tuple[TripCountSource, ...]
    """Where the trip counts of the loops around it were read."""

    @property
    def group_size(self) -> int | None:
        """Devices in each of its groups, where they are written out."""
        return len(self.groups[0]) if self.groups else None


def collective_name(module: Module, op: Op) -> str:
    """XLA's name of an instruction (`all-reduce.66`), the one every view shows; its
    value's name where the module names no HLO instructions (a lowered module)."""
    if op.hlo_name:
        return op.hlo_name
    return module.value_name(op.results[0]) if op.results else op.name


def program_collectives(
    module: Module, runs: RunsPerCall | None = None
) -> tuple[RunningCollective, ...]:
    """The collectives the program runs, in program order (`Module.program_order`:
    a scheduled module's schedule, in either form), decided once per module
    (module doc): those of the functions the entry reaches, not the copies of fused
    computations a conversion leaves aside nor the TPU's copies of one async
    collective. `runs` (optional) counts the runs per call."""
    cached = module.derived.get("program_collectives")
    if isinstance(cached, tuple):
        return cached
    names = {op.name for op in module.ops}
    if not any(may_be_collective(name) or name.endswith(".send") for name in names):
        # Most modules hold none: decided from the distinct op names alone.
        module.derived["program_collectives"] = ()
        return ()
    runs = runs if runs is not None else RunsPerCall(module)
    reached = _reached(module)
    ops = module.program_order(op for op in module.ops if op.function in reached)
    copies = collective_copies(module, ops)
    dones = done_ops(ops)
    scopes = _AsyncScopes(module, ops)
    callers = runs.callers()
    found: list[RunningCollective] = []
    for op in ops:
        across = megascale_kind(op)
        if across is not None:
            # A send carries the collective out, its data what each device sends; the
            # receive is its other half.
            sent = sum_bytes(module, op.operands[:1])
            found.append(_running(module, op, op, across, True, True, sent, sent, runs))
            continue
        kind = collective_kind(op) if op.id not in copies else None
        if kind is None:
            continue
        name, is_async = kind
        kernel = _launched(op, callers)
        result = result_bytes(module, op, dones)
        given = sum_bytes(module, op.operands)
        emitter = module.annotations(kernel).collective_emitter if kernel is not op else None
        if name == "all_reduce" and emitter is not None and SCATTER_EMITTER in emitter:
            name, given, result = "reduce_scatter", result, sum_bytes(module, kernel.results)
        asynchronous = is_async or scopes.holds(op)
        found.append(_running(module, op, kernel, name, asynchronous, False, result, given, runs))
    collectives = tuple(found)
    module.derived["program_collectives"] = collectives
    return collectives


def _reached(module: Module) -> set[str]:
    """The functions the module's public ones reach (calls, loops, fused computations
    in XLA's own form), as placement reads them: not the copies of fused computations
    a conversion leaves aside."""
    names = module.functions
    calls: dict[str, list[str]] = {}
    for op in scan_ops(module).keyed:  # the ops whose attributes can name a function
        if op.function is not None:
            calls.setdefault(op.function, []).extend(op_callees(op, names, fused=True))
    pending = [
        name
        for name, function in names.items()
        if function.visibility == "public" and not function.is_declaration
    ]
    entry = module.entry
    if entry is not None:
        pending.append(entry.name)
    reached: set[str] = set()
    while pending:
        name = pending.pop()
        if name in reached or name not in names:
            continue
        reached.add(name)
        pending.extend(calls.get(name, ()))
    return reached


def _running(
    module: Module,
    op: Op,
    kernel: Op,
    kind: CollectiveOp,
    asynchronous: bool,
    across_slices: bool,
    result: int | None,
    given: int | None,
    runs: RunsPerCall,
) -> RunningCollective:
    return RunningCollective(
        op_id=op.id,
        kernel_id=kernel.id,
        name=collective_name(module, op),
        kernel=collective_name(module, kernel),
        kind=kind,
        asynchronous=asynchronous,
        across_slices=across_slices,
        result_bytes=result,
        operand_bytes=given,
        groups=None if across_slices else module.device_groups(op),
        channel_id=op.channel_id,
        # The function holding it as the converted form holds it: a loop body's or a
        # fused computation's ops are in the function of the op holding them.
        function=holding_function(
            module, (kernel if kernel.short_name in _FUSED else op).function or ""
        ),
        runs_per_call=runs.of(op),
        in_loop=runs.in_loop(op),
        trip_counts_from=runs.trip_sources(op),
    )


def _launched(op: Op, callers: Mapping[str, Sequence[Op]]) -> Op:
    """The instruction the program launches to run `op`: the fusion (or async start)
    whose region holds it, or that alone calls its computation, outermost first;
    `op` itself where none does."""
    current = op
    for _ in range(16):
        parent = current.parent
        while parent is not None and parent.name != "func.func" and parent.short_name in _WRAPPERS:
            current, parent = parent, parent.parent
        if parent is not None and parent.name != "func.func":
            return current  # inside a loop's or a conditional's region: launched there
        sites = callers.get(current.function or "", ())
        if len(sites) != 1 or sites[0].short_name not in _WRAPPERS:
            return current
        current = sites[0]
    return current


def collectives_by_kind(module: Module, sites: Sequence[Op] | None = None) -> list[Collective]:
    """The program's collectives (`program_collectives`) by kind, those across slices
    first (the slow traffic), then the most frequent. `sites`, when given, holds every
    op of the module that names a function (and maybe others), in module order: where
    `RunsPerCall` looks for calls."""
    collectives = program_collectives(module, RunsPerCall(module, sites))
    found: dict[tuple[CollectiveOp, bool], list[RunningCollective]] = {}
    for collective in collectives:
        found.setdefault((collective.kind, collective.across_slices), []).append(collective)
    out: list[Collective] = []
    for key in sorted(found, key=lambda k: (not k[1], -len(found[k]), COLLECTIVES.index(k[0]))):
        name, across_slices = key
        items = found[key]
        ops = [module.ops[c.op_id] for c in items]
        sizes = [c.result_bytes for c in items]
        total = None if any(size is None for size in sizes) else sum(s or 0 for s in sizes)
        runs = [c.runs_per_call for c in items]
        per_call = None if any(r is None for r in runs) else sum(r or 0 for r in runs)
        bytes_per_call = (
            None
            if per_call is None or total is None
            else sum((c.runs_per_call or 0) * (c.result_bytes or 0) for c in items)
        )
        sources: dict[TripCountSource, None] = {}
        for c in items:
            sources.update(dict.fromkeys(c.trip_counts_from))
        out.append(
            Collective(
                op=name,
                count=len(items),
                async_count=sum(1 for c in items if c.asynchronous),
                bytes=total,
                functions=unique(c.function for c in items),
                sources=unique(op.location.source for op in ops),
                user_sources=unique(op.location.user_source for op in ops),
                in_loops=sum(1 for c in items if c.in_loop),
                per_call=per_call,
                bytes_per_call=bytes_per_call,
                trip_counts_from=tuple(sources),
                across_slices=across_slices,
            )
        )
    return out

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
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence

from hloscope.analyses.placement.loops import RunsPerCall
from hloscope.analyses.placement.report import COLLECTIVES, Collective, CollectiveOp
from hloscope.analyses.placement.values import sum_bytes, unique
from hloscope.analyses.structure import clone_base, op_callees
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


ASYNC_COLLECTIVE_TARGETS = frozenset({"AsyncCollectiveStart", "AsyncCollectiveDone"})
"""The custom calls that end the TPU's async collective start and done fusions."""
ASYNC_COLLECTIVE_FUSION = "async_collective_fusion"
"""The name (less XLA's suffixes) the TPU gives the computations of the compute
fusions that move an async collective on."""


def _continues_collective(module: Module, op: Op) -> bool:
    """Whether `op` is a fusion whose backend config has a `continuation_config`
    (the TPU's fusion that moves an async collective on)."""
    config = module.backend_configs.get(op.hlo_name or "")
    if config is None or "continuation_config" not in config:
        return False
    try:
        parsed = json.loads(config)
    except ValueError:
        return False
    return isinstance(parsed, dict) and "continuation_config" in parsed


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
    return name if name in COLLECTIVES else None


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


def collectives_by_kind(
    module: Module, ops: Sequence[Op], sites: Sequence[Op] | None = None
) -> list[Collective]:
    """The collectives among `ops` by kind, most frequent first. `sites`, when
    given, holds every op of the module that names a function (and maybe others),
    in module order: where `RunsPerCall` looks for calls."""
    copies = collective_copies(module, ops)
    kinds = [
        (op, kind)
        for op in ops
        if (kind := collective_kind(op)) is not None and op.id not in copies
    ]
    across = [(op, dcn) for op in ops if (dcn := megascale_kind(op)) is not None]
    dones = done_ops(ops)
    if not kinds and not across:
        return []
    scopes = _AsyncScopes(module, ops)
    found: dict[tuple[CollectiveOp, bool], list[tuple[Op, bool]]] = {}
    for op, (name, is_async) in kinds:
        found.setdefault((name, False), []).append((op, is_async or scopes.holds(op)))
    for op, name in across:
        # A send and its done: asynchronous by nature.
        found.setdefault((name, True), []).append((op, True))
    out: list[Collective] = []
    runs = RunsPerCall(module, sites)
    # The slow traffic first: across slices, over the data-centre network.
    for key in sorted(found, key=lambda k: (not k[1], -len(found[k]), COLLECTIVES.index(k[0]))):
        name, across_slices = key
        items = found[key]
        total: int | None = 0
        per_call: int | None = 0
        bytes_per_call: int | None = 0
        in_loops = 0
        sources: dict[str, None] = {}
        for op, _ in items:
            # A send across slices moves its operand (an all-reduce's input is its
            # result's size).
            size = (
                sum_bytes(module, op.operands[:1])
                if across_slices
                else result_bytes(module, op, dones)
            )
            total = None if total is None or size is None else total + size
            times = runs.of(op)
            in_loops += runs.in_loop(op)
            sources.update(dict.fromkeys(runs.trip_sources(op)))
            per_call = None if per_call is None or times is None else per_call + times
            bytes_per_call = (
                None
                if bytes_per_call is None or times is None or size is None
                else bytes_per_call + times * size
            )
        out.append(
            Collective(
                op=name,
                count=len(items),
                async_count=sum(1 for _, a in items if a),
                bytes=total,
                functions=unique(op.function for op, _ in items),
                sources=unique(op.location.source for op, _ in items),
                user_sources=unique(op.location.user_source for op, _ in items),
                in_loops=in_loops,
                per_call=per_call,
                bytes_per_call=bytes_per_call,
                trip_counts_from=tuple(sources),
                across_slices=across_slices,
            )
        )
    return out

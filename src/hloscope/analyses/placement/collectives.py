"""Collectives: all-reduce, all-gather, reduce-scatter, all-to-all,
collective-permute, collective-broadcast and ragged all-to-all, counted per kind
with their async forms (inside async start/done pairs, or HLO's `-start` ops), and
how many run per call of the module when some sit inside loops (`loops.py`)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from hloscope.analyses.placement.loops import RunsPerCall
from hloscope.analyses.placement.report import COLLECTIVES, Collective, CollectiveOp
from hloscope.analyses.placement.values import sum_bytes, unique
from hloscope.analyses.structure import op_callees
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


def collectives_by_kind(
    module: Module, ops: Sequence[Op], sites: Sequence[Op] | None = None
) -> list[Collective]:
    """The collectives among `ops` by kind, most frequent first. `sites`, when
    given, holds every op of the module that names a function (and maybe others),
    in module order: where `RunsPerCall` looks for calls."""
    names = module.functions
    kinds = [(op, kind) for op in ops if (kind := collective_kind(op)) is not None]
    if not kinds:
        return []
    async_functions: set[str] = set()
    for op in ops:
        if op.short_name in ("async_start", "async-start"):
            async_functions.update(op_callees(op, names, fused=True))
    found: dict[CollectiveOp, list[tuple[Op, bool]]] = {}
    for op, (name, is_async) in kinds:
        if not is_async:
            parent = op.parent
            while parent is not None and parent.name != "func.func":
                if parent.short_name in ("async_start", "async-start"):
                    is_async = True
                    break
                parent = parent.parent
            is_async = is_async or (op.function in async_functions)
        found.setdefault(name, []).append((op, is_async))
    out: list[Collective] = []
    runs = RunsPerCall(module, sites)
    for name in sorted(found, key=lambda n: (-len(found[n]), COLLECTIVES.index(n))):
        items = found[name]
        total: int | None = 0
        per_call: int | None = 0
        bytes_per_call: int | None = 0
        in_loops = 0
        for op, _ in items:
            size = sum_bytes(module, op.results)
            total = None if total is None or size is None else total + size
            times = runs.of(op)
            in_loops += runs.in_loop(op)
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
            )
        )
    return out

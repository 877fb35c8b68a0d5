"""The ops the placement analysis must look at, found in one pass over the names
and attribute names of the module's ops, so that a module with no compute-type
mark, memory kind, sharding or collective pays next to nothing for placement.

An op matters when its attributes name a function (a call, a loop's body, a
reduction's applier), carry frontend attributes (where compute-type marks live),
a sharding or an HLO layout (`xla_shape`), or when its name is a custom call's,
an `sdy` op's, a collective's or an async start's. Every other op is device
compute: counted, and otherwise passed over. The passes are over lists in C
(`map`, `compress`); Python looks only at the ops that matter and at each
distinct op name once.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import Counter
from collections.abc import Iterable, Sequence
from itertools import compress
from operator import attrgetter, not_

from hloscope.analyses.placement.attributes import own_compute_type
from hloscope.analyses.placement.collectives import may_be_collective
from hloscope.analyses.structure import CALL_ATTRIBUTES, op_callees
from hloscope.ir.model import Module, Op, is_computation

# Attributes whose presence makes an op matter: frontend attributes (compute-type
# marks, buffer placement), names of functions (`calls`: a fusion in XLA's own
# form), shardings, and HLO layouts (memory spaces).
MATTERING_ATTRIBUTES = frozenset(
    {
        "mhlo.frontend_attributes",
        "frontend_attributes",
        *CALL_ATTRIBUTES,
        "calls",
        "sdy.sharding",
        "mhlo.sharding",
        "sharding",
        "xla_shape",
    }
)

_NAME = attrgetter("name")
_ATTRIBUTES = attrgetter("attributes")


def name_matters(name: str) -> bool:
    """Whether ops of this name matter whatever their attributes: custom calls
    (transfers, sharding annotations, callbacks), `sdy` ops, collectives and async
    starts (which make what they call async)."""
    short = name.partition(".")[2] or name
    return (
        "custom" in name
        or name[:4] == "sdy."
        or may_be_collective(name)
        or short in ("async_start", "async-start")
    )


class OpScan:
    """What one pass over a module's ops finds: the ops that matter (in module
    order), the compute-type marks, what each op naming functions calls, and the
    op names that do not compute (for counting)."""

    def __init__(self, module: Module) -> None:
        ops = module.ops
        functions = module.functions
        self.module = module
        names = list(map(_NAME, ops))
        self.names = names
        self.counts = Counter(names)
        """Ops per name."""
        # Whether an op computes depends on its name alone: asked once per name, of
        # the first op with that name.
        self.not_computing = frozenset(
            name for name in self.counts if not is_computation(ops[names.index(name)])
        )
        keyed = compress(
            range(len(ops)), map(not_, map(MATTERING_ATTRIBUTES.isdisjoint, map(_ATTRIBUTES, ops)))
        )
        mattering = set(keyed)
        named = frozenset(name for name in self.counts if name_matters(name))
        if named:
            mattering.update(compress(range(len(ops)), map(named.__contains__, names)))
        self.ids = sorted(mattering)
        """Ids of the ops that matter, in module order."""
        self.ops = [ops[i] for i in self.ids]
        self.marks: dict[int, str] = {}
        """Op id -> the compute type the op's own attributes give it."""
        self.callees: dict[int, list[str]] = {}
        """Op id -> the functions it names (`op_callees`, fused computations too)."""
        for op in self.ops:
            if not op.attributes:
                continue
            mark = own_compute_type(op)
            if mark is not None:
                self.marks[op.id] = mark
            callees = op_callees(op, functions, fused=True)
            if callees:
                self.callees[op.id] = callees

    def within(self, first: int, end: int) -> Sequence[Op]:
        """The ops that matter among ids `first` to `end` (excluded)."""
        ids = self.ids
        return self.ops[bisect_left(ids, first) : bisect_left(ids, end)]

    def computing(self, ranges: Sequence[tuple[int, int]]) -> int:
        """Ops that compute among the ids of `ranges` (`first`, `end`; sorted, apart)."""
        total = sum(end - first for first, end in ranges)
        not_computing = self.not_computing
        if not not_computing:
            return total
        # Those that do not compute, less the ones outside the ranges (few: the
        # function ops themselves, unreached functions, ops outside functions).
        inside = sum(self.counts[name] for name in not_computing)
        names = self.names
        outside_first = 0
        for first, end in [*ranges, (len(names), len(names))]:
            if first - outside_first == 1:
                inside -= names[outside_first] in not_computing
            elif first > outside_first:
                outside = names[outside_first:first]
                inside -= sum(outside.count(name) for name in not_computing)
            outside_first = end
        return total - inside


def function_ranges(module: Module, functions: Iterable[str]) -> list[tuple[int, int]]:
    """The op ids (`first`, `end`) of the bodies of `functions`, in module order."""
    table = module.functions
    return sorted((table[name].op.id + 1, table[name].op.end) for name in functions)

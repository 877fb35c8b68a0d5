"""The ops the placement analysis must look at, so that a module with no
compute-type mark, memory kind, sharding or collective pays next to nothing for
placement.

An op matters when its attributes name a function (a call, a loop's body, a
reduction's applier), carry frontend attributes (where compute-type marks live),
a sharding or an HLO layout (`xla_shape`; in XLA's own form, a memory space), or
when its name is a custom call's, an `sdy` op's, a collective's, an async start's or
a copy's. Every other op is device compute: counted, and otherwise passed over. The
ops with those attributes come from the module's shared scan (`structure.scan_ops`,
one pass over the op names and one over their attribute names, in C); Python looks
only at the ops that matter and at each distinct op name once.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Sequence
from itertools import compress

from hloscope.analyses.placement.attributes import own_compute_type
from hloscope.analyses.placement.collectives import may_be_collective
from hloscope.analyses.structure import OpScan, op_callees, scan_ops
from hloscope.ir.model import Module, Op


def name_matters(name: str) -> bool:
    """Whether ops of this name matter whatever their attributes: custom calls
    (transfers, sharding annotations, callbacks), `sdy` ops, collectives, async
    starts (which make what they call async) and copies (which may move a value
    between memory spaces: out of the TPU's `S(1)` into the default one, whose layout
    names no memory space)."""
    short = name.partition(".")[2] or name
    return (
        "custom" in name
        or name[:4] == "sdy."
        or may_be_collective(name)
        or short in ("async_start", "async-start", "copy", "copy-start")
    )


class PlacementScan:
    """The ops of a module that matter to placement (in module order), the
    compute-type marks, and what each op naming functions calls."""

    def __init__(self, module: Module) -> None:
        functions = module.functions
        self.ops_scan: OpScan = scan_ops(module)
        """The module's shared scan: op names, and the ops with attributes that matter."""
        mattering = {op.id: op for op in self.ops_scan.keyed}
        named = frozenset(name for name in self.ops_scan.counts if name_matters(name))
        if named:
            names = self.ops_scan.names
            ops = module.ops
            for index in compress(range(len(names)), map(named.__contains__, names)):
                mattering[index] = ops[index]
        self.ids = sorted(mattering)
        """Ids of the ops that matter, in module order."""
        self.ops = [mattering[i] for i in self.ids]
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
        return self.ops_scan.computing(ranges)


def function_ranges(module: Module, functions: Iterable[str]) -> list[tuple[int, int]]:
    """The op ids (`first`, `end`) of the bodies of `functions`, in module order."""
    table = module.functions
    return sorted((table[name].op.id + 1, table[name].op.end) for name in functions)

"""What changed in the collectives of two compiled programs, kind by kind: placement's
counts of each side (`analyses.placement.collectives.collectives_by_kind`, as
`placement` shows them), and the user's lines where B runs more of a kind than A
(`program_collectives`, the same collectives one by one)."""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Sequence

from hloscope.analyses.placement.collectives import program_collectives
from hloscope.analyses.placement.report import COLLECTIVES, Collective, CollectiveOp
from hloscope.ir.model import Module


@dataclasses.dataclass(frozen=True)
class CollectiveCount:
    """The collectives of one kind on one side, as `placement` counts them."""

    count: int
    bytes: int | None
    """Bytes of their results together, per device; None where a size is unknown."""
    in_loops: int
    """How many sit in a loop (they run once per iteration)."""


NONE = CollectiveCount(0, 0, 0)


@dataclasses.dataclass(frozen=True)
class CollectiveChange:
    """One kind of collective in A and in B."""

    op: CollectiveOp
    across_slices: bool
    """Between slices, over the data-centre network."""
    a: CollectiveCount
    b: CollectiveCount
    added_at: tuple[tuple[str, int], ...]
    """The user's lines (`file.py:LINE`) where B runs more of them than A, and how many
    more, most first."""

    @property
    def changed(self) -> bool:
        return self.a != self.b or bool(self.added_at)


def collective_changes(
    a: Module, a_kinds: Sequence[Collective], b: Module, b_kinds: Sequence[Collective]
) -> tuple[CollectiveChange, ...]:
    """Each kind of collective either side runs (`a_kinds`, `b_kinds`: placement's of
    the modules `a` and `b`), across slices first, then in placement's order."""
    by_a = {(c.op, c.across_slices): c for c in a_kinds}
    by_b = {(c.op, c.across_slices): c for c in b_kinds}
    keys = sorted(by_a.keys() | by_b.keys(), key=lambda k: (not k[1], COLLECTIVES.index(k[0])))
    lines_a, lines_b = _lines(a), _lines(b)
    changes = []
    for op, across in keys:
        added = Counter(
            {
                source: n - lines_a[(op, across, source)]
                for (kind, crossing, source), n in lines_b.items()
                if (kind, crossing) == (op, across) and n > lines_a[(op, across, source)]
            }
        )
        changes.append(
            CollectiveChange(
                op=op,
                across_slices=across,
                a=_count(by_a.get((op, across))),
                b=_count(by_b.get((op, across))),
                added_at=tuple(added.most_common()),
            )
        )
    return tuple(changes)


def _count(collective: Collective | None) -> CollectiveCount:
    if collective is None:
        return NONE
    return CollectiveCount(collective.count, collective.bytes, collective.in_loops)


def _lines(module: Module) -> Counter[tuple[CollectiveOp, bool, str]]:
    """How many collectives of each kind each user line makes (`(unknown)` where XLA
    kept no line)."""
    return Counter(
        (c.kind, c.across_slices, module.ops[c.op_id].location.user_source or "(unknown)")
        for c in program_collectives(module)
    )

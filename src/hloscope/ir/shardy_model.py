"""What Shardy recorded of a module's shardings (`hloscope.ir.shardy` reads it): each
value's sharding and, per mesh axis, its origin. Plain data, no jaxlib: analyses read
it."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Literal

OriginKind = Literal["argument", "result", "constraint", "manual", "other"]


@dataclasses.dataclass(frozen=True)
class Origin:
    """What set one mesh axis of a value's sharding, as Shardy names it."""

    kind: OriginKind
    """`argument` (an entry argument's sharding), `result` (an entry result's
    requested sharding), `constraint` (a sharding constraint or reshard), `manual`
    (a manual computation's, `jax.shard_map`'s, in or out shardings: `mc_0_input:
    1`), `other` (a name Shardy gives that is none of these)."""
    index: int | None
    """The argument's, result's, constraint's or manual computation's number; None
    for `other`."""
    text: str
    """As Shardy writes it: `input: 1`, `output: 0`, `constraint_0`."""


@dataclasses.dataclass(frozen=True)
class ShardyValue:
    """A value of the entry function, with its sharding and the origin of each axis."""

    dimensions: tuple[tuple[str, ...], ...] | None
    """Per dimension, the mesh axes it is sharded along (major first); None when the
    value carries no sharding."""
    origins: Mapping[str, Origin]
    """Per mesh axis of its sharding, what set it."""

    @property
    def axes(self) -> tuple[str, ...]:
        return tuple(axis for dim in self.dimensions or () for axis in dim)


@dataclasses.dataclass(frozen=True)
class ShardyOp:
    """An op of the entry function after propagation, in module order."""

    name: str
    """`stablehlo.dot`, `sdy.reshard`, ..."""
    operands: tuple[int, ...]
    """Indices into `ShardyPropagation.values`."""
    results: tuple[int, ...]
    origin_name: str | None
    """A constraint's or reshard's own name (`constraint_0`)."""
    origin: Origin | None = None
    """That name decoded: what a value's `"self"` is here."""
    factors: tuple[tuple[tuple[int, ...], ...], ...] | None = None
    """Its sharding rule (`sdy.sharding_rule`): per operand, then per result, per
    dimension, the rule's factors; None without one. Two dimensions on one factor
    are the same index of the computation (a dot's contracted `k`)."""
    read_by_loop: int | None = None
    """For a constraint whose every use lies inside the regions of one
    `stablehlo.while` (a value the loop reads from outside it, as XLA's own
    `xla-sdy-open-while-free-vars-sharding` pass constrains them), that loop's index
    in `ShardyPropagation.ops`; None otherwise."""
    carried: tuple[int, ...] = ()
    """For a `stablehlo.while`, what its body returns: the value each of its results
    (its carry) holds in the next iteration. One the body returns unchanged (the
    result's own value) is the loop's operand throughout."""
    loop: int | None = None
    """The innermost `stablehlo.while` whose condition or body holds this op (its
    index in `ShardyPropagation.ops`); None for an op of the entry's own block."""


@dataclasses.dataclass(frozen=True)
class ShardyPropagation:
    """The entry function of Shardy's dump after propagation."""

    meshes: Mapping[str, tuple[tuple[str, int], ...]]
    """Mesh name to (axis, size), in order."""
    values: tuple[ShardyValue, ...]
    """The entry's arguments first (value i is argument i), then each op's results.
    A block argument of a loop's condition or body is the loop's result in its place
    (Shardy gives the two one sharding)."""
    arguments: int
    results: tuple[ShardyValue, ...]
    """The entry's results, with the sharding asked of each."""
    returned: tuple[int, ...]
    """The value each result returns."""
    ops: tuple[ShardyOp, ...]
    """The entry's ops in module order, each `stablehlo.while` followed by the ops of
    its condition and body (`ShardyOp.loop`)."""


def decode_origin(text: str, owner: Origin | None) -> Origin:
    """An origin as Shardy writes it; `"self"` is `owner` (what the value is)."""
    if text == "self" and owner is not None:
        return owner
    head, _, tail = text.partition(": ")
    if head in ("input", "output") and tail.isdigit():
        return Origin("argument" if head == "input" else "result", int(tail), text)
    prefix, _, number = text.rpartition("_")
    if prefix == "constraint" and number.isdigit():
        return Origin("constraint", int(number), text)
    # A manual computation is `mc_N`; its operands' and results' edges `mc_N_input: K`
    # and `mc_N_output: K`.
    edge, colon, position = text.partition(": ")
    if colon:
        suffix = next((s for s in ("_input", "_output") if edge.endswith(s)), None)
        edge = edge.removesuffix(suffix) if suffix and position.isdigit() else ""
    kind, _, number = edge.partition("_")
    if kind == "mc" and number.isdigit():
        return Origin("manual", int(number), text)
    return Origin("other", None, text)

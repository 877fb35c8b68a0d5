"""What `placement --why` reports: the cause of each collective of the optimized
module, and what each argument, result and sharding constraint set (frozen
dataclasses; `why` computes them)."""

from __future__ import annotations

import dataclasses
from typing import Literal

from hloscope.analyses.placement.report import CollectiveOp

OriginKind = Literal["argument", "result", "constraint", "shard_map", "other"]


@dataclasses.dataclass(frozen=True)
class ShardingOrigin:
    """Something that set a sharding: an entry argument's, a requested result
    sharding, a sharding constraint, or a `jax.shard_map`'s `in_specs` and
    `out_specs` (Shardy's origins)."""

    kind: OriginKind
    """`argument`, `result`, `constraint`, `shard_map`, or `other` (a name Shardy
    gives that is none of those, kept as it is)."""
    index: int | None
    """The argument's, result's, constraint's or shard_map's number (Shardy's
    `input: N`, `output: N`, `constraint_N`, `mc_N`); None for `other`."""
    name: str | None
    """An argument's user path (`w1`, `block.down.kernel`), a result's name, or
    Shardy's name for a constraint (`constraint_0`); None for a shard_map (Shardy's
    name, `mc_0`, is its own)."""
    source: str | None
    """A constraint's or shard_map's `file.py:LINE` (the user's own frame); None for
    arguments and results."""
    sharding: str | None
    """The sharding it asks for, for reading: `P(None, 'model')` for an argument
    from Python, `[{}, {"model"}]` on the mesh otherwise."""
    xla_loop_constraint: bool = False
    """A constraint XLA added, not the program: its `xla-sdy-open-while-free-vars-
    sharding` pass puts a fully open sharding constraint on each value a `while`
    loop (a `jax.lax.scan`) reads from outside it, so that the loop may shard it
    further. `source` is then the loop's line; `name` stays Shardy's (`constraint_4`)."""
    constrains: str | None = None
    """For XLA's loop constraint, the user path of the entry argument it is put on
    (`params['layers']['wo']`); None where it is another value, and for the others."""
    backward_loop: bool = False
    """For XLA's loop constraint, whether the loop is the backward pass's (JAX's
    transpose of the scan, at the scan's line too)."""

    @property
    def label(self) -> str:
        """`argument w1`, `result 0`, `sharding constraint at model.py:14`."""
        if self.kind == "argument":
            return f"argument `{self.name or self.index}`"
        if self.kind == "result":
            name = f" `{self.name}`" if self.name else ""
            return f"result {self.index}{name}"
        if self.kind == "constraint" and self.xla_loop_constraint:
            value = f"argument `{self.constrains}`" if self.constrains else "a value"
            kind = "backward loop" if self.backward_loop else "loop"
            loop = f"the {kind} at {self.source}" if self.source else f"a {kind}"
            return f"XLA's open sharding constraint on {value} where {loop} reads it"
        if self.kind == "constraint":
            where = f" at {self.source}" if self.source else f" {self.name}"
            return f"sharding constraint{where}"
        if self.kind == "shard_map":
            return f"shard_map at {self.source}" if self.source else "shard_map"
        return f"`{self.name}`"


@dataclasses.dataclass(frozen=True)
class AxisCause:
    """Why one mesh axis of a collective moves: what sharded the values along it,
    and what asked for them unsharded along it."""

    axis: str
    sharded_by: tuple[ShardingOrigin, ...]
    """The origins of the axis on the values that are sharded along it, where the
    shardings meet."""
    unsharded_by: tuple[ShardingOrigin, ...]
    """What set the shardings of the values there that are not sharded along it:
    a constraint, a requested result, the other axes' origins. Empty for a reduction
    over the axis (the op itself sums the partial results)."""
    conflict: bool = False
    """The values sharded along it use it on different dimensions of the op (factors
    of its sharding rule: a dot's rows and its contracted dimension), so one side is
    gathered."""


@dataclasses.dataclass(frozen=True)
class CollectiveSite:
    """One collective of the optimized module, and why it is there."""

    op: CollectiveOp
    instruction: str
    """The optimized module's value (`%all-gather`)."""
    source: str | None
    """Where XLA put it: `file.py:LINE` of the user's frame (the op that needed
    the data)."""
    axes: tuple[str, ...]
    """The user's mesh axes it communicates over; empty when they are not known."""
    causes: tuple[AxisCause, ...]
    """Per axis, where its sharding came from."""
    meets: str | None
    """The line where the conflicting shardings meet (the op Shardy propagated
    through), or `result N` where a result's requested sharding meets the value it
    returns."""
    meets_op: str | None
    """The op there (`stablehlo.dot`, `sdy.reshard`)."""
    sentence: str
    """The cause in one sentence."""
    note: str | None
    """Why it could not be tied to Shardy's origins, when it could not."""
    user_collective: str | None = None
    """The program's own collective this is, as the user wrote it inside
    `jax.shard_map` (`psum`, `all_gather`): no partitioner put it there, so it has
    no causes. None for the collectives the partitioner placed."""
    gradient_of: str | None = None
    """Where the backward pass made the op at `meets` (JAX's `transpose(...)` in its
    name stack), the op the user wrote there, as JAX names it: `broadcast_in_dim`
    for the `stablehlo.reduce` that sums a broadcast's gradient. None where the op
    there is the user's own."""

    @property
    def meets_label(self) -> str:
        """The op where the shardings meet, in the user's words: `dot`, `sharding
        constraint`, `gradient of the broadcast`."""
        if self.gradient_of:
            written = _USER_OPS.get(self.gradient_of, self.gradient_of)
            return f"gradient of the {written}"
        op = (self.meets_op or "op").rpartition(".")[2]
        return "sharding constraint" if op in ("reshard", "sharding_constraint") else op


_USER_OPS = {"broadcast_in_dim": "broadcast", "dot_general": "dot"}
"""JAX's primitives by the names a user knows them by."""


@dataclasses.dataclass(frozen=True)
class OriginEffect:
    """One argument, result or constraint: what it set and which collectives it
    caused."""

    origin: ShardingOrigin
    axes: tuple[str, ...]
    """The mesh axes it set, on any value."""
    values: int
    """How many values of the entry got an axis from it (itself included)."""
    collectives: tuple[int, ...]
    """The sites (indices into `Why.sites`) it is a cause of."""


@dataclasses.dataclass(frozen=True)
class SiteGroup:
    """The collective sites whose explanations read the same, word for word (a
    scanned layer's all-gathers, one per fusion of the loop body)."""

    sentence: str
    """Their one explanation (`CollectiveSite.sentence`)."""
    sites: tuple[int, ...]
    """The sites (indices into `Why.sites`), in module order."""


@dataclasses.dataclass(frozen=True)
class Why:
    """Why each collective is there, from Shardy's own origins."""

    available: bool
    """Whether Shardy's origins were read (False: GSPMD, or nothing to compile)."""
    note: str | None
    """Why the origins are missing, or what could not be tied."""
    sites: tuple[CollectiveSite, ...]
    """Every collective of the optimized module, in module order."""
    origins: tuple[OriginEffect, ...]
    """The entry arguments, the results and each constraint, in that order."""

    @property
    def groups(self) -> tuple[SiteGroup, ...]:
        """The sites grouped by their explanation, in the order each first appears."""
        grouped: dict[str, list[int]] = {}
        for index, site in enumerate(self.sites):
            grouped.setdefault(site.sentence, []).append(index)
        return tuple(SiteGroup(sentence, tuple(sites)) for sentence, sites in grouped.items())

    def sites_of(self, op: str) -> tuple[CollectiveSite, ...]:
        return tuple(site for site in self.sites if site.op == op)

"""Where each op of Shardy's dump after propagation came from: the dump carries no
locations, and the module XLA was given (`before_optimizations`, the same
compilation's) does. The two are lined up by op kind (`difflib`), the entry's ops
first, each loop as one, then each loop's condition and body with those of the loop
it lined up with, as Shardy's import leaves the module: calls inlined, a manual
computation's body kept inside its op."""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Sequence

from hloscope.ir.locations import Location
from hloscope.ir.model import TERMINATOR_NAMES, Module, Op
from hloscope.ir.shardy_model import ShardyPropagation

SHARDING_OPS = frozenset({"sdy.reshard", "sdy.sharding_constraint"})
LOOP = "stablehlo.while"
_MANUAL_BODY = "xla.sdy.manual_computation_body"
"""The functions XLA's HLO holds a manual computation's body in (called from the
entry between its `xla.sdy.GlobalToLocalShape` and `LocalToGlobalShape`)."""


def shardy_op_locations(
    propagation: ShardyPropagation, before: Module | None
) -> list[Location | None]:
    """Each Shardy op's location, from the op of `before` it lines up with: the
    entry's ops with each loop as one, then each loop's condition and body with those
    of the loop it lined up with (a scan's body and the backward pass's, which runs
    the same ops again under `jax.checkpoint`, are never lined up with each other)."""
    located: list[Location | None] = [None] * len(propagation.ops)
    if before is None or before.entry is None:
        return located
    inside: dict[int | None, list[int]] = {}
    for index, op in enumerate(propagation.ops):
        inside.setdefault(op.loop, []).append(index)

    def align(mine: list[int], theirs: Sequence[_Given]) -> None:
        keys = [_kind(propagation.ops[i].name) for i in mine]
        matcher = difflib.SequenceMatcher(
            None, keys, [given.key for given in theirs], autojunk=False
        )
        pairs = {
            block.a + k: block.b + k
            for block in matcher.get_matching_blocks()
            for k in range(block.size)
        }
        # Loops are few and keep their order: where both hold as many, the k-th is
        # the k-th (a backward pass's loop the op sequences did not line up around).
        mine_loops = [a for a, key in enumerate(keys) if key == LOOP]
        their_loops = [b for b, given in enumerate(theirs) if given.key == LOOP]
        if len(mine_loops) == len(their_loops):
            pairs.update(zip(mine_loops, their_loops, strict=True))
        for a, b in pairs.items():
            located[mine[a]] = theirs[b].location
            if keys[a] == LOOP and theirs[b].key == LOOP:
                align(inside.get(mine[a], []), theirs[b].inner)

    align(inside.get(None, []), _inlined(before))
    return located


def _kind(name: str) -> str:
    if name in SHARDING_OPS:
        return "sharding"
    if name == "sdy.constant":
        return "stablehlo.constant"
    return name


@dataclasses.dataclass(frozen=True)
class _Given:
    """An op of the module XLA was given, as Shardy's import leaves it."""

    key: str
    location: Location
    inner: tuple[_Given, ...] = ()
    """A loop's: the ops of its condition, then of its body."""


def _inlined(module: Module) -> list[_Given]:
    """The entry's ops in order with calls inlined, as Shardy's import inlines them,
    each `while` holding the ops of its condition and body; an op of a called
    function without a line takes the call's location."""

    def walk(ops: Sequence[Op], outer: Location | None, depth: int) -> list[_Given]:
        out: list[_Given] = []
        if depth > 32:
            return out
        for op in ops:
            if op.name in TERMINATOR_NAMES:
                continue
            location = _within(op.location, outer)
            target = op.custom_call_target
            if op.name == "func.call":
                for callee in op.references("callee"):
                    function = module.functions.get(callee)
                    # Shardy keeps a manual computation's body inside its op.
                    if function is not None and not callee.startswith(_MANUAL_BODY):
                        out.extend(walk(_body(function.op), location, depth + 1))
                continue
            if target in ("xla.sdy.FuncResultSharding", "xla.sdy.LocalToGlobalShape"):
                continue
            if target == "xla.sdy.GlobalToLocalShape":
                # Where XLA's import opens a manual computation (`jax.shard_map`).
                out.append(_Given("sdy.manual_computation", location))
                continue
            inner: list[_Given] = []
            if op.name == LOOP:
                for region in op.regions:
                    for block in region.blocks:
                        inner.extend(walk(block.ops, location, depth + 1))
            out.append(
                _Given("sharding" if target == "Sharding" else op.name, location, tuple(inner))
            )
        return out

    assert module.entry is not None
    return walk(_body(module.entry.op), None, 0)


def _within(location: Location, outer: Location | None) -> Location:
    """An inlined op's location: the call's where it has no line; its name under the
    call's (a called function's ops are named within it, `dot_general`, and XLA's
    inliner puts the call's name in front: `jit(f)/while/body/closed_call/dot_general`)."""
    if outer is None:
        return location
    if not location.frames:
        return outer
    if location.name and outer.name and not location.name.startswith(outer.name):
        names = (f"{outer.name}/{location.name}", *location.names[1:])
        return dataclasses.replace(location, names=names)
    return location


def _body(function: Op) -> list[Op]:
    return [op for region in function.regions for block in region.blocks for op in block.ops]

"""Why each collective is there: the optimized module's collectives joined to
Shardy's sharding origins (`hloscope.ir.shardy`).

Shardy's dump after propagation says, per value and mesh axis, what set the axis
(an argument, a requested result, a constraint), but carries no locations. The
module XLA was given (`before_optimizations`, the same compilation's dump, with its
calls inlined as Shardy inlines them) has them: the two op sequences are lined up
by op kind (`difflib`), which gives each Shardy op its source line and op name, and
each `constraint_N` its line (`why_lines`: a loop's body with the loop's).

A scanned stack of layers runs in a `while`: its body's ops are Shardy's too, and a
per-layer collective is tied to the op inside the layer. A value there that is a
slice of a stacked weight (through slices, reshapes, a checkpoint's barrier, a carry
the loop hands on unchanged) is that weight: its axes are named for the argument
(or XLA's open constraint on it where the loop reads it), whatever neighbour of the
same sharding Shardy's origins name.

A collective of the optimized module carries the op name and line of the op that
needed the data. The Shardy op with that line and name is where the shardings meet:
the mesh axes on which its operands and results disagree are those the collective
moves (checked against the size of its device groups). For each such axis the
values sharded along it give the origins that sharded it, and the others what asked
for it unsharded. A collective XLA combined from several ops names them all
(`jit(f)/(a:b)`): the Shardy op named by one of them is taken first. An op the
backward pass made (`transpose(...)` in its name) is named for the op the user
wrote (the sum of a broadcast's gradient). A collective XLA placed at a result
without a location is tied to the result it feeds. A collective the program wrote
itself inside `jax.shard_map` (`shard_map/psum` in its name) is the user's, with no
causes; Shardy's name of the manual computation (`mc_0`) is replaced by the
shard_map's line. Where none of this holds, the site says so in `note`.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Mapping, Sequence

from hloscope.analyses.fusions import split_op_name
from hloscope.analyses.placement.collectives import collective_name, program_collectives
from hloscope.analyses.placement.why_lines import LOOP, SHARDING_OPS, shardy_op_locations
from hloscope.analyses.placement.why_report import (
    AxisCause,
    CollectiveSite,
    OriginEffect,
    ShardingOrigin,
    Why,
)
from hloscope.ir.locations import Location
from hloscope.ir.model import TERMINATOR_NAMES, Module, Op
from hloscope.ir.shardy_model import (
    Origin,
    ShardyOp,
    ShardyPropagation,
    ShardyValue,
    decode_origin,
)

_BARRIER = "stablehlo.optimization_barrier"
_PASS_ON_FIRST = frozenset(
    {
        *SHARDING_OPS,
        "stablehlo.dynamic_slice",
        "stablehlo.slice",
        "stablehlo.reshape",
        "stablehlo.transpose",
        "stablehlo.convert",
        "stablehlo.copy",
    }
)
"""Ops whose result is their first operand, or a piece of it, moved or cast: a
scanned layer's slice of a stacked weight is that weight."""


def explain_collectives(
    optimized: Module,
    propagation: ShardyPropagation | None,
    before: Module | None,
    arguments: Mapping[int, tuple[str, str | None]],
    results: Mapping[int, str],
    note: str | None,
) -> Why:
    """The cause of each collective of `optimized`, from Shardy's `propagation` of the
    same compilation and the module XLA was given (`before`, for lines).
    `arguments` maps an entry argument's index to its user path and readable
    sharding (`P(None, 'model')`), `results` a result's index to its name; `note`
    says why `propagation` is missing, when it is."""
    # The collectives the program runs, as every view counts them; those across
    # slices carry no sharding of their own to explain.
    collectives = [
        (optimized.ops[c.op_id], c.kind, _location(optimized, c.op_id, c.kernel_id))
        for c in program_collectives(optimized)
        if not c.across_slices
    ]
    if propagation is None or (not propagation.ops and not propagation.values):
        sites = tuple(
            _untied(optimized, op, kind, note, location) for op, kind, location in collectives
        )
        return Why(available=False, note=note, sites=sites, origins=())
    lines = shardy_op_locations(propagation, before)
    namer = _Namer(propagation, lines, arguments, results)
    used: set[int] = set()
    mesh_axes = next(iter(propagation.meshes.values()), ())
    sites = tuple(
        _written(optimized, op, kind, mesh_axes)
        or _explain(optimized, op, kind, location, propagation, lines, namer, used)
        for op, kind, location in collectives
    )
    untied = sum(1 for site in sites if site.note)
    why_note = note
    if untied:
        why_note = (
            f"{untied} of {len(sites)} collectives could not be tied to Shardy's origins "
            "(see each one's note)"
        )
    return Why(
        available=True, note=why_note, sites=sites, origins=_effects(propagation, namer, sites)
    )


# --------------------------------------------------------------------------- lines


def _source(location: Location | None) -> str | None:
    return location.user_source if location is not None else None


# --------------------------------------------------------------------------- names


class _Namer:
    """Shardy's origins in the user's words."""

    def __init__(
        self,
        propagation: ShardyPropagation,
        lines: Sequence[Location | None],
        arguments: Mapping[int, tuple[str, str | None]],
        results: Mapping[int, str],
    ) -> None:
        self.propagation = propagation
        self.arguments = arguments
        self.results = results
        self.constraints: dict[str, tuple[str | None, ShardyValue | None]] = {}
        self.loop_constraints: dict[str, tuple[str | None, str | None, bool]] = {}
        """XLA's own constraints on what a loop reads: the loop's line, the argument,
        whether the loop is the backward pass's."""
        self.constrained_argument: dict[str, int] = {}
        """XLA's loop constraints on an entry argument: by Shardy's name, its index."""
        self._read: dict[int, tuple[int | None, str | None]] = {}
        self._made: dict[int, ShardyOp] | None = None
        self.passes_argument: dict[str, int] = {}
        """XLA's loop constraints that hand an entry argument's sharding on unchanged
        (the open constraint, `{?}`, asks nothing; Shardy still names it as the
        origin of what the loop reads, the argument's own axes included): by Shardy's
        name, the argument's index. What they set, the argument set."""
        self.manual: dict[int, str | None] = {}
        lined_up = any(location is not None for location in lines)
        for op, location in zip(propagation.ops, lines, strict=True):
            if op.origin is not None and op.origin.kind == "manual":
                self.manual.setdefault(op.origin.index or 0, _source(location))
            elif op.origin_name and op.origin_name not in self.constraints:
                value = propagation.values[op.results[0]] if op.results else None
                self.constraints[op.origin_name] = (_source(location), value)
                # Not in the module XLA was given, and read only inside a loop: the
                # open constraint XLA puts on a loop's free variable.
                if lined_up and location is None and op.read_by_loop is not None:
                    loop = lines[op.read_by_loop]
                    read = op.operands[0] if op.operands else -1
                    path = arguments.get(read, (None, None))[0]
                    if path is None and 0 <= read < propagation.arguments:
                        path = str(read)
                    # JAX names the backward pass's ops `transpose(...)`.
                    backward = loop is not None and any("transpose(" in n for n in loop.names)
                    self.loop_constraints[op.origin_name] = (_source(loop), path, backward)
                    if 0 <= read < propagation.arguments:
                        self.constrained_argument[op.origin_name] = read
                    if (
                        0 <= read < propagation.arguments
                        and value is not None
                        and value.dimensions is not None
                        and value.dimensions == propagation.values[read].dimensions
                    ):
                        self.passes_argument[op.origin_name] = read

    def argument_read(self, value: int) -> tuple[int | None, str | None]:
        """The entry argument `value` is, or a piece of (a scanned layer's slice of a
        stacked weight), through the ops that move an array without computing on it
        and a loop's carry the body hands on unchanged, and XLA's loop constraint on
        it the way passes through; (None, None) for any other value."""
        if value in self._read:
            return self._read[value]
        prop = self.propagation
        self._read[value] = (None, None)  # a loop's carry leads back to itself
        found: tuple[int | None, str | None] = (None, None)
        if 0 <= value < prop.arguments:
            found = (value, None)
        elif value >= 0:
            op = self._producers().get(value)
            if op is not None:
                position = op.results.index(value)
                # A barrier hands each operand on; a loop, a carry its body returns
                # unchanged.
                handed_on = op.name == _BARRIER or (
                    op.name == LOOP and position < len(op.carried) and op.carried[position] == value
                )
                if op.name in _PASS_ON_FIRST and op.operands:
                    found = self.argument_read(op.operands[0])
                    if op.origin_name in self.constrained_argument and found[0] is not None:
                        found = (found[0], op.origin_name)
                elif handed_on and position < len(op.operands):
                    found = self.argument_read(op.operands[position])
        self._read[value] = found
        return found

    def _producers(self) -> dict[int, ShardyOp]:
        if self._made is None:
            self._made = {v: op for op in self.propagation.ops for v in op.results}
        return self._made

    def weight(self, value: int, axis: str, origin: Origin | None) -> ShardingOrigin | None:
        """What sharded `value` along `axis`: the entry argument it is a piece of,
        where that argument is sharded along the axis itself (Shardy may name another
        value whose sharding reached it first: a stacked weight's neighbour of the
        same sharding), as XLA's loop constraint on it where the value passed through
        one; else Shardy's origin."""
        read, constraint = self.argument_read(value)
        prop = self.propagation
        if read is not None and read != value and axis in prop.values[read].axes:
            if constraint is not None:
                return self.origin(decode_origin(constraint, None))
            return self.origin(Origin("argument", read, f"input: {read}"))
        return self.origin(origin) if origin is not None else None

    def origin(self, origin: Origin) -> ShardingOrigin:
        prop = self.propagation
        if origin.kind == "argument" and origin.index is not None:
            path, words = self.arguments.get(origin.index, (None, None))
            if words is None and origin.index < prop.arguments:
                words = _dims_words(prop.values[origin.index])
            return ShardingOrigin("argument", origin.index, path, None, words)
        if origin.kind == "result" and origin.index is not None:
            value = prop.results[origin.index] if origin.index < len(prop.results) else None
            return ShardingOrigin(
                "result",
                origin.index,
                self.results.get(origin.index),
                None,
                _dims_words(value) if value is not None else None,
            )
        if origin.kind == "manual":
            # Shardy's `mc_N` is its own name: the user knows the shard_map by its line.
            source = self.manual.get(origin.index or 0)
            return ShardingOrigin("shard_map", origin.index, None, source, None)
        if origin.kind == "constraint":
            source, constrained = self.constraints.get(origin.text, (None, None))
            words = _dims_words(constrained) if constrained is not None else None
            if origin.text in self.loop_constraints:
                loop, path, backward = self.loop_constraints[origin.text]
                return ShardingOrigin(
                    "constraint",
                    origin.index,
                    origin.text,
                    loop,
                    words,
                    xla_loop_constraint=True,
                    constrains=path,
                    backward_loop=backward,
                )
            return ShardingOrigin("constraint", origin.index, origin.text, source, words)
        return ShardingOrigin("other", None, origin.text, None, None)


def _dims_words(value: ShardyValue) -> str | None:
    if value.dimensions is None:
        return None
    return (
        "["
        + ", ".join("{" + ", ".join(f'"{a}"' for a in dim) + "}" for dim in value.dimensions)
        + "]"
    )


# --------------------------------------------------------------------------- sites


def _location(module: Module, op_id: int, kernel_id: int) -> Location:
    """Where a collective came from: its own location, else that of the instruction
    that launches it (XLA leaves the all-reduce of the TPU's all-reduce-scatter
    fusion without metadata, and gives the fusion the line of the op it came from)."""
    location = module.ops[op_id].location
    if location.frames:
        return location
    launched = module.ops[kernel_id].location
    return launched if launched.frames else location


def _untied(
    module: Module, op: Op, kind: str, note: str | None, location: Location
) -> CollectiveSite:
    source = _source(location)
    where = f" at {source}" if source else ""
    reason = note or "Shardy's origins are not available"
    return CollectiveSite(
        op=kind,  # type: ignore[arg-type]
        instruction=_instruction(module, op),
        source=source,
        axes=(),
        causes=(),
        meets=None,
        meets_op=None,
        sentence=f"{kind.replace('_', '-')}{where}: no origins ({reason})",
        note=reason,
    )


def _instruction(module: Module, op: Op) -> str:
    return collective_name(module, op)


def _group_size(module: Module, op: Op) -> int | None:
    groups = module.device_groups(op)
    return len(groups[0]) if groups else None


def _written(
    module: Module, op: Op, kind: str, mesh_axes: Sequence[tuple[str, int]]
) -> CollectiveSite | None:
    """The site of a collective the program wrote itself inside `jax.shard_map`
    (JAX's name stack: `jit(f)/shard_map/psum_invariant`): no propagation placed
    it (Shardy keeps a manual computation whole), so it has no causes. None for any
    other collective."""
    written = _user_collective(op.location.name)
    if written is None:
        return None
    axes = _group_axes(module, op, mesh_axes)
    source = _source(op.location)
    over = f" over {', '.join(f'`{a}`' for a in axes)}" if axes else ""
    where = f" at {source}" if source else ""
    sentence = (
        f"{kind.replace('_', '-')}{over}{where}: your {written}{over} inside shard_map{where}"
    )
    return CollectiveSite(
        op=kind,  # type: ignore[arg-type]
        instruction=_instruction(module, op),
        source=source,
        axes=axes,
        causes=(),
        meets=None,
        meets_op=None,
        sentence=sentence,
        note=None,
        user_collective=written,
    )


_USER_COLLECTIVES = {
    "psum": "psum",
    "pmax": "pmax",
    "pmin": "pmin",
    "ppermute": "ppermute",
    "pbroadcast": "pbroadcast",
    "all_gather": "all_gather",
    "all_to_all": "all_to_all",
    "ragged_all_to_all": "ragged_all_to_all",
    "reduce_scatter": "psum_scatter",
    "unreduced_psum": "psum",
    "unreduced_reduce_scatter": "psum_scatter",
}
"""JAX's collective primitives (their `_invariant` and `_start` forms too), by the
function a user calls (`jax.lax.psum_scatter` binds `reduce_scatter`)."""


def _user_collective(name: str | None) -> str | None:
    """The collective a user called inside a shard_map, from an op's JAX name
    (`jit(f)/shard_map/psum_invariant` -> `psum`); None when the name is not one."""
    for full in _jax_names(name):
        parts = split_op_name(full)
        if len(parts) < 2 or "shard_map" not in parts[:-1]:
            continue
        primitive = parts[-1].removesuffix("_start").removesuffix("_invariant")
        if primitive in _USER_COLLECTIVES:
            return _USER_COLLECTIVES[primitive]
    return None


def _group_axes(module: Module, op: Op, mesh_axes: Sequence[tuple[str, int]]) -> tuple[str, ...]:
    """The mesh axes a collective's device groups span: explicit groups of device
    ids read on the mesh (its devices in order, as Shardy's mesh without
    `device_ids` lists them), else the one set of axes whose sizes multiply to the
    groups' size; empty when neither says."""
    groups = op.replica_groups
    sizes = [size for _, size in mesh_axes]
    total = math.prod(sizes)
    if groups is not None and groups.groups and mesh_axes:
        spans: set[tuple[str, ...]] = set()
        for group in groups.groups:
            if any(not 0 <= device < total for device in group):
                spans.clear()
                break
            where = [_coordinates(device, sizes) for device in group]
            spans.add(
                tuple(
                    name for k, (name, _) in enumerate(mesh_axes) if len({w[k] for w in where}) > 1
                )
            )
        if len(spans) == 1:
            (axes,) = spans
            if math.prod(dict(mesh_axes)[a] for a in axes) == len(groups.groups[0]):
                return axes
    size = _group_size(module, op)
    if size is None:
        return ()
    matching = [
        chosen
        for count in range(1, len(mesh_axes) + 1)
        for chosen in itertools.combinations([name for name, _ in mesh_axes], count)
        if math.prod(dict(mesh_axes)[a] for a in chosen) == size
    ]
    return matching[0] if len(matching) == 1 else ()


def _coordinates(device: int, sizes: Sequence[int]) -> tuple[int, ...]:
    """A device's index along each axis of a mesh of `sizes` (major first)."""
    out = []
    for size in reversed(sizes):
        device, k = divmod(device, size)
        out.append(k)
    return tuple(reversed(out))


def _result_fed(module: Module, op: Op) -> int | None:
    """The entry result `op`'s value becomes, through copies and tuples only."""
    entry = module.entry
    frontier = list(op.results)
    seen: set[int] = set()
    while frontier:
        value = frontier.pop()
        if value in seen:
            continue
        seen.add(value)
        for user_id in module.users(value):
            user = module.ops[user_id]
            if user.name in TERMINATOR_NAMES and entry is not None and user.function == entry.name:
                return user.operands.index(value)
            if user.name.rpartition(".")[2] in ("copy", "tuple", "get_tuple_element", "bitcast"):
                frontier.extend(user.results)
    return None


def _explain(
    module: Module,
    op: Op,
    kind: str,
    location: Location,
    prop: ShardyPropagation,
    lines: Sequence[Location | None],
    namer: _Namer,
    used: set[int],
) -> CollectiveSite:
    """`used`: the Shardy ops earlier collectives were tied to (updated here)."""
    size = _group_size(module, op)
    mesh_axes = next(iter(prop.meshes.values()), ())
    innermost = location.source
    # (Shardy op index or None, operand values, result values, where they meet, the op)
    candidates: list[tuple[int | None, tuple[int, ...], tuple[int, ...], str | None, str]] = []
    if innermost is not None:
        user = _source(location)
        names = _jax_names(location.name)

        def rank(i: int) -> tuple[bool, bool, bool, bool, int]:
            # The innermost frame of a library's layer (Flax's `Linear`) is shared by
            # every layer: the whole stack, then the user's frame and the op name tell
            # them apart; where even those agree (layers called in a loop), the order
            # does: the next collective goes to an op no earlier one took.
            theirs = lines[i]
            assert theirs is not None
            return (
                theirs.frames != location.frames,
                _source(theirs) != user,
                theirs.name not in names,
                i in used,
                i,
            )

        same_line = [
            i for i, loc in enumerate(lines) if loc is not None and loc.source == innermost
        ]
        for i in sorted(same_line, key=rank):
            shardy_op = prop.ops[i]
            candidates.append(
                (i, shardy_op.operands, shardy_op.results, _source(lines[i]), shardy_op.name)
            )
    else:
        result = _result_fed(module, op)
        if result is not None and result < len(prop.returned):
            candidates.append(
                (None, (prop.returned[result],), (-1 - result,), f"result {result}", "return")
            )
    for index, operands, results, meets, meets_op in candidates:
        factors = prop.ops[index].factors if index is not None else None
        conflicts = _conflicts(prop, operands, results, factors)
        axes = _moved_axes(prop, operands, results, size, mesh_axes, conflicts)
        if not axes:
            continue
        gradient_of = None
        if index is not None:
            used.add(index)
            gradient_of = _gradient_of(lines[index])
        causes = tuple(
            _cause(prop, namer, axis, operands, results, axis in conflicts) for axis in axes
        )
        site = CollectiveSite(
            op=kind,  # type: ignore[arg-type]
            instruction=_instruction(module, op),
            source=_source(location),
            axes=axes,
            causes=causes,
            meets=meets,
            meets_op=meets_op,
            sentence="",
            note=None,
            gradient_of=gradient_of,
        )
        return _with_sentence(site)
    tried = sorted({meets_op.rpartition(".")[2] for *_, meets_op in candidates})
    reason = (
        "no op of Shardy's propagation at its line "
        f"({', '.join(tried)}) disagrees on a mesh axis of its size"
        + (f" ({size} devices)" if size else "")
        + ": Shardy's shardings there do not account for it"
        if candidates
        else "XLA gave it no line, and it feeds no result directly"
        if innermost is None
        else "no op of Shardy's propagation lines up with its line"
    )
    return _untied(module, op, kind, reason, location)


def _jax_names(name: str | None) -> frozenset[str]:
    """The JAX op names an optimized op's name holds: XLA joins those of the ops it
    merges with `;` (a fusion) or as `jit(f)/(a:b)` under their common prefix (a
    combined all-reduce: `jit(f)/(transpose(jvp())/reduce_sum:jvp()/reduce_sum)`)."""
    out: set[str] = set()
    for part in (name or "").split(";"):
        parts = split_op_name(part)
        last = parts[-1] if parts else ""
        if last.startswith("(") and last.endswith(")"):
            prefix = "/".join(parts[:-1])
            out.update(f"{prefix}/{inner}" if prefix else inner for inner in _split_top(last[1:-1]))
        elif part:
            out.add(part)
    return frozenset(out)


def _split_top(text: str) -> list[str]:
    """`a(b:c):d` -> [`a(b:c)`, `d`]: split at the colons outside parentheses."""
    parts: list[str] = []
    depth = start = 0
    for i, ch in enumerate(text):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if ch == ":" and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p for p in parts if p]


def _gradient_of(location: Location | None) -> str | None:
    """The primitive the user wrote whose transpose (the backward pass: a
    `transpose(...)` of JAX's name stack) made the op at `location`. JAX transposes
    a broadcast into a `reduce_sum` (the sum of its gradient over the dimensions it
    broadcast along), and a `reduce_sum` only arises there so; other ops keep the
    name of the primitive transposed."""
    parts = split_op_name(location.name or "") if location is not None else []
    if len(parts) < 2 or not any(p.startswith("transpose(") for p in parts[:-1]):
        return None
    if "rematted_computation" in parts[:-1]:
        # `jax.checkpoint`'s forward op, run again in the backward pass: the user's own.
        return None
    return "broadcast_in_dim" if parts[-1] == "reduce_sum" else parts[-1]


def _value(prop: ShardyPropagation, index: int) -> ShardyValue | None:
    if index < 0:  # a result's requested sharding
        k = -1 - index
        return prop.results[k] if k < len(prop.results) else None
    return prop.values[index] if index < len(prop.values) else None


def _conflicts(
    prop: ShardyPropagation,
    operands: Sequence[int],
    results: Sequence[int],
    factors: tuple[tuple[tuple[int, ...], ...], ...] | None,
) -> frozenset[str]:
    """The mesh axes that shard dimensions of different factors of the op's sharding
    rule (a dot's `x` split along its rows and `w` along the contracted dimension,
    over one axis): present on both sides, they still move."""
    if factors is None or len(factors) != len(operands) + len(results):
        return frozenset()
    seen: dict[str, set[tuple[int, ...]]] = {}
    for index, dims in zip((*operands, *results), factors, strict=True):
        value = _value(prop, index)
        if value is None or value.dimensions is None:
            continue
        for axes, factor in zip(value.dimensions, dims, strict=False):
            for axis in axes:
                seen.setdefault(axis, set()).add(factor)
    return frozenset(axis for axis, found in seen.items() if len(found) > 1)


def _moved_axes(
    prop: ShardyPropagation,
    operands: Sequence[int],
    results: Sequence[int],
    size: int | None,
    mesh_axes: Sequence[tuple[str, int]],
    conflicts: frozenset[str] = frozenset(),
) -> tuple[str, ...]:
    """The mesh axes operands and results disagree on (or that shard different
    factors of the op: `conflicts`), of the collective's size."""
    inputs = {a for v in operands if (value := _value(prop, v)) for a in value.axes}
    outputs = {a for v in results if (value := _value(prop, v)) for a in value.axes}
    differ = [
        name for name, _ in mesh_axes if (name in inputs) != (name in outputs) or name in conflicts
    ]
    if size is None:
        return tuple(differ)
    sizes = dict(mesh_axes)
    for count in range(1, len(differ) + 1):
        for chosen in itertools.combinations(differ, count):
            total = 1
            for axis in chosen:
                total *= sizes[axis]
            if total == size:
                return chosen
    return ()


def _cause(
    prop: ShardyPropagation,
    namer: _Namer,
    axis: str,
    operands: Sequence[int],
    results: Sequence[int],
    conflict: bool = False,
) -> AxisCause:
    sharded: list[ShardingOrigin] = []
    unsharded: list[ShardingOrigin] = []
    for index in (*operands, *results):
        value = _value(prop, index)
        if value is None:
            continue
        if axis in value.axes:
            named = namer.weight(index, axis, value.origins.get(axis))
            if named is not None:
                sharded.append(named)
        elif value.dimensions is not None and index in results:
            # What the op must produce: an operand without the axis asks nothing.
            unsharded.extend(namer.origin(o) for o in _setters(prop, index, value))
    return AxisCause(axis, _distinct(sharded), _distinct(unsharded), conflict)


def _setters(prop: ShardyPropagation, index: int, value: ShardyValue) -> list[Origin]:
    """What set `value`'s sharding as a whole: the argument, result or constraint it
    is, else the origins of its axes."""
    if index < 0:
        return [Origin("result", -1 - index, f"output: {-1 - index}")]
    if index < prop.arguments:
        return [Origin("argument", index, f"input: {index}")]
    for op in prop.ops:
        if index in op.results and op.origin is not None:
            return [op.origin]
    return list(value.origins.values())


def _distinct(origins: Sequence[ShardingOrigin]) -> tuple[ShardingOrigin, ...]:
    return tuple(dict.fromkeys(origins))


def _with_sentence(site: CollectiveSite) -> CollectiveSite:

    kind = site.op.replace("_", "-")
    axes = ", ".join(f"`{a}`" for a in site.axes)
    where = f" at {site.source}" if site.source else ""
    meets_op = site.meets_label if site.meets_op else ""
    at_meets = f" at {site.meets}" if site.meets else ""
    through = (
        f" through the {meets_op} at {site.meets}"
        if site.meets and not site.meets.startswith("result")
        else ""
    )
    parts = []
    for cause in site.causes:
        sharded = _labels(cause.sharded_by) or "the propagation"
        if cause.conflict and not cause.unsharded_by:
            verb = "shard" if len(cause.sharded_by) > 1 else "shards"
            parts.append(
                f"{sharded} {verb} different dimensions of the {meets_op or 'op'}"
                f"{at_meets} along `{cause.axis}`"
            )
        elif cause.unsharded_by and site.op not in ("all_reduce", "reduce_scatter"):
            asks = _labels(cause.unsharded_by, with_sharding=False)
            verb = "asks" if len(cause.unsharded_by) == 1 else "ask"
            parts.append(
                f"{asks} {verb} for the value unsharded along `{cause.axis}`, "
                f"which it got from {sharded}{through}"
            )
        elif site.gradient_of == "broadcast_in_dim":
            parts.append(
                f"the {meets_op}{at_meets} sums over the dimension the broadcast added, "
                f"sharded along `{cause.axis}` by {sharded}"
            )
        else:
            parts.append(
                f"the {meets_op or 'op'}{at_meets} reduces a "
                f"dimension sharded along `{cause.axis}` by {sharded}"
            )
    sentence = f"{kind} over {axes}{where}: " + "; ".join(parts)
    return dataclasses.replace(site, sentence=sentence)


def _labels(origins: Sequence[ShardingOrigin], *, with_sharding: bool = True) -> str:
    words = [
        o.label
        + (f" ({o.sharding})" if with_sharding and o.sharding and o.kind == "argument" else "")
        for o in origins
    ]
    return " and ".join(words)


# --------------------------------------------------------------------------- origins


def _effects(
    prop: ShardyPropagation, namer: _Namer, sites: Sequence[CollectiveSite]
) -> tuple[OriginEffect, ...]:
    """The arguments, results and constraints, each with what it set and caused."""
    keys: list[Origin] = []
    for index in range(prop.arguments):
        keys.append(Origin("argument", index, f"input: {index}"))
    for index in range(len(prop.results)):
        keys.append(Origin("result", index, f"output: {index}"))
    named: dict[str, None] = {}
    for op in prop.ops:
        if op.origin is not None and op.origin.text not in named:
            named[op.origin.text] = None
            keys.append(op.origin)
    out: list[OriginEffect] = []
    everything = (*prop.values, *prop.results)
    for key in keys:
        origin = namer.origin(key)
        # An argument also set what XLA's loop constraints on it handed on (the
        # stacked weights a scan's loop reads).
        passed = {
            namer.origin(decode_origin(name, None))
            for name, argument in namer.passes_argument.items()
            if key.kind == "argument" and argument == key.index
        }
        mine = {origin, *passed}
        axes: dict[str, None] = {}
        values = 0
        for value in everything:
            touched = [a for a, o in value.origins.items() if namer.origin(o) in mine]
            if touched:
                values += 1
                axes.update(dict.fromkeys(touched))
        caused = tuple(
            i
            for i, site in enumerate(sites)
            if any(not mine.isdisjoint((*c.sharded_by, *c.unsharded_by)) for c in site.causes)
        )
        out.append(OriginEffect(origin, tuple(axes), values, caused))
    return tuple(out)

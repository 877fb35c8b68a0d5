"""Compute types and compute regions: where each op runs.

An op runs on `device` unless marked (its own `_xla_compute_type` or
`_xla_stream_annotation` frontend attribute, or its function's
`execution_thread`). A mark holds for the ops in the marked op's regions and,
on a call, for everything the called functions reach. Walking from the module's
roots gives each op one context per way it is reached (`Context`); an op
reached from differently placed calls gets the types joined (`device|host`).
The non-device ops are then grouped into regions by what placed them."""

from __future__ import annotations

import dataclasses
from collections import deque
from collections.abc import Collection, Mapping, Sequence

from hloscope.analyses.placement.attributes import function_thread
from hloscope.analyses.placement.report import DEVICE, ComputeRegion, PlacedOp, Via
from hloscope.analyses.placement.scan import PlacementScan
from hloscope.analyses.placement.values import sum_bytes, unique
from hloscope.analyses.structure import op_callees
from hloscope.ir.model import Function, Module, Op


def _roots(module: Module) -> list[Function]:
    roots = [
        f for f in module.functions.values() if f.visibility == "public" and not f.is_declaration
    ]
    if not roots and module.entry is not None:
        roots = [module.entry]
    return roots


@dataclasses.dataclass
class Context:
    """One way an op is placed: its compute type, how it got it, and what placed it."""

    compute_type: str
    via: Via
    anchor: int | None
    """The op that placed it: a marked op, or the outermost marked call."""


@dataclasses.dataclass(frozen=True)
class Contexts:
    """How the ops of the reachable functions are placed (`compute_contexts`).

    Every op of a reachable function has one context per way it is reached. Those
    of device compute away from any mark are not written out, since only their
    compute type tells: an op of `contexts` also reached that way is in
    `also_device`, and an op in neither is device compute alone."""

    contexts: Mapping[int, list[Context]]
    """Op id -> its contexts other than unmarked device ones, in order of walk."""
    also_device: frozenset[int]
    """Ops of `contexts` that are also unmarked device compute."""
    functions: list[str]
    """The reachable functions, in order of first visit."""

    def label(self, op_id: int) -> str:
        """The op's compute type: its types joined (`device|host`)."""
        types = {c.compute_type for c in self.contexts.get(op_id, ())}
        if not types or op_id in self.also_device:
            types.add(DEVICE)
        return compute_label(types)


def compute_contexts(module: Module, scan: PlacementScan) -> Contexts:
    """Contexts of the ops of the reachable functions, and those functions in order
    of first visit.

    Walking a function on the device, only its calls and its marked ops (with what
    they hold) can place anything elsewhere: the rest gets an unmarked device
    context, left implicit, and costs nothing. Walking it anywhere else places every
    op. Either way the functions are visited, and their calls followed, in the same
    order as a walk of every op."""
    names = module.functions
    ops = module.ops
    marks = scan.marks
    callees_of = scan.callees
    op_contexts: dict[int, list[Context]] = {}
    # A function is walked once per compute type: a second call placing it the same
    # way adds nothing but the call (its ops stay in the first call's region).
    seen: set[tuple[str, str]] = set()
    order: dict[str, None] = {}
    work: deque[tuple[str, Context]] = deque()
    # Functions walked on the device, with the marked ops whose subtrees that walk
    # placed one by one; and functions walked elsewhere too.
    on_device: dict[str, list[Op]] = {}
    elsewhere: set[str] = set()

    def push(name: str, context: Context) -> None:
        function = names[name]
        thread = function_thread(function)
        if thread is not None:
            context = Context(thread, "thread", None)
        key = (name, context.compute_type)
        if key in seen:
            return
        seen.add(key)
        work.append((name, context))

    # Contexts are immutable in use: one object per distinct context, not per op.
    interned: dict[tuple[str, str, int | None], Context] = {}

    def shared(compute_type: str, via: Via, anchor: int | None) -> Context:
        key = (compute_type, via, anchor)
        found = interned.get(key)
        if found is None:
            found = interned[key] = Context(compute_type, via, anchor)
        return found

    def walk(walked: Sequence[Op], context: Context) -> None:
        """Place each op of `walked` (whole subtrees, in pre-order) in `context`."""
        local: dict[int, Context] = {}
        for op in walked:
            parent = op.parent
            inherited = local.get(parent.id) if parent is not None else None
            own = marks.get(op.id)
            around = inherited or context
            if own is not None:
                # A mark repeating the placement around it stays in that region.
                same = own == around.compute_type and around.anchor is not None
                current = Context(own, "mark", around.anchor if same else op.id)
            elif inherited is not None:
                current = shared(inherited.compute_type, "region", inherited.anchor)
            elif context.via in ("default", "thread"):
                current = context
            else:
                current = shared(context.compute_type, "call", context.anchor)
            local[op.id] = current
            placed = op_contexts.get(op.id)
            if placed is None:
                op_contexts[op.id] = [current]
            else:
                placed.append(current)
            for callee in callees_of.get(op.id, ()):
                push(callee, Context(current.compute_type, "call", current.anchor))

    for root in _roots(module):
        push(root.name, Context(DEVICE, "default", None))
    while work:
        name, context = work.popleft()
        function = names[name]
        if function.is_declaration:
            continue
        order.setdefault(name)
        if context.compute_type != DEVICE:
            elsewhere.add(name)
            walk(module.function_ops(function), context)
            continue
        # On the device: an unmarked op away from marks stays on the device, in a
        # context of the walk's compute type and anchor (whatever its `via`).
        subtrees = on_device[name] = []
        call = Context(DEVICE, "call", context.anchor)
        end = 0
        for op in scan.within(function.op.id + 1, function.op.end):
            if op.id < end:
                continue  # inside a marked subtree, placed with it
            if op.id in marks:
                subtrees.append(op)
                end = op.end
                walk(ops[op.id : op.end], context)
            else:
                for callee in callees_of.get(op.id, ()):
                    push(callee, call)

    also_device: set[int] = set()
    for name in elsewhere.intersection(on_device):
        # Placed elsewhere by one walk, on the device by the other (outside the
        # marked subtrees, which that walk placed one by one).
        function = names[name]
        first = function.op.id + 1
        for subtree in on_device[name]:
            also_device.update(range(first, subtree.id))
            first = subtree.end
        also_device.update(range(first, function.op.end))
    return Contexts(op_contexts, frozenset(also_device), list(order))


def compute_label(types: Collection[str]) -> str:
    """Compute types joined, the device first: `device|host`."""
    return "|".join(sorted(types, key=lambda k: (k != DEVICE, k)))


def compute_regions(
    module: Module,
    placed: Sequence[PlacedOp],
    contexts: Mapping[int, list[Context]],
    host_values: Mapping[int, str],
) -> list[ComputeRegion]:
    names = module.functions
    groups: dict[tuple[str, str, object], list[PlacedOp]] = {}
    for placed_op in placed:
        context = next(c for c in contexts[placed_op.op_id] if c.compute_type != DEVICE)
        anchor = module.ops[context.anchor] if context.anchor is not None else None
        # Grouped by the placement itself: an op also reached from device code
        # (`device|host`) belongs to the host call that reaches it.
        if anchor is not None and op_callees(anchor, names, fused=True):
            key: tuple[str, str, object] = (context.compute_type, "call", anchor.id)
        else:
            key = (context.compute_type, "function", placed_op.function)
        groups.setdefault(key, []).append(placed_op)
    regions: list[ComputeRegion] = []
    for (compute_type, how, anchor_key), members in groups.items():
        ids = {m.op_id for m in members}
        called_from = call_source = None
        if how == "call":
            call = module.ops[int(anchor_key)]  # type: ignore[call-overload]
            function = op_callees(call, names, fused=True)[0]
            called_from = call.function
            call_source = call.location.source
            inputs = [v for v in call.operands if v >= 0]
        else:
            function = str(anchor_key)
            inputs = []
            for op_id in sorted(ids):
                for value in module.ops[op_id].operands:
                    if value < 0 or module.value_owner[value] in ids:
                        continue
                    owner = module.defining_op(value)
                    if owner is not None and owner.short_name == "constant":
                        continue
                    inputs.append(value)
        inputs = list(dict.fromkeys(inputs))
        if how == "call":
            outputs = list(module.ops[int(anchor_key)].results)  # type: ignore[call-overload]
        else:
            outputs = [
                value
                for op_id in sorted(ids)
                for value in module.ops[op_id].results
                if any(user not in ids for user in module.users(value))
            ]
        regions.append(
            ComputeRegion(
                compute_type=compute_type,
                function=function,
                called_from=called_from,
                call_source=call_source,
                ops=len(members),
                op_ids=tuple(sorted(ids)),
                sources=unique(m.source for m in members),
                input_bytes=sum_bytes(module, inputs),
                device_input_bytes=sum_bytes(module, [v for v in inputs if v not in host_values]),
                output_bytes=sum_bytes(module, outputs),
            )
        )
    return regions

"""Where each piece of a module runs and where its data lives (BRIEF.md, bug 1).

Computes, from the model alone:

- the compute type of every op: `device` unless marked. Marks are
  `_xla_compute_type` in an op's `mhlo.frontend_attributes` (what
  `compute_on("device_host")` writes: `host`; HLO's `frontend_attributes={...}`
  becomes the same attribute when converted), `_xla_stream_annotation` (GPU
  streams, shown as `gpu_stream:N`), and an `execution_thread` other than `main`
  on a function (XLA's host offloading moves host calls to the `host` thread). A
  mark on an op holds for the ops in its regions, and a mark on a call (or any op
  naming functions: `func.call`, `called_computations`, ...) for everything the
  called functions contain, transitively. Unknown compute types are kept as they
  are; an op in a function reached from differently placed calls gets the types
  joined with `|` (`device|host`).
- compute regions: the ops of each non-device compute type grouped by what placed
  them (one marked call and what it reaches, or the marked ops of one function),
  with their source lines and the bytes they read from outside.
- memory: `mhlo.memory_kind` on the entry function's arguments and results and the
  memory space of their layout (`S(5)` is host memory, recorded by
  `hloscope.ir.context` because XLA's conversion drops it); transfers:
  `annotate_device_placement` custom calls (`_xla_buffer_placement`),
  `MoveToHost`/`MoveToDevice`, copies between memory spaces in optimized HLO
  (`xla_shape` layouts with `S(n)`), and Python host callbacks.
- sharding: meshes (`sdy.mesh`, or `xla.sdy.meshes` in HLO's frontend attributes),
  the sharding of each argument and result (`sdy.sharding`, `mhlo.sharding`, or
  the `mhlo.spmd_*` shardings of a partitioned module), sharding constraints
  (`sdy.sharding_constraint`, `sdy.reshard`, `custom_call @Sharding`), manual
  computations (`sdy.manual_computation`, `@SPMDFullToShardShape` and
  `@SPMDShardToFullShape`); and collectives (all-reduce, all-gather,
  reduce-scatter, all-to-all, collective-permute, collective-broadcast, ragged
  all-to-all), their async forms counted with them.
- warnings: a call marked for a compute type whose body has no op with that mark
  (only the call says where it runs), device compute reading a value in host
  memory (an implicit transfer), and a host region fed by large device values (a
  device-to-host copy on every call).

Only functions reachable from the module's public functions are read, as in
`hloscope.analyses.structure`, so the `fused_computation` copies that XLA's
converter leaves beside `mhlo.fusion` regions are not counted twice.
"""

from __future__ import annotations

import dataclasses
import re
from collections import Counter, deque
from collections.abc import Iterable, Mapping, Sequence
from types import MappingProxyType

from hloscope.analyses.structure import op_callees
from hloscope.ir.model import (
    ENTRY_SHAPE_ATTRIBUTE,
    Argument,
    Function,
    Module,
    Op,
    is_computation,
    parse_dict_attribute,
    parse_type,
    split_top_level,
    string_attribute,
    type_bytes,
)

DEVICE = "device"
HOST = "host"

# Bytes of device values feeding a host region from which it is worth a warning.
LARGE_HOST_INPUT_BYTES = 1 << 20

# Memory kinds (JAX) that are host memory, and XLA's host memory space.
HOST_MEMORY_KINDS = frozenset({"pinned_host", "unpinned_host", "host"})
HOST_MEMORY_SPACE = 5

COLLECTIVES = (
    "all_reduce",
    "all_gather",
    "reduce_scatter",
    "all_to_all",
    "collective_permute",
    "collective_broadcast",
    "ragged_all_to_all",
)

# Ops that only move, annotate or re-shard a value: reading a host value with one
# of them is not device compute on it.
_NOT_COMPUTE_TARGETS = frozenset(
    {
        "annotate_device_placement",
        "MoveToHost",
        "MoveToDevice",
        "Sharding",
        "SPMDFullToShardShape",
        "SPMDShardToFullShape",
        "LocalToGlobal",
        "GlobalToLocal",
    }
)
# Ops (by name without dialect, `-` as `_`) that pass values on: a value in host
# memory they read is read by what they call or return to.
_PASS_THROUGH_OPS = frozenset(
    {
        "sharding_constraint",
        "reshard",
        "optimization_barrier",
        "call",
        "while",
        "case",
        "if",
        "conditional",
        "async_start",
        "async_done",
        "custom_call_start",
        "custom_call_done",
        "parameter",
        "return",
    }
)
# Ops that only move or re-lay data: how XLA's host offloading reads and writes host
# buffers (a dynamic-update-slice into an offloaded buffer), not compute.
_DATA_MOVEMENT = frozenset(
    {
        "bitcast",
        "bitcast_convert",
        "reshape",
        "copy",
        "transpose",
        "slice",
        "dynamic_slice",
        "dynamic_update_slice",
        "concatenate",
        "pad",
        "get_tuple_element",
        "tuple",
    }
)
# A quick filter on op names before `collective_kind` looks closer.
_COLLECTIVE_NAME = re.compile(r"all[_-]|reduce[_-]scatter|collective|custom[_-]call")
_CALLBACK_TARGET = re.compile(r"python_(cpu|gpu)_callback")
_MEMORY_SPACE = re.compile(r"S\((\d+)\)")


# --------------------------------------------------------------------------- reports


@dataclasses.dataclass(frozen=True)
class PlacedOp:
    """An op whose compute type is not the default `device`."""

    op_id: int
    """Its index in `Module.ops`."""
    function: str
    op: str
    """Op name: `stablehlo.sine`."""
    compute_type: str
    """`host`, `gpu_stream:1`, `device|host` (reached from differently placed calls)."""
    via: str
    """How it got the compute type: `mark` (its own attribute), `region` (an
    enclosing op's mark), `call` (a marked call reaches its function) or `thread`
    (its function's `execution_thread`)."""
    name: str | None
    """JAX's op name (`jit(f)/sin`) or the HLO instruction's name."""
    source: str | None
    """`file.py:LINE`."""


@dataclasses.dataclass(frozen=True)
class ComputeRegion:
    """Ops of one non-device compute type placed there by one thing: a marked call
    (with everything it reaches), or the marks in one function."""

    compute_type: str
    function: str
    """Where the ops are: the called function of a marked call, else the function
    holding the marked ops."""
    called_from: str | None
    """For a marked call: the function making the call."""
    call_source: str | None
    """For a marked call: its source line."""
    ops: int
    """Ops in the region (the marked call itself included)."""
    op_ids: tuple[int, ...]
    sources: tuple[str, ...]
    """Distinct source lines of its ops, in order."""
    input_bytes: int | None
    """Bytes of the values it reads from outside (constants excluded); None when a
    size is unknown."""
    device_input_bytes: int | None
    """Of those, bytes not in host memory: what must be copied from the device."""
    output_bytes: int | None
    """Bytes of its values read outside it."""


@dataclasses.dataclass(frozen=True)
class MemoryPlacement:
    """The memory kind of an entry argument or result."""

    kind: str
    """`argument` or `result`."""
    index: int
    value: str
    """`%arg0`, `result 0`."""
    name: str | None
    """JAX's name for it: the argument's pytree path (`x`), `jax.result_info`."""
    memory_kind: str
    """`pinned_host`, `device`, `unpinned_host` (from `mhlo.memory_kind`), or the
    layout's memory space `S(5)` when no kind is given."""
    memory_space: int | None
    """The memory space of its layout (`S(n)`), when known."""
    host: bool
    """Whether it is host memory."""
    shape: str
    bytes: int | None


@dataclasses.dataclass(frozen=True)
class Transfer:
    """One op that moves data between memories, or between device and host."""

    kind: str
    """`annotate_device_placement`, `MoveToHost`, `MoveToDevice`, `copy`,
    `copy-start` (async), `host_callback`."""
    source_memory: str
    """Where the data is before: `device`, `pinned_host`, `S(5)`, ..."""
    target_memory: str
    """Where the op puts it."""
    moves: bool
    """False when both are the same kind of memory (an annotation that keeps a
    device value on the device)."""
    shape: str
    bytes: int | None
    function: str
    op_id: int
    name: str | None
    sources: tuple[str, ...]
    detail: str
    """One line for people: `f32[8,128] 4.0 KiB device -> pinned_host`."""


@dataclasses.dataclass(frozen=True)
class Mesh:
    """A device mesh."""

    name: str
    axes: tuple[tuple[str, int], ...]
    """(axis name, size), in order."""
    devices: int
    """Product of the axis sizes."""
    text: str
    """As printed: `<["data"=4, "model"=2]>`."""


@dataclasses.dataclass(frozen=True)
class ShardingAnnotation:
    """A sharding written in the module."""

    kind: str
    """`argument`, `result`, `constraint`, `reshard`, `full_to_shard`, `shard_to_full`."""
    value: str
    """`%arg0`, `result 0`, or the constrained value (`%3`)."""
    name: str | None
    """JAX's name: the argument's path, the result's info, the op's name."""
    function: str
    sharding: str
    """As written: `#sdy.sharding<@mesh, [{"data"}, {}]>`, `{devices=[4,1,2]<=[8]}`."""
    source: str | None


@dataclasses.dataclass(frozen=True)
class ManualComputation:
    """An `sdy.manual_computation` (what `jax.shard_map` lowers to with Shardy)."""

    function: str
    manual_axes: str
    in_shardings: str
    out_shardings: str
    ops: int
    """Ops in its body."""
    source: str | None


@dataclasses.dataclass(frozen=True)
class Collective:
    """The collectives of one kind."""

    op: str
    """`all_reduce`, `all_gather`, `reduce_scatter`, `all_to_all`,
    `collective_permute`, `collective_broadcast`, `ragged_all_to_all`."""
    count: int
    async_count: int
    """How many of them run asynchronously (inside async start/done pairs, or HLO's
    `all-reduce-start` forms)."""
    bytes: int | None
    """Bytes of their results together (per device once partitioned); None when a
    size is unknown."""
    functions: tuple[str, ...]
    sources: tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class PlacementWarning:
    """Something that looks wrong."""

    kind: str
    """`call_mark_not_in_body`, `device_compute_on_host_memory`, `large_host_input`."""
    message: str
    function: str | None
    sources: tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class Placement:
    """Compute placement, memory kinds, transfers, shardings and collectives of a
    module."""

    compute_types: Mapping[str, int]
    """Op count per compute type, `device` first, then most frequent."""
    total_ops: int
    placed_ops: tuple[PlacedOp, ...]
    """Every op not on `device`, in module order: what to compare between two
    modules of the same function."""
    regions: tuple[ComputeRegion, ...]
    """Non-device compute regions, in module order."""
    memory: tuple[MemoryPlacement, ...]
    """Entry arguments and results that carry a memory kind or memory space."""
    transfers: tuple[Transfer, ...]
    meshes: tuple[Mesh, ...]
    shardings: tuple[ShardingAnnotation, ...]
    """Shardings of arguments, results, constraints and manual-computation edges."""
    op_shardings: int
    """Other ops that carry a sharding (`mhlo.sharding`, `sdy.sharding`)."""
    manual_computations: tuple[ManualComputation, ...]
    collectives: tuple[Collective, ...]
    partitions: int | None
    """`mhlo.num_partitions`, when the module says."""
    replicas: int | None
    warnings: tuple[PlacementWarning, ...]

    @property
    def host_regions(self) -> tuple[ComputeRegion, ...]:
        return tuple(r for r in self.regions if r.compute_type == HOST)

    @property
    def other_regions(self) -> tuple[ComputeRegion, ...]:
        return tuple(r for r in self.regions if r.compute_type != HOST)

    @property
    def is_plain(self) -> bool:
        """Nothing to tell: every op on the device, no memory kinds, transfers,
        shardings, collectives or warnings."""
        return not (
            self.placed_ops
            or self.memory
            or self.transfers
            or self.meshes
            or self.shardings
            or self.op_shardings
            or self.manual_computations
            or self.collectives
            or self.warnings
        )


# --------------------------------------------------------------------------- helpers


def own_compute_type(op: Op) -> str | None:
    """The compute type an op's own attributes give it, or None."""
    attributes = op.attributes
    text = attributes.get("mhlo.frontend_attributes") or attributes.get("frontend_attributes")
    if not text or "_xla_" not in text:
        return None
    entries = parse_dict_attribute(text)
    stream = entries.get("_xla_stream_annotation")
    if stream is not None:
        return f"gpu_stream:{stream}"
    return entries.get("_xla_compute_type")


def _frontend_attribute(op: Op, key: str) -> str | None:
    text = op.attributes.get("mhlo.frontend_attributes") or op.attributes.get("frontend_attributes")
    if not text or key not in text:
        return None
    return parse_dict_attribute(text).get(key)


def function_thread(function: Function) -> str | None:
    """A function's `execution_thread` when it is not the main one."""
    text = function.op.attributes.get("execution_thread")
    if text is None:
        return None
    thread = string_attribute(text)
    return None if thread == "main" else thread


def custom_call_target(op: Op) -> str | None:
    """The target of a custom call (`MoveToHost`), None for other ops."""
    if "custom" in op.name and op.short_name in ("custom_call", "custom-call"):
        text = op.attributes.get("call_target_name") or op.attributes.get("custom_call_target")
        return string_attribute(text) if text is not None else None
    return None


def memory_space(xla_shape: str | None) -> int | None:
    """The memory space of an HLO shape's layout (`f32[4]{0:S(5)}` -> 5); 0 when the
    layout names none; None without a layout or for tuples."""
    if not xla_shape:
        return None
    shape = string_attribute(xla_shape)
    if shape.startswith("(") or "{" not in shape:
        return None
    match = _MEMORY_SPACE.search(shape[shape.index("{") :])
    return int(match.group(1)) if match else 0


def _tuple_parts(xla_shape: str) -> list[str]:
    shape = string_attribute(xla_shape).strip()
    if not (shape.startswith("(") and shape.endswith(")")):
        return [shape]
    parts: list[str] = []
    depth = 0
    start = 1
    for i in range(1, len(shape) - 1):
        ch = shape[i]
        if ch in "({[":
            depth += 1
        elif ch in ")}]":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(shape[start:i].strip())
            start = i + 1
    parts.append(shape[start:-1].strip())
    return parts


def _space_name(space: int) -> str:
    return f"S({space})"


def _is_host_kind(kind: str) -> bool:
    return kind in HOST_MEMORY_KINDS or kind == _space_name(HOST_MEMORY_SPACE)


def human_size(nbytes: int | None) -> str:
    """`4.0 KiB`; `?` when unknown."""
    if nbytes is None:
        return "?"
    size = float(nbytes)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(size) < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} TiB"


def _int_attribute(text: str | None) -> int | None:
    match = re.match(r"\s*(\d+)", text or "")
    return int(match.group(1)) if match else None


def _sum_bytes(module: Module, values: Iterable[int]) -> int | None:
    total = 0
    for value in values:
        size = type_bytes(module.value_types[value])
        if size is None:
            return None
        total += size
    return total


def _unique(items: Iterable[str | None]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(item for item in items if item))


def _roots(module: Module) -> list[Function]:
    roots = [
        f for f in module.functions.values() if f.visibility == "public" and not f.is_declaration
    ]
    if not roots and module.entry is not None:
        roots = [module.entry]
    return roots


# --------------------------------------------------------------------------- compute types


@dataclasses.dataclass
class _Context:
    compute_type: str
    via: str
    anchor: int | None
    """The op that placed it: a marked op, or the outermost marked call."""


def _compute_contexts(
    module: Module,
) -> tuple[dict[int, list[_Context]], list[str]]:
    """Contexts of every op of the reachable functions, and those functions in order
    of first visit."""
    names = module.functions
    op_contexts: dict[int, list[_Context]] = {}
    # A function is walked once per compute type: a second call placing it the same
    # way adds nothing but the call (its ops stay in the first call's region).
    seen: set[tuple[str, str]] = set()
    order: dict[str, None] = {}
    work: deque[tuple[str, _Context]] = deque()

    def push(name: str, context: _Context) -> None:
        function = names[name]
        thread = function_thread(function)
        if thread is not None:
            context = _Context(thread, "thread", None)
        key = (name, context.compute_type)
        if key in seen:
            return
        seen.add(key)
        work.append((name, context))

    # Contexts are immutable in use: one object per distinct context, not per op.
    interned: dict[tuple[str, str, int | None], _Context] = {}

    def shared(compute_type: str, via: str, anchor: int | None) -> _Context:
        key = (compute_type, via, anchor)
        found = interned.get(key)
        if found is None:
            found = interned[key] = _Context(compute_type, via, anchor)
        return found

    for root in _roots(module):
        push(root.name, _Context(DEVICE, "default", None))
    while work:
        name, context = work.popleft()
        function = names[name]
        if function.is_declaration:
            continue
        order.setdefault(name)
        local: dict[int, _Context] = {}
        for op in module.function_ops(function):
            parent = op.parent
            inherited = local.get(parent.id) if parent is not None else None
            own = own_compute_type(op)
            around = inherited or context
            if own is not None:
                # A mark repeating the placement around it stays in that region.
                same = own == around.compute_type and around.anchor is not None
                current = _Context(own, "mark", around.anchor if same else op.id)
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
            for callee in op_callees(op, names, fused=True):
                push(callee, _Context(current.compute_type, "call", current.anchor))
    return op_contexts, list(order)


def _label(contexts: Sequence[_Context]) -> str:
    if len(contexts) == 1:
        return contexts[0].compute_type
    kinds = sorted({c.compute_type for c in contexts}, key=lambda k: (k != DEVICE, k))
    return "|".join(kinds)


# --------------------------------------------------------------------------- memory


def _entry_memory(module: Module) -> tuple[list[MemoryPlacement], dict[int, str]]:
    """Memory kinds of the entry function's arguments and results, and the argument
    values in host memory (value -> memory kind)."""
    entry = module.entry
    out: list[MemoryPlacement] = []
    host_values: dict[int, str] = {}
    if entry is None:
        return out, host_values
    for kind, items in (("argument", entry.arguments), ("result", entry.results)):
        for item in items:
            attributes = item.attributes
            memory_kind = attributes.get("mhlo.memory_kind")
            space = memory_space(attributes.get(ENTRY_SHAPE_ATTRIBUTE))
            if memory_kind is None and not space:
                continue
            kind_text = (
                string_attribute(memory_kind)
                if memory_kind is not None
                else _space_name(space or 0)
            )
            is_host = _is_host_kind(kind_text) or space == HOST_MEMORY_SPACE
            if kind == "argument":
                argument = entry.arguments[item.index]
                value = f"%arg{item.index}"
                name = argument.name if argument.name != value else None
                if is_host and argument.value >= 0:
                    host_values[argument.value] = kind_text
            else:
                value = f"result {item.index}"
                info = attributes.get("jax.result_info")
                name = string_attribute(info) if info else None
            out.append(
                MemoryPlacement(
                    kind=kind,
                    index=item.index,
                    value=value,
                    name=name or None,
                    memory_kind=kind_text,
                    memory_space=space,
                    host=is_host,
                    shape=item.shape,
                    bytes=type_bytes(item.type),
                )
            )
    return out, host_values


def _normal_memory(kind: str) -> str:
    return HOST if _is_host_kind(kind) else kind


def _value_memory(module: Module, value: int, host_values: Mapping[int, str]) -> str:
    """Where a value lives: its host memory kind, `S(n)` from its layout, or `device`."""
    if value < 0:
        return DEVICE
    if value in host_values:
        return host_values[value]
    owner = module.defining_op(value)
    if owner is not None and len(owner.results) == 1:
        space = memory_space(owner.attributes.get("xla_shape"))
        if space:
            return _space_name(space)
    return DEVICE


def _hlo(module: Module, value: int) -> str:
    types = parse_type(module.value_types[value])
    if len(types) == 1:
        return types[0].hlo
    return module.value_types[value]


def _memory_flow(module: Module, ops: Sequence[Op], host_values: dict[int, str]) -> list[Transfer]:
    """Transfers in `ops` (module order). `host_values` (value -> memory kind) grows
    with the values left in host memory: transfer results, results whose layout is
    in host memory, and values passed through sharding annotations."""
    transfers: list[Transfer] = []
    names = module.functions

    def add(
        op: Op, kind: str, source: str, target: str, values: Sequence[int], detail: str = ""
    ) -> None:
        shape = ", ".join(_hlo(module, v) for v in values) or "-"
        nbytes = _sum_bytes(module, values)
        text = detail or f"{shape} {human_size(nbytes)} {source} -> {target}"
        transfers.append(
            Transfer(
                kind=kind,
                source_memory=source,
                target_memory=target,
                moves=_normal_memory(source) != _normal_memory(target),
                shape=shape,
                bytes=nbytes,
                function=op.function or "",
                op_id=op.id,
                name=op.location.name,
                sources=_unique([op.location.source]),
                detail=text,
            )
        )

    for op in ops:
        operand = op.operands[0] if op.operands else -1
        target = custom_call_target(op)
        if target == "annotate_device_placement":
            placement = _frontend_attribute(op, "_xla_buffer_placement") or "?"
            add(op, target, _value_memory(module, operand, host_values), placement, op.results)
            if _is_host_kind(placement):
                host_values.update((v, placement) for v in op.results)
        elif target in ("MoveToHost", "MoveToDevice"):
            to_host = target == "MoveToHost"
            add(op, target, DEVICE if to_host else HOST, HOST if to_host else DEVICE, op.results)
            if to_host:
                host_values.update((v, HOST) for v in op.results)
        elif target is not None and _CALLBACK_TARGET.search(target):
            sent = [v for v in op.operands if v >= 0]
            detail = (
                f"{target}: sends {human_size(_sum_bytes(module, sent))} to Python on the "
                f"host, receives {human_size(_sum_bytes(module, op.results))}"
            )
            add(op, "host_callback", DEVICE, HOST, sent, detail)
        elif op.name in ("mhlo.copy", "stablehlo.copy") and "xla_shape" in op.attributes:
            space = memory_space(op.attributes["xla_shape"]) or 0
            before = _value_memory(module, operand, host_values)
            after = _space_name(space) if space else DEVICE
            if _normal_memory(before) != _normal_memory(after):
                add(op, "copy", before, after, op.results)
        elif op.name == "mhlo.async_start" and "xla_shape" in op.attributes:
            # copy-start: its shape is (destination, source, context).
            called = [names[n] for n in op_callees(op, names, fused=True)]
            body = [o.name for f in called for o in module.function_ops(f) if is_computation(o)]
            parts = _tuple_parts(op.attributes["xla_shape"])
            if body != ["mhlo.copy"] or len(parts) < 2:
                continue
            to_space, from_space = memory_space(parts[0]) or 0, memory_space(parts[1]) or 0
            if from_space != to_space:
                after_kind = _space_name(to_space) if to_space else DEVICE
                add(
                    op,
                    "copy-start",
                    _space_name(from_space) if from_space else DEVICE,
                    after_kind,
                    [v for v in op.operands if v >= 0],
                )
                if to_space == HOST_MEMORY_SPACE:
                    for result in op.results:
                        for user in module.users(result):
                            done = module.ops[user]
                            if done.name == "mhlo.async_done":
                                host_values.update((v, after_kind) for v in done.results)
            continue
        if len(op.results) == 1:
            result_space = memory_space(op.attributes.get("xla_shape"))
            if result_space == HOST_MEMORY_SPACE:
                host_values.setdefault(op.results[0], _space_name(result_space))
        if (
            op.name in ("sdy.sharding_constraint", "sdy.reshard") or target == "Sharding"
        ) and operand in host_values:
            host_values.update((v, host_values[operand]) for v in op.results)
    return transfers


# --------------------------------------------------------------------------- sharding


_MESH_AXIS = re.compile(r'"((?:[^"\\]|\\.)*)"\s*=\s*(\d+)')


def _mesh(name: str, text: str) -> Mesh:
    body = text
    if body.startswith("#sdy.mesh"):
        body = body[len("#sdy.mesh") :]
    axes = tuple((axis, int(size)) for axis, size in _MESH_AXIS.findall(body))
    devices = 1
    for _, size in axes:
        devices *= size
    return Mesh(name=name, axes=axes, devices=devices, text=body)


def _meshes(module: Module) -> list[Mesh]:
    meshes: list[Mesh] = []
    for op in module.body:
        if op.name == "sdy.mesh":
            name = string_attribute(op.attributes.get("sym_name", '""'))
            meshes.append(_mesh(name, op.attributes.get("mesh", "")))
    if not meshes:
        frontend = module.attributes.get("mhlo.frontend_attributes")
        if frontend and "xla.sdy.meshes" in frontend:
            text = parse_dict_attribute(frontend).get("xla.sdy.meshes", "")
            for name, mesh in re.findall(
                r"([\w.$-]+)\s*=\s*(#sdy\.mesh<(?:[^<>]|<[^<>]*>)*>)", text
            ):
                meshes.append(_mesh(name, mesh))
    return meshes


def _sharding_text(attributes: Mapping[str, str]) -> str | None:
    for key in ("sdy.sharding", "mhlo.sharding", "sharding"):
        text = attributes.get(key)
        if text is not None:
            return string_attribute(text)
    return None


def _spmd_shardings(module: Module) -> tuple[list[str], list[str]]:
    """Parameter and output shardings a partitioned (compiled) module records."""
    params: list[str] = []
    text = module.attributes.get("mhlo.spmd_parameters_shardings")
    if text and text.startswith("["):
        params = [string_attribute(p) for p in split_top_level(text[1:-1], brackets="([{")]
    outputs: list[str] = []
    output = module.attributes.get("mhlo.spmd_output_sharding")
    if output:
        sharding = string_attribute(output)
        # A tuple sharding `{{...}, {...}}` has one entry per result.
        if sharding.startswith("{{") and sharding.endswith("}}"):
            outputs = [
                "{" + p.strip().strip("{}") + "}"
                for p in split_top_level(sharding[1:-1], brackets="([{")
            ]
        else:
            outputs = [sharding]
    return params, outputs


def _shardings(
    module: Module, functions: Sequence[str], ops: Sequence[Op]
) -> tuple[list[ShardingAnnotation], int, list[ManualComputation]]:
    shardings: list[ShardingAnnotation] = []
    manual: list[ManualComputation] = []
    spmd_params, spmd_outputs = _spmd_shardings(module)
    entry = module.entry
    for name in functions:
        function = module.functions[name]
        is_entry = entry is not None and function.name == entry.name
        for argument in function.arguments:
            sharding = _sharding_text(argument.attributes)
            if sharding is None and is_entry and argument.index < len(spmd_params):
                sharding = spmd_params[argument.index]
            if sharding is None:
                continue
            value = f"%arg{argument.index}"
            shardings.append(
                ShardingAnnotation(
                    kind="argument",
                    value=value,
                    name=argument.name if argument.name != value else None,
                    function=name,
                    sharding=sharding,
                    source=None,
                )
            )
        for result in function.results:
            sharding = _sharding_text(result.attributes)
            if sharding is None and is_entry and result.index < len(spmd_outputs):
                sharding = spmd_outputs[result.index]
            if sharding is None:
                continue
            info = result.attributes.get("jax.result_info")
            shardings.append(
                ShardingAnnotation(
                    kind="result",
                    value=f"result {result.index}",
                    name=string_attribute(info) if info else None,
                    function=name,
                    sharding=sharding,
                    source=None,
                )
            )
    other = 0
    for op in ops:
        kind = None
        sharding = None
        target = custom_call_target(op)
        if op.name == "sdy.sharding_constraint":
            kind, sharding = "constraint", op.attributes.get("sharding")
        elif op.name == "sdy.reshard":
            kind, sharding = "reshard", op.attributes.get("sharding")
        elif target == "Sharding":
            kind, sharding = "constraint", _sharding_text(op.attributes)
        elif target == "SPMDFullToShardShape":
            kind, sharding = "full_to_shard", _sharding_text(op.attributes)
        elif target == "SPMDShardToFullShape":
            kind, sharding = "shard_to_full", _sharding_text(op.attributes)
        elif op.name == "sdy.manual_computation":
            manual.append(
                ManualComputation(
                    function=op.function or "",
                    manual_axes=op.attributes.get("manual_axes", ""),
                    in_shardings=op.attributes.get("in_shardings", ""),
                    out_shardings=op.attributes.get("out_shardings", ""),
                    ops=sum(1 for o in module.descendants(op) if is_computation(o)),
                    source=op.location.source,
                )
            )
            continue
        elif _sharding_text(op.attributes) is not None:
            other += 1
            continue
        if kind is None:
            continue
        shardings.append(
            ShardingAnnotation(
                kind=kind,
                value=module.value_name(op.results[0]) if op.results else "-",
                name=op.location.name,
                function=op.function or "",
                sharding=string_attribute(sharding or "?"),
                source=op.location.source,
            )
        )
    return shardings, other, manual


# --------------------------------------------------------------------------- collectives


def collective_kind(op: Op) -> tuple[str, bool] | None:
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
    target = custom_call_target(op)
    if target is not None:
        short = target.replace("-", "_")
    if short in COLLECTIVES:
        return short, is_async
    return None


def _collectives(module: Module, ops: Sequence[Op]) -> list[Collective]:
    names = module.functions
    async_functions: set[str] = set()
    for op in ops:
        if op.short_name in ("async_start", "async-start"):
            async_functions.update(op_callees(op, names, fused=True))
    found: dict[str, list[tuple[Op, bool]]] = {}
    for op in ops:
        kind = collective_kind(op)
        if kind is None:
            continue
        name, is_async = kind
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
    for name in sorted(found, key=lambda n: (-len(found[n]), COLLECTIVES.index(n))):
        items = found[name]
        total: int | None = 0
        for op, _ in items:
            size = _sum_bytes(module, op.results)
            total = None if total is None or size is None else total + size
        out.append(
            Collective(
                op=name,
                count=len(items),
                async_count=sum(1 for _, a in items if a),
                bytes=total,
                functions=_unique(op.function for op, _ in items),
                sources=_unique(op.location.source for op, _ in items),
            )
        )
    return out


# --------------------------------------------------------------------------- regions


def _regions(
    module: Module,
    placed: Sequence[PlacedOp],
    contexts: Mapping[int, list[_Context]],
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
                sources=_unique(m.source for m in members),
                input_bytes=_sum_bytes(module, inputs),
                device_input_bytes=_sum_bytes(module, [v for v in inputs if v not in host_values]),
                output_bytes=_sum_bytes(module, outputs),
            )
        )
    return regions


# --------------------------------------------------------------------------- warnings


def _call_mark_warnings(
    module: Module, ops: Sequence[Op], contexts: Mapping[int, list[_Context]]
) -> list[PlacementWarning]:
    names = module.functions
    warnings: list[PlacementWarning] = []
    for op in ops:
        mark = own_compute_type(op)
        if mark is None or mark == DEVICE:
            continue
        for callee in op_callees(op, names, fused=True):
            function = names[callee]
            body = [o for o in module.function_ops(function) if is_computation(o)]
            if not body or any(own_compute_type(o) == mark for o in body):
                continue
            warnings.append(
                PlacementWarning(
                    kind="call_mark_not_in_body",
                    message=(
                        f"the call to @{callee} is marked {mark}, but none of the "
                        f"{len(body)} ops of @{callee} carry the mark: they run on {mark} "
                        "only if the compiler honours the call's mark"
                    ),
                    function=op.function,
                    sources=_unique([op.location.source]),
                )
            )
    return warnings


def _host_memory_warnings(
    module: Module,
    ops: Sequence[Op],
    labels: Mapping[int, str],
    host_values: Mapping[int, str],
    memory: Sequence[MemoryPlacement],
) -> list[PlacementWarning]:
    by_value: dict[int, list[Op]] = {}
    if not host_values:
        return []
    for op in ops:
        if not any(value in host_values for value in op.operands):
            continue
        if labels.get(op.id, DEVICE) != DEVICE or not is_computation(op):
            continue
        target = custom_call_target(op)
        if (
            op.short_name.replace("-", "_") in _PASS_THROUGH_OPS | _DATA_MOVEMENT
            or target in _NOT_COMPUTE_TARGETS
            or (target or "").startswith("xla.sdy.")
        ):
            continue
        for value in op.operands:
            if value in host_values:
                by_value.setdefault(value, []).append(op)
    entry = module.entry
    argument_names: dict[int, Argument] = {}
    if entry is not None:
        for entry_argument in entry.arguments:
            argument_names[entry_argument.value] = entry_argument
    kinds = {m.index: m.memory_kind for m in memory if m.kind == "argument"}
    warnings: list[PlacementWarning] = []
    for value, users in by_value.items():
        argument = argument_names.get(value)
        if argument is not None:
            what = f"argument {argument.name}"
            where = kinds.get(argument.index, "host")
        else:
            what = module.value_name(value)
            where = "host"
        names = ", ".join(dict.fromkeys(u.name for u in users))
        warnings.append(
            PlacementWarning(
                kind="device_compute_on_host_memory",
                message=(
                    f"{what} ({_hlo(module, value)}) is in {where} memory and "
                    f"{len(users)} device op{'s' if len(users) > 1 else ''} ({names}) "
                    "read it directly: the compiler must copy or stream it to the device"
                ),
                function=users[0].function,
                sources=_unique(u.location.source for u in users),
            )
        )
    return warnings


def _large_input_warnings(
    regions: Sequence[ComputeRegion], threshold: int
) -> list[PlacementWarning]:
    warnings: list[PlacementWarning] = []
    for region in regions:
        if region.compute_type != HOST or region.device_input_bytes is None:
            continue
        if region.device_input_bytes < threshold:
            continue
        where = f"@{region.function}"
        if region.called_from:
            where += f" (called from @{region.called_from})"
        warnings.append(
            PlacementWarning(
                kind="large_host_input",
                message=(
                    f"the host region {where} reads "
                    f"{human_size(region.device_input_bytes)} of device values: a "
                    "device-to-host copy on every call"
                ),
                function=region.called_from or region.function,
                sources=_unique([region.call_source, *region.sources]),
            )
        )
    return warnings


# --------------------------------------------------------------------------- analysis


def analyze_placement(
    module: Module, large_host_input_bytes: int = LARGE_HOST_INPUT_BYTES
) -> Placement:
    """Compute placement, memory kinds, transfers, shardings and collectives of
    `module`; a host region reading at least `large_host_input_bytes` of device
    values is warned about."""
    contexts, functions = _compute_contexts(module)
    ops = [op for op in module.ops if op.id in contexts]
    computing = [op for op in ops if is_computation(op)]

    labels: dict[int, str] = {}
    counts: Counter[str] = Counter()
    placed: list[PlacedOp] = []
    for op in computing:
        op_contexts = contexts[op.id]
        label = _label(op_contexts)
        labels[op.id] = label
        counts[label] += 1
        if label != DEVICE:
            first = next(c for c in op_contexts if c.compute_type != DEVICE)
            placed.append(
                PlacedOp(
                    op_id=op.id,
                    function=op.function or "",
                    op=op.name,
                    compute_type=label,
                    via=first.via,
                    name=op.location.name,
                    source=op.location.source,
                )
            )
    ordered = dict(sorted(counts.items(), key=lambda kv: (kv[0] != DEVICE, -kv[1], kv[0])))

    memory, host_values = _entry_memory(module)
    transfers = _memory_flow(module, ops, host_values)
    regions = _regions(module, placed, contexts, host_values)
    shardings, op_shardings, manual = _shardings(module, functions, ops)

    warnings = _call_mark_warnings(module, ops, contexts)
    warnings += _host_memory_warnings(module, ops, labels, host_values, memory)
    warnings += _large_input_warnings(regions, large_host_input_bytes)

    return Placement(
        compute_types=MappingProxyType(ordered),
        total_ops=len(computing),
        placed_ops=tuple(placed),
        regions=tuple(regions),
        memory=tuple(memory),
        transfers=tuple(transfers),
        meshes=tuple(_meshes(module)),
        shardings=tuple(shardings),
        op_shardings=op_shardings,
        manual_computations=tuple(manual),
        collectives=tuple(_collectives(module, ops)),
        partitions=_int_attribute(module.attributes.get("mhlo.num_partitions")),
        replicas=_int_attribute(module.attributes.get("mhlo.num_replicas")),
        warnings=tuple(warnings),
    )

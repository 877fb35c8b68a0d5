"""Memory kinds and transfers: where the module's data lives and what moves it.

The entry function's arguments and results carry `mhlo.memory_kind`, or a
layout memory space (`S(5)` is host memory, recorded by `hloscope.ir.layout`
because XLA's conversion drops it). Transfers are `annotate_device_placement`
custom calls (`_xla_buffer_placement`), `MoveToHost`/`MoveToDevice`, copies
between memory spaces in optimized HLO (layouts with `S(n)`: `Op.memory_space`, in
either form; and async `copy-start`s), and Python host callbacks."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from hloscope.analyses.placement.report import (
    DEVICE,
    HOST,
    MemoryPlacement,
    MemoryPlacementKind,
    Transfer,
    TransferKind,
)
from hloscope.analyses.placement.values import hlo_type, sum_bytes, unique
from hloscope.analyses.structure import holding_function, op_callees
from hloscope.ir.model import Module, Op, is_computation
from hloscope.units import human_bytes

# Memory kinds (JAX) that are host memory, and XLA's host memory space.
HOST_MEMORY_KINDS = frozenset({"pinned_host", "unpinned_host", "host"})
HOST_MEMORY_SPACE = 5

_CALLBACK_TARGET = re.compile(r"python_(cpu|gpu)_callback")


def _space_name(space: int) -> str:
    return f"S({space})"


def _is_host_kind(kind: str) -> bool:
    return kind in HOST_MEMORY_KINDS or kind == _space_name(HOST_MEMORY_SPACE)


def entry_memory(
    module: Module, names: Mapping[int, str], result_names: Mapping[int, str]
) -> tuple[list[MemoryPlacement], dict[int, str]]:
    """Memory kinds of the entry function's arguments and results, and the argument
    values in host memory (value -> memory kind). `names` and `result_names`: the
    arguments' and results' user names by index."""
    entry = module.entry
    out: list[MemoryPlacement] = []
    host_values: dict[int, str] = {}
    if entry is None:
        return out, host_values
    kind: MemoryPlacementKind
    name: str | None
    for kind, items in (("argument", entry.arguments), ("result", entry.results)):
        for item in items:
            memory_kind = item.memory_kind
            space = item.memory_space
            if memory_kind is None and not space:
                continue
            kind_text = memory_kind if memory_kind is not None else _space_name(space or 0)
            is_host = _is_host_kind(kind_text) or space == HOST_MEMORY_SPACE
            if kind == "argument":
                argument = entry.arguments[item.index]
                value = f"%arg{item.index}"
                name = names.get(item.index, argument.name)
                name = name if name != value else None
                if is_host and argument.value >= 0:
                    host_values[argument.value] = kind_text
            else:
                value = f"result {item.index}"
                name = result_names.get(item.index) or entry.results[item.index].info
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
                    bytes=item.nbytes,
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
        space = owner.memory_space
        if space:
            return _space_name(space)
    return DEVICE


# A copy in each form: it moves a value between memory spaces where its layout names
# another space than its operand's.
_COPIES = frozenset({"mhlo.copy", "stablehlo.copy", "hlo.copy"})


def _is_copy_start(module: Module, op: Op) -> bool:
    """An asynchronous copy: XLA's `copy-start`, which the conversion makes an
    `mhlo.async_start` of a computation holding the copy."""
    if op.name == "hlo.copy-start":
        return True
    if op.short_name != "async_start" or not op.has_layout:
        return False
    names = module.functions
    called = [names[n] for n in op_callees(op, names, fused=True)]
    body = [o.name for f in called for o in module.function_ops(f) if is_computation(o)]
    return body == ["mhlo.copy"]


def memory_flow(module: Module, ops: Sequence[Op], host_values: dict[int, str]) -> list[Transfer]:
    """Transfers in `ops` (in program order: `Module.program_order`). `host_values`
    (value -> memory kind) grows with the values left in host memory: transfer
    results, results whose layout is in host memory, and values passed through
    sharding annotations."""
    transfers: list[Transfer] = []

    def add(
        op: Op,
        kind: TransferKind,
        source: str,
        target: str,
        values: Sequence[int],
        detail: str = "",
    ) -> None:
        shape = ", ".join(hlo_type(module, v) for v in values) or "-"
        nbytes = sum_bytes(module, values)
        text = detail or f"{shape} {human_bytes(nbytes)} {source} -> {target}"
        transfers.append(
            Transfer(
                kind=kind,
                source_memory=source,
                target_memory=target,
                moves=_normal_memory(source) != _normal_memory(target),
                shape=shape,
                bytes=nbytes,
                function=holding_function(module, op.function or ""),
                op_id=op.id,
                name=op.location.name,
                sources=unique([op.location.source]),
                detail=text,
            )
        )

    for op in ops:
        name = op.name
        if "custom" not in name and not op.has_layout and name[:4] != "sdy.":
            # Not a custom call, no HLO layout, not an sdy annotation: nothing below
            # applies (most ops of most modules).
            continue
        operand = op.operands[0] if op.operands else -1
        target = op.custom_call_target
        if target == "annotate_device_placement":
            placement = op.frontend_attributes.get("_xla_buffer_placement") or "?"
            add(
                op,
                "annotate_device_placement",
                _value_memory(module, operand, host_values),
                placement,
                op.results,
            )
            if _is_host_kind(placement):
                host_values.update((v, placement) for v in op.results)
        elif target in ("MoveToHost", "MoveToDevice"):
            to_host = target == "MoveToHost"
            add(
                op,
                "MoveToHost" if to_host else "MoveToDevice",
                DEVICE if to_host else HOST,
                HOST if to_host else DEVICE,
                op.results,
            )
            if to_host:
                host_values.update((v, HOST) for v in op.results)
        elif target is not None and _CALLBACK_TARGET.search(target):
            sent = [v for v in op.operands if v >= 0]
            detail = (
                f"{target}: sends {human_bytes(sum_bytes(module, sent))} to Python on the "
                f"host, receives {human_bytes(sum_bytes(module, op.results))}"
            )
            add(op, "host_callback", DEVICE, HOST, sent, detail)
        elif op.name in _COPIES:
            space = op.memory_space or 0
            before = _value_memory(module, operand, host_values)
            after = _space_name(space) if space else DEVICE
            if _normal_memory(before) != _normal_memory(after):
                add(op, "copy", before, after, op.results)
        elif _is_copy_start(module, op):
            # Its shape is (destination, source, context).
            spaces = op.tuple_memory_spaces
            if len(spaces) < 2:
                continue
            to_space, from_space = spaces[0] or 0, spaces[1] or 0
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
                            if done.short_name in ("async_done", "copy-done"):
                                host_values.update((v, after_kind) for v in done.results)
            continue
        if len(op.results) == 1:
            result_space = op.memory_space
            if result_space == HOST_MEMORY_SPACE:
                host_values.setdefault(op.results[0], _space_name(result_space))
        if (
            op.name in ("sdy.sharding_constraint", "sdy.reshard") or target == "Sharding"
        ) and operand in host_values:
            host_values.update((v, host_values[operand]) for v in op.results)
    return transfers

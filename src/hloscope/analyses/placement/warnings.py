"""Placement warnings: what looks wrong in where the module runs and keeps data.

A call marked for a compute type whose body has no op with that mark (only the
call says where it runs); device compute reading a value in host memory (an
implicit transfer); a host region fed by large device values (a device-to-host
copy on every call)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from hloscope.analyses.placement.attributes import own_compute_type
from hloscope.analyses.placement.compute import Context
from hloscope.analyses.placement.report import (
    DEVICE,
    HOST,
    ComputeRegion,
    MemoryPlacement,
    PlacementWarning,
)
from hloscope.analyses.placement.values import hlo_type, unique
from hloscope.analyses.structure import op_callees
from hloscope.ir.model import Argument, Module, Op, is_computation
from hloscope.units import human_bytes

# Bytes of device values feeding a host region from which it is worth a warning.
LARGE_HOST_INPUT_BYTES = 1 << 20

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
        "copy_start",
        "copy_done",
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


def call_mark_warnings(
    module: Module, ops: Sequence[Op], contexts: Mapping[int, list[Context]]
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
                    sources=unique([op.location.source]),
                )
            )
    return warnings


def host_memory_warnings(
    module: Module,
    ops: Sequence[Op],
    labels: Mapping[int, str],
    host_values: Mapping[int, str],
    memory: Sequence[MemoryPlacement],
    user_names: Mapping[int, str],
) -> list[PlacementWarning]:
    by_value: dict[int, list[Op]] = {}
    if not host_values:
        return []
    for op in ops:
        if not any(value in host_values for value in op.operands):
            continue
        if labels.get(op.id, DEVICE) != DEVICE or not is_computation(op):
            continue
        target = op.custom_call_target
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
            what = f"argument {user_names.get(argument.index, argument.name)}"
            where = kinds.get(argument.index, "host")
        else:
            what = module.value_name(value)
            where = "host"
        names = ", ".join(dict.fromkeys(u.name for u in users))
        warnings.append(
            PlacementWarning(
                kind="device_compute_on_host_memory",
                message=(
                    f"{what} ({hlo_type(module, value)}) is in {where} memory and "
                    f"{len(users)} device op{'s' if len(users) > 1 else ''} ({names}) "
                    "read it directly: the compiler must copy or stream it to the device"
                ),
                function=users[0].function,
                sources=unique(u.location.source for u in users),
            )
        )
    return warnings


def large_input_warnings(
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
                    f"{human_bytes(region.device_input_bytes)} of device values: a "
                    "device-to-host copy on every call"
                ),
                function=region.called_from or region.function,
                sources=unique([region.call_source, *region.sources]),
            )
        )
    return warnings

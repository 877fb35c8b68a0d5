"""The placement analysis of a module: `analyze_placement` puts compute types,
regions, memory kinds, transfers, shardings, collectives and warnings together
into one `Placement`."""

from __future__ import annotations

from collections import Counter
from types import MappingProxyType

from hloscope.analyses.placement.collectives import collectives_by_kind
from hloscope.analyses.placement.compute import compute_contexts, compute_label, compute_regions
from hloscope.analyses.placement.memory import entry_memory, memory_flow
from hloscope.analyses.placement.report import DEVICE, PlacedOp, Placement
from hloscope.analyses.placement.sharding import module_meshes, sharding_annotations
from hloscope.analyses.placement.warnings import (
    LARGE_HOST_INPUT_BYTES,
    call_mark_warnings,
    host_memory_warnings,
    large_input_warnings,
)
from hloscope.ir.model import (
    Module,
    int_attribute,
    is_computation,
)


def analyze_placement(
    module: Module, large_host_input_bytes: int = LARGE_HOST_INPUT_BYTES
) -> Placement:
    """Compute placement, memory kinds, transfers, shardings and collectives of
    `module`; a host region reading at least `large_host_input_bytes` of device
    values is warned about."""
    contexts, functions = compute_contexts(module)
    ops = [op for op in module.ops if op.id in contexts]
    computing = [op for op in ops if is_computation(op)]

    labels: dict[int, str] = {}
    counts: Counter[str] = Counter()
    placed: list[PlacedOp] = []
    for op in computing:
        op_contexts = contexts[op.id]
        label = compute_label(op_contexts)
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

    memory, host_values = entry_memory(module)
    transfers = memory_flow(module, ops, host_values)
    regions = compute_regions(module, placed, contexts, host_values)
    shardings, op_shardings, manual = sharding_annotations(module, functions, ops)

    warnings = call_mark_warnings(module, ops, contexts)
    warnings += host_memory_warnings(module, ops, labels, host_values, memory)
    warnings += large_input_warnings(regions, large_host_input_bytes)

    return Placement(
        compute_types=MappingProxyType(ordered),
        total_ops=len(computing),
        placed_ops=tuple(placed),
        regions=tuple(regions),
        memory=tuple(memory),
        transfers=tuple(transfers),
        meshes=tuple(module_meshes(module)),
        shardings=tuple(shardings),
        op_shardings=op_shardings,
        manual_computations=tuple(manual),
        collectives=tuple(collectives_by_kind(module, ops)),
        partitions=int_attribute(module.attributes.get("mhlo.num_partitions")),
        replicas=int_attribute(module.attributes.get("mhlo.num_replicas")),
        warnings=tuple(warnings),
    )

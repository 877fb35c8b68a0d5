"""The placement analysis of a module: `analyze_placement` puts compute types,
regions, memory kinds, transfers, shardings, collectives and warnings together
into one `Placement`."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from itertools import compress
from operator import attrgetter, not_
from types import MappingProxyType

from hloscope.analyses.placement.collectives import collectives_by_kind
from hloscope.analyses.placement.compute import compute_contexts, compute_regions
from hloscope.analyses.placement.memory import entry_memory, memory_flow
from hloscope.analyses.placement.report import DEVICE, PlacedOp, Placement
from hloscope.analyses.placement.scan import PlacementScan, function_ranges
from hloscope.analyses.placement.sharding import module_meshes, sharding_annotations
from hloscope.analyses.placement.warnings import (
    LARGE_HOST_INPUT_BYTES,
    call_mark_warnings,
    host_memory_warnings,
    large_input_warnings,
)
from hloscope.analyses.structure import counted_ops
from hloscope.ir.attributes import Mesh as IrMesh
from hloscope.ir.attributes import with_declared_axes
from hloscope.ir.model import Module, Op, is_computation


def analyze_placement(
    module: Module,
    large_host_input_bytes: int = LARGE_HOST_INPUT_BYTES,
    argument_names: Mapping[int, str] | None = None,
    declared_meshes: Sequence[IrMesh] = (),
    result_names: Mapping[int, str] | None = None,
) -> Placement:
    """Compute placement, memory kinds, transfers, shardings and collectives of
    `module`; a host region reading at least `large_host_input_bytes` of device
    values is warned about. `argument_names` names the entry's arguments by index
    (`analyses.params.argument_paths`: the paths `params` shows); without it, by
    their locations; `result_names` the results (`analyses.params.result_paths`),
    without it by `jax.result_info`. `declared_meshes`: the meshes of the module an
    optimized one was compiled from, which XLA's meshes become (`with_declared_axes`)."""
    names: Mapping[int, str] = argument_names or {}
    meshes = with_declared_axes(module.meshes, declared_meshes)
    scan = PlacementScan(module)
    placement = compute_contexts(module, scan)
    functions = placement.functions
    ranges = function_ranges(module, functions)
    # The ops that matter, of the reachable functions, in program order (a scheduled
    # module's schedule, in either form): what every part below reads (each passes
    # over any other op it is given).
    ops = module.program_order(op for first, end in ranges for op in scan.within(first, end))
    total = counted_ops(module, list(functions))

    labels: dict[int, str] = {}
    counts: Counter[str] = Counter()
    placed: list[PlacedOp] = []
    made = module.conversion_artefacts
    for op in module.program_order(module.ops[i] for i in sorted(placement.contexts)):
        op_id = op.id
        if not is_computation(op) or op_id in made:
            continue
        label = placement.label(op_id)
        labels[op_id] = label
        counts[label] += 1
        if label != DEVICE:
            first = next(c for c in placement.contexts[op_id] if c.compute_type != DEVICE)
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
    # Every other op that computes is on the device alone.
    counts[DEVICE] += total - sum(counts.values())
    ordered = dict(
        sorted(
            ((label, count) for label, count in counts.items() if count),
            key=lambda kv: (kv[0] != DEVICE, -kv[1], kv[0]),
        )
    )

    results: Mapping[int, str] = result_names or {}
    memory, host_values = entry_memory(module, names, results)
    transfers = memory_flow(module, ops, host_values)
    regions = compute_regions(module, placed, placement.contexts, host_values)
    shardings, op_shardings, manual = sharding_annotations(
        module, functions, ops, names, meshes, results
    )

    warnings = call_mark_warnings(module, ops, placement.contexts)
    if host_values:
        warnings += host_memory_warnings(
            module, _readers(module, ranges, host_values), labels, host_values, memory, names
        )
    warnings += large_input_warnings(regions, large_host_input_bytes)

    return Placement(
        compute_types=MappingProxyType(ordered),
        total_ops=total,
        placed_ops=tuple(placed),
        regions=tuple(regions),
        memory=tuple(memory),
        transfers=tuple(transfers),
        meshes=tuple(module_meshes(meshes)),
        shardings=tuple(shardings),
        op_shardings=op_shardings,
        manual_computations=tuple(manual),
        collectives=tuple(collectives_by_kind(module, scan.ops)),
        partitions=module.num_partitions,
        replicas=module.num_replicas,
        warnings=tuple(warnings),
    )


def _readers(
    module: Module, ranges: Sequence[tuple[int, int]], host_values: Mapping[int, str]
) -> list[Op]:
    """The ops of `ranges` that read a value in host memory, in program order."""
    values = frozenset(host_values)
    ops = module.program_order(op for first, end in ranges for op in module.ops[first:end])
    return list(compress(ops, map(not_, map(values.isdisjoint, map(attrgetter("operands"), ops)))))

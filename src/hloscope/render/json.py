"""Reports as JSON documents: the contract of DESIGN.md.

Every document has `schema_version`, `command` and `target`. Keys may be added,
never renamed: scripts depend on them.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Mapping
from typing import Any

from hloscope.analyses.placement import ComputeRegion, Placement
from hloscope.analyses.structure import Structure
from hloscope.api import InspectReport, PlacementReport
from hloscope.sources.loader import Source

SCHEMA_VERSION = 1


def plain(value: Any) -> Any:
    """Dataclasses, mappings and tuples as JSON-ready values."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def document(command: str, target: str, body: Mapping[str, Any]) -> dict[str, Any]:
    """The envelope every command's JSON shares."""
    return {"schema_version": SCHEMA_VERSION, "command": command, "target": target, **body}


def dumps(doc: Mapping[str, Any]) -> str:
    return json.dumps(doc, indent=2, ensure_ascii=False)


def source_json(source: Source) -> dict[str, Any]:
    return {
        "kind": source.kind,
        "format": source.format,
        "ir": source.ir,
        "stage": source.stage,
        "path": source.path,
        "module": source.folder_module,
        "folder_modules": list(source.folder_modules),
    }


def structure_json(structure: Structure) -> dict[str, Any]:
    return {
        "module": structure.module,
        "entry": structure.entry,
        "functions": [
            {
                "name": f.name,
                "visibility": f.visibility,
                "ops": f.ops,
                "inlined_ops": f.inlined_ops,
                "parameters": f.parameters,
                "results": f.results,
                "calls": [{"callee": c.callee, "count": c.count} for c in f.calls],
                "called_by": list(f.called_by),
                "reachable": f.reachable,
                "op_counts": dict(f.op_counts),
            }
            for f in structure.functions
        ],
        "op_counts": dict(structure.op_counts),
        "total_ops": structure.total_ops,
        "dialects": dict(structure.dialects),
        "call_depth": structure.call_depth,
    }


def inspect_json(report: InspectReport) -> dict[str, Any]:
    body: dict[str, Any] = {"source": source_json(report.source)}
    body.update(structure_json(report.structure))
    body["timings"] = plain(report.timings)
    body["cost"] = plain(report.cost)
    body["memory"] = plain(report.memory)
    body["notes"] = list(report.notes)
    if report.placement is not None:
        body["placement"] = placement_summary_json(report.placement)
    return document("inspect", report.source.target, body)


# --------------------------------------------------------------------------- placement


def _region_json(region: ComputeRegion) -> dict[str, Any]:
    return {
        "function": region.function,
        "ops": region.ops,
        "sources": list(region.sources),
        "compute_type": region.compute_type,
        "called_from": region.called_from,
        "call_source": region.call_source,
        "input_bytes": region.input_bytes,
        "device_input_bytes": region.device_input_bytes,
        "output_bytes": region.output_bytes,
    }


def _placement_lists(placement: Placement) -> dict[str, Any]:
    return {
        "summary": dict(placement.compute_types),
        "total_ops": placement.total_ops,
        "host_regions": [_region_json(r) for r in placement.host_regions],
        "other_regions": [_region_json(r) for r in placement.other_regions],
        "transfers": [
            {
                "kind": t.kind,
                "detail": t.detail,
                "sources": list(t.sources),
                "source_memory": t.source_memory,
                "target_memory": t.target_memory,
                "moves": t.moves,
                "shape": t.shape,
                "bytes": t.bytes,
                "function": t.function,
                "name": t.name,
            }
            for t in placement.transfers
        ],
        "memory_kinds": [
            {
                "value": m.value,
                "name": m.name,
                "kind": m.kind,
                "memory_kind": m.memory_kind,
                "memory_space": m.memory_space,
                "host": m.host,
                "shape": m.shape,
                "bytes": m.bytes,
            }
            for m in placement.memory
        ],
        "collectives": [
            {
                "op": c.op,
                "count": c.count,
                "async": c.async_count,
                "bytes": c.bytes,
                "functions": list(c.functions),
                "sources": list(c.sources),
            }
            for c in placement.collectives
        ],
        "meshes": [
            {
                "name": m.name,
                "axes": [{"name": axis, "size": size} for axis, size in m.axes],
                "devices": m.devices,
            }
            for m in placement.meshes
        ],
        "partitions": placement.partitions,
        "replicas": placement.replicas,
        "warnings": [plain(w) for w in placement.warnings],
    }


def placement_summary_json(placement: Placement) -> dict[str, Any]:
    """The placement summary `inspect` carries: everything but the per-value lists."""
    body = _placement_lists(placement)
    body["sharded_values"] = len(placement.shardings)
    body["manual_computations"] = len(placement.manual_computations)
    return body


def placement_json(report: PlacementReport) -> dict[str, Any]:
    placement = report.placement
    body: dict[str, Any] = {"source": source_json(report.source)}
    body.update(_placement_lists(placement))
    body["shardings"] = [
        {
            "value": s.value,
            "sharding": s.sharding,
            "kind": s.kind,
            "name": s.name,
            "function": s.function,
            "source": s.source,
        }
        for s in placement.shardings
    ]
    body["op_shardings"] = placement.op_shardings
    body["manual_computations"] = [plain(m) for m in placement.manual_computations]
    body["placed_ops"] = [
        {
            "function": p.function,
            "op": p.op,
            "compute_type": p.compute_type,
            "via": p.via,
            "name": p.name,
            "source": p.source,
        }
        for p in placement.placed_ops
    ]
    body["notes"] = list(report.notes)
    return document("placement", report.source.target, body)

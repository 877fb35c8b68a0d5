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

from hloscope.analyses.diff import Side as DiffSide
from hloscope.analyses.structure import Structure
from hloscope.api import DiffReport, InspectReport
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
    return document("inspect", report.source.target, body)


# --------------------------------------------------------------------------- diff


def diff_json(report: DiffReport) -> dict[str, Any]:
    result = report.diff
    summary = result.summary
    body: dict[str, Any] = {
        "verdict": result.verdict,
        "summary": {
            "added": summary.added,
            "removed": summary.removed,
            "changed": summary.changed,
            "unchanged": summary.unchanged,
            "normalized": summary.normalized,
        },
        "changes": [
            {
                "kind": group.kind,
                "function": group.function,
                "op": group.op,
                "detail": group.detail,
                "aspects": list(group.aspects),
                "count": group.count,
                "instances": [{"a": c.a_where, "b": c.b_where} for c in group.changes],
            }
            for group in result.groups
        ],
        "a": _diff_side_json(report.a, result.a),
        "b": _diff_side_json(report.b, result.b),
        "parameters": [
            {
                "a": p.a,
                "b": p.b,
                "a_name": p.a_name,
                "b_name": p.b_name,
                "status": p.status,
                "detail": p.detail,
            }
            for p in result.parameters
        ],
        "fusions": {
            "a": result.a.fusions,
            "b": result.b.fusions,
            "changes": [
                {
                    "status": f.status,
                    "a_kind": f.a_kind,
                    "b_kind": f.b_kind,
                    "a_ops": list(f.a_ops),
                    "b_ops": list(f.b_ops),
                    "moved_in": list(f.moved_in),
                    "moved_out": list(f.moved_out),
                    "detail": f.detail,
                }
                for f in result.fusions
            ],
        },
        "functions": [plain(pair) for pair in result.functions],
        "timings": {
            "load_seconds": list(report.load_seconds),
            "diff_seconds": report.diff_seconds,
        },
        "notes": list(report.notes),
    }
    return document("diff", f"{report.a.target} {report.b.target}", body)


def _diff_side_json(source: Source, side: DiffSide) -> dict[str, Any]:
    return {
        "target": source.target,
        "source": source_json(source),
        "module": side.module,
        "entry": side.entry,
        "ops": sum(side.counted),
    }

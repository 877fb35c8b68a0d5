"""Reports as JSON documents: the contract users script against.

Every document has `schema_version`, `command` and `target`. Keys may be added,
never renamed: scripts depend on them.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

# For annotations only: a command's JSON needs no analysis but its own.
if TYPE_CHECKING:
    from hloscope.analyses.aot import ProgramSummary
    from hloscope.analyses.baseline.compare import Change
    from hloscope.analyses.diff import Side as DiffSide
    from hloscope.analyses.diff.collectives import CollectiveCount
    from hloscope.analyses.estimate import EstimateAnalysis, EstimatedLine, EstimatedOp
    from hloscope.analyses.fusions import FusionSummary
    from hloscope.analyses.memory import LiveBuffer
    from hloscope.analyses.params import ParameterUsage
    from hloscope.analyses.placement import ComputeRegion, Placement
    from hloscope.analyses.profile import ProfiledLine, ProfiledOp
    from hloscope.analyses.structure import Structure
    from hloscope.reports import (
        AotReport,
        DiffReport,
        FusionsReport,
        InspectReport,
        MemoryReport,
        ParamsReport,
        PlacementReport,
    )
    from hloscope.reports.check import CheckReport, TargetCheck
    from hloscope.reports.diff import CompiledSummary
    from hloscope.reports.profile import ProfileReport, ScriptProfileReport
    from hloscope.stages import Source

SCHEMA_VERSION = 1

COMMAND_SCHEMA_VERSIONS: Mapping[str, int] = {"remat": 2}
"""Commands whose document's keys changed meaning since version 1: `remat` 2 speaks
every other report's words (`source`, `kind`, `memory_kind`, `path`), where 1 said
`line`, `how`, `memory` and `argument`."""


def schema_version(command: str) -> int:
    """The version of `command`'s document (`SCHEMA_VERSION` but where it rose)."""
    return COMMAND_SCHEMA_VERSIONS.get(command, SCHEMA_VERSION)


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
    return {"schema_version": schema_version(command), "command": command, "target": target, **body}


def dumps(doc: Mapping[str, Any]) -> str:
    return json.dumps(doc, indent=2, ensure_ascii=False)


def source_fields(source: Source) -> dict[str, Any]:
    """Where a report's module came from (`source`) and what it was compiled for
    (`compiled_for`): the keys every report with a module has."""
    return {"source": source_json(source), "compiled_for": plain(source.compiled_for)}


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
        # XLA's per-call-site clones: one entry per group, its members still listed
        # one by one in "functions".
        "function_groups": [
            {"name": g.name, "functions": list(g.functions), "count": len(g.functions)}
            for g in structure.groups
        ],
    }


def inspect_json(report: InspectReport) -> dict[str, Any]:
    body: dict[str, Any] = source_fields(report.source)
    body.update(structure_json(report.structure))
    body["timings"] = plain(report.timings)
    body["cost"] = plain(report.cost)
    body["cost_counts_loop_bodies_once"] = report.cost_counts_loop_bodies_once
    body["memory"] = plain(report.memory)
    body["notes"] = list(report.notes)
    body["fusions"] = fusion_summary_json(report.fusions) if report.fusions else None
    if report.params is not None:
        body["params"] = params_summary_json(report.params)
    if report.placement is not None:
        body["placement"] = placement_summary_json(report.placement)
    return document("inspect", report.source.target, body)


# --------------------------------------------------------------------------- fusions


def fusion_summary_json(summary: FusionSummary) -> dict[str, Any]:
    return {
        "fusions": summary.fusions,
        "by_kind": dict(summary.by_kind),
        "fused_ops": summary.fused_ops,
        "unfused_ops": summary.unfused_ops,
        "unfused_by_category": dict(summary.unfused_by_category),
        "crossing_jits": summary.crossing_jits,
    }


def fusions_json(report: FusionsReport) -> dict[str, Any]:
    analysis = report.analysis
    body: dict[str, Any] = {
        **source_fields(report.source),
        "module": report.module,
        "fusions": [
            {
                "name": f.name,
                "kind": f.kind,
                "backend_kind": f.backend_kind,
                "function": f.function,
                "ops": list(f.ops),
                "op_counts": dict(f.op_counts),
                "op_count": f.op_count,
                "sources": list(f.sources),
                "user_source": f.user_source,
                "user_source_from": f.user_source_from,
                "op_names": list(f.op_names),
                "jits": list(f.jits),
                "crosses_jits": f.crosses_jits,
                "operands": list(f.operands),
                "results": list(f.results),
                "operand_bytes": f.operand_bytes,
                "result_bytes": f.result_bytes,
            }
            for f in analysis.fusions
        ],
        "unfused_ops": analysis.unfused_ops,
        "unfused": [
            {
                "name": u.name,
                "op": u.op,
                "category": u.category,
                "function": u.function,
                "target": u.target,
                "sources": list(u.sources),
                "user_source": u.user_source,
                "user_source_from": u.user_source_from,
                "op_name": u.op_name,
                "results": list(u.results),
                "result_bytes": u.result_bytes,
            }
            for u in analysis.unfused
        ],
        "lines": [
            {
                "source": line.source,
                "code": report.line_texts.get(line.source),
                "fusions": list(line.fusions),
                "unfused": list(line.unfused),
                "fused_ops": line.fused_ops,
                "unfused_ops": line.unfused_ops,
            }
            for line in analysis.lines
        ],
        "summary": fusion_summary_json(report.summary),
        "jits": list(analysis.jits),
        "library_jits": list(analysis.library_jits),
        "timings": plain(report.timings),
        "notes": list(report.notes),
    }
    return document("fusions", report.source.target, body)
    if report.params is not None:
        body["params"] = params_summary_json(report.params)
    return document("inspect", report.source.target, body)


# --------------------------------------------------------------------------- params


def parameters_json(usage: ParameterUsage) -> list[dict[str, Any]]:
    """The contract's `parameters` list, each object extended with `hlo_shape`, `bytes`,
    `uses`, `aliases_output`, `sharding_attribute`, `donation_requested`,
    `donation_dropped` and `also`."""
    return [
        {
            "position": p.position,
            "path": p.path,
            "hlo_index": p.hlo_index,
            "status": p.status,
            "shape": p.shape,
            "donated": p.donated,
            "sharding": p.sharding,
            "memory_kind": p.memory_kind,
            "hlo_shape": p.hlo_shape,
            "bytes": p.bytes,
            "uses": p.uses,
            "aliases_output": p.aliases_output,
            "sharding_attribute": p.sharding_attribute,
            "donation_requested": p.donation_requested,
            "donation_dropped": p.donation_dropped,
            "also": list(p.also),
        }
        for p in usage.parameters
    ]


def _functions_json(usage: ParameterUsage) -> list[dict[str, Any]]:
    return [
        {
            "name": f.name,
            "call_sites": f.call_sites,
            "parameters": len(f.parameters),
            "unused": [{"index": p.index, "name": p.name, "shape": p.shape} for p in f.unused],
        }
        for f in usage.functions
    ]


def params_json(report: ParamsReport) -> dict[str, Any]:
    usage = report.usage
    body: dict[str, Any] = {
        **source_fields(report.source),
        "module": report.module,
        "entry": usage.entry,
        "from_python": usage.from_python,
        "parameters": parameters_json(usage),
        "implicit_parameters": [plain(p) for p in usage.implicit],
        "static_arguments": [plain(s) for s in usage.static],
        "functions": _functions_json(usage),
        "totals": plain(usage.totals),
        "notes": list(report.notes),
    }
    return document("params", report.source.target, body)


def params_summary_json(usage: ParameterUsage) -> dict[str, Any]:
    """What `inspect` says about parameters: totals, the arguments that are not
    used, the static ones, and private functions with unused parameters."""
    return {
        "totals": plain(usage.totals),
        "unused": [p.path for p in usage.with_status("unused")],
        "pruned": [p.path for p in usage.with_status("pruned")],
        "static": [s.path for s in usage.static],
        "donation_dropped": [p.path for p in usage.dropped_donations],
        "functions_with_unused": [
            {"name": f.name, "unused": [p.index for p in f.unused]}
            for f in usage.functions
            if f.unused
        ],
    }


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
                "user_sources": list(c.user_sources),
                # Inside loops a collective runs once per iteration: per call counts
                # the loops' trip counts (null where one is unknown).
                "in_loops": c.in_loops,
                "per_call": c.per_call,
                "bytes_per_call": c.bytes_per_call,
                "trip_counts_from": list(c.trip_counts_from),
                "across_slices": c.across_slices,
            }
            for c in placement.collectives
        ],
        "meshes": [
            {
                "name": m.name,
                "axes": [{"name": axis, "size": size} for axis, size in m.axes],
                "devices": m.devices,
                "xla_axes": m.xla_axes,
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
    body: dict[str, Any] = source_fields(report.source)
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
    body["manual_computations"] = [
        {
            "function": m.function,
            "manual_axes": m.manual_axes,
            "in_shardings": m.in_shardings,
            "out_shardings": m.out_shardings,
            "ops": m.ops,
            "source": m.source,
        }
        for m in placement.manual_computations
    ]
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
    if report.why is not None:
        from hloscope.render.why_json import add_why

        add_why(body, report.why)
    body["notes"] = list(report.notes)
    return document("placement", report.source.target, body)


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
                "places": [{"function": p.function, "count": p.count} for p in group.places],
                "instances": [{"a": c.a_where, "b": c.b_where} for c in group.changes],
            }
            for group in result.groups
        ],
        "renames": [{"a": r.a, "b": r.b} for r in result.renames],
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
                    "a_name": f.a_name,
                    "b_name": f.b_name,
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
    if report.compiled is not None:
        body["compiled_summary"] = _compiled_summary_json(report.compiled)
    return document("diff", f"{report.a.target} {report.b.target}", body)


def _compiled_summary_json(summary: CompiledSummary) -> dict[str, Any]:
    def estimate(analysis: EstimateAnalysis | None) -> dict[str, Any] | None:
        if analysis is None:
            return None
        return {
            "seconds": analysis.seconds,
            "compute_seconds": analysis.compute_seconds,
            "communication_seconds": analysis.communication_seconds,
            "exposed_communication_seconds": analysis.exposed_communication_seconds,
            "mfu": analysis.mfu,
            "hfu": analysis.hfu,
        }

    def count(side: CollectiveCount) -> dict[str, Any]:
        return {"count": side.count, "bytes": side.bytes, "in_loops": side.in_loops}

    return {
        "memory": {"a": summary.memory[0], "b": summary.memory[1]},
        "estimate": None
        if summary.estimate is None
        else {"a": estimate(summary.estimate[0]), "b": estimate(summary.estimate[1])},
        "collectives": [
            {
                "op": c.op,
                "across_slices": c.across_slices,
                "a": count(c.a),
                "b": count(c.b),
                "added_at": [{"source": s, "count": n} for s, n in c.added_at],
            }
            for c in summary.collectives
        ],
    }


def _diff_side_json(source: Source, side: DiffSide) -> dict[str, Any]:
    return {
        "target": source.target,
        **source_fields(source),
        "module": side.module,
        "entry": side.entry,
        "ops": sum(side.counted),
    }


# --------------------------------------------------------------------------- aot-check


def _program_json(program: ProgramSummary) -> dict[str, Any]:
    return {
        "name": program.name,
        "ops": program.ops,
        "off_device_ops": program.off_device_ops,
        "parameters": program.parameters,
    }


def aot_check_json(report: AotReport) -> dict[str, Any]:
    """The contract's `verdict`, `aot_entry` and `differences` (each extended with
    `cause`), then how the AOT entry was chosen, every check, each output leaf, the
    programs each path compiled, the inputs, timings and notes."""
    comparison = report.comparison
    entry = comparison.entry
    body: dict[str, Any] = {
        "verdict": comparison.verdict,
        "aot_entry": entry.name,
        "differences": [
            {"kind": d.kind, "detail": d.detail, "cause": d.cause} for d in comparison.differences
        ],
        "aot": {
            "entry": entry.name,
            "via": entry.via,
            "expression": entry.expression,
            "reason": entry.reason,
            "target": report.aot_target,
        },
        "checks": [plain(check) for check in comparison.checks],
        "results": [plain(result) for result in comparison.results],
        "call_programs": [
            {**_program_json(p), "compared": i == comparison.counterpart}
            for i, p in enumerate(comparison.call_programs)
        ],
        "aot_program": (
            _program_json(comparison.aot_program) if comparison.aot_program is not None else None
        ),
        "aot_run_programs": [_program_json(p) for p in comparison.aot_run_programs],
        "aot_pruned": list(comparison.aot_pruned),
        "inputs": [plain(leaf) for leaf in report.inputs],
        "seed": report.seed,
        "timings": plain(report.timings),
        "notes": list(report.notes),
    }
    return document("aot-check", report.target, body)


# --------------------------------------------------------------------------- memory


def _live_buffer_json(buffer: LiveBuffer) -> dict[str, Any]:
    return {
        "name": buffer.name,
        "bytes": buffer.bytes,
        "shape": buffer.shape,
        "kind": buffer.kind,
        "instruction": buffer.instruction,
        "opcode": buffer.opcode,
        "fusion": buffer.fusion,
        "op_name": buffer.op_name,
        "sources": list(buffer.sources),
        "user_source": buffer.user_source,
        "user_source_from": buffer.user_source_from,
        "parameter": buffer.parameter,
        "path": buffer.path,
        "memory_space": buffer.memory_space,
        "allocation": buffer.allocation,
        "live": [buffer.live_from, buffer.live_to],
        "shares": buffer.shares,
    }


def memory_json(report: MemoryReport) -> dict[str, Any]:
    analysis = report.analysis
    memory_keys = ("argument_bytes", "output_bytes", "temp_bytes", "alias_bytes")
    totals: dict[str, Any] = dict.fromkeys((*memory_keys, "generated_code_bytes"))
    if analysis.totals is not None:
        totals.update(analysis.totals)
    body: dict[str, Any] = {
        **source_fields(report.source),
        "module": report.module,
        "totals": totals,
        "peak_bytes": analysis.peak_bytes,
        "peak_at": {"index": analysis.peak_index, "instruction": analysis.peak_instruction},
        "schedule_length": analysis.schedule_length,
        "profile": [{"index": p.index, "bytes": p.bytes} for p in analysis.profile],
        "profile_bucket": analysis.profile_bucket,
        "buffers_at_peak": [_live_buffer_json(b) for b in analysis.buffers_at_peak],
        "memory_spaces": [
            {
                "memory_space": s.color,
                "name": s.name,
                "bytes_at_peak": s.bytes,
                "buffers_at_peak": [
                    b.name for b in analysis.buffers_at_peak if b.memory_space == s.color
                ],
                "peak_bytes": s.peak_bytes,
                "peak_at": {"index": s.peak_index, "instruction": s.peak_instruction},
                "buffers": [_live_buffer_json(b) for b in s.buffers_at_peak],
                "profile": [{"index": p.index, "bytes": p.bytes} for p in s.profile],
                "allocated_bytes": s.allocated_bytes,
            }
            for s in analysis.memory_spaces
        ],
        "aliases": [
            {
                "parameter": d.parameter,
                "path": d.path,
                "bytes": d.bytes,
                "holds": list(d.holds),
                "result": d.result,
                "result_name": d.result_name,
                "result_value": d.result_value,
                "temporaries": list(d.temporaries),
            }
            for d in analysis.donated
        ],
        "busiest": None
        if analysis.busiest is None
        else {
            "index": analysis.busiest.index,
            "instruction": analysis.busiest.instruction,
            "bytes": analysis.busiest.bytes,
            "buffers": [_live_buffer_json(b) for b in analysis.busiest.buffers],
        },
        "allocated_bytes": analysis.allocated_bytes,
        "reported_peak_bytes": analysis.reported_peak_bytes,
        "files": list(report.files),
        "notes": list(report.notes),
        "fit": plain(report.fit),
    }
    return document("memory", report.source.target, body)


def _change_json(change: Change, check: TargetCheck) -> dict[str, Any]:
    causes = check.comparison.causes if check.comparison is not None else ()
    return {
        "fact": change.fact,
        "before": change.before,
        "after": change.after,
        "tolerance": change.tolerance,
        "regression": change.regression,
        "detail": change.detail,
        "sources": list(change.sources),
        "target": check.name,
        # The argument whose sharding or donation changed and moved it; null if none.
        "cause": next((c.argument for c in causes if change.fact in c.facts), None),
        # Why its own collective is at its lines (`placement --why`), for a regression.
        "origins": list(check.why(change.fact, change.sources)) if _explained(change) else [],
    }


def _explained(change: Change) -> bool:
    return change.regression and change.fact.startswith("collectives.")


def check_json(report: CheckReport) -> dict[str, Any]:
    targets = []
    changes: list[dict[str, Any]] = []
    for check in report.checks:
        comparison = check.comparison
        changes.extend(_change_json(c, check) for c in (comparison.changes if comparison else ()))
        recorded = check.baseline.backend if check.baseline is not None else None
        targets.append(
            {
                "name": check.name,
                "target": check.target,
                "baseline": check.baseline_path,
                "passed": check.passed,
                "compared": comparison is not None,
                "facts_compared": comparison.compared if comparison else 0,
                "not_compared": list(comparison.not_compared) if comparison else [],
                "updated": check.updated,
                "recorded_on": dataclasses.asdict(recorded) if recorded is not None else None,
                "facts": dict(check.measurement.facts),
                "grown_at_peak": [
                    {"site": g.site, "before": g.before, "after": g.after, "shapes": list(g.shapes)}
                    for g in (comparison.grown_at_peak if comparison else ())
                ],
                "notes": list(check.notes),
                "causes": [
                    dataclasses.asdict(c) | {"facts": list(c.facts)}
                    for c in (comparison.causes if comparison else ())
                ],
            }
        )
    label = report.checks[0].target if len(report.checks) == 1 else report.baseline
    body = {
        "passed": report.passed,
        "baseline": report.baseline,
        "backend": dataclasses.asdict(report.backend),
        "updated": report.updated,
        "changes": changes,
        "targets": targets,
    }
    return document("check", label, body)


def timed_op_json(op: ProfiledOp | EstimatedOp) -> dict[str, Any]:
    """An instruction of `profile`'s document, measured or estimated (which adds its
    own keys)."""
    return {
        "name": op.name,
        "kind": op.kind,
        "calls": op.calls,
        "seconds": op.seconds,
        "share": op.share,
        "user_source": op.user_source,
        "sources": list(op.sources),
        "function": op.function,
    }


def timed_line_json(line: ProfiledLine | EstimatedLine) -> dict[str, Any]:
    """A line of the user's of `profile`'s document, measured or estimated."""
    return {
        "source": line.source,
        "seconds": line.seconds,
        "share": line.share,
        "ops": list(line.ops),
    }


def profile_json(report: ProfileReport) -> dict[str, Any]:
    analysis = report.analysis
    times = analysis.seconds_per_run
    body: dict[str, Any] = {
        **source_fields(report.source),
        "module": report.module,
        # Measured here; `profile --for` is estimated (render/estimate_json.py).
        "estimated": False,
        "runs": analysis.runs,
        "warmup": analysis.warmup,
        "seconds_per_run": {"median": times.median, "min": times.min, "max": times.max},
        "ops": [timed_op_json(op) for op in analysis.ops],
        "lines": [timed_line_json(line) for line in analysis.lines],
        "op_seconds": analysis.op_seconds,
        "coverage": analysis.coverage,
        "overhead_seconds": analysis.overhead_seconds,
        "devices": analysis.devices,
        "inputs": analysis.inputs,
        "trace_file": analysis.trace_file,
        "unknown_ops": list(analysis.unknown_ops),
        "notes": list(report.notes),
    }
    return document("profile", report.source.target, body)


def script_profile_json(report: ScriptProfileReport) -> dict[str, Any]:
    analysis = report.analysis
    eager = analysis.eager
    body: dict[str, Any] = {
        "functions": [
            {
                "function": f.function,
                "source": f.source,
                "calls": f.calls,
                "compiles": f.compiles,
                "compile_seconds": f.compile_seconds,
                "run_seconds": f.run_seconds,
                "seconds_per_call": f.seconds_per_call,
            }
            for f in analysis.functions
        ],
        "eager": {
            "calls": eager.calls,
            "seconds": eager.seconds,
            "compiles": eager.compiles,
            "compile_seconds": eager.compile_seconds,
        },
        "wall_seconds": analysis.wall_seconds,
        "run_seconds": analysis.run_seconds,
        "exit_code": report.exit_code,
        "error": report.error,
        "trace_file": report.trace_file,
        "notes": list(report.notes),
    }
    return document("profile", report.target, body)

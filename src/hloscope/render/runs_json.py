"""`compiles` and `passes` as JSON documents: what XLA and JAX did over a run (every
compilation of a script; every pass of one compilation). Keys may be added, never
renamed (`render/json.py` has the envelope every document shares)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hloscope.render.json import diff_json, document, plain

if TYPE_CHECKING:
    from hloscope.analyses.passes import FoundAt, PassFind
    from hloscope.reports import CompilesReport, PassesReport
    from hloscope.runs import RecordedCompile


# --------------------------------------------------------------------------- compiles


def _compile_json(compile_: RecordedCompile) -> dict[str, Any]:
    return {
        "function": compile_.function,
        "source": compile_.source,
        "call_site": compile_.call_site,
        "called_by_hloscope": compile_.called_by_hloscope,
        "eager": compile_.eager,
        "cause": compile_.cause,
        "changes": [
            {"path": c.path, "before": c.before, "after": c.after, "kind": c.kind}
            for c in compile_.changes
        ],
        "signature": compile_.signature,
        "started_seconds": compile_.started_seconds,
        "trace_seconds": compile_.trace_seconds,
        "lower_seconds": compile_.lower_seconds,
        "compile_seconds": compile_.compile_seconds,
        "ops": compile_.ops,
        "persistent_cache_hit": compile_.persistent_cache_hit,
        "module": compile_.module.name if compile_.module is not None else None,
    }


def compiles_json(report: CompilesReport) -> dict[str, Any]:
    analysis = report.analysis
    summary = analysis.summary
    return document(
        "compiles",
        report.target,
        {
            "summary": {
                "compiles": summary.compiles,
                "functions": summary.functions,
                "compile_seconds": summary.compile_seconds,
                "wall_seconds": summary.wall_seconds,
                "eager_compiles": summary.eager_compiles,
                "recompiled_functions": summary.recompiled_functions,
                "compiling_seconds": summary.compiling_seconds,
                "compiling_share": summary.compiling_share,
                "persistent_cache_hits": summary.persistent_cache_hits,
            },
            "functions": [
                {
                    "function": f.function,
                    "source": f.source,
                    "compiles": f.compiles,
                    "signatures": f.signatures,
                    "compile_seconds": f.compile_seconds,
                    "total_seconds": f.total_seconds,
                    "ops": f.ops,
                    "ops_range": list(f.ops_range) if f.ops_range else None,
                    "causes": list(f.causes),
                    "likely_cause": f.likely_cause,
                    "likely_causes": list(f.likely_causes),
                }
                for f in analysis.functions
            ],
            "eager_ops": [plain(op) for op in analysis.eager],
            "compiles": [_compile_json(c) for c in analysis.compiles],
            "exit_code": report.exit_code,
            "error": report.error,
            "modules_dropped": report.modules_dropped,
        },
    )


# --------------------------------------------------------------------------- passes


def _found_at_json(found: FoundAt | None) -> dict[str, Any] | None:
    if found is None:
        return None
    return {"index": found.index, "pass": found.pass_name}


def pass_find_json(found: PassFind) -> dict[str, Any]:
    return {
        "pattern": found.pattern,
        "kind": found.kind,
        "input_count": found.input_count,
        "first_seen": _found_at_json(found.first_seen),
        "gone_at": _found_at_json(found.gone_at),
        "changes": [
            {
                "index": change.index,
                "pass": change.pass_name,
                "pipeline": change.pipeline,
                "before": change.before,
                "after": change.after,
                "fused_before": change.fused_before,
                "fused_after": change.fused_after,
            }
            for change in found.changes
        ],
        "counts": list(found.counts),
    }


def passes_json(report: PassesReport) -> dict[str, Any]:
    table = report.table
    body: dict[str, Any] = {
        "module": report.module,
        "folder": report.folder,
        "compiled_for": plain(report.compiled_for),
        "input_ops": table.input_ops,
        "output_ops": table.output_ops,
        "pipelines": list(table.pipelines),
        "passes": [
            {
                "index": step.index,
                "step": step.name.step,
                "pipeline": step.pipeline,
                "pass": step.pass_name,
                "next_pass": step.name.before,
                "file": step.name.file,
                "ops": step.ops,
                "ops_delta": step.ops_delta,
                "changed_kinds": {change.kind: change.delta for change in step.changed_kinds},
                "fusions": step.fusions,
            }
            for step in table.steps
        ],
        "timings": {
            "compile_seconds": report.compile_seconds,
            "scan_seconds": report.scan_seconds,
            "compile_cached": report.compile_cached,
        },
        "notes": list(report.notes),
    }
    if report.find is not None:
        body["find"] = pass_find_json(report.find)
    if report.diff is not None:
        diff_body = {
            key: value
            for key, value in diff_json(report.diff).items()
            if key not in ("schema_version", "command", "target")
        }
        body["diff"] = {"index": report.diff_index, **diff_body}
    return document("passes", report.target, body)

"""`profile --for` as a JSON document: the measured profile's keys with the estimate's
values (`runs` 0: nothing ran; `seconds_per_run` the estimated step), and
`"estimated": true`, `estimate`, `figures` and `collectives` (docs/json.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hloscope.render.json import document, source_fields, timed_line_json, timed_op_json

if TYPE_CHECKING:
    from hloscope.reports.estimate import EstimateReport


def estimate_json(report: EstimateReport) -> dict[str, Any]:
    analysis = report.analysis
    figures = analysis.figures
    step = analysis.seconds
    body: dict[str, Any] = {
        **source_fields(report.source),
        "module": report.module,
        "estimated": True,
        "runs": 0,
        "warmup": 0,
        "seconds_per_run": {"median": step, "min": step, "max": step},
        "ops": [
            {
                **timed_op_json(op),
                "cycles": op.cycles,
                "basis": op.basis,
                "bound": op.bound,
                "flops": op.flops,
                "bytes": op.bytes,
            }
            for op in analysis.ops
        ],
        "lines": [timed_line_json(line) for line in analysis.lines],
        "op_seconds": analysis.compute_seconds,
        "coverage": None,
        "overhead_seconds": 0.0,
        "devices": report.source.compiled_for.devices if report.source.compiled_for else 1,
        "inputs": "none",
        "trace_file": None,
        "unknown_ops": [],
        "estimate": {
            "seconds": step,
            "compute_seconds": analysis.compute_seconds,
            "communication_seconds": analysis.communication_seconds,
            "exposed_communication_seconds": analysis.exposed_communication_seconds,
            "flops": analysis.flops,
            "cost_analysis_flops": analysis.cost_analysis_flops,
            "mfu": analysis.mfu,
            "hfu": analysis.hfu,
            "model_flops": analysis.model_flops,
            "model_flops_from": analysis.model_flops_from,
            "target": report.target,
        },
        "figures": {
            "clock_hz": figures.clock_hz,
            "peak_flops": figures.peak_flops,
            "hbm_bytes_per_second": figures.hbm_bytes_per_second,
            "interconnect_bytes_per_second": figures.interconnect_bytes_per_second,
            "dcn_bytes_per_second": figures.dcn_bytes_per_second,
            "source": figures.source,
        },
        "collectives": [
            {
                "name": c.name,
                "op": c.op,
                "bytes": c.bytes,
                "result_bytes": c.result_bytes,
                "group_size": c.group_size,
                "calls": c.calls,
                "seconds": c.seconds,
                "basis": c.basis,
                "exposed_seconds": c.exposed_seconds,
                "asynchronous": c.asynchronous,
                "across_slices": c.across_slices,
                "hidden": c.hidden,
                "overlapped_by": list(c.overlapped_by),
                "user_source": c.user_source,
                "sources": list(c.sources),
                "collective": c.collective,
                "in_loop": c.in_loop,
            }
            for c in analysis.collectives
        ],
        "notes": list(report.notes),
    }
    return document("profile", report.source.target, body)

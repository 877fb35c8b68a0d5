"""`hloscope compare --json`: every configuration's row, and the best (docs/json.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hloscope.render.json import document, plain

if TYPE_CHECKING:
    from hloscope.reports.compare import CompareRow, Comparison


def compare_row_json(row: CompareRow) -> dict[str, Any]:
    """One row: the issue's keys (`config` {target, for, env}, `fits`, `peak_bytes`,
    `capacity_bytes`, `estimate`, `collectives`, `compile_seconds`, `error`) and more."""
    config = row.config
    estimate = row.estimate
    return {
        "config": {
            "target": config.target,
            "for": config.compile_for,
            "env": dict(config.env),
            "label": config.label,
        },
        "fits": row.fits,
        "peak_bytes": row.peak_bytes,
        "peak_from": row.peak_from,
        "capacity_bytes": row.capacity_bytes,
        "device": row.device,
        "devices": row.devices,
        "estimate": plain(estimate) if estimate is not None else None,
        "collectives": [plain(c) for c in row.collectives],
        "ici_bytes": row.ici_bytes,
        "dcn_bytes": row.dcn_bytes,
        "compile_seconds": row.compile_seconds,
        "compile_cached": row.compile_cached,
        "compiles": row.compiles,
        "tokens_per_step": row.tokens_per_step,
        "tokens_per_second_per_device": row.tokens_per_second_per_device,
        "refused": row.refused,
        "error": row.error,
        "notes": list(row.notes),
    }


def compare_json(report: Comparison) -> dict[str, Any]:
    body = {
        "targets": list(report.targets),
        "rows": [compare_row_json(row) for row in report.rows],
        "best": report.best,
        "sort": report.sort,
        "notes": list(report.notes),
    }
    return document("compare", " ".join(report.targets), body)

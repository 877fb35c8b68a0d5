"""The `remat` JSON document (as `render/schema/remat.py` holds its schema)."""

from __future__ import annotations

from typing import Any

from hloscope.render.json import document, plain
from hloscope.reports.remat import RematReport


def remat_json(report: RematReport) -> dict[str, Any]:
    a = report.analysis
    body: dict[str, Any] = {
        "function": a.function,
        "differentiated": list(a.differentiated),
        "residuals": plain(a.residuals),
        "groups": plain(a.groups),
        "device_bytes": a.device_bytes,
        "host_bytes": a.host_bytes,
        "regions": [
            {
                **plain(r.fact),
                "recomputed_ops": sum(op.count for op in r.fact.recomputed),
                "saved": r.saved,
                "saved_bytes": r.saved_bytes,
                "offloaded_bytes": r.offloaded_bytes,
            }
            for r in a.regions
        ],
        "names": list(a.names),
        "unmatched_names": [plain(u) for u in a.unmatched],
        "peak": plain(a.peak),
        "compiled_for": plain(report.compiled_for),
        "notes": list(report.notes),
    }
    return document("remat", report.target, body)

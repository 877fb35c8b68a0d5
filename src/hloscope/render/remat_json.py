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
        "devices": a.devices,
        "device_bytes_per_device": a.device_bytes_per_device,
        "host_bytes_per_device": a.host_bytes_per_device,
        "known_bytes_per_device": a.known_bytes_per_device,
        "known_per_device": a.known_per_device,
        "regions": [
            {
                **plain(r.fact),
                "recomputed_ops": sum(op.count for op in r.fact.recomputed),
                "saved": r.saved,
                "saved_bytes": r.saved_bytes,
                "offloaded_bytes": r.offloaded_bytes,
                "saved_bytes_per_device": r.saved_bytes_per_device,
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

"""The schema of `hloscope remat --json`, key for key as `render.remat_json` writes it."""

from __future__ import annotations

from hloscope.analyses.remat import (
    RematAnalysis,
    RematPeak,
    Residual,
    ResidualGroup,
    UnmatchedName,
)
from hloscope.remat_facts import RegionFact
from hloscope.render.schema.build import (
    INT,
    STR,
    Schema,
    array,
    dataclass_schema,
    fields,
    nullable,
    obj,
)
from hloscope.render.schema.views import COMPILED_FOR


def remat_body() -> dict[str, Schema]:
    region = dataclass_schema(RegionFact)
    region = obj(
        {
            **region["properties"],
            "recomputed_ops": {
                **INT,
                "description": "How many ops the backward runs again (the counts of "
                "`recomputed`, summed).",
            },
            "saved": {**INT, "description": "Residuals its body made."},
            "saved_bytes": {**INT, "description": "Global: of the whole arrays."},
            "offloaded_bytes": INT,
            "saved_bytes_per_device": nullable(
                {
                    **INT,
                    "description": "Of one device's shards; null where a residual's "
                    "sharding is XLA's choice.",
                }
            ),
        },
        title="Region",
    )
    return {
        **fields(RematAnalysis, "function", "differentiated"),
        "residuals": array(dataclass_schema(Residual)),
        "groups": array(dataclass_schema(ResidualGroup)),
        **fields(
            RematAnalysis,
            "device_bytes",
            "host_bytes",
            "devices",
            "device_bytes_per_device",
            "host_bytes_per_device",
            "known_bytes_per_device",
            "known_per_device",
        ),
        "regions": array(region),
        "names": array(STR),
        "unmatched_names": array(dataclass_schema(UnmatchedName)),
        "peak": nullable(dataclass_schema(RematPeak)),
        "compiled_for": COMPILED_FOR,
        "notes": array(STR),
    }

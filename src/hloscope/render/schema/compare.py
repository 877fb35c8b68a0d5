"""The schema of `hloscope compare --json`, key for key as `render.compare_json` writes
it."""

from __future__ import annotations

from hloscope.render.schema.build import (
    STR,
    Schema,
    array,
    dataclass_schema,
    fields,
    mapping,
    nullable,
    obj,
)
from hloscope.reports.compare import (
    CompareCollective,
    CompareConfig,
    CompareEstimate,
    CompareRow,
    Comparison,
)


def compare_body() -> dict[str, Schema]:
    config = obj(
        {
            **fields(CompareConfig, "target", **{"for": "compile_for"}),
            "env": mapping(STR),
            **fields(CompareConfig, "label"),
        },
        title="Configuration",
    )
    row = obj(
        {
            "config": config,
            **fields(
                CompareRow,
                "fits",
                "peak_bytes",
                "peak_from",
                "capacity_bytes",
                "device",
                "devices",
            ),
            "estimate": nullable(dataclass_schema(CompareEstimate)),
            "collectives": array(dataclass_schema(CompareCollective)),
            **fields(
                CompareRow,
                "ici_bytes",
                "dcn_bytes",
                "compile_seconds",
                "compile_cached",
                "compiles",
                "tokens_per_step",
                "tokens_per_second_per_device",
                "refused",
                "error",
            ),
            "notes": array(STR),
        },
        title="Row",
        description="One configuration; a failed row has `error` and nulls.",
    )
    return {
        "targets": array(STR),
        "rows": array(row),
        **fields(Comparison, "best", "sort"),
        "notes": array(STR),
    }

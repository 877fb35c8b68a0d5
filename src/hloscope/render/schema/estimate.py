"""The schema of `profile --for`: the measured profile's keys, with the estimate's
(`render/estimate_json.py`), key for key."""

from __future__ import annotations

from hloscope.render.schema.build import BOOL, INT, NUM, STR, Schema, array, nullable, obj
from hloscope.render.schema.runs import profile_body

BASIS: Schema = {"enum": ["compiler", "roofline", "interconnect"]}
BOUND: Schema = {"enum": ["compute", "memory", "network"]}


def estimate_body() -> dict[str, Schema]:
    """A function's estimated profile (`profile TARGET --for SPEC`)."""
    body = profile_body()
    measured_op = body["ops"]["items"]
    op = obj(
        {
            **measured_op["properties"],
            "cycles": nullable(INT),
            "basis": BASIS,
            "bound": BOUND,
            "flops": nullable(NUM),
            "bytes": nullable(NUM),
        },
        title="EstimatedOp",
    )
    return {
        **body,
        "estimated": {"const": True},
        "ops": array(op),
        "estimate": obj(
            {
                "seconds": NUM,
                "compute_seconds": NUM,
                "communication_seconds": NUM,
                "exposed_communication_seconds": NUM,
                "flops": NUM,
                "cost_analysis_flops": nullable(NUM),
                "mfu": nullable(NUM),
                "hfu": nullable(NUM),
                "model_flops": nullable(NUM),
                "model_flops_from": nullable(
                    {"enum": ["given", "no recomputation", "saving everything"]}
                ),
                "target": STR,
            },
            title="Estimate",
        ),
        "figures": obj(
            {
                "clock_hz": nullable(NUM),
                "peak_flops": NUM,
                "hbm_bytes_per_second": NUM,
                "interconnect_bytes_per_second": NUM,
                "dcn_bytes_per_second": nullable(NUM),
                "source": STR,
            },
            title="Figures",
        ),
        "collectives": array(
            obj(
                {
                    "name": STR,
                    "op": STR,
                    "bytes": NUM,
                    "result_bytes": INT,
                    "group_size": nullable(INT),
                    "calls": INT,
                    "seconds": NUM,
                    "basis": BASIS,
                    "exposed_seconds": NUM,
                    "asynchronous": BOOL,
                    "across_slices": BOOL,
                    "hidden": BOOL,
                    "overlapped_by": array(STR),
                    "user_source": nullable(STR),
                    "sources": array(STR),
                    "collective": STR,
                    "in_loop": BOOL,
                },
                title="EstimatedCollective",
            )
        ),
    }

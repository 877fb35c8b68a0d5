"""Every view reads one answer of the compiled program (issue 59): on an LLM-shaped
training step compiled for a TPU slice (in XLA's own form: the TPU's tiled layouts
stop the MLIR conversion), `placement`, `check`'s facts and `profile --for` agree on
every collective kind's count, bytes, loops and async, the TPU's all-reduce-scatter
fusions a reduce-scatter in all three; and a program whose module converts to MLIR
is estimated the same read through either form (`HLOSCOPE_HLO_FORM=xla`)."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from test_compile_for import child_env, hloscope, needs

pytestmark = pytest.mark.slow

STEP = "samples/llm_step.py"
STEP_TARGET = [f"{STEP}:train_step", "--args", f"{STEP}:example_args"]
STEPS = {
    "tpu:v5e:2x4": {},
    # 16 chips: data 4 x model 4.
    "tpu:v5e:4x4": {"LLM_STEP": "4,1024,512,16"},
}


def _by_kind(collectives: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    kinds: dict[str, dict[str, int]] = defaultdict(
        lambda: {"count": 0, "bytes": 0, "in_loops": 0, "async": 0}
    )
    for c in collectives:
        kind = kinds[c["op"].replace("-", "_")]
        kind["count"] += 1
        kind["bytes"] += c["result_bytes"]
        kind["in_loops"] += c["in_loop"]
        kind["async"] += c["asynchronous"]
    return dict(kinds)


@pytest.mark.parametrize("spec", sorted(STEPS))
def test_placement_check_and_the_estimate_agree_on_every_collective(spec, tmp_path: Path):
    needs("tpu")
    env = {**child_env(), **STEPS[spec]}
    target = [*STEP_TARGET, "--for", spec]
    estimate = hloscope("profile", *target, "--json", env=env).json()
    placement = hloscope("placement", *target, "--json", env=env).json()
    baseline = tmp_path / "step.json"
    recorded = hloscope(
        "check", *target, "--baseline", str(baseline), "--update", "--json", env=env
    )
    assert recorded.code == 0, recorded.stderr
    facts = json.loads(baseline.read_text())["facts"]

    estimated = _by_kind(estimate["collectives"])
    listed = {
        c["op"]: {
            "count": c["count"],
            "bytes": c["bytes"],
            "in_loops": c["in_loops"],
            "async": c["async"],
        }
        for c in placement["collectives"]
        if not c["across_slices"]
    }
    assert listed, "no collective: the case tests nothing"
    assert estimated == listed
    for kind, seen in listed.items():
        fact = f"collectives.{kind.replace('_', '-')}"
        assert facts[f"{fact}.count"] == seen["count"], kind
        assert facts[f"{fact}.bytes"] == seen["bytes"], kind
        assert facts[f"{fact}.in_loops"] == seen["in_loops"], kind
    kinds = {key.split(".")[1] for key in facts if key.startswith("collectives.")}
    assert kinds == {kind.replace("_", "-") for kind in listed}
    # The TPU's all-reduce-scatter fusions: an all-reduce instruction launched by a
    # fusion, a reduce-scatter in the estimate, and so in placement and check.
    fused = [
        c
        for c in estimate["collectives"]
        if c["op"] == "reduce-scatter" and c["collective"].startswith("all-reduce")
    ]
    assert fused, "no all-reduce-scatter fusion: the case tests nothing"
    assert all(c["name"] != c["collective"] for c in fused)
    assert listed["reduce_scatter"]["count"] >= len(fused)
    assert facts["collectives.reduce-scatter.count"] >= len(fused)
    assert "all-reduce-scatter" not in {c["op"] for c in estimate["collectives"]}


CONVERTS = [
    "tests/fixtures/why_fsdp_step.py:train_step",
    "--args",
    "tests/fixtures/why_fsdp_step.py:example_args",
    "--for",
    "tpu:v5e:2x4",
    "--json",
]


def test_the_estimate_is_the_same_read_through_either_form():
    needs("tpu")
    converted = hloscope("profile", *CONVERTS).json()
    native = hloscope("profile", *CONVERTS, env={**child_env(), "HLOSCOPE_HLO_FORM": "xla"}).json()
    assert (converted["source"]["ir"], native["source"]["ir"]) == ("hlo", "hlo-native")
    assert converted["ops"], "no kernel: the case tests nothing"
    assert converted["collectives"], "no collective: the case tests nothing"
    for key in ("ops", "lines", "estimate", "collectives", "op_seconds"):
        assert converted[key] == native[key], key

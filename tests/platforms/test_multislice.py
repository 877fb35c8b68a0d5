"""Multi-slice (`--for tpu:...,slices=N`): the collectives between slices, which libtpu
turns into sends and receives over the data-centre network (tagged with the
collective they carry out), are listed as collectives across slices, first, in text,
JSON and check's facts, as XLA's own text of the same compile has them
(jax_truth.py)."""

from __future__ import annotations

import pytest
from test_compile_for import hloscope, needs, run_truth

pytestmark = pytest.mark.slow

STEP = "tests/fixtures/multislice.py"
SPEC = "tpu:v5e:2x4,slices=2"
TARGET = [f"{STEP}:step", "--args", f"{STEP}:step_args", "--for", SPEC]


def test_collectives_between_slices_are_listed_with_their_bytes(tmp_path):
    needs("tpu")
    case = {
        "platform": "tpu",
        "topology": "v5e:2x4",
        "kwargs": {"num_slices": 2},
        "module": STEP,
        "function": "step",
        "args": "step_args",
        "sharded": True,
    }
    truth = run_truth({"step": case})["step"]["megascale"]
    assert truth, "libtpu made no transfer between slices: the case tests nothing"

    document = hloscope("placement", *TARGET, "--json").json()
    across = [c for c in document["collectives"] if c["across_slices"]]
    assert {c["op"]: {"count": c["count"], "bytes": c["bytes"]} for c in across} == truth
    # The slow traffic is the first thing the view shows.
    assert document["collectives"][: len(across)] == across
    text = hloscope("placement", *TARGET).stdout
    assert "all_reduce across slices" in text

    baseline = tmp_path / "step.json"
    recorded = hloscope("check", *TARGET, "--baseline", str(baseline), "--update", "--json")
    facts = recorded.json()["targets"][0]["facts"]
    for op, found in truth.items():
        prefix = f"collectives.dcn.{op.replace('_', '-')}"
        assert facts[f"{prefix}.count"] == found["count"]
        assert facts[f"{prefix}.bytes"] == found["bytes"]

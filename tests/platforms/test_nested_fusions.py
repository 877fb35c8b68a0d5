"""A fusion that holds fusions (a TPU convolution fusion computes each operand in a
fusion of its own): `fusions` lists what they hold, counted in its `holding N ops`,
as XLA's own text of the same compile says (jax_truth.py: the instructions of the
fusion's computation, a nested fusion standing for its own)."""

from __future__ import annotations

import pytest
from test_compile_for import hloscope, needs, run_truth

pytestmark = pytest.mark.slow

CONV = "tests/fixtures/tpu_conv.py"


def test_a_fusion_of_fusions_lists_what_they_hold():
    needs("tpu")
    case = {"platform": "tpu", "topology": "v5e:2x4", "module": CONV}
    cases = {"conv": {**case, "function": "conv", "args": "conv_args"}}
    truth = run_truth(cases)["conv"]
    assert truth["nested_fusions"], "XLA nested no fusion: the case tests nothing"
    doc = hloscope(
        "fusions", f"{CONV}:conv", "--args", f"{CONV}:conv_args", "--for", "tpu:v5e:2x4", "--json"
    ).json()
    held = {f["name"]: f["ops"] for f in truth["fusions"]}
    assert {f["name"]: f["op_count"] for f in doc["fusions"]} == held
    for fusion in doc["fusions"]:
        assert not any(op.endswith(".fusion") for op in fusion["ops"]), fusion["ops"]
        assert sum(fusion["op_counts"].values()) == fusion["op_count"]

"""Multi-slice (`--for tpu:...,slices=N`): the collectives between slices, which libtpu
turns into sends and receives over the data-centre network (tagged with the
collective they carry out), are listed as collectives across slices, first, in text,
JSON and check's facts, as XLA's own text of the same compile has them
(jax_truth.py)."""

from __future__ import annotations

import pytest
from test_compile_for import child_env, hloscope, needs, run_truth

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


def test_an_llm_step_in_xla_form_lists_its_collectives_across_slices():
    """The LLM-shaped step on two slices does not convert to MLIR (its TPU program has
    tiled layouts): read in XLA's own form, its collectives between slices are listed
    with the count and bytes of libtpu's megascale sends in XLA's text. They were
    missing there: the form read each instruction's frontend attributes from XLA's
    printing, cut at the first brace inside `_xla_megascale_target="{1,2}x{0:7}"`."""
    needs("tpu")
    step = "samples/llm_step.py"
    case = {
        "platform": "tpu",
        "topology": "v5e:2x2",
        "kwargs": {"num_slices": 2},
        "module": step,
        "function": "train_step",
        "args": "example_args",
        "make_mesh": ["data", "model"],
        "in_device_order": True,
    }
    megascale = run_truth({"step": case})["step"]["megascale"]
    assert megascale, "libtpu made no transfer between slices: the case tests nothing"
    # libtpu's ONE_TO_ONE: each device sends to one device of the other slice.
    kinds = {"one_to_one": "collective_permute"}
    truth = {kinds.get(kind, kind): found for kind, found in megascale.items()}
    target = [f"{step}:train_step", "--args", f"{step}:example_args"]
    document = hloscope("placement", *target, "--for", "tpu:v5e:2x2,slices=2", "--json").json()
    assert any("converting it to MLIR failed" in note for note in document["notes"])
    across = [c for c in document["collectives"] if c["across_slices"]]
    assert {c["op"]: {"count": c["count"], "bytes": c["bytes"]} for c in across} == truth


def test_collectives_across_slices_read_alike_in_either_form():
    """The same compile read converted to MLIR and in XLA's own form
    (HLOSCOPE_HLO_FORM=xla) lists the same collectives, across slices included."""
    needs("tpu")
    converted = hloscope("placement", *TARGET, "--json").json()["collectives"]
    native = hloscope(
        "placement", *TARGET, "--json", env={**child_env(), "HLOSCOPE_HLO_FORM": "xla"}
    )
    assert native.json()["collectives"] == converted
    assert any(c["across_slices"] for c in converted)

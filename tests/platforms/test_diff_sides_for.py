"""`diff` of an FSDP and a tensor-parallel step compiled for one TPU slice
(`--for tpu:v5e:2x4`, `--args-a/--args-b`): the summary's figures are each side's
single views run alone on it, `memory --for`, `profile --for` and `placement --for`."""

from __future__ import annotations

import pytest
from test_compile_for import hloscope, needs

pytestmark = pytest.mark.slow

STEP = "samples/sharding_choice.py:train_step"
SIDES = {"a": "samples/sharding_choice.py:fsdp_args", "b": "samples/sharding_choice.py:tp_args"}
FOR = ["--for", "tpu:v5e:2x4"]


def _json(*args: str) -> dict:
    run = hloscope(*args, "--json")
    assert run.code in (0, 1), run.stderr
    return run.json()


def test_the_summary_of_two_shardings_on_a_slice_is_each_sides_views():
    needs("tpu")
    doc = _json("diff", STEP, STEP, "--args-a", SIDES["a"], "--args-b", SIDES["b"], *FOR)
    assert doc["verdict"] == "different"
    assert doc["a"]["compiled_for"]["name"] == doc["b"]["compiled_for"]["name"]
    summary = doc["compiled_summary"]
    for side, factory in SIDES.items():
        alone = [STEP, "--args", factory, *FOR]
        memory = _json("memory", *alone)
        assert summary["memory"][side] == memory["peak_bytes"] > 0
        estimate = _json("profile", *alone)["estimate"]
        assert summary["estimate"][side] == {
            key: estimate[key] for key in summary["estimate"][side]
        }
        placement = _json("placement", *alone)
        want = {
            c["op"]: {"count": c["count"], "bytes": c["bytes"], "in_loops": c["in_loops"]}
            for c in placement["collectives"]
        }
        assert {c["op"]: c[side] for c in summary["collectives"] if c[side]["count"]} == want
    # The two shardings place other collectives: the summary says so.
    assert any(c["a"] != c["b"] for c in summary["collectives"])

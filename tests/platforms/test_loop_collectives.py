"""The collectives of an LLM-shaped train step's loops on a TPU (issue 53, section 3),
against XLA's own text of the same program.

samples/llm_step.py at its default size, compiled for `tpu:v5e:2x2`, is a module
whose conversion to MLIR fails (tiled layouts): hloscope shows it in XLA's own form.
Its scanned backward pass runs the all-gathers of FSDP inside the TPU's async
collective fusions, kCustom fusions a `while` body calls; the TPU writes no
`known_trip_count` on its loops. The truth comes from `jax_truth.py` in a child
process (`jax.experimental.topologies`, the sample's mesh made by `jax.make_mesh` over
the topology's devices): per kind, the collectives of the computations the entry
reaches, those a while body reaches, the async ones, and the scan's length.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from test_compile_for import run_truth

from conftest import ROOT, Run
from schema_support import validate

pytestmark = pytest.mark.slow

HERE = Path(__file__).resolve().parent
STEP = "samples/llm_step.py"
TARGET = [f"{STEP}:train_step", "--args", f"{STEP}:example_args"]
SPEC = "tpu:v5e:2x2"
LLM_STEP = "2,512,256,8"
"""The sample's default size, said here so that the environment cannot change it."""


def child_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    env.update(
        COLUMNS="400",
        LLM_STEP=LLM_STEP,
        ALLOW_MULTIPLE_LIBTPU_LOAD="1",
        JAX_SKIP_CUDA_CONSTRAINTS_CHECK="1",
    )
    return env


def hloscope(*args: str) -> Run:
    run = subprocess.run(
        [sys.executable, "-m", "hloscope", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=child_env(),
        stdin=subprocess.DEVNULL,
        timeout=600,
        check=False,
    )
    result = Run(run.returncode, run.stdout, run.stderr)
    assert result.code == 0, result.stderr[-4000:]
    if "--json" in args:
        validate(result.json(), "hloscope " + " ".join(args))
    return result


@pytest.fixture(scope="module")
def truth() -> dict[str, Any]:
    """XLA's own text of the step compiled for the topology, read by jax_truth.py."""
    pytest.importorskip("libtpu", reason="libtpu is not installed: --for tpu:... cannot compile")
    case = {
        "platform": "tpu",
        "topology": SPEC.partition(":")[2],
        "module": STEP,
        "function": "train_step",
        "args": "example_args",
        "make_mesh": ["data", "model"],
        "loops": True,
    }
    found = run_truth({"step": case}, LLM_STEP=LLM_STEP)["step"]
    assert "error" not in found, found
    return found["loops"]


@pytest.fixture(scope="module")
def placement(truth: dict[str, Any]) -> dict[str, Any]:
    document = hloscope("placement", *TARGET, "--for", SPEC, "--json").json()
    # The case at hand: XLA's own form, loops in the backward pass.
    assert any("converting it to MLIR failed" in note for note in document["notes"])
    return {c["op"]: c for c in document["collectives"]}


def test_the_step_has_collectives_in_fusions_of_its_loops(truth):
    # What the tests below stand on: an async all-gather the TPU moves on through
    # fusions of the backward loop, each holding a copy of it (its channel): one
    # collective, started before the loop and done after it; all-reduces in the loops.
    gathers = truth["collectives"]["all_gather"]
    assert gathers["copies"] > 0 and gathers["async"] > 0
    assert truth["collectives"]["all_reduce"]["in_loops"] > 0
    assert truth["whiles"] == 2  # the scan forward and backward


def test_collectives_in_loops_and_async_are_xlas(truth, placement):
    expected = {
        op: (c["count"], c["in_loops"], c["async"]) for op, c in truth["collectives"].items()
    }
    found = {op: (c["count"], c["in_loops"], c["async"]) for op, c in placement.items()}
    assert found == expected


def test_per_call_counts_the_scans_trips_read_from_the_loop_condition(truth, placement):
    layers = truth["scan_length"]
    for op, collective in placement.items():
        expected = collective["count"] + collective["in_loops"] * (layers - 1)
        assert collective["per_call"] == expected, op
        looped = ["loop_condition"] if collective["in_loops"] else []
        assert collective["trip_counts_from"] == looped, op
    text = hloscope("placement", *TARGET, "--for", SPEC).stdout
    assert "times their trip counts (read from the loop's condition;" in text


def test_inspect_and_check_count_the_same(truth, placement, tmp_path):
    inspected = hloscope("inspect", *TARGET, "--for", SPEC, "--json").json()
    assert {c["op"]: c for c in inspected["placement"]["collectives"]} == placement
    baseline = tmp_path / "baseline.json"
    hloscope("check", *TARGET, "--for", SPEC, "--update", "--baseline", str(baseline))
    facts = json.loads(baseline.read_text())["facts"]
    for op, collective in truth["collectives"].items():
        prefix = f"collectives.{op.replace('_', '-')}"
        assert facts[f"{prefix}.count"] == collective["count"]
        assert facts[f"{prefix}.in_loops"] == collective["in_loops"]
        assert facts[f"{prefix}.per_call"] == placement[op]["per_call"]

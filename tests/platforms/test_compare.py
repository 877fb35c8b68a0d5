"""`hloscope compare`: each row is what the single views say of the same configuration
run alone (`memory --for`, `profile --for`, `placement --for`), and its peak what JAX
compiles for the topology (`compiled.memory_analysis()` through
`jax.experimental.topologies`, jax_truth.py in a child process of its own, the
configuration's environment set); a configuration XLA refuses for memory is a row that
does not fit, with XLA's sentence, and one whose program raises is a row with its
reason, while the others still run; a second run reads every compile from the cache."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from test_compile_for import child_env, hloscope, needs, run_truth

pytestmark = pytest.mark.slow

STEP = "samples/llm_step.py"
STEP_TARGET = [f"{STEP}:train_step", "--args", f"{STEP}:example_args"]
FIXTURE = "tests/fixtures/compare_targets.py"
FIXTURE_TARGET = [f"{FIXTURE}:step", "--args", f"{FIXTURE}:step_args"]
SPEC = "tpu:v5e:2x2"


def _required(memory: dict[str, int]) -> int:
    """What one device needs, from XLA's memory analysis, as memory --for's fit says."""
    return (
        memory["argument_bytes"]
        + memory["output_bytes"]
        + memory["temp_bytes"]
        + memory["generated_code_bytes"]
        - memory["alias_bytes"]
    )


def _row(document: dict[str, Any], **env: str) -> dict[str, Any]:
    return next(r for r in document["rows"] if r["config"]["env"] == env)


def test_each_row_is_what_the_single_views_and_xla_say():
    needs("tpu")
    run = hloscope(
        "compare", *STEP_TARGET, "--for", SPEC, "--vary", "LLM_REMAT=dots,full", "--json"
    )
    assert run.code == 0, run.stderr
    document = run.json()
    assert document["target"] == f"{STEP}:train_step" and document["targets"] == [
        document["target"]
    ]
    # A progress line per row on stderr as it finishes; stdout is the document alone.
    progress = [line for line in run.stderr.splitlines() if line.startswith("compare: [")]
    assert len(progress) == 2, run.stderr
    rows = document["rows"]
    assert all(r["error"] is None and r["fits"] is True for r in rows)
    best = rows[document["best"]]
    assert best["estimate"]["seconds"] == min(r["estimate"]["seconds"] for r in rows)

    for remat in ("dots", "full"):
        row = _row(document, LLM_REMAT=remat)
        env = {**child_env(), "LLM_REMAT": remat}
        memory = hloscope("memory", *STEP_TARGET, "--for", SPEC, "--json", env=env).json()
        assert row["peak_bytes"] == memory["fit"]["required_bytes"]
        assert row["capacity_bytes"] == memory["fit"]["device_bytes"] == 16 << 30
        assert row["peak_from"] == "memory analysis"
        profile = hloscope("profile", *STEP_TARGET, "--for", SPEC, "--json", env=env).json()
        for key in ("seconds", "compute_seconds", "exposed_communication_seconds", "mfu"):
            assert row["estimate"][key] == profile["estimate"][key], key
        placement = hloscope("placement", *STEP_TARGET, "--for", SPEC, "--json", env=env).json()
        assert [
            (c["op"], c["count"], c["bytes"], c["in_loops"], c["across_slices"])
            for c in row["collectives"]
        ] == [
            (c["op"], c["count"], c["bytes"], c["in_loops"], c["across_slices"])
            for c in placement["collectives"]
        ]
        assert row["collectives"], "no collective on 4 devices: the case tests nothing"
        # XLA's own answer for the same program, JAX compiling it for the topology.
        truth = run_truth(
            {
                "step": {
                    "platform": "tpu",
                    "topology": "v5e:2x2",
                    "module": STEP,
                    "function": "train_step",
                    "args": "example_args",
                    "make_mesh": ["data", "model"],
                }
            },
            LLM_REMAT=remat,
        )["step"]
        assert row["peak_bytes"] == _required(truth["memory"])
        # Tokens per second per device from the program's TOKENS_PER_STEP (8 x 256).
        assert row["tokens_per_step"] == 8 * 256
        assert row["tokens_per_second_per_device"] == pytest.approx(
            8 * 256 / row["devices"] / row["estimate"]["seconds"]
        )
    # Saving nothing recomputes more: the same model flops, more executed.
    dots, full = _row(document, LLM_REMAT="dots"), _row(document, LLM_REMAT="full")
    assert full["estimate"]["flops"] > dots["estimate"]["flops"]


def test_a_refused_and_a_failing_configuration_are_rows_beside_the_others(tmp_path: Path):
    needs("tpu")
    env = {**child_env(), "HLOSCOPE_CACHE_DIR": str(tmp_path / "cache")}
    argv = ["compare", *FIXTURE_TARGET, "--for", SPEC, "--vary", "COMPARE_SIZE=small,big,raise"]
    run = hloscope(*argv, "--json", env=env)
    assert run.code == 0, run.stderr
    document = run.json()
    small, big, failing = (_row(document, COMPARE_SIZE=s) for s in ("small", "big", "raise"))
    assert small["fits"] is True and small["error"] is None
    assert document["rows"][document["best"]] == small
    # XLA refused the big one for memory: its sentence, and its buffer assignment's bytes.
    truth = run_truth(
        {
            "big": {
                "platform": "tpu",
                "topology": "v5e:2x2",
                "module": FIXTURE,
                "function": "step",
                "args": "step_args",
            }
        },
        COMPARE_SIZE="big",
    )["big"]
    assert truth["error"].startswith("RESOURCE_EXHAUSTED: "), truth
    assert big["refused"] == truth["error"].removeprefix("RESOURCE_EXHAUSTED: ")
    assert big["fits"] is False and big["error"] is None
    assert big["peak_from"] == "buffer assignment" and big["peak_bytes"] > big["capacity_bytes"]
    memory = hloscope(
        "memory", *FIXTURE_TARGET, "--for", SPEC, "--json", env={**env, "COMPARE_SIZE": "big"}
    )
    assert memory.code == 1 and big["peak_bytes"] == memory.json()["fit"]["required_bytes"]
    assert big["estimate"] is None
    # The program's own error: one line, naming it, and nulls.
    assert "ValueError" in failing["error"] and "COMPARE_SIZE=raise" in failing["error"]
    assert "\n" not in failing["error"]
    assert failing["fits"] is None and failing["peak_bytes"] is None and failing["estimate"] is None
    assert document["rows"][-1] == failing  # failed rows last

    # The same comparison again: every compile that XLA finished read from the cache
    # (one it refused left nothing to keep: docs/known-limits.md).
    assert small["compiles"] >= 1
    again = hloscope(*argv, "--json", env=env).json()
    assert _row(again, COMPARE_SIZE="small")["compiles"] == 0
    assert _row(again, COMPARE_SIZE="small")["compile_cached"] is True
    assert [r["peak_bytes"] for r in again["rows"]] == [r["peak_bytes"] for r in document["rows"]]


def test_exit_2_when_no_configuration_compiles():
    needs("tpu")
    env = {**child_env(), "COMPARE_SIZE": "raise"}
    run = hloscope("compare", *FIXTURE_TARGET, "--for", SPEC, "--json", env=env)
    assert run.code == 2
    assert run.json()["rows"][0]["error"]
    assert run.stderr.strip().splitlines()[-1] == (
        "hloscope: error: compare: none of the 1 configurations compiled"
    )
    assert "Traceback" not in run.stderr


def test_a_child_that_dies_is_a_row_with_its_reason():
    needs("tpu")
    # A time limit the child cannot meet (importing JAX alone takes longer): it is
    # killed, and its row says so.
    run = hloscope("compare", *STEP_TARGET, "--for", SPEC, "--timeout", "1", "--json")
    assert run.code == 2
    (row,) = run.json()["rows"]
    assert row["error"] == "its child process did not finish within 1 s"


def test_the_python_api_returns_the_frozen_rows_the_command_prints(monkeypatch):
    needs("tpu")
    import dataclasses

    import hloscope as api

    # The children take this process's environment: without the suite's 8 host devices.
    monkeypatch.delenv("XLA_FLAGS", raising=False)
    seen = []
    report = api.compare(
        f"{FIXTURE}:step",
        SPEC,
        vary={"COMPARE_SIZE": ["small", "raise"]},
        args_factory=f"{FIXTURE}:step_args",
        on_row=lambda row, done, total: seen.append((done, total)),
    )
    assert sorted(seen) == [(1, 2), (2, 2)]
    from hloscope.reports.compare import Comparison

    assert isinstance(report, Comparison)
    with pytest.raises(dataclasses.FrozenInstanceError):
        report.best = None  # type: ignore[misc]
    small, failing = report.rows
    assert report.best == 0 and small.fits is True and failing.error is not None
    run = hloscope("compare", *FIXTURE_TARGET, "--for", SPEC, "--json")
    (row,) = run.json()["rows"]
    assert row["peak_bytes"] == small.peak_bytes
    assert row["estimate"]["seconds"] == small.estimate.seconds

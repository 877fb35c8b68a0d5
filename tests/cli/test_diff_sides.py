"""`hloscope diff` of two configurations of one step: each side's own options
(`--args-a/--args-b`, `--env-a/--env-b`; one without a side applies to both), the
refusal of two sides that need two JAX backends, and the summary of two compiled
programs, each figure equal to the single view's (`placement`, `memory`) run alone on
that side, and the collectives to XLA's own compile of it."""

from __future__ import annotations

import collections
import os
import re
import subprocess
import sys

import pytest

STEP = "samples/sharding_choice.py:train_step"
FSDP = "samples/sharding_choice.py:fsdp_args"
TP = "samples/sharding_choice.py:tp_args"


def _json(cli, *args):
    run = cli(*args, "--json")
    assert run.code in (0, 1), run.stderr
    return run.json()


def _xla_collectives(factory: str) -> collections.Counter[str]:
    """The collectives in XLA's own text of JAX compiling the step on `factory`'s
    arguments (this process has 8 host devices: conftest), by kind."""
    import importlib

    import jax

    sys.path.insert(0, "samples")
    try:
        sample = importlib.import_module("sharding_choice")
    finally:
        sys.path.remove("samples")
    text = jax.jit(sample.train_step).lower(*getattr(sample, factory)()).compile().as_text()
    kinds = re.findall(
        r" (all-reduce|all-gather|all-to-all|reduce-scatter|collective-permute)(?:-start)?\(",
        text,
    )
    return collections.Counter(kind.replace("-", "_") for kind in kinds)


def test_fsdp_against_tensor_parallel_lists_their_shardings_and_sums_up_as_the_views(cli):
    doc = _json(cli, "diff", STEP, STEP, "--args-a", FSDP, "--args-b", TP, "--compile")
    assert doc["verdict"] == "different"
    # Each side compiled on its own arguments: every parameter's sharding differs.
    changed = {p["a_name"]: p["detail"] for p in doc["parameters"] if p["status"] == "changed"}
    assert set(changed) == {"params['w1']", "params['w2']", "x", "y"}, doc["parameters"]
    assert all("sharding" in detail for detail in changed.values())
    # FSDP's step does not convert to MLIR (an all-to-all MHLO refuses): both sides are
    # read in XLA's form, or every op would differ by its name (hlo.dot, stablehlo.dot).
    assert doc["a"]["source"]["ir"] == doc["b"]["source"]["ir"] == "hlo-native"
    assert not [c for c in doc["changes"] if c["op"].startswith(("stablehlo.", "mhlo."))]
    assert any("as the other side of the diff is" in note for note in doc["notes"])
    summary = doc["compiled_summary"]
    for side, factory in (("a", FSDP), ("b", TP)):
        alone = ["--args", factory]
        placement = _json(cli, "placement", STEP, *alone, "--compile")
        want = {
            c["op"]: {"count": c["count"], "bytes": c["bytes"], "in_loops": c["in_loops"]}
            for c in placement["collectives"]
        }
        got = {c["op"]: c[side] for c in summary["collectives"] if c[side]["count"]}
        assert got == want
        xla = _xla_collectives(factory.rpartition(":")[2])
        assert {op: c["count"] for op, c in got.items()} == dict(xla)
        memory = _json(cli, "memory", STEP, *alone)
        assert summary["memory"][side] == memory["peak_bytes"] > 0
    assert summary["estimate"] is None  # compiled for the local backend, not --for
    # Tensor parallelism all-reduces the second matmul's partial sums, at its line.
    (reduce,) = [c for c in summary["collectives"] if c["op"] == "all_reduce"]
    assert reduce["b"]["count"] > reduce["a"]["count"]
    # Lines as placement names them (the file's path in the module's locations).
    assert [a["source"] for a in reduce["added_at"]] == [
        os.path.abspath("samples/sharding_choice.py") + ":41"
    ]
    text = cli("diff", STEP, STEP, "--args-a", FSDP, "--args-b", TP, "--compile")
    assert text.stdout.index("Compiled: A → B") < text.stdout.index("Changes")
    assert "more in B at samples/sharding_choice.py:41 +1" in text.stdout


def test_each_side_imports_the_program_afresh_under_its_environment(cli, monkeypatch):
    monkeypatch.setenv("MESH", "8x1")
    doc = _json(cli, "diff", STEP, STEP, "--args", TP, "--env-a", "MESH=4x2", "--env-b", "MESH=2x4")
    assert doc["verdict"] == "different"
    details = [c["detail"] for c in doc["changes"]]
    assert any("data=4 × model=2 → data=2 × model=4" in d for d in details), details
    assert os.environ["MESH"] == "8x1"  # as it was before
    monkeypatch.delenv("MESH")
    _json(cli, "diff", STEP, STEP, "--args", TP, "--env-b", "MESH=2x4")
    assert "MESH" not in os.environ


def test_an_option_without_a_side_applies_to_both(cli):
    same = _json(cli, "diff", STEP, STEP, "--args", TP, "--env", "MESH=2x4")
    assert same["verdict"] == "same"
    # --env for both, --env-b for B alone: A keeps 2x4.
    doc = _json(cli, "diff", STEP, STEP, "--args", TP, "--env", "MESH=2x4", "--env-b", "MESH=4x2")
    details = [c["detail"] for c in doc["changes"]]
    assert any("data=2 × model=4 → data=4 × model=2" in d for d in details), details
    # --args for both, --args-b for B alone: A keeps the tensor-parallel shardings.
    doc = _json(cli, "diff", STEP, STEP, "--args", TP, "--args-b", FSDP)
    (w1,) = [p for p in doc["parameters"] if p["a_name"] == "params['w1']"]
    assert w1["detail"].index('{"model"}') < w1["detail"].index("→")


@pytest.mark.parametrize(
    ("options", "said"),
    [
        (["--for-a", "tpu:v5e:4x4", "--for-b", "gpu:h100x8"], "16 devices"),
        (["--for-a", "tpu:v5e:2x4"], "the local backend"),
        (["--env-a", "XLA_FLAGS=--xla_cpu_use_thunk_runtime=false"], "XLA_FLAGS differently"),
    ],
)
def test_two_sides_that_need_two_backends_are_refused_in_one_line(cli, options, said):
    run = cli("diff", STEP, STEP, "--args", TP, *options)
    assert run.code == 2
    assert run.stdout == ""
    assert len(run.stderr.strip().splitlines()) == 1 and said in run.stderr, run.stderr
    assert "Traceback" not in run.stderr


def test_an_environment_variable_is_name_equals_value(cli):
    run = cli("diff", STEP, STEP, "--env-a", "MESH")
    assert run.code == 2
    assert "--env-a MESH: expected NAME=VALUE" in run.stderr
    assert len(run.stderr.strip().splitlines()) == 1


def test_a_plain_diff_builds_no_summary_and_loads_none_of_its_views():
    # In a process of its own: this one has loaded every view already.
    code = (
        "import sys\n"
        "from hloscope.cli import main\n"
        "try:\n"
        "    main(['diff', 'samples/dumps/mlp.stablehlo.mlir', 'samples/diff/mlp.renamed.hlo',"
        " '--json'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "loaded = [m for m in ('hloscope.analyses.placement', 'hloscope.reports.memory')"
        " if m in sys.modules]\n"
        "print(loaded, file=sys.stderr)\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=False
    )
    assert '"compiled_summary"' not in run.stdout and '"verdict": "different"' in run.stdout
    assert run.stderr.strip().splitlines()[-1] == "[]", run.stderr[-2000:]

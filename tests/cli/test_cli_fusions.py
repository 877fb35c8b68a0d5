"""`hloscope fusions` through the command layer: the JSON contract, the text report,
which module it reads for each kind of target, and the summary in `inspect`."""

import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from conftest import DUMPS, ROOT, SAMPLES, line_of, sample

FUSION_KEYS = {"name", "kind", "ops", "sources"}


def assert_contract(doc):
    assert doc["schema_version"] == 1
    assert doc["command"] == "fusions"
    assert isinstance(doc["target"], str)
    assert isinstance(doc["unfused_ops"], int)
    assert doc["unfused_ops"] == len(doc["unfused"])
    for fusion in doc["fusions"]:
        assert fusion.keys() >= FUSION_KEYS
        assert re.fullmatch(r"k[A-Z]\w*", fusion["kind"])
        assert all(isinstance(op, str) for op in fusion["ops"])
        assert all(re.fullmatch(r".+:\d+", source) for source in fusion["sources"])
    assert doc["summary"]["fusions"] == len(doc["fusions"])


def test_json_of_an_entrypoint(cli):
    run = cli("fusions", *sample("jit_granularity", "mlp"), "--json")
    assert run.code == 0, run.stderr
    doc = run.json()
    assert_contract(doc)
    assert doc["source"]["kind"] == "entrypoint"
    assert doc["source"]["stage"] == "optimized"
    assert doc["module"] == "jit_mlp"
    assert doc["timings"]["compile_seconds"] is not None
    path = SAMPLES / "jit_granularity.py"
    matmul = f"samples/jit_granularity.py:{line_of(path, 'y = x @ w')}"
    dots = [f for f in doc["fusions"] if f["ops"] == ["stablehlo.dot"]]
    assert len(dots) == 2
    assert all(f["sources"] == [matmul] for f in dots)
    assert all(f["op_counts"] == {"stablehlo.dot": 1} for f in dots)
    line = next(line for line in doc["lines"] if line["source"] == matmul)
    assert line["code"] == "y = x @ w  # the matmul"
    assert line["fusions"] == [f["name"] for f in dots]
    assert doc["summary"]["crossing_jits"] == 1


def test_text_report(cli):
    run = cli("fusions", "samples/dumps/mlp.after_optimizations.hlo")
    assert run.code == 0, run.stderr
    out = run.stdout
    relu_line = line_of(SAMPLES / "nested_jits.py", "return jax.nn.relu(x @ w + b)")
    assert "8 fusions (5 kLoop, 3 __ynn_fusion)" in out
    assert "maximum_tanh_fusion ⇄" in out
    assert f"samples/nested_jits.py:{relu_line}" in out
    assert "return jax.nn.relu(x @ w + b)" in out
    assert "combines ops of separate jits" in out
    assert not run.stderr


def test_after_optimization_dumps_are_read_as_they_are(cli):
    text = cli("fusions", "samples/dumps/mlp.after_optimizations.hlo", "--json").json()
    proto = cli("fusions", "samples/dumps/mlp.after_optimizations.hlo.pb", "--json").json()
    for doc in (text, proto):
        assert_contract(doc)
        assert doc["source"]["stage"] == "optimized"
        assert doc["timings"]["compile_seconds"] is None
    assert sorted(f["name"] for f in text["fusions"]) == sorted(f["name"] for f in proto["fusions"])


def test_a_before_optimization_dump_needs_compile(cli):
    run = cli("fusions", "samples/dumps/mlp.before_optimizations.hlo")
    assert run.code == 2
    assert run.stdout == ""
    [line] = run.stderr.splitlines()
    assert line.startswith("hloscope: error: samples/dumps/mlp.before_optimizations.hlo: ")
    assert "add --compile" in line

    for name in ("mlp.before_optimizations.hlo", "mlp.stablehlo.mlir"):
        run = cli("fusions", f"samples/dumps/{name}", "--compile", "--json")
        assert run.code == 0, run.stderr
        doc = run.json()
        assert_contract(doc)
        assert doc["source"]["stage"] == "optimized"
        assert len(doc["fusions"]) >= 6


def test_a_dump_folder_reads_its_after_optimization_file(cli, tmp_path):
    shutil.copy(
        DUMPS / "mlp.before_optimizations.hlo",
        tmp_path / "module_0001.jit_mlp.before_optimizations.txt",
    )
    run = cli("fusions", str(tmp_path))
    assert run.code == 2 and "add --compile" in run.stderr
    shutil.copy(
        DUMPS / "mlp.after_optimizations.hlo",
        tmp_path / "module_0001.jit_mlp.cpu_after_optimizations.txt",
    )
    run = cli("fusions", str(tmp_path), "--json")
    assert run.code == 0, run.stderr
    doc = run.json()
    assert doc["source"]["path"].endswith("cpu_after_optimizations.txt")
    assert "maximum_tanh_fusion" in {f["name"] for f in doc["fusions"]}


def test_a_module_without_fusions(cli, tmp_path):
    path = tmp_path / "copy.hlo"
    path.write_text(
        "HloModule m, is_scheduled=true\n\n"
        "ENTRY main {\n"
        "  p = f32[4]{0} parameter(0)\n"
        "  c = f32[4]{0} copy(p)\n"
        '  ROOT r = f32[4]{0} custom-call(c), custom_call_target="foo"\n'
        "}\n"
    )
    run = cli("fusions", str(path), "--json")
    assert run.code == 0, run.stderr
    doc = run.json()
    assert doc["fusions"] == []
    assert doc["unfused_ops"] == 2
    assert [(u["name"], u["category"], u["target"]) for u in doc["unfused"]] == [
        ("c", "copy", None),
        ("r", "custom-call", "foo"),
    ]
    text = cli("fusions", str(path)).stdout
    assert "XLA made no fusions in this module." in text
    assert "Unfused ops (2)" in text


def test_inspect_summarises_fusions_of_the_optimized_module(cli):
    lowered = cli("inspect", *sample("nested_jits", "mlp"), "--json").json()
    assert lowered["fusions"] is None
    run = cli("inspect", *sample("nested_jits", "mlp"), "--compile", "--json")
    doc = run.json()
    assert doc["fusions"]["fusions"] == 8
    assert doc["fusions"]["by_kind"] == {"kLoop": 5, "__ynn_fusion": 3}
    assert doc["fusions"]["unfused_ops"] == 0
    assert doc["fusions"]["crossing_jits"] == 1
    text = cli("inspect", "samples/dumps/mlp.after_optimizations.hlo").stdout
    assert "8 fusions (5 kLoop, 3 __ynn_fusion)" in text


@pytest.mark.parametrize("bad", ["samples/nope.hlo", "samples/nested_jits.py:nope"])
def test_bad_targets_are_one_line(cli, bad):
    run = cli("fusions", bad)
    assert run.code == 2
    assert len(run.stderr.splitlines()) == 1
    assert run.stderr.startswith("hloscope: error: ")


def test_compiling_a_dump_keeps_stderr_clean():
    """Creating the backend to compile a dump logs the device count to fd 2 (which
    CliRunner cannot see): a real process must print nothing there."""
    command = ["fusions", "samples/dumps/mlp.stablehlo.mlir", "--compile", "--json"]
    run = subprocess.run(
        [sys.executable, "-m", "hloscope", *command],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
        check=False,
    )
    assert run.returncode == 0, run.stderr
    assert run.stderr == ""
    assert json.loads(run.stdout)["command"] == "fusions"


def test_text_shows_the_users_line_first_and_never_cuts_a_line_number(cli):
    """A Flax NNX step: most fusions' lines are Flax's and Optax's. Each row shows
    the user's line first, then every library line XLA's metadata gives it, whole
    (the text report once cut `stochastic.py:…` and showed no user line at all)."""
    from hloscope.render.text.source_lines import SourceColumn
    from hloscope.reports import fusions_report
    from hloscope.sources import loader

    target = sample("dropout", "train_step")
    text = cli("fusions", *target).stdout
    table = text.split("\nFusions (")[1].split("\nUnfused ops (")[0]
    assert "your line + libs" in table
    assert "your line: a line of samples/dropout.py" in table
    # Nothing is cut: every `file.py:` is followed by a whole line number (a
    # library file's further numbers wrap after a comma), no number by an ellipsis.
    assert not re.search(r"\.py:(?!\d+(,|\s|$))", table)
    assert not re.search(r"\d…", table)
    # Each row's cell: the user's line, then every library line of the fusion.
    report = fusions_report(
        loader.load(target[0], loader.LoadOptions(args_factory=target[2], optimized=True))
    )
    fusions = report.analysis.fusions
    column = SourceColumn(fusions)
    for fusion in fusions:
        assert fusion.user_source and fusion.user_source.startswith("samples/dropout.py:")
        cell = column.cell(fusion).plain.split()
        assert cell[0] == fusion.user_source.rpartition(":")[2]
        for source in fusion.library_sources:
            file, _, line = source.rpartition(":")
            name = file.rpartition("/")[2]
            at = next(i for i, word in enumerate(cell) if word.startswith(f"{name}:"))
            numbers = [cell[at].partition(":")[2]]
            while numbers[-1].endswith(","):
                at += 1
                numbers.append(cell[at])
            assert line in [n.rstrip(",") for n in numbers], source


# --------------------------------------------------------------------------- whose jits

OWNERS = "tests/fixtures/jit_owner_targets.py"


def owner_target(name):
    return [f"{OWNERS}:{name}", "--args", f"{OWNERS}:example_args"]


def test_jax_own_jits_in_a_scanned_step_are_not_separate_jits_of_the_user(cli):
    # One jax.jit around a scan over layers: the scan's indexing is JAX's own
    # jit(dynamic_index_in_dim) / jit(dynamic_update_index_in_dim), fused with the
    # user's ops. The user wrote one jit; nothing crosses jits of theirs.
    run = cli("fusions", *owner_target("scanned_step"), "--json")
    assert run.code == 0, run.stderr
    doc = run.json()
    assert doc["summary"]["crossing_jits"] == 0
    assert not any(f["crosses_jits"] for f in doc["fusions"])
    # Shown, labelled as JAX's own.
    assert doc["library_jits"] == [
        "jit(scanned_step)/jit(dynamic_index_in_dim)",
        "jit(scanned_step)/jit(dynamic_update_index_in_dim)",
    ]
    assert any(
        "jit(scanned_step)/jit(dynamic_update_index_in_dim)" in f["jits"] for f in doc["fusions"]
    )
    text = cli("fusions", *owner_target("scanned_step")).stdout
    assert "combine ops of separate jits" not in " ".join(text.split())
    assert "⇄" not in text
    assert (
        "dynamic_index_in_dim, dynamic_update_index_in_dim are JAX's or a library's own jits"
        in " ".join(text.split())
    )


def test_sibling_jits_of_the_user_inside_a_scan_stay_flagged(cli):
    run = cli("fusions", *owner_target("scanned_user_jits"), "--json")
    assert run.code == 0, run.stderr
    doc = run.json()
    crossing = [f for f in doc["fusions"] if f["crosses_jits"]]
    assert len(crossing) == doc["summary"]["crossing_jits"] >= 1
    assert {"jit(scanned_user_jits)/jit(_activate)", "jit(scanned_user_jits)/jit(_matmul)"} <= set(
        crossing[0]["jits"]
    )
    assert doc["library_jits"] == ["jit(scanned_user_jits)/jit(dynamic_index_in_dim)"]
    text = cli("fusions", *owner_target("scanned_user_jits")).stdout
    assert "combines ops of separate jits" in " ".join(text.split())

"""`hloscope diff A B` through the command layer: the JSON contract, exit codes, the
samples of the bugs hloscope was made for, every dump form of one module, and errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from conftest import DUMPS, ROOT, rename_hlo, sample

COMPUTE_ON = "samples/compute_on.py"
ARGS = ["--args", f"{COMPUTE_ON}:example_args"]


def assert_contract(doc):
    assert doc["schema_version"] == 1
    assert doc["command"] == "diff"
    assert isinstance(doc["target"], str)
    assert doc["verdict"] in ("same", "different")
    assert {"added", "removed", "changed", "unchanged"} <= doc["summary"].keys()
    assert all(isinstance(v, int) for v in doc["summary"].values())
    for change in doc["changes"]:
        assert {"kind", "function", "op", "detail"} <= change.keys()
        assert change["kind"] in ("added", "removed", "changed")
        assert change["count"] == len(change["instances"]) >= 1
    assert (doc["verdict"] == "same") == (doc["changes"] == [])


def diff_json(cli, *args, code=None):
    run = cli("diff", *args, "--json")
    assert run.code in (0, 1), run.stderr
    doc = run.json()
    assert_contract(doc)
    assert run.code == (0 if doc["verdict"] == "same" else 1)
    if code is not None:
        assert run.code == code
    return doc


def test_a_module_against_itself_exits_0(cli):
    doc = diff_json(
        cli, str(DUMPS / "mlp.stablehlo.mlir"), str(DUMPS / "mlp.stablehlo.mlir"), code=0
    )
    assert doc["summary"] == {
        "added": 0,
        "removed": 0,
        "changed": 0,
        "unchanged": 32,
        "normalized": 0,
    }
    assert doc["a"]["module"] == doc["b"]["module"] == "jit_mlp"
    assert doc["a"]["ops"] == doc["b"]["ops"] == 32


@pytest.mark.parametrize(
    "other",
    [
        "mlp.mlirbc",
        "mlp.vhlo.mlirbc",
        "mlp.exported.bin",
        "mlp.before_optimizations.hlo",
    ],
)
def test_every_form_of_the_lowered_module_is_the_same(cli, other):
    """Text, bytecode, a portable artifact, a serialized Exported and XLA's HLO of one
    lowering: printed by different tools, one program."""
    doc = diff_json(cli, str(DUMPS / "mlp.stablehlo.mlir"), str(DUMPS / other), code=0)
    assert doc["summary"]["unchanged"] == 32


def test_compute_on_moved_outside_jit_is_a_placement_change(cli):
    """The compute_on decorator order: compute_on outside jax.jit puts the whole function, tanh
    included, under a host call; inside the jit only the marked ops are on the host."""
    doc = diff_json(
        cli, f"{COMPUTE_ON}:host_inside_jit", f"{COMPUTE_ON}:host_outside_jit", *ARGS, code=1
    )
    assert doc["summary"] == {
        "added": 1,
        "removed": 0,
        "changed": 1,
        "unchanged": 6,
        "normalized": 0,
    }
    changes = {(c["kind"], c["op"]): c for c in doc["changes"]}
    call = changes[("added", "func.call")]
    assert "@host_outside_jit" in call["detail"] and "compute type host" in call["detail"]
    tanh = changes[("changed", "stablehlo.tanh")]
    assert tanh["aspects"] == ["compute_type"]
    assert tanh["detail"] == "compute type device → host"
    assert tanh["function"] == "main → host_outside_jit"


def test_compute_on_against_device_only(cli):
    doc = diff_json(
        cli, f"{COMPUTE_ON}:host_inside_jit", f"{COMPUTE_ON}:device_only", *ARGS, code=1
    )
    assert doc["summary"]["changed"] == 4
    assert {c["detail"] for c in doc["changes"]} == {"compute type host → device"}
    assert sum(c["count"] for c in doc["changes"]) == 4


def test_the_two_jit_granularities_lower_to_one_program(cli):
    """How big a jit should be: an outer jit over nested jits, and the same calls with no outer
    jit. hloscope lowers a plain function under jax.jit, and nested jits become
    private functions either way: the lowered modules are one program (the nested
    jits are inlined when XLA compiles, which is what the outer jit buys at run time,
    not in the IR). Only the module's name differs, and that is a note."""
    args = sample("nested_jits", "mlp")[1:]
    doc = diff_json(
        cli,
        "samples/nested_jits.py:mlp",
        "samples/nested_jits.py:mlp_without_outer_jit",
        *args,
        code=0,
    )
    assert doc["summary"]["unchanged"] == 32  # 16 ops, 32 once the calls are inlined
    assert any("jit_mlp → jit_mlp_without_outer_jit" in note for note in doc["notes"])
    doc = diff_json(
        cli,
        "samples/nested_jits.py:mlp",
        "samples/nested_jits.py:mlp_without_outer_jit",
        *args,
        "--compile",
        code=0,
    )
    assert doc["a"]["source"]["stage"] == doc["b"]["source"]["stage"] == "optimized"
    assert doc["fusions"]["a"] == doc["fusions"]["b"] > 0


def test_an_entrypoint_against_its_optimized_dump(cli):
    """Lowered (nested jits as calls) against what XLA made of it: the calls are gone,
    fusions appeared, the ops themselves are matched inside the fusions."""
    doc = diff_json(
        cli,
        "samples/nested_jits.py:mlp",
        str(DUMPS / "mlp.after_optimizations.hlo"),
        *sample("nested_jits", "mlp")[1:],
        code=1,
    )
    kinds = {(c["kind"], c["op"]) for c in doc["changes"]}
    assert ("removed", "func.call") in kinds
    assert ("added", "mhlo.fusion") in kinds
    assert doc["fusions"]["a"] == 0 and doc["fusions"]["b"] == 8
    assert not any(c["op"].startswith("stablehlo.dot") for c in doc["changes"])


def test_pruned_parameters(cli):
    """Pruned arguments: keep_unused=True keeps the two leaves the loss ignores."""
    doc = diff_json(
        cli,
        "samples/params.py:loss",
        "samples/params.py:loss_keep_unused",
        *sample("params", "loss")[1:],
        code=1,
    )
    added = [c for c in doc["changes"] if c["op"] == "parameter"]
    assert [c["kind"] for c in added] == ["added", "added"]
    assert [c["instances"][0]["b"] for c in added] == [
        "main %arg1 (params['unused_scale'])",
        "main %arg3 (batch['mask'])",
    ]
    assert doc["summary"]["changed"] == doc["summary"]["added"] == 0
    statuses = [p["status"] for p in doc["parameters"]]
    assert statuses.count("added") == 2 and statuses.count("same") == 4


def test_report_names_what_changed(cli):
    run = cli("diff", f"{COMPUTE_ON}:host_inside_jit", f"{COMPUTE_ON}:host_outside_jit", *ARGS)
    assert run.code == 1
    out = run.stdout
    assert "verdict  different · 1 added · 0 removed · 1 changed · 6 unchanged" in out
    assert "compute type device → host" in out
    assert "samples/compute_on.py:" in out  # where, relative to the working directory


def test_report_of_the_same_module(cli):
    run = cli(
        "diff", str(DUMPS / "mlp.stablehlo.mlir"), str(DUMPS / "mlp.before_optimizations.hlo")
    )
    assert run.code == 0
    assert "verdict  same" in run.stdout
    assert "Changes" not in run.stdout


def test_options_apply_to_the_side_they_fit(cli):
    # --args goes to the entrypoint, not to the dump.
    doc = diff_json(
        cli,
        "samples/nested_jits.py:mlp",
        str(DUMPS / "mlp.stablehlo.mlir"),
        *sample("nested_jits", "mlp")[1:],
        code=0,
    )
    assert doc["a"]["source"]["kind"] == "entrypoint"
    assert doc["b"]["source"]["kind"] == "dump"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["missing.mlir", str(DUMPS / "mlp.stablehlo.mlir")], "missing.mlir"),
        ([str(DUMPS / "mlp.stablehlo.mlir"), "nope.hlo"], "nope.hlo"),
        (
            [str(DUMPS / "mlp.stablehlo.mlir"), str(DUMPS / "mlp.mlirbc"), "--arg", "f32[2]"],
            "A and B are dumps",
        ),
        (
            [str(DUMPS / "mlp.stablehlo.mlir"), str(DUMPS / "mlp.mlirbc"), "--module", "x"],
            "neither A nor B is one",
        ),
    ],
)
def test_bad_input_exits_2_with_one_line(cli, args, message):
    run = cli("diff", *args, "--json")
    assert run.code == 2
    assert run.stdout == ""
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], run.stderr


def test_exit_code_of_the_installed_command():
    """The console script, not CliRunner: `main()` must pass a difference's exit 1 on
    (click returns it instead of raising outside standalone mode)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    different = subprocess.run(
        [
            sys.executable,
            "-m",
            "hloscope",
            "diff",
            str(DUMPS / "mlp.before_optimizations.hlo"),
            str(DUMPS / "mlp.after_optimizations.hlo"),
            "--json",
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
    )
    assert different.returncode == 1, different.stderr
    same = subprocess.run(
        [
            sys.executable,
            "-m",
            "hloscope",
            "diff",
            str(DUMPS / "mlp.stablehlo.mlir"),
            str(DUMPS / "mlp.mlirbc"),
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
    )
    assert same.returncode == 0, same.stderr


def renamed_mlp(tmp_path, minimum: bool = False) -> str:
    text = (DUMPS / "mlp.before_optimizations.hlo").read_text()
    if minimum:
        text = text.replace("maximum(Arg_0.2, max.2)", "minimum(Arg_0.2, max.2)")
    path = tmp_path / "renamed.hlo"
    path.write_text(rename_hlo(text)[0])
    return str(path)


def test_renamed_everything_is_the_same_with_the_renames(cli, tmp_path):
    run = cli("diff", str(DUMPS / "mlp.before_optimizations.hlo"), renamed_mlp(tmp_path), "--json")
    assert run.code == 0
    doc = run.json()
    assert doc["verdict"] == "same" and doc["changes"] == []
    assert {(r["a"], r["b"]) for r in doc["renames"]} == {
        ("relu.1", "r_relu_1"),
        ("dense.2", "r_dense_2"),
        ("region_0.3", "r_region_0_3"),
        ("head.4", "r_head_4"),
    }
    assert any(note.startswith("4 functions renamed") for note in doc["notes"])


def test_one_change_in_a_function_called_three_times_is_one_entry(cli, tmp_path):
    old = str(DUMPS / "mlp.before_optimizations.hlo")
    run = cli("diff", old, renamed_mlp(tmp_path, minimum=True), "--json")
    assert run.code == 1
    (entry,) = run.json()["changes"]
    assert {"kind", "function", "op", "detail"} <= entry.keys()
    assert (entry["kind"], entry["function"], entry["count"]) == ("changed", "relu.1", 3)
    assert entry["places"] == [{"function": "relu.1", "count": 3}]
    assert len(entry["instances"]) == 3
    text = cli("diff", old, renamed_mlp(tmp_path, minimum=True))
    assert "Changes (1 distinct, 3 in all)" in text.stdout
    assert "4 functions renamed" in text.stdout


# An op naming two functions through two attributes (as a loop names its condition and
# body): neither function is called, so each is a root of its own, walked in turn.
TWO_NAMED = """
module @m {
  func.func public @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {
    %0 = stablehlo.custom_call @loop(%arg0) {body = @b, condition = @c} : (tensor<4xf32>) -> tensor<4xf32>
    return %0 : tensor<4xf32>
  }
  func.func private @c(%arg0: tensor<4xf32>) -> tensor<4xf32> {
    %0 = stablehlo.abs %arg0 : tensor<4xf32>
    return %0 : tensor<4xf32>
  }
  func.func private @b(%arg0: tensor<4xf32>) -> tensor<4xf32> {
    %0 = stablehlo.negate %arg0 : tensor<4xf32>
    %1 = stablehlo.sine %0 : tensor<4xf32>
    return %1 : tensor<4xf32>
  }
}
"""  # noqa: E501


def test_functions_named_by_attributes_come_in_one_order(tmp_path):
    """The functions an op names were walked in the order of a set of attribute names,
    which varies with Python's string hashing: one process listed `c` before `b`,
    another `b` before `c`. Now in the order of `CALL_ATTRIBUTES` (body, then condition),
    whatever the hash seed (these two seeds gave the two orders)."""
    path = tmp_path / "two_named.mlir"
    path.write_text(TWO_NAMED)
    orders = []
    for seed in ("1", "3"):
        run = subprocess.run(
            [sys.executable, "-m", "hloscope", "diff", str(path), str(path), "--json"],
            capture_output=True,
            text=True,
            env=dict(os.environ, PYTHONPATH=str(ROOT / "src"), PYTHONHASHSEED=seed),
            cwd=ROOT,
        )
        assert run.returncode == 0, run.stderr
        orders.append([f["a"] for f in json.loads(run.stdout)["functions"]])
    assert orders == [["main", "b", "c"]] * 2

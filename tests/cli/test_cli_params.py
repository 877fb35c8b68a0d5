"""`hloscope params` through the command layer: the JSON contract, the table,
`--fail-on`, and the summary `inspect` shows."""

import os
import subprocess
import sys

import pytest

from conftest import ROOT, sample

DESIGN_KEYS = {
    "position",
    "path",
    "hlo_index",
    "status",
    "shape",
    "donated",
    "sharding",
    "memory_kind",
}


def test_json_follows_the_contract(cli):
    run = cli("params", *sample("params", "loss"), "--json")
    assert run.code == 0, run.stderr
    doc = run.json()
    assert doc["schema_version"] == 1
    assert doc["command"] == "params"
    assert doc["target"] == "samples/params.py:loss"
    for parameter in doc["parameters"]:
        assert parameter.keys() >= DESIGN_KEYS
    assert doc["parameters"][1] == {
        "position": 1,
        "path": "params['unused_scale']",
        "hlo_index": None,
        "status": "pruned",
        "shape": "f32[]",
        "donated": False,
        "sharding": None,
        "memory_kind": None,
        "hlo_shape": None,
        "bytes": 4,
        "uses": 0,
        "aliases_output": None,
        "sharding_attribute": None,
        "donation_requested": False,
        "donation_dropped": None,
        "also": [],
    }
    assert doc["totals"]["pruned"] == 2
    assert doc["totals"]["bytes_passed"] == 912
    assert doc["static_arguments"] == []
    assert doc["implicit_parameters"] == []
    assert doc["functions"] == []


def test_json_of_static_arguments_private_functions_and_tokens(cli):
    doc = cli(
        "params", *sample("params_static", "static_args", "static_args_example"), "--json"
    ).json()
    assert doc["static_arguments"] == [
        {"path": "n", "value": "3", "position": 1},
        {"path": "mode", "value": "'max'", "position": None},
    ]
    doc = cli("params", *sample("params_nested", "ignored_by_callee"), "--json").json()
    assert doc["functions"] == [
        {
            "name": "scaled",
            "call_sites": 1,
            "parameters": 2,
            "unused": [{"index": 1, "name": "%arg1", "shape": "f32[4]"}],
        }
    ]
    doc = cli(
        "params", *sample("params_static", "ordered_print", "ordered_print_example"), "--json"
    ).json()
    assert doc["implicit_parameters"] == [
        {"hlo_index": 0, "kind": "token", "name": "%arg0", "shape": "token", "status": "used"}
    ]


def test_json_of_a_dump_uses_hlo_indices_and_location_names(cli):
    doc = cli("params", "samples/dumps/mlp.stablehlo.mlir", "--json").json()
    assert doc["from_python"] is False
    assert [p["position"] for p in doc["parameters"]] == [p["hlo_index"] for p in doc["parameters"]]
    assert doc["parameters"][0]["path"] == "params[0]['b']"


def test_the_table(cli):
    run = cli("params", *sample("params", "train_step", "train_step_args"))
    assert run.code == 0, run.stderr
    lines = run.stdout.splitlines()
    assert any("7 arguments → 6 HLO parameters: 6 used · 1 pruned" in line for line in lines)
    mask = next(line for line in lines if "batch['mask']" in line)
    assert mask.split()[1:5] == ["batch['mask']", "-", "pruned", "pred[8]"]
    w = next(line for line in lines if "params['w']" in line)
    assert "→ out 2" in w
    assert "276 B donated" in run.stdout


def test_the_table_shows_shardings_statics_and_private_functions(cli):
    out = cli("params", *sample("params_sharded", "sharded_step", "sharded_step_args")).stdout
    x = next(line for line in out.splitlines() if line.split()[1:2] == ["x"])
    assert "P('data', None) over mesh(data=4, model=2)" in x
    out = cli("params", *sample("params_static", "static_args", "static_args_example")).stdout
    assert "n = 3" in out and "mode = 'max'" in out
    out = cli("params", *sample("params_nested", "callee_used_twice")).stdout
    assert "Private functions ignoring parameters (1 of the 1 called)" in out
    assert "1: %arg1 f32[4]" in out


@pytest.mark.parametrize(
    ("target", "fail_on", "code"),
    [
        (sample("params", "loss"), "unused,pruned", 1),
        (sample("params", "loss"), "pruned", 1),
        (sample("params", "loss"), "unused", 0),
        (sample("params", "loss_keep_unused"), "unused", 1),
        (sample("params", "loss_keep_unused"), "pruned", 0),
        (sample("params_nested", "callee_used_twice"), "unused,pruned", 0),
        (["samples/dumps/mlp.stablehlo.mlir"], "unused,pruned", 0),
    ],
)
def test_fail_on(cli, target, fail_on, code):
    run = cli("params", *target, "--fail-on", fail_on, "--json")
    assert run.code == code, run.stderr
    assert run.json()["command"] == "params"  # the report is printed either way


def test_fail_on_rejects_unknown_statuses(cli):
    run = cli("params", *sample("params", "loss"), "--fail-on", "unused,gone")
    assert run.code == 2
    assert run.stderr.strip().count("\n") == 0
    assert "unknown status gone" in run.stderr


def test_fail_on_exits_1_from_the_console_script():
    # Without standalone mode typer returns an Exit's code; main() must pass it on.
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "hloscope",
            "params",
            *sample("params", "loss"),
            "--fail-on",
            "pruned",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=dict(os.environ),
        check=False,
    )
    assert run.returncode == 1, run.stderr
    assert "params['unused_scale']" in run.stdout


def test_inspect_summarises_parameters(cli):
    doc = cli("inspect", *sample("params", "loss"), "--json").json()
    assert doc["params"]["pruned"] == ["params['unused_scale']", "batch['mask']"]
    assert doc["params"]["unused"] == []
    assert doc["params"]["totals"]["used"] == 4
    doc = cli("inspect", *sample("params_nested", "ignored_by_callee"), "--json").json()
    assert doc["params"]["unused"] == ["y"]
    assert doc["params"]["functions_with_unused"] == [{"name": "scaled", "unused": [1]}]
    out = cli("inspect", *sample("params", "loss_keep_unused")).stdout
    assert "6 arguments → 6 HLO parameters: 4 used · 2 unused" in out
    assert "unused: params['unused_scale'], batch['mask']" in out


def _exported(tmp_path, uses_z: bool):
    import jax
    import jax.numpy as jnp

    def f(x, y, z):
        return x * 2 + y + (z if uses_z else 0)

    ones = jnp.ones(4)
    exported = jax.export.export(jax.jit(f))(ones, ones, ones)
    path = tmp_path / "f.jax_exported"
    path.write_bytes(exported.serialize())
    return exported, path


@pytest.mark.parametrize("uses_z", [True, False])
def test_an_exported_artifacts_arguments_are_named_one_way(cli, tmp_path, uses_z):
    exported, path = _exported(tmp_path, uses_z)
    doc = cli("params", str(path), "--json").json()
    paths = [p["path"] for p in doc["parameters"]]
    kept = sorted(exported.module_kept_var_idx)
    assert len(paths) == len(exported.in_avals) == 3
    if uses_z:
        # The module names every argument (JAX's locations): those names, said so.
        assert kept == [0, 1, 2]
        assert paths == ["x", "y", "z"]
        assert any("as the module names them" in note for note in doc["notes"])
    else:
        # z is pruned: no parameter carries its name, so every argument is a position.
        assert kept == [0, 1]
        assert paths == ["args[0]", "args[1]", "args[2]"]
        assert any("named by position" in note and "(x, y)" in note for note in doc["notes"])

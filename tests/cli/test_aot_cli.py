"""`hloscope aot-check` through the command layer: the JSON contract, exit
codes 0 (same), 1 (different) and 2 (errors, one line), and the text report."""

import pytest

from conftest import FIXTURES, sample

DIFFERENCE_KINDS = {"placement", "parameters", "ops", "results", "text"}
AOT_TARGETS = FIXTURES / "aot_targets.py"


def assert_aot_contract(doc, target):
    assert doc["schema_version"] == 1
    assert doc["command"] == "aot-check"
    assert doc["target"] == target
    assert doc["verdict"] in ("same", "different")
    assert isinstance(doc["aot_entry"], str) and doc["aot_entry"]
    assert isinstance(doc["differences"], list)
    for difference in doc["differences"]:
        assert {"kind", "detail"} <= difference.keys()
        assert difference["kind"] in DIFFERENCE_KINDS
        assert difference["detail"] and difference["cause"]
    assert (doc["verdict"] == "different") == bool(doc["differences"])


def test_json_of_the_wraps_wrapper_exits_1(cli):
    run = cli("aot-check", *sample("wrapped", "difference"), "--json")
    assert run.code == 1, run.stderr
    doc = run.json()
    assert_aot_contract(doc, "samples/wrapped.py:difference")
    assert doc["verdict"] == "different"
    assert doc["aot_entry"] == "wrapped.difference"
    assert doc["aot"]["via"] == "__wrapped__"
    assert doc["aot"]["expression"] == "difference.__wrapped__"
    assert [d["kind"] for d in doc["differences"]] == ["results"]
    assert doc["results"] == [
        {
            "path": "result",
            "call_shape": "f32[4]",
            "aot_shape": "f32[4]",
            "dtype": "float32",
            "max_abs_diff": 4.0,
            "rtol": 1e-05,
            "atol": 1e-06,
            "mismatched": 3,
            "elements": 4,
            "same": False,
        }
    ]
    assert doc["call_programs"] == [
        {"name": "jit_difference", "ops": 1, "off_device_ops": 0, "parameters": 2, "compared": True}
    ]
    assert doc["aot_program"]["name"] == "jit_difference"
    assert [c["kind"] for c in doc["checks"]] == [
        "placement",
        "parameters",
        "ops",
        "text",
        "results",
    ]
    assert [i["origin"] for i in doc["inputs"]] == ["given", "given"]
    assert doc["timings"]["call_seconds"] >= 0


def test_json_of_a_plain_jit_exits_0(cli):
    run = cli("aot-check", *sample("wrapped", "plain_difference"), "--json")
    assert run.code == 0, run.stderr
    doc = run.json()
    assert_aot_contract(doc, "samples/wrapped.py:plain_difference")
    assert doc["verdict"] == "same"
    assert doc["differences"] == []
    assert doc["aot"]["via"] == "own"


def test_json_of_compute_on_outside_jit(cli):
    run = cli("aot-check", *sample("compute_on", "host_outside_jit"), "--json")
    assert run.code == 1, run.stderr
    doc = run.json()
    assert_aot_contract(doc, "samples/compute_on.py:host_outside_jit")
    assert [d["kind"] for d in doc["differences"]] == ["placement", "text"]
    assert doc["call_programs"][0]["off_device_ops"] == 5
    assert doc["aot_program"]["off_device_ops"] == 0


def test_arg_shapes_and_an_explicit_aot_object(cli):
    run = cli(
        "aot-check",
        "samples/aot.py:step_on_host",
        "--arg",
        "f32[8,128]",
        "--aot",
        "samples/aot.py:step",
        "--json",
    )
    assert run.code == 1, run.stderr
    doc = run.json()
    assert doc["aot"]["target"] == "samples/aot.py:step"
    assert doc["aot"]["via"] == "--aot"
    assert doc["inputs"] == [
        {"path": "x", "shape": "f32[8,128]", "origin": "generated", "sharding": None}
    ]
    assert doc["seed"] == 0
    assert doc["differences"][0]["kind"] == "placement"


def test_an_aot_lowered_object(cli):
    run = cli(
        "aot-check",
        f"{AOT_TARGETS}:sine",
        "--arg",
        "f32[8,128]",
        "--aot",
        f"{AOT_TARGETS}:lowered_sine",
        "--json",
    )
    assert run.code == 0, run.stderr
    assert run.json()["aot"]["reason"].startswith("named with --aot: a jax.stages.Lowered")


def test_text_report_of_a_difference(cli):
    run = cli("aot-check", *sample("wrapped", "difference"))
    assert run.code == 1, run.stderr
    out = run.stdout
    assert "verdict    different: results" in out
    assert "aot entry  difference.__wrapped__  (wrapped.difference)" in out
    assert "Differences (1)" in out
    assert "the modules are identical but the results differ" in out
    assert "✗ 3 of 4" in out


def test_text_report_of_agreement(cli):
    run = cli("aot-check", *sample("aot", "normalize", "normalize_args"))
    assert run.code == 0, run.stderr
    out = run.stdout
    assert "verdict    same" in out
    assert "Differences" not in out
    assert "result['stats'][0]" in out
    assert "text         same      50 lines, identical" in out


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (
            [f"{AOT_TARGETS}:raises_when_called", "--arg", "f32[4]"],
            "calling it raised RuntimeError: the device is on fire (at tests/fixtures/aot_",
        ),
        (
            ["samples/aot.py:step", "--arg", "f32[4]", "--aot", f"{AOT_TARGETS}:add_pair"],
            "the AOT path cannot be lowered: add_pair.lower(...) raised TypeError",
        ),
        (
            ["samples/aot.py:step", "--arg", "f32[4]", "--aot", f"{AOT_TARGETS}:not_a_function"],
            "--aot names an int; expected a function",
        ),
        (["samples/dumps/mlp.stablehlo.mlir"], "aot-check runs a function"),
        (["samples/aot.py:step"], "no example arguments were given"),
        ([f"{AOT_TARGETS}:lowered_sine"], "aot-check calls the target, and it is a Lowered"),
    ],
)
def test_errors_are_one_line_and_exit_2(cli, arguments, message):
    run = cli("aot-check", *arguments, "--json")
    assert run.code == 2
    assert run.stdout == ""
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1, run.stderr
    assert lines[0].startswith("hloscope: error: ")
    assert message in lines[0]

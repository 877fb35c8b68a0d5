"""`hloscope inspect` through the command layer: every sample, every dump kind,
every error the foundation promises a clear message for."""

import json
import os
import subprocess
import sys

import pytest

from conftest import DUMPS, FIXTURES, ROOT, line_of, require_corpus, sample

ENTRYPOINTS = [
    ("compute_on", "host_inside_jit", "example_args"),
    ("compute_on", "host_call_inside_jit", "example_args"),
    ("compute_on", "host_outside_jit", "example_args"),
    ("compute_on", "device_only", "example_args"),
    ("params", "loss", "example_args"),
    ("params", "loss_keep_unused", "example_args"),
    ("params", "grad_w", "example_args"),
    ("params", "train_step", "train_step_args"),
    ("nested_jits", "mlp", "example_args"),
    ("nested_jits", "mlp_without_outer_jit", "example_args"),
    ("wrapped", "difference", "example_args"),
    ("wrapped", "plain_difference", "example_args"),
]


def assert_contract(doc):
    assert doc["schema_version"] == 1
    assert doc["command"] == "inspect"
    assert isinstance(doc["target"], str)
    assert doc["functions"], "no functions"
    for function in doc["functions"]:
        assert {"name", "ops", "calls"} <= function.keys()
        for call in function["calls"]:
            assert {"callee", "count"} <= call.keys()
    assert isinstance(doc["op_counts"], dict)
    assert sum(doc["op_counts"].values()) == doc["total_ops"]


@pytest.mark.parametrize(("module", "attr", "factory"), ENTRYPOINTS)
def test_inspect_every_sample_entrypoint(cli, module, attr, factory):
    run = cli("inspect", *sample(module, attr, factory), "--json")
    assert run.code == 0, run.stderr
    doc = run.json()
    assert_contract(doc)
    assert doc["source"]["kind"] == "entrypoint"
    assert doc["source"]["stage"] == "lowered"
    assert doc["timings"]["lower_seconds"] is not None
    assert doc["cost"]["flops"] >= 0


@pytest.mark.parametrize(
    ("name", "fmt", "stage"),
    [
        ("mlp.stablehlo.mlir", "mlir-text", "lowered"),
        ("mlp.mlirbc", "mlir-bytecode", "lowered"),
        ("mlp.vhlo.mlirbc", "mlir-bytecode", "lowered"),
        ("mlp.exported.bin", "jax-exported", "lowered"),
        ("mlp.before_optimizations.hlo", "hlo-text", "lowered"),
        ("mlp.after_optimizations.hlo", "hlo-text", "optimized"),
        ("mlp.after_optimizations.hlo.pb", "hlo-proto", "optimized"),
        ("host_call.stablehlo.mlir", "mlir-text", "lowered"),
        ("host_call.after_optimizations.hlo", "hlo-text", "optimized"),
    ],
)
def test_inspect_every_dump_kind(cli, name, fmt, stage):
    run = cli("inspect", f"samples/dumps/{name}", "--json")
    assert run.code == 0, run.stderr
    doc = run.json()
    assert_contract(doc)
    assert doc["source"]["format"] == fmt
    assert doc["source"]["stage"] == stage


def test_the_same_module_in_every_lowered_form_has_the_same_ops(cli):
    counts = [
        cli("inspect", f"samples/dumps/{name}", "--json").json()["op_counts"]
        for name in ("mlp.stablehlo.mlir", "mlp.mlirbc", "mlp.vhlo.mlirbc", "mlp.exported.bin")
    ]
    assert all(c == counts[0] for c in counts)
    live = cli("inspect", *sample("nested_jits", "mlp"), "--json").json()["op_counts"]
    assert live == counts[0]


def test_nested_jit_call_graph_in_json(cli):
    doc = cli("inspect", *sample("nested_jits", "mlp"), "--json").json()
    main = next(f for f in doc["functions"] if f["name"] == "main")
    assert main["calls"] == [{"callee": "dense", "count": 3}, {"callee": "head", "count": 1}]
    assert doc["call_depth"] == 2


def test_compile_reads_the_optimized_module_with_cost_and_memory(cli):
    doc = cli("inspect", *sample("nested_jits", "mlp"), "--compile", "--json").json()
    assert doc["source"]["stage"] == "optimized"
    assert "mhlo.fusion" in doc["op_counts"]
    assert doc["timings"]["compile_seconds"] > 0
    assert doc["memory"]["argument_size_in_bytes"] == (3 * (64 * 64 + 64) + 8 * 64) * 4
    assert doc["cost"]["flops"] > 0


def test_compile_a_before_optimization_dump(cli):
    doc = cli("inspect", "samples/dumps/mlp.stablehlo.mlir", "--compile", "--json").json()
    assert doc["source"]["stage"] == "optimized"
    assert "mhlo.fusion" in doc["op_counts"]


def test_arg_specs(cli):
    run = cli("inspect", "samples/compute_on.py:device_only", "--arg", "f32[2,3]", "--json")
    assert run.code == 0, run.stderr
    assert run.json()["functions"][0]["parameters"] == 1


def test_package_entrypoint(cli, monkeypatch):
    monkeypatch.chdir(FIXTURES)
    run = cli("inspect", "fixpkg.models:double", "--args", "fixpkg.models:example_args", "--json")
    assert run.code == 0, run.stderr


@pytest.mark.parametrize("attr", ["make_lowered", "make_compiled", "make_exported"])
def test_zero_argument_callables_returning_stages(cli, attr):
    run = cli("inspect", f"tests/fixtures/entrypoints.py:{attr}", "--json")
    assert run.code == 0, run.stderr
    expected = "optimized" if attr == "make_compiled" else "lowered"
    assert run.json()["source"]["stage"] == expected


def test_function_without_parameters_is_lowered(cli):
    run = cli("inspect", "tests/fixtures/entrypoints.py:no_arguments", "--json")
    assert run.code == 0, run.stderr


def test_user_prints_stay_off_stdout(cli):
    run = cli(
        "inspect", "tests/fixtures/entrypoints.py:prints_while_tracing", "--arg", "f32[2]", "--json"
    )
    assert run.code == 0
    doc = json.loads(run.stdout)
    assert any("printed" in note for note in doc["notes"])


def test_text_report(cli):
    run = cli("inspect", *sample("nested_jits", "mlp"), "--print")
    assert run.code == 0
    assert "dense ×3" in run.stdout
    assert "Call graph" in run.stdout
    assert "stablehlo.dot_general" in run.stdout


ENTRY = "tests/fixtures/entrypoints.py"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["no/such/file.mlir"], "no/such/file.mlir: no such file or directory"),
        (["missing.py:f"], "missing.py: no such file"),
        (["samples/dumps/mlp.stablehlo.mlir", "--module", "x"], "--module picks a module"),
        ([f"{ENTRY}:nothere"], "has no attribute 'nothere'"),
        ([f"{ENTRY}:not_a_function"], "it is an int, not a function"),
        ([f"{ENTRY}:needs_two"], "takes 2 arguments (a, b) but no example arguments were given"),
        ([f"{ENTRY}:needs_two", "--arg", "f32[2,"], "bad --arg 'f32[2,'"),
        ([f"{ENTRY}:needs_two", "--arg", "q8[2]"], "unknown element type 'q8'"),
        (
            [f"{ENTRY}:needs_two", "--args", f"{ENTRY}:bad_factory"],
            "the --args factory raised KeyError",
        ),
        ([f"{ENTRY}:needs_two", "--args", f"{ENTRY}:factory_returns_int"], "returned an int"),
        (
            ["tests/fixtures/broken_import.py:f"],
            "raised KeyError: 'tpu' (at tests/fixtures/broken_import.py:4)",
        ),
        (["tests/fixtures/syntax_error.py:f"], "tests/fixtures/syntax_error.py:2: syntax error"),
        (["no_such_package.mod:f"], "cannot import 'no_such_package.mod'"),
    ],
)
def test_errors_are_one_line_and_exit_2(cli, args, message):
    run = cli("inspect", *args)
    assert run.code == 2
    assert run.stdout == ""
    lines = run.stderr.splitlines()
    assert len(lines) == 1, run.stderr
    assert lines[0].startswith("hloscope: error: ")
    assert message in lines[0]
    assert "internal error" not in lines[0]


def test_tracing_error_names_the_users_frame(cli):
    run = cli("inspect", f"{ENTRY}:raises_while_tracing", "--arg", "f32[4]")
    assert run.code == 2
    line = line_of(FIXTURES / "entrypoints.py", 'raise ValueError("expected a matrix')
    assert (
        f"tracing it raised ValueError: expected a matrix, got a vector "
        f"(at tests/fixtures/entrypoints.py:{line})"
    ) in run.stderr


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"module {\n  func.func @f() {\n    %0 = nope\n  }\n}\n", "bad.mlir:3:10: malformed MLIR"),
        (
            b"HloModule m\n\nENTRY e {\n  p = f32[4] parameterr(0)\n}\n",
            "bad.mlir:4:14: malformed HLO",
        ),
        (b"just some words\n", "not a module"),
        (bytes(range(7, 250)) * 3, "not a module"),
        (b"ML\xefR\x06\x00junk", "malformed MLIR bytecode"),
        (b"\n\n", "empty"),
    ],
)
def test_bad_files(cli, tmp_path, content, message):
    path = tmp_path / "bad.mlir"
    path.write_bytes(content)
    run = cli("inspect", str(path))
    assert run.code == 2
    assert len(run.stderr.splitlines()) == 1
    assert message in run.stderr


def test_truncated_bytecode(cli, tmp_path):
    path = tmp_path / "cut.mlirbc"
    path.write_bytes((DUMPS / "mlp.mlirbc").read_bytes()[:500])
    run = cli("inspect", str(path))
    assert run.code == 2
    assert "malformed MLIR bytecode" in run.stderr


def test_debug_shows_the_traceback(cli):
    run = cli("inspect", f"{ENTRY}:needs_two", "--debug")
    assert run.code == 2
    assert "Traceback" in run.stderr
    assert run.stderr.rstrip().splitlines()[-1].startswith("hloscope: error:")


def hloscope(*args, env=None):
    return subprocess.run(
        [sys.executable, "-m", "hloscope", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, **(env or {})},
        check=False,
    )


def test_console_script_usage_errors_are_one_line():
    run = hloscope("inspect")
    assert run.returncode == 2
    assert run.stderr.count("\n") == 1 and "Missing argument" in run.stderr
    run = hloscope("inspect", "samples/dumps/mlp.mlirbc", "--frobnicate")
    assert run.returncode == 2
    assert run.stderr.count("\n") == 1 and "--frobnicate" in run.stderr


def test_console_script_version_and_help():
    assert hloscope("--version").stdout.startswith("hloscope ")
    run = hloscope()
    assert run.returncode == 0 and "inspect" in run.stdout


def test_json_path_never_imports_the_browser_or_jax_for_a_dump():
    code = (
        "import sys\n"
        "from hloscope.cli import main\n"
        "try:\n"
        "    main(['inspect', 'samples/dumps/mlp.after_optimizations.hlo', '--json'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "sys.stderr.write(repr(sorted(m for m in ('textual', 'jax') if m in sys.modules)))\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True
    )
    assert json.loads(run.stdout)["command"] == "inspect"
    assert run.stderr == "[]"


@pytest.mark.parametrize(
    ("target", "message"),
    [
        # The likeliest first mistake: the `:function` forgotten. The file is read with
        # `ast`, never run, to name what it defines.
        (
            "samples/nested_jits.py",
            "samples/nested_jits.py: a Python file, not a module: name a function in it, as "
            "samples/nested_jits.py:dense (it defines dense, head, mlp, "
            "mlp_without_outer_jit, example_args)",
        ),
        # A file that is not a module says what hloscope reads, not where a parser
        # stumbled (README.md once gave `malformed MLIR: invalid attribute name`).
        ("README.md", "README.md: not a module: a text file that is neither MLIR"),
        ("pyproject.toml", "hloscope reads StableHLO/MLIR text or bytecode, HLO text"),
        # A typo gets the closest names.
        ("samples/nested_jits.py:mpl", "has no attribute 'mpl' (did you mean: mlp?)"),
        ("samples/nested_jits.py:MLP", "(did you mean: mlp, mlp_without_outer_jit?)"),
    ],
)
def test_first_mistakes_say_what_to_do(cli, target, message):
    run = cli("inspect", target, "--print")
    assert run.code == 2
    assert run.stderr.count("\n") == 1
    assert message in run.stderr


def test_a_python_file_named_without_a_function_is_not_run(cli, tmp_path):
    script = tmp_path / "train.py"
    marker = tmp_path / "ran"
    script.write_text(f"open({str(marker)!r}, 'w').close()\n\ndef step(x):\n    return x\n")
    run = cli("params", str(script))
    assert run.code == 2
    assert "(it defines step)" in run.stderr
    assert not marker.exists()


def test_a_plain_folder_of_modules_reads_each_files_stage_from_its_content(cli):
    """`samples/dumps` is no XLA or JAX dump folder, only modules side by side: the
    one picked is read as the file alone would be (its after-optimization HLO once
    read as a lowered module, and `--compile` then failed inside XLA)."""
    folder = cli("inspect", "samples/dumps", "--json").json()
    alone = cli("inspect", folder["source"]["path"], "--json")
    assert folder["source"]["stage"] == alone.json()["source"]["stage"] == "optimized"
    compiled = cli("fusions", "samples/dumps")
    assert compiled.code == 0, compiled.stderr


ONE_OP = """
module @one_op {
  func.func public @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {
    %0 = stablehlo.negate %arg0 : tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}
"""


def test_counts_of_one_are_singular(cli, tmp_path):
    module = tmp_path / "one_op.mlir"
    module.write_text(ONE_OP)
    inspect = cli("inspect", str(module), "--print")
    assert inspect.code == 0, inspect.stderr
    assert "1 op in 1 reachable function" in inspect.stdout
    assert "Op counts (1 kind, 1 op)" in inspect.stdout
    placement = cli("placement", str(module))
    assert "compute  1 op: device 1" in placement.stdout


@pytest.mark.corpus
def test_large_counts_have_thousands_separators_in_every_line(cli):
    require_corpus()
    target = "../shared/corpus/xla/xla/tools/benchmarks/hlo/hlo_mixtral_8x7b_bf16_2x8.hlo"
    run = cli("inspect", target, "--print")
    assert run.code == 0, run.stderr
    assert "33,454 ops in 65 reachable functions" in run.stdout
    assert "placement  device 33,454 · 977 shardings · all_reduce ×1,549," in run.stdout


@pytest.mark.parametrize(("function", "loops"), [("scanned", True), ("unrolled", False)])
def test_the_cost_is_xlas_and_says_a_loop_body_counts_once(cli, function, loops):
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "loop_cost_targets", FIXTURES / "loop_cost_targets.py"
    )
    assert spec is not None and spec.loader is not None
    targets = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(targets)
    target = f"tests/fixtures/loop_cost_targets.py:{function}"
    factory = "tests/fixtures/loop_cost_targets.py:example_args"
    doc = cli("inspect", target, "--args", factory, "--compile", "--json").json()
    compiled = getattr(targets, function).lower(*targets.example_args()).compile()
    xla = compiled.cost_analysis()
    xla = xla[0] if isinstance(xla, list) else xla
    assert doc["cost"]["flops"] == xla["flops"]
    assert doc["cost_counts_loop_bodies_once"] is loops
    # A step's matmul is 2 * 8**3 flops: counted once in the loop, ten times unrolled.
    assert (xla["flops"] < 10 * 2 * 8**3) is loops
    text = cli("inspect", target, "--args", factory, "--compile").stdout
    assert ("counts a loop body once" in text) is loops

"""A module that did not come from the user's own function (a dump) is compiled in a
child process (`hloscope.sources.jax.module_run`), as untrusted input is read in one:
XLA aborting on it (a failed check, SIGABRT) costs one line naming XLA's message, exit
2 from the command line, an `HloscopeError` from the Python API; never the process."""

import json
import subprocess
import sys

from conftest import DUMPS, FIXTURES, ROOT

ABORTS = FIXTURES / "xla_aborts" / "scan_then_convert.hlo"
HLOSCOPE = [sys.executable, "-c", "from hloscope.cli import main; main()"]


def assert_names_xla_abort(line: str) -> None:
    assert line.startswith("hloscope: error: "), line
    assert "XLA aborted while compiling it (SIGABRT" in line, line
    assert "Check failed: operand_maps.size() == 1" in line, line


def test_a_dump_whose_compilation_aborts_xla_costs_one_line(cli):
    run = cli("fusions", str(ABORTS), "--compile")
    assert run.code == 2
    (line,) = run.stderr.splitlines()
    assert_names_xla_abort(line)
    assert run.stdout == ""


def test_as_a_command_of_its_own_it_exits_2(tmp_path):
    # A process of its own, as the user runs it: exit 2, not 134 (SIGABRT).
    for command in (["fusions", str(ABORTS), "--compile"], ["inspect", str(ABORTS), "--compile"]):
        done = subprocess.run(
            [*HLOSCOPE, *command, "--json"],
            capture_output=True,
            text=True,
            cwd=ROOT,
            timeout=300,
            check=False,
        )
        assert done.returncode == 2, (command, done.returncode, done.stderr[-500:])
        (line,) = done.stderr.splitlines()
        assert_names_xla_abort(line)


def test_the_python_api_raises_and_the_caller_goes_on():
    # `hloscope.inspect(FILE).fusions()` in a notebook kernel: it raises, the kernel
    # lives, and the next dump compiles in a new child.
    script = f"""
import json, hloscope
try:
    hloscope.inspect({str(ABORTS)!r}).fusions()
except hloscope.HloscopeError as exc:
    print(json.dumps({{"raised": str(exc)}}))
report = hloscope.inspect({str(DUMPS / "mlp.stablehlo.mlir")!r}).fusions()
print(json.dumps({{"fusions": len(report.analysis.fusions)}}))
"""
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-1000:]
    raised, compiled = (json.loads(line) for line in done.stdout.splitlines()[-2:])
    assert "XLA aborted while compiling it" in raised["raised"]
    assert "Check failed" in raised["raised"]
    assert compiled["fusions"] > 0


def test_a_dump_compiles_in_the_child_as_it_did_here(cli):
    # The same optimized module and analyses as compiling in this process gives.
    from hloscope.sources import loader
    from hloscope.sources.jax.compile import compile_module

    loaded = loader.load(str(DUMPS / "mlp.stablehlo.mlir"))
    contained = loaded.compiled()
    assert contained.compilation is not None
    bytecode = loaded.parsed.bytecode()
    assert bytecode is not None
    here = compile_module(bytecode, "here")
    assert contained.compilation.hlo_text == here.hlo_text
    assert contained.compilation.cost == here.cost
    assert contained.compilation.memory == here.memory
    assert contained.source.ir == "hlo"
    assert {op.hlo_name for op in contained.module.ops if op.hlo_name} >= {"ynn_fusion"}

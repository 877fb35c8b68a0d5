"""How the command line reaches the browser: `hloscope tui`, `hloscope inspect` on a
terminal, and the paths that must never load it."""

import json
import os
import subprocess
import sys

from conftest import ROOT


def hloscope(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hloscope", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
        stdin=subprocess.DEVNULL,
        check=False,
    )


def test_tui_without_a_terminal_says_so_in_one_line():
    run = hloscope("tui", "samples/dumps/mlp.stablehlo.mlir")
    assert run.returncode == 2
    assert run.stdout == ""
    assert run.stderr.count("\n") == 1
    assert "the browser needs a terminal" in run.stderr
    assert "inspect --print" in run.stderr


def test_tui_is_listed_with_its_options():
    run = hloscope("tui", "--help")
    assert run.returncode == 0
    for option in ("--arg", "--args", "--module", "--compile", "--debug", "--timeout"):
        assert option in run.stdout


def test_inspect_in_a_pipe_prints_the_report_without_loading_the_browser():
    code = (
        "import sys\n"
        "from hloscope.cli import main\n"
        "try:\n"
        "    main(['inspect', 'samples/dumps/mlp.stablehlo.mlir'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "sys.stderr.write(repr('textual' in sys.modules))\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        check=True,
    )
    assert "Functions (4)" in run.stdout
    assert run.stderr == "False"


def test_compiling_a_dump_keeps_xla_logs_off_stderr():
    # XLA logs when the CPU backend starts; on a terminal that would land on the
    # browser's screen, and on the command line it breaks "one line on stderr".
    run = hloscope("inspect", "samples/dumps/mlp.stablehlo.mlir", "--compile", "--json")
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["source"]["stage"] == "optimized"
    assert run.stderr == ""


def test_a_command_exit_code_survives_the_console_script():
    # `hloscope tui` exits 2 when the target does not load; typer hands main() a
    # command's exit code as a return value (not an exception) in this mode.
    code = (
        "import sys\n"
        "import typer\n"
        "from hloscope import cli\n"
        "@cli.app.command('exit-three')\n"
        "def exit_three() -> None:\n"
        "    raise typer.Exit(3)\n"
        "cli.main(['exit-three'])\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=False
    )
    assert run.returncode == 3, run.stderr

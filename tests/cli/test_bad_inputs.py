"""Bad inputs beyond malformed modules: files that are empty, not files, not
readable, too large, folders of thousands of files, and entrypoints that return
what is not an array or end in odd ways. Each ends with exit 2 and one line on
stderr (or, where the input is fine after all, exit 0), never a hang, a traceback,
an internal error or an out-of-memory kill.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import DUMPS, ROOT

ODD = "tests/fixtures/odd_entrypoints.py"


def one_error_line(stderr: str) -> str:
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith("hloscope: error: ")
    assert "internal error" not in lines[0]
    return lines[0]


def hloscope(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """In a subprocess, for inputs that would hang this process if a guard regressed."""
    return subprocess.run(
        [sys.executable, "-m", "hloscope", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
        timeout=timeout,
        check=False,
    )


# --------------------------------------------------------------------------- files


@pytest.mark.parametrize("content", [b"", b"  \n\n\t \n"])
def test_an_empty_file(cli, tmp_path, content):
    path = tmp_path / "empty.mlir"
    path.write_bytes(content)
    run = cli("inspect", str(path), "--json")
    assert run.code == 2
    assert one_error_line(run.stderr).endswith("empty.mlir: the file is empty")


def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path):
    fifo = tmp_path / "module.mlir"
    os.mkfifo(fifo)
    run = hloscope("inspect", str(fifo), "--json")
    assert run.returncode == 2
    assert one_error_line(run.stderr).endswith(
        "module.mlir: is a named pipe (FIFO), not a module file"
    )


def test_an_endless_device_is_refused_without_reading_it():
    # /dev/zero never ends: reading it would fill memory.
    run = hloscope("params", "/dev/zero")
    assert run.returncode == 2
    assert one_error_line(run.stderr).endswith(
        "/dev/zero: is a character device, not a module file"
    )


def test_a_file_that_cannot_be_read(cli):
    # Tests run as root, so permission bits stop nothing; reading /proc/self/mem from
    # its start fails with EIO for anyone.
    if not Path("/proc/self/mem").exists():
        pytest.skip("no /proc/self/mem here")
    run = cli("inspect", "/proc/self/mem", "--json")
    assert run.code == 2
    assert one_error_line(run.stderr).endswith("/proc/self/mem: cannot read it: Input/output error")


def test_a_broken_symbolic_link(cli, tmp_path):
    link = tmp_path / "module.mlir"
    link.symlink_to(tmp_path / "gone.mlir")
    run = cli("inspect", str(link), "--json")
    assert run.code == 2
    assert "module.mlir: a broken symbolic link (to " in one_error_line(run.stderr)


def test_a_symbolic_link_loop(cli, tmp_path):
    (tmp_path / "a.mlir").symlink_to(tmp_path / "b.mlir")
    (tmp_path / "b.mlir").symlink_to(tmp_path / "a.mlir")
    run = cli("placement", str(tmp_path / "a.mlir"), "--json")
    assert run.code == 2
    assert one_error_line(run.stderr).endswith(
        "a.mlir: cannot read it: Too many levels of symbolic links"
    )


def test_a_directory_where_a_module_file_is_expected(cli, tmp_path):
    # A dump folder whose module "file" is a directory.
    (tmp_path / "module_0001.jit_f.before_optimizations.txt").mkdir()
    run = cli("inspect", str(tmp_path), "--json")
    assert run.code == 2
    assert one_error_line(run.stderr).endswith(
        "module_0001.jit_f.before_optimizations.txt: is a directory, not a module file"
    )


@pytest.mark.parametrize("option", [None, "--args"])
def test_a_directory_where_a_python_file_is_expected(cli, tmp_path, option):
    folder = tmp_path / "model.py"
    folder.mkdir()
    if option is None:
        run = cli("inspect", f"{folder}:f", "--json")
    else:
        run = cli("inspect", f"{ODD}:two", "--args", f"{folder}:f", "--json")
    assert run.code == 2
    assert one_error_line(run.stderr).endswith("model.py: not a Python file")


def test_a_file_over_the_size_limit_is_refused_before_reading(cli, tmp_path):
    # Sparse: three gigabytes that take no disk, and are never read.
    path = tmp_path / "huge.mlir"
    with open(path, "wb") as file:
        file.truncate(3 * 1024**3)
    run = cli("inspect", str(path), "--json")
    assert run.code == 2
    assert one_error_line(run.stderr).endswith(
        "huge.mlir: the file is 3.0 GiB; hloscope reads modules up to 2 GiB"
    )


def test_a_file_that_would_not_fit_in_memory(cli, monkeypatch, tmp_path):
    # As on a machine with 64 MiB to spare: refused with the numbers, not killed.
    from hloscope.sources import dumps

    monkeypatch.setattr(dumps, "available_memory", lambda: 64 * 1024**2)
    run = cli("inspect", str(DUMPS / "mlp.before_optimizations.hlo"), "--json")
    assert run.code == 2
    line = one_error_line(run.stderr)
    assert "mlp.before_optimizations.hlo: the file is 4.0 KiB; reading it would take about " in line
    assert (
        "of memory and 64.0 MiB are available (set HLOSCOPE_MEMORY_CHECK=0 to try anyway)" in line
    )
    monkeypatch.setenv("HLOSCOPE_MEMORY_CHECK", "0")
    assert cli("inspect", str(DUMPS / "mlp.before_optimizations.hlo"), "--json").code == 0


def test_the_memory_estimate_follows_what_parsing_costs():
    from hloscope.sources import dumps

    ops = "".join(f"  a{i} = f32[4] add(p, p)\n" for i in range(1000))
    hlo = "HloModule m\nENTRY main {\n  p = f32[4] parameter(0)\n" + ops
    hlo += "  ROOT r = f32[4] negate(p)\n}\n"
    mlir_ops = "".join(
        f"  %{i} = stablehlo.add %arg0, %arg0 : tensor<4xf32>\n" for i in range(1000)
    )
    mlir = f"func.func @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {{\n{mlir_ops}}}\n"
    constant = (
        'func.func @main() -> tensor<1000000xf32> {\n  %0 = stablehlo.constant dense<"0x'
        + "00" * 4_000_000
        + '"> : tensor<1000000xf32>\n}\n'
    )
    base = dumps.MEMORY_BASE
    # An HLO instruction costs more than an MLIR op (XLA's module, its conversion and
    # the model); a long line of constant data costs a few bytes per byte.
    assert dumps.memory_estimate(hlo.encode()) - base > 3 * (
        dumps.memory_estimate(mlir.encode()) - base
    )
    assert dumps.memory_estimate(constant.encode()) - base < 5 * len(constant)
    assert dumps.available_memory() is None or dumps.available_memory() > 0


# --------------------------------------------------------------------------- folders


def test_a_folder_of_thousands_of_modules(cli, tmp_path):
    module = (DUMPS / "mlp.before_optimizations.hlo").read_bytes()
    for number in range(3000):
        name = f"module_{number:04d}.jit_f{number}.before_optimizations.txt"
        (tmp_path / name).write_bytes(module)
    largest = "module_2345.jit_f2345.before_optimizations.txt"
    (tmp_path / largest).write_bytes(module + b"\n// the largest\n")
    run = cli("inspect", str(tmp_path), "--json")
    assert run.code == 0, run.stderr
    doc = run.json()
    assert doc["source"]["module"] == "module_2345.jit_f2345"
    assert len(doc["source"]["folder_modules"]) == 3000
    assert any("the folder holds 3000 modules; showing the largest" in n for n in doc["notes"])


def test_a_folder_of_thousands_of_other_files(cli, tmp_path):
    for number in range(3000):
        (tmp_path / f"notes{number}.dat").write_text("not a module\n")
    run = cli("inspect", str(tmp_path), "--json")
    assert run.code == 2
    assert one_error_line(run.stderr).endswith("the folder holds no modules hloscope can read")


def test_a_folder_too_large_to_list_says_so(cli, tmp_path, monkeypatch):
    from hloscope.sources import dumps

    monkeypatch.setattr(dumps, "MAX_FOLDER_ENTRIES", 50)
    for number in range(80):
        (tmp_path / f"m{number:03d}.mlir").write_bytes((DUMPS / "mlp.stablehlo.mlir").read_bytes())
    run = cli("inspect", str(tmp_path), "--json")
    assert run.code == 0, run.stderr
    assert "the folder has more than 50 entries; only 50 of them were listed" in run.json()["notes"]


# --------------------------------------------------------------------------- entrypoints


@pytest.mark.parametrize(
    ("function", "message"),
    [
        ("returns_string", "returned a value of type <class 'str'>, which is not a valid JAX type"),
        (
            "returns_object",
            "returned a value of type <class 'object'>, which is not a valid JAX type",
        ),
        ("returns_generator", "returned a value of type <class 'generator'>"),
        ("returns_mixed", "returned a value of type <class 'str'> at output component ['b']"),
    ],
)
@pytest.mark.parametrize("command", ["inspect", "params", "aot-check"])
def test_an_entrypoint_that_returns_what_is_not_an_array(cli, command, function, message):
    run = cli(command, f"{ODD}:{function}", "--arg", "f32[3]", "--json")
    assert run.code == 2
    line = one_error_line(run.stderr)
    assert f"{ODD}:{function}: " in line
    assert "raised TypeError" in line and message in line


def test_an_entrypoint_that_returns_nothing_is_fine(cli):
    run = cli("inspect", f"{ODD}:returns_none", "--arg", "f32[3]", "--json")
    assert run.code == 0, run.stderr
    assert run.json()["functions"][0]["results"] == 0


@pytest.mark.parametrize(
    ("factory", "message"),
    [
        ("strings", "tracing it raised TypeError: Error interpreting argument to"),
        ("a_dict", "the --args factory returned a dict; expected a tuple of positional arguments"),
        ("an_object", "the --args factory returned an object; expected a tuple"),
    ],
)
def test_a_factory_that_returns_what_is_not_arrays(cli, factory, message):
    run = cli("inspect", f"{ODD}:two", "--args", f"{ODD}:{factory}", "--json")
    assert run.code == 2
    assert message in one_error_line(run.stderr)


@pytest.mark.parametrize(
    ("function", "message"),
    [
        # Before: hloscope exited 3, silently.
        ("calls_exit", "the code called sys.exit(3) at tests/fixtures/odd_entrypoints.py:"),
        # Before: a traceback.
        (
            "raises_base_exception",
            "the code raised GeneratorExit: not from a generator (at tests/fixtures/odd_entr",
        ),
        ("recurses", "raised RecursionError: maximum recursion depth exceeded"),
    ],
)
@pytest.mark.parametrize("command", ["inspect", "aot-check"])
def test_an_entrypoint_that_ends_oddly(cli, command, function, message):
    run = cli(command, f"{ODD}:{function}", "--arg", "f32[3]", "--json")
    assert run.code == 2
    assert run.stdout == ""
    assert message in one_error_line(run.stderr)


@pytest.mark.parametrize(
    ("argv", "message", "helps"),
    [
        (["inspect", "x.mlir", "--no-such-option"], "No such option: --no-such-option", "inspect"),
        (["inspect", "x.mlir", "--timeout", "soon"], "Invalid value for '--timeout'", "inspect"),
        (["no-such-command"], "No such command 'no-such-command'", ""),
        (["inspect"], "Missing argument 'TARGET'", "inspect"),
    ],
)
def test_a_command_line_mistake_is_one_line_and_exit_2(cli, argv, message, helps):
    # What the console script's `main` does with typer's usage errors: one line naming
    # the mistake, not click's usage block, and the help of the command it is in.
    run = cli(*argv)
    assert run.code == 2
    assert run.stdout == ""
    line = one_error_line(run.stderr)
    assert message in line, line
    assert line.endswith(f"(see {' '.join(['hloscope', helps]).strip()} --help)")


def _commands() -> dict[str, list[str]]:
    """Every command, and its options."""
    import typer

    from hloscope.cli import app

    group = typer.main.get_command(app)
    assert isinstance(group, typer.core.TyperGroup)
    return {
        name: [o for p in command.params for o in p.opts]
        for name, command in sorted(group.commands.items())
    }


COMMANDS = _commands()
# The function target is no script: what follows it is hloscope's, or no one's.
_OPERANDS = {"diff": ["a.py:f", "b.py:f"], "schema": ["params"], "platforms": [], "cache": []}


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("extra", [[], ["--for", "tpu:v5e:2x4"]], ids=["", "for"])
def test_an_unknown_option_is_named_by_every_command(cli, command, extra):
    # Before: `profile f.py:f --for tpu:v5e:2x4 --bogus` said a script runs on this
    # machine, and `profile f.py:f --bogus` that the function's arguments were unexpected.
    if extra and "--for" not in COMMANDS[command]:
        pytest.skip("takes no --for")
    run = cli(command, *_OPERANDS.get(command, ["missing.py:f"]), *extra, "--bogus")
    assert run.code == 2
    assert run.stdout == ""
    line = one_error_line(run.stderr)
    assert line.startswith("hloscope: error: No such option: --bogus"), line
    assert line.endswith(f"(see hloscope {command} --help)")


def test_hloscope_alone_prints_the_help(cli):
    run = cli()
    assert run.code == 0
    assert "Usage: hloscope" in run.stdout
    assert run.stderr == ""


@pytest.mark.parametrize(
    "command",
    [
        ["inspect", "samples/dumps/mlp.stablehlo.mlir", "--print"],
        ["params", "samples/dumps/mlp.stablehlo.mlir", "--json"],
        ["diff", "samples/dumps/mlp.stablehlo.mlir", "samples/dumps/mlp.before_optimizations.hlo"],
    ],
)
def test_a_reader_that_goes_away_ends_hloscope_quietly(command):
    """`hloscope ... | head -1`: the reader closes the pipe; hloscope ends with exit 0
    and says nothing, as `git log | head` does (the text reports exited 1, the code
    for 'a difference was found')."""
    process = subprocess.Popen(
        [sys.executable, "-m", "hloscope", *command],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
    )
    assert process.stdout is not None and process.stderr is not None
    process.stdout.close()  # before anything is written: the first write breaks the pipe
    stderr = process.stderr.read()
    assert process.wait(timeout=300) == 0
    assert stderr == b""


def test_a_missing_argument_points_to_the_commands_help(cli):
    run = cli("diff", "samples/dumps/mlp.stablehlo.mlir")
    assert run.code == 2
    assert run.stderr.strip() == (
        "hloscope: error: Missing argument 'B'. (see hloscope diff --help)"
    )

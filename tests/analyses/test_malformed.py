"""Malformed bytecode that makes jaxlib's native readers crash or hang.

Each file is a mutation of a sample dump found by fuzzing. Read in this process,
each would kill it (a segfault, an abort from invalid UTF-8 in a diagnostic, a
double free) or hang it; hloscope reads untrusted bytecode in a child process and
reports one line instead.
"""

import os
import subprocess
import sys
import threading
import time

import pytest

from conftest import DUMPS, FIXTURES, ROOT
from hloscope.errors import HloscopeError
from hloscope.ir import parse, reader

MALFORMED = FIXTURES / "malformed"


def hloscope(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hloscope", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, **(env or {})},
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("bytecode_abort.mlirbc", "MLIR's bytecode reader crashed (SIGABRT)"),
        ("bytecode_segfault.mlirbc", "MLIR's bytecode reader crashed (SIGSEGV)"),
        ("vhlo_segfault.mlirbc", "StableHLO's deserializer crashed (SIGSEGV)"),
        ("vhlo_double_free.mlirbc", "StableHLO's deserializer crashed (SIGABRT)"),
    ],
)
def test_a_crashing_reader_is_one_line(name, reason):
    run = hloscope("inspect", str(MALFORMED / name), "--json")
    assert run.returncode == 2
    assert run.stdout == ""
    assert run.stderr.count("\n") == 1
    assert reason in run.stderr and "the file is malformed" in run.stderr


def test_a_hanging_reader_is_stopped():
    run = hloscope(
        "inspect", str(MALFORMED / "bytecode_hang.mlirbc"), env={"HLOSCOPE_READ_TIMEOUT": "3"}
    )
    assert run.returncode == 2
    assert "MLIR's bytecode reader did not finish within 3 s" in run.stderr


def test_the_reader_recovers_after_a_crash(cli):
    # In process: the child dies, the next request gets a new one.
    crashed = cli("inspect", str(MALFORMED / "bytecode_segfault.mlirbc"))
    assert crashed.code == 2 and "crashed" in crashed.stderr
    fine = cli("inspect", "samples/dumps/mlp.mlirbc", "--json")
    assert fine.code == 0, fine.stderr


def test_a_hanging_read_does_not_hold_up_printing(monkeypatch):
    # The reader process has a lock of its own: while it hangs on untrusted bytes,
    # native work here (the browser printing a module) goes on.
    monkeypatch.setenv("HLOSCOPE_READ_TIMEOUT", "60")
    parsed = parse.parse_mlir((DUMPS / "mlp.stablehlo.mlir").read_text(), "mlp.stablehlo.mlir")
    hang = (MALFORMED / "bytecode_hang.mlirbc").read_bytes()
    failures: list[HloscopeError] = []

    def read() -> None:
        try:
            parse.parse_mlir(hang, "bytecode_hang.mlirbc")
        except HloscopeError as exc:
            failures.append(exc)

    reading = threading.Thread(target=read)
    reading.start()
    deadline = time.monotonic() + 30
    while not reader._reader._lock.locked() and time.monotonic() < deadline:
        time.sleep(0.01)
    try:
        assert reader._reader._lock.locked()
        assert "func.func" in parsed.text()
        assert reading.is_alive()
    finally:
        # The request may still be starting its child: end whichever child it has.
        while reading.is_alive():
            process = reader._reader._process
            if process is not None:
                process.kill()
            reading.join(0.1)
    assert failures and "did not finish" not in str(failures[0])


@pytest.mark.parametrize("name", ["mlp.after_optimizations.hlo", "mlp.stablehlo.mlir"])
def test_a_file_cut_short_says_so(tmp_path, name):
    # A dump cut off mid-write (a killed process, a partial copy) is refused where it
    # ends: that is a cut-off file, not syntax a newer release wrote.
    text = (DUMPS / name).read_text()
    cut = tmp_path / name
    cut.write_text(text[: len(text) // 2])
    run = hloscope("inspect", str(cut), "--print")
    assert run.returncode == 2 and run.stderr.count("\n") == 1, run.stderr
    last = len(text[: len(text) // 2].rstrip().splitlines())
    assert f"(the file ends at line {last}: it looks cut short)" in run.stderr
    assert "newer release" not in run.stderr

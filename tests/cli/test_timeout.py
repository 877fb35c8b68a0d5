"""`--timeout SECONDS`: code that never finishes ends with one line and exit 2.

In Python code, the limit raises where the code is (in process, through the `cli`
fixture); code that ignores it (it catches BaseException, or blocks the alarm
signal) is ended by the watchdog, which ends the process, so those run in a
subprocess.
"""

import os
import re
import subprocess
import sys

import pytest

from conftest import ROOT, line_of

ENDLESS = "tests/fixtures/endless.py"


def lines_of(path: str, function: str) -> range:
    """The lines of the body of a three-line loop: where the limit may find it."""
    start = line_of(ROOT / path, function)
    return range(start, start + 4)


@pytest.fixture(scope="module", autouse=True)
def _warm():
    # Import JAX and start its CPU backend before the limits below start counting: a
    # loaded machine can take more than a second for that alone.
    from conftest import run_cli

    assert run_cli("inspect", f"{ENDLESS}:fine", "--arg", "f32[4]", "--json").code == 0


def one_error_line(stderr: str) -> str:
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith("hloscope: error: ")
    return lines[0]


@pytest.mark.parametrize(
    ("command", "where"),
    [
        (["inspect", f"{ENDLESS}:loops_forever", "--arg", "f32[4]"], "def loops_forever"),
        (["params", f"{ENDLESS}:sleeps", "--arg", "f32[4]"], "def sleeps"),
        (["placement", "tests/fixtures/endless_import.py:f"], "while True"),
        (["fusions", f"{ENDLESS}:fine", "--args", f"{ENDLESS}:endless_factory"], "def endless_f"),
        # The endless side first: the limit must not depend on how long lowering the
        # other side takes on a loaded machine.
        (["diff", f"{ENDLESS}:loops_forever", f"{ENDLESS}:fine", "--arg", "f32[4]"], "def loops"),
        (["aot-check", f"{ENDLESS}:loops_forever", "--arg", "f32[4]"], "def loops_forever"),
    ],
)
def test_endless_code_is_stopped_where_it_runs(cli, command, where):
    run = cli(*command, "--timeout", "1", "--json")
    assert run.code == 2
    assert run.stdout == ""
    line = one_error_line(run.stderr)
    assert "stopped after 1 s (--timeout 1)" in line
    file = "tests/fixtures/endless_import.py" if "endless_import" in command[1] else ENDLESS
    found = re.search(rf"while running {re.escape(file)}:(\d+)$", line)
    assert found, line
    assert int(found.group(1)) in lines_of(file, where)


def test_after_a_timeout_the_next_command_runs(cli):
    stopped = cli("inspect", f"{ENDLESS}:sleeps", "--arg", "f32[4]", "--timeout", "0.5")
    assert stopped.code == 2
    fine = cli("inspect", "samples/dumps/mlp.before_optimizations.hlo", "--json")
    assert fine.code == 0, fine.stderr
    assert fine.stderr == ""


def test_a_command_within_its_limit_is_unchanged(cli):
    limited = cli("params", f"{ENDLESS}:fine", "--arg", "f32[4]", "--timeout", "600", "--json")
    unlimited = cli("params", f"{ENDLESS}:fine", "--arg", "f32[4]", "--json")
    assert limited.code == unlimited.code == 0
    assert limited.json()["parameters"] == unlimited.json()["parameters"]


@pytest.mark.parametrize("seconds", ["0", "-3", "nan"])
def test_a_limit_must_be_positive(cli, seconds):
    run = cli("inspect", "samples/dumps/mlp.mlirbc", "--timeout", seconds)
    assert run.code == 2
    assert "--timeout" in one_error_line(run.stderr)


def test_a_timeout_while_the_reader_reads_leaves_no_stale_reader(cli):
    # The reader process hangs on this file; the time limit ends the command while it
    # waits. The next command must get a reader of its own, not the hung one.
    hung = cli("inspect", "tests/fixtures/malformed/bytecode_hang.mlirbc", "--timeout", "1")
    assert hung.code == 2
    assert "stopped after 1 s (--timeout 1)" in one_error_line(hung.stderr)
    fine = cli("inspect", "samples/dumps/mlp.mlirbc", "--json", "--timeout", "60")
    assert fine.code == 0, fine.stderr


@pytest.mark.parametrize("module", ["stubborn_import", "alarm_blocked_import"])
def test_code_that_ignores_the_limit_is_ended(module):
    # The user's module is imported first, before hloscope imports JAX, so the limit
    # finds it in the loop however slow the machine is.
    target = f"tests/fixtures/{module}.py:f"
    run = subprocess.run(
        [sys.executable, "-m", "hloscope", "inspect", target, "--arg", "f32[4]", "--timeout", "1"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
        timeout=120,
        check=False,
    )
    assert run.returncode == 2
    assert run.stdout == ""
    line = one_error_line(run.stderr)
    assert f"{target}: ended 4 s after it started (--timeout 1)" in line


SLOW_EXIT = """
import os, sys, threading, time
from hloscope import errors, timeout

timeout.TIME_LIMIT_GRACE_SECONDS = 0.5
real_exit = os._exit
watchdog_wrote = threading.Event()


def slow_exit(code):
    watchdog_wrote.set()
    time.sleep(1.5)  # the watchdog has written its line; the command unwinds meanwhile
    real_exit(code)


os._exit = slow_exit
with errors.command_edge():
    with timeout.time_limit(0.5, "target"):
        try:
            while True:
                time.sleep(0.01)
        except errors.TimeLimitExceeded:
            # Unwind once the watchdog has written its line (waited for, not timed: on
            # a loaded machine the watchdog's thread can run late).
            watchdog_wrote.wait(60)
            raise
"""


def test_the_watchdog_and_the_alarm_never_both_write_a_line():
    # Code that is slow to unwind after the limit: the watchdog ends the process, and
    # the alarm's own line, arriving while it does, must not be written as well.
    run = subprocess.run(
        [sys.executable, "-c", SLOW_EXIT],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
        timeout=60,
        check=False,
    )
    assert run.returncode == 2
    line = one_error_line(run.stderr)
    assert "target: ended 1 s after it started (--timeout 0.5)" in line

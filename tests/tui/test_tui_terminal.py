"""The real `hloscope` command in a real terminal (tmux): what the screen shows."""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from conftest import ROOT, line_of
from tui_support import Terminal

pytestmark = pytest.mark.skipif(
    shutil.which("tmux") is None, reason="tmux is not installed: cannot drive a terminal"
)


@pytest.fixture
def terminal() -> Iterator[Callable[[list[str]], Terminal]]:
    opened: list[Terminal] = []

    def open_(args: list[str]) -> Terminal:
        term = Terminal(shlex.join([sys.executable, "-m", "hloscope", *args]), str(ROOT))
        opened.append(term)
        return term

    yield open_
    for term in opened:
        term.close()


ENTRYPOINT = ["samples/nested_jits.py:mlp", "--args", "samples/nested_jits.py:example_args"]


@pytest.mark.slow
def test_hloscope_tui_in_a_terminal(terminal):
    term = terminal(["tui", *ENTRYPOINT])
    screens: list[str] = []

    def ready(screen: str) -> bool:
        screens.append(screen)
        return "func.func public @main" in screen and "line 2/" in screen

    screen = term.wait_for(ready, "the module")
    # The progress screen was drawn while JAX imported and lowered the function: the
    # app draws on its own terminal descriptor, which XLA's log capture leaves alone.
    assert any("Loading samples/nested_jits.py:mlp" in s for s in screens)
    assert "hloscope · samples/nested_jits.py:mlp · jit_mlp · lowered StableHLO" in screen
    assert "▼ module @jit_mlp" in screen
    assert "main  public · 4 ops" in screen
    assert "%0 = call @dense(%arg6, %arg1, %arg0)" in screen
    assert "func.func @main" in screen  # the detail pane
    assert "? Keys" in screen  # the footer

    # Search for the tanh: the cursor goes there and the details show its source line.
    term.keys("/")
    term.wait_for(lambda s: "enter searches" in s, "the search prompt")
    term.keys("stablehlo.tanh", "Enter")
    screen = term.wait_for(lambda s: "1/1 matches" in s, "the match")
    tanh = line_of(ROOT / "samples/nested_jits.py", "jnp.tanh")
    assert "%0 = stablehlo.tanh" in screen
    assert f"nested_jits.py:{tanh}:" in screen
    assert "jnp.tanh" in screen

    # Follow the link to its user (the reduce) with enter, then come back.
    assert "· line 24/" in screen
    term.keys("d", "j", "Enter")
    screen = term.wait_for(lambda s: "· line 26/" in s, "the link followed")
    assert "%1 = stablehlo.reduce" in screen
    term.keys("BSpace")
    term.wait_for(lambda s: "· line 24/" in s, "back at the tanh")

    term.keys("?")
    screen = term.wait_for(lambda s: "╭─ Keys" in s, "the help")
    assert "Back to where you jumped from" in screen
    term.keys("Escape")
    term.wait_for(lambda s: "╭─ Keys" not in s, "the help closed")

    term.keys("2")
    screen = term.wait_for(lambda s: "Functions (4)" in s, "the overview")
    assert "dense ×3" in screen

    term.keys("q")
    screen = term.wait_for(lambda s: "EXIT=" in s, "the command to exit")
    assert "EXIT=0" in screen


@pytest.mark.slow
def test_hloscope_inspect_on_a_terminal_opens_the_overview(terminal):
    term = terminal(["inspect", "samples/dumps/host_call.after_optimizations.hlo"])
    screen = term.wait_for(lambda s: "Functions (" in s, "the overview")
    assert "IR  Overview" in screen
    term.keys("1")
    screen = term.wait_for(lambda s: "mhlo.fusion" in s, "the IR")
    term.keys("H")
    screen = term.wait_for(lambda s: "only host ops (2)" in s, "the host filter")
    assert "stablehlo.tanh" not in screen.split("────")[0]
    term.keys("q")
    assert "EXIT=0" in term.wait_for(lambda s: "EXIT=" in s, "the command to exit")


@pytest.mark.slow
def test_a_target_that_does_not_load_exits_2_with_one_line(terminal):
    term = terminal(["tui", "samples/dumps/no_such_file.mlir"])
    term.wait_for(lambda s: "escape closes · q quits" in s, "the error")
    term.keys("q")
    screen = term.wait_for(lambda s: "EXIT=" in s, "the command to exit")
    assert "EXIT=2" in screen
    assert "hloscope: error: samples/dumps/no_such_file.mlir: no such file or directory" in screen


@pytest.mark.slow
def test_tui_timeout_stops_a_load_that_does_not_end(terminal):
    term = terminal(
        ["tui", "tests/fixtures/endless.py:sleeps", "--arg", "f32[4]", "--timeout", "1"]
    )
    screen = term.wait_for(lambda s: "EXIT=" in s, "the command to exit")
    assert "EXIT=2" in screen
    assert "hloscope: error: tests/fixtures/endless.py:sleeps: stopped after 1 s (--timeout 1)" in (
        screen
    )


@pytest.mark.slow
def test_tui_timeout_limits_the_loading_only(terminal):
    term = terminal(["tui", "samples/dumps/mlp.stablehlo.mlir", "--timeout", "600"])
    term.wait_for(lambda s: "lowered · 16 ops in 4 functions · line" in s, "the module")
    term.keys("q")
    assert "EXIT=0" in term.wait_for(lambda s: "EXIT=" in s, "the command to exit")


COMPUTE_ON = [
    "samples/compute_on.py:host_inside_jit",
    "samples/compute_on.py:host_outside_jit",
    "--args",
    "samples/compute_on.py:example_args",
]


@pytest.mark.slow
def test_hloscope_diff_on_a_terminal_opens_the_diff_screen(terminal):
    term = terminal(["diff", *COMPUTE_ON])
    screen = term.wait_for(lambda s: "verdict different" in s, "the diff screen")
    assert "1 added · 0 removed · 1 changed · 6 unchanged" in screen
    assert "module @jit_host_inside_jit" in screen
    assert "module @jit_host_outside_jit" in screen
    assert "] Next change" in screen  # the footer
    term.keys("]")
    screen = term.wait_for(lambda s: "change 1/2" in s, "the first change")
    assert "added func.call in main" in screen
    assert "A (nothing on this row)" in screen
    term.keys("]")
    screen = term.wait_for(lambda s: "change 2/2" in s, "the second change")
    assert "changed stablehlo.tanh in main → host_outside_jit" in screen
    assert "compute type device → host" in screen
    compute_on = ROOT / "samples/compute_on.py"
    inside = line_of(compute_on, "def host_inside_jit") + 3  # its tanh
    assert f"samples/compute_on.py:{inside})" in screen
    term.keys("C")
    screen = term.wait_for(lambda s: "only changes" in s, "only the changes")
    top = screen.split("────")[1]
    assert "stablehlo.constant" not in top
    term.keys("?")
    screen = term.wait_for(lambda s: "╭─ Keys" in s, "the help")
    assert "Next change" in screen
    term.keys("Escape")
    term.wait_for(lambda s: "╭─ Keys" not in s, "the help closed")
    term.keys("q")
    screen = term.wait_for(lambda s: "EXIT=" in s, "the command to exit")
    assert "EXIT=1" in screen  # the modules differ, as in a pipe


@pytest.mark.slow
def test_hloscope_diff_print_on_a_terminal_prints(terminal):
    term = terminal(["diff", *COMPUTE_ON, "--print"])
    screen = term.wait_for(lambda s: "EXIT=" in s, "the report")
    assert "verdict  different · 1 added · 0 removed · 1 changed · 6 unchanged" in screen
    assert "EXIT=1" in screen


@pytest.mark.slow
def test_hloscope_compiles_in_a_terminal(terminal):
    # The script runs first, then the Compiles view opens; enter opens a
    # compilation's module in the IR browser, q comes back, d diffs it with the
    # function's previous compilation, q and q end with the script's exit code.
    term = terminal(["compiles", "samples/recompiles.py", "--steps", "2"])
    screen = term.wait_for(lambda s: "hloscope compiles · samples/recompiles.py" in s, "the view")
    assert "x: f32[8,4] → f32[16,4]" in screen
    row = next(line for line in screen.splitlines() if "x: f32[8,4] → f32[16,4]" in line)
    number = int(row.split()[0])
    term.keys(*["Down"] * (number - 1), "Enter")
    screen = term.wait_for(
        lambda s: f"hloscope · predict #{number} · jit_predict" in s and "tensor<16x4xf32>" in s,
        "the IR",
    )
    term.keys("q")
    term.wait_for(lambda s: "hloscope compiles · samples/recompiles.py" in s, "the view again")
    term.keys("d")
    term.wait_for(
        lambda s: "hloscope diff · predict #" in s and "verdict different" in s, "the diff"
    )
    term.keys("q")
    term.wait_for(lambda s: "hloscope compiles · samples/recompiles.py" in s, "the view again")
    term.keys("q")
    term.wait_for(lambda s: "EXIT=0" in s, "the exit")


@pytest.mark.slow
def test_the_browser_ends_with_its_terminal(tmp_path):
    # An SSH connection that drops (here: the tmux server killed) hangs up the
    # browser's terminal. It went on without one, drawing nowhere and spinning on its
    # dead input (a third of a core, for good); it ends with it.
    pid_file = tmp_path / "pid"
    command = shlex.join([sys.executable, "-m", "hloscope", "tui", *ENTRYPOINT])
    term = Terminal(f"sh -c 'echo $$ > {pid_file}; exec {command}'", str(ROOT))
    try:
        term.wait_for(lambda s: "func.func public @main" in s, "the module")
        pid = int(pid_file.read_text())
    finally:
        term.close()
    for _ in range(100):
        if not _alive(pid):
            return
        time.sleep(0.1)
    os.kill(pid, signal.SIGKILL)
    raise AssertionError("the browser outlived its terminal")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A child of this process that ended is a zombie until reaped: not alive.
    state = Path(f"/proc/{pid}/stat")
    return not (state.exists() and state.read_text().split(")")[-1].split()[0] == "Z")

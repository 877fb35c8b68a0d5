"""`hloscope compare` on a terminal, and `--diff ROW ROW`: the table fills as the
children finish, enter opens a configuration's own browser (`hloscope tui --for`, its
environment set) and q comes back to the table, two rows open their diff; `--diff`
prints the diff of two rows, each side compiled for its own row's spec."""

from __future__ import annotations

import shlex
import shutil
import sys

import pytest
from test_compile_for import ROOT, hloscope, needs

pytestmark = pytest.mark.slow

FIXTURE = "tests/fixtures/compare_targets.py"
# Two TPUs of 8 devices each (the terminal passes on the suite's 8 host devices), and
# a configuration whose program raises.
COMPARISON = [
    f"{FIXTURE}:step",
    "--args",
    f"{FIXTURE}:step_args",
    "--for",
    "tpu:v5e:2x4",
    "--for",
    "tpu:v4:2x2x2",
    "--vary",
    "COMPARE_SIZE=small,raise",
]


def test_the_table_opens_a_configuration_and_a_diff_and_comes_back():
    needs("tpu")
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed: cannot drive a terminal")
    from tui_support import Terminal

    command = shlex.join([sys.executable, "-m", "hloscope", "compare", *COMPARISON, "-j", "2"])
    term = Terminal(command, str(ROOT))
    try:
        screen = term.wait_for(lambda s: "4 done" in s, "every configuration's row")
        assert "★" in screen and "best ★ COMPARE_SIZE=small @ tpu:" in screen
        assert screen.count("COMPARE_SIZE=raise @") == 2
        term.keys("g", "Enter")
        term.wait_for(lambda s: "jit_step" in s and "for tpu:" in s, "the configuration's browser")
        term.keys("q")
        term.wait_for(lambda s: "hloscope compare ·" in s, "the table again")
        term.keys("g", "space", "j", "d")
        screen = term.wait_for(
            lambda s: "hloscope diff ·" in s and "verdict" in s, "the diff of the two rows"
        )
        assert "tpu:v5e:2x4" in screen and "tpu:v4:2x2x2" in screen
        term.keys("q")
        term.wait_for(lambda s: "hloscope compare ·" in s, "the table after the diff")
        term.keys("q")
        assert "EXIT=0" in term.wait_for(lambda s: "EXIT=" in s, "the command to exit")
    finally:
        term.close()


def test_diff_of_two_rows_compiles_each_for_its_own_row():
    needs("tpu")
    run = hloscope("compare", *COMPARISON, "--sort", "name", "--diff", "1", "2", "--json")
    assert run.code in (0, 1), run.stderr
    doc = run.json()
    assert doc["command"] == "diff"
    # By name, failed rows last: rows 1 and 2 are the two that compiled.
    specs = [doc[side]["compiled_for"]["spec"] for side in ("a", "b")]
    assert specs == ["tpu:v4:2x2x2", "tpu:v5e:2x4"]
    assert doc["compiled_summary"]["estimate"]["a"] is not None
    failed = hloscope("compare", *COMPARISON, "--sort", "name", "--diff", "1", "4")
    assert failed.code == 2
    # After the rows' progress lines, one line of error.
    said = failed.stderr.splitlines()[-1]
    assert said.startswith("hloscope: error: --diff 4: COMPARE_SIZE=raise @ "), failed.stderr

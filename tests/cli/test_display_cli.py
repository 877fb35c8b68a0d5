"""How the text reports show what they list: every command takes --print, long pytree
paths keep their distinguishing end, XLA's per-call-site clones are grouped, optimized
shardings read like lowered ones, collectives inside loops say per call."""

import pytest

from conftest import DUMPS


def without_timings(text):
    return [line for line in text.splitlines() if " ms" not in line and " s " not in line]


PRINTED_ANYWAY = ["params", "placement", "fusions"]


@pytest.mark.parametrize("command", PRINTED_ANYWAY)
def test_commands_that_always_print_accept_print(cli, command):
    target = str(DUMPS / "mlp.after_optimizations.hlo")
    plain = cli(command, target)
    printed = cli(command, target, "--print")
    assert printed.code == 0, printed.stderr
    # The same report, timings aside.
    assert without_timings(printed.stdout) == without_timings(plain.stdout)


def test_aot_check_accepts_print(cli):
    # A bad target still reaches the command's own error, not "No such option".
    run = cli("aot-check", "samples/no_such_module.py:f", "--print")
    assert run.code == 2
    assert "No such option" not in run.stderr

"""Options declared once (`hloscope.cli_options`): every command's --help lists its
options, the shared ones with their one help text, and a command taking the target
options as a group receives them as one `LoadOptions`."""

from __future__ import annotations

import re
from typing import Annotated, get_args

import pytest
import typer
from typer.testing import CliRunner

from conftest import run_cli
from hloscope import cli_options
from hloscope.cli_options import TargetOptions, option_groups
from hloscope.sources.loader import LoadOptions

TARGET = ("--arg", "--args", "--module", "--compile", "--for", "--no-cache")
LOADED = ("--arg", "--args", "--module", "--for", "--no-cache")
TAIL = ("--debug", "--timeout", "--help")

# Each command's options, in the order its --help lists them (a command may list
# more: a new option is added to its row here).
OPTIONS: dict[str, tuple[str, ...]] = {
    "inspect": (*TARGET, "--json", "--print", *TAIL),
    "fusions": (*LOADED, "--compile", "--json", "--print", *TAIL),
    "params": (*TARGET, "--json", "--print", "--fail-on", *TAIL),
    "placement": (*TARGET, "--json", "--print", "--why", *TAIL),
    "diff": (*TARGET, "--json", "--print", *TAIL),
    "compare": (
        "--for",
        "--vary",
        "--env",
        "--arg",
        "--args",
        "--no-cache",
        "--tokens-per-step",
        "--sort",
        "--jobs",
        "--json",
        "--format",
        "--print",
        "--debug",
        "--timeout",
        "--baseline",
        "--update",
        "--tolerance",
        "--diff",
    ),
    "tui": (*TARGET, *TAIL),
    "aot-check": ("--arg", "--args", "--for", "--no-cache", "--aot", "--json", "--print", *TAIL),
    "compiles": ("--args", "--calls", "--json", "--print", "--fail-on", *TAIL),
    "passes": (*LOADED, "--find", "--diff", "--json", "--print", *TAIL),
    "memory": (*LOADED, "--json", "--print", *TAIL),
    "remat": (*TARGET, "--json", "--print", "--strict", *TAIL),
    "check": (
        "--baseline",
        "--update",
        *LOADED,
        "--calls",
        "--tolerance",
        "--runtime",
        "--json",
        "--format",
        "--print",
        *TAIL,
    ),
    "profile": (
        "--arg",
        "--args",
        "--for",
        "--no-cache",
        "--runs",
        "--warmup",
        "--trace-dir",
        "--json",
        "--print",
        *TAIL,
    ),
    "schema": ("--debug", "--help"),
    "platforms": ("--json", "--debug", "--help"),
    "cache": ("--clear", "--debug", "--help"),
}

# The shared options whose help every command that takes them shows word for word
# (fusions' --compile and compiles' --args say what they mean there).
SHARED = {
    "--arg": cli_options.ArgOption,
    "--args": cli_options.ArgsOption,
    "--module": cli_options.ModuleOption,
    "--compile": cli_options.CompileOption,
    "--for": cli_options.ForOption,
    "--no-cache": cli_options.NoCacheOption,
    "--json": cli_options.JsonOption,
    "--debug": cli_options.DebugOption,
    "--timeout": cli_options.TimeoutOption,
}
OWN_HELP = {
    ("fusions", "--compile"),
    ("compiles", "--args"),
    # A configuration's own limit (each child's), and the specs of the configurations.
    ("compare", "--timeout"),
    ("compare", "--for"),
}


def help_of(command: str) -> str:
    run = run_cli(command, "--help")
    assert run.code == 0, run.stderr
    return run.stdout


def listed_options(text: str) -> list[str]:
    """The long names of the options an --help lists, in its order."""
    section = text.split("\nOptions:\n", 1)[1]
    return re.findall(r"^  (?:-\w, )?(--[\w-]+)", section, flags=re.MULTILINE)


def words(text: str) -> str:
    # A hyphenated word the help wraps at its hyphen (`after-` / `optimization`) is one.
    return re.sub(r"(\w)- (\w)", r"\1-\2", " ".join(text.split()))


def test_every_command_has_a_row():
    listed = listed_options(run_cli("--help").stdout.replace("Commands:", "Options:"))
    commands = re.findall(r"^  ([a-z][\w-]*)  ", run_cli("--help").stdout, flags=re.MULTILINE)
    assert listed and set(commands) == set(OPTIONS)


@pytest.mark.parametrize("command", sorted(OPTIONS))
def test_help_lists_every_option_of_the_command(command: str):
    listed = listed_options(help_of(command))
    expected = iter(listed)
    # The row's options, in its order (an option the row does not name may sit between).
    assert all(option in expected for option in OPTIONS[command]), listed
    assert len(listed) == len(set(listed))


@pytest.mark.parametrize("command", sorted(OPTIONS))
def test_shared_options_show_their_one_help(command: str):
    text = words(help_of(command))
    for option, alias in SHARED.items():
        if option not in OPTIONS[command] or (command, option) in OWN_HELP:
            continue
        info = get_args(alias)[1]
        assert words(str(info.help)) in text, (command, option)


def test_a_group_reaches_the_command_as_load_options():
    app = typer.Typer()
    seen: list[tuple[str, LoadOptions, bool]] = []

    @app.command()
    @option_groups
    def show(target: str, options: TargetOptions, json: cli_options.JsonOption = False) -> None:
        """Record what the command received."""
        seen.append((target, options, json))

    @app.command()
    @option_groups
    def other() -> None:
        """A second command, so that typer keeps the command names."""

    runner = CliRunner()
    argv = ["show", "m.py:f", "--arg", "f32[2]", "--arg", "i32[]", "--module", "x", "--compile"]
    result = runner.invoke(app, argv)
    assert result.exit_code == 0, result.output
    assert seen == [
        ("m.py:f", LoadOptions(args=("f32[2]", "i32[]"), module="x", optimized=True), False)
    ]
    assert runner.invoke(app, ["show", "t", "--json"]).exit_code == 0
    assert seen[-1] == ("t", LoadOptions(), True)
    assert "Record what the command received." in runner.invoke(app, ["show", "--help"]).output


def test_an_option_declared_twice_is_refused():
    def clash(options: TargetOptions, module: Annotated[str, typer.Option()] = "") -> None:
        del options, module

    with pytest.raises(TypeError, match=r"clash: option names declared twice: \['module'\]"):
        option_groups(clash)

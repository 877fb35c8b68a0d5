"""Start-up: what a command loads before it reads anything.

Every command pays its imports before its first op, so a command loads its own
analyses and nothing else: `reports` imports each command's analyses in the function
that builds its report, the text renderers (and rich) load only to print text, and the
console script spares typer's pydantic validators (`cli._coerce_without_pydantic`).
These tests keep that boundary: a module here that a command starts to load again
costs every run of it.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import typer.main

from conftest import DUMPS, ROOT
from hloscope import cli

MLIR = str((DUMPS / "mlp.stablehlo.mlir").relative_to(ROOT))
HLO = str((DUMPS / "mlp.after_optimizations.hlo").relative_to(ROOT))
HOST = str((DUMPS / "host_call.stablehlo.mlir").relative_to(ROOT))

# What no command on a dump needs before printing: the browser, JAX, and typer's
# pydantic validators.
NEVER = ("textual", "jax", "pydantic", "typer._adapters")
# Each command's analyses, and the modules only some commands read.
ANALYSES = {
    "aot": "hloscope.analyses.aot",
    "compiles": "hloscope.analyses.compiles",
    "diff": "hloscope.analyses.diff",
    "fusions": "hloscope.analyses.fusions",
    "memory": "hloscope.analyses.memory",
    "params": "hloscope.analyses.params",
    "passes": "hloscope.analyses.passes",
    "placement": "hloscope.analyses.placement",
    "pass files": "hloscope.sources.passes",
    "buffer assignments": "hloscope.ir.xla_buffers",
}
TEXT = ("rich", "hloscope.render.text.common")
RENDERERS = {
    name: f"hloscope.render.text.{name}"
    for name in ("aot", "compiles", "diff", "fusions", "inspect", "memory", "passes")
}


def loaded_by(*argv: str) -> tuple[set[str], str]:
    """The modules of interest that `hloscope ARGV` loaded, run through the console
    script's `main` in a fresh process, and what it printed."""
    watched = (*NEVER, *ANALYSES.values(), *TEXT, *RENDERERS.values())
    code = (
        "import sys\n"
        "from hloscope.cli import main\n"
        "try:\n"
        f"    main({list(argv)!r})\n"
        "except SystemExit as exc:\n"
        "    assert exc.code in (0, 1), exc.code\n"
        f"watched = {watched!r}\n"
        "sys.stderr.write(repr(sorted(m for m in watched if m in sys.modules)))\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=False
    )
    assert run.returncode == 0, run.stderr
    return set(eval(run.stderr.splitlines()[-1])), run.stdout


def test_inspect_json_on_a_dump_loads_its_analyses_only():
    loaded, stdout = loaded_by("inspect", MLIR, "--json")
    assert json.loads(stdout)["command"] == "inspect"
    assert loaded == {ANALYSES["params"], ANALYSES["placement"]}


def test_inspect_of_an_optimized_dump_adds_the_fusion_summary():
    loaded, _ = loaded_by("inspect", HLO, "--json")
    assert loaded == {ANALYSES["params"], ANALYSES["placement"], ANALYSES["fusions"]}


def test_each_report_command_loads_its_own_analysis():
    assert loaded_by("params", MLIR, "--json")[0] == {ANALYSES["params"]}
    assert loaded_by("placement", MLIR, "--json")[0] == {ANALYSES["placement"]}
    assert loaded_by("diff", MLIR, HOST, "--json")[0] == {ANALYSES["diff"]}


def test_printing_text_loads_rich_and_that_reports_renderer():
    loaded, stdout = loaded_by("inspect", MLIR, "--print")
    assert stdout.startswith("target ")
    assert not loaded & set(NEVER)
    # The overview prints summaries of parameters, placement and fusions, with the
    # renderers' own helpers.
    assert loaded - {*TEXT, RENDERERS["inspect"], RENDERERS["fusions"]} == {
        ANALYSES["params"],
        ANALYSES["placement"],
        ANALYSES["fusions"],
    }
    loaded, _ = loaded_by("diff", MLIR, HOST)
    assert loaded == {*TEXT, RENDERERS["diff"], ANALYSES["diff"]}


def test_version_and_help_load_no_analysis():
    # --version names JAX's default backend, which only JAX knows: it loads JAX, and
    # nothing else of the watched modules.
    loaded, printed = loaded_by("--version")
    assert loaded == {"jax"}
    assert printed.startswith("hloscope ") and "\nbackend " in printed
    assert loaded_by("inspect", "--help")[0] == set()


# ------------------------------------------------------------- typer without pydantic


def parse(argv: list[str], *, deferred: bool) -> tuple[str, dict[str, object]]:
    """The parameters typer hands the command `argv` names, with typer's own coercion
    or with `cli._coerce_without_pydantic`'s."""
    group = typer.main.get_command(cli.app)
    assert isinstance(group, typer.core.TyperGroup)
    if deferred:
        cli._coerce_without_pydantic(group)
    name, *rest = argv
    parent = typer.Context(group, info_name="hloscope", **group.context_settings)
    with parent, group.commands[name].make_context(name, rest, parent=parent) as sub:
        return name, dict(sub.params)


ARGVS = [
    ["inspect", MLIR],
    [
        "inspect",
        "dumps/ünï code.mlir",
        "--arg",
        "f32[8,128]",
        "--arg",
        "i32[]",
        "--args",
        "pkg.mod:factory",
        "--module",
        "0003",
        "--compile",
        "--json",
        "--timeout",
        "2.5",
    ],
    ["inspect", "", "--arg", "", "--module", " spaced "],
    ["params", MLIR, "--fail-on", "unused,pruned", "--print", "--debug"],
    ["diff", MLIR, HOST, "--arg", "f32[3]", "--timeout", "1e3"],
    ["passes", "folder", "--find", "all-gather", "--diff", "7"],
    ["compiles", "script.py", "--args", "a:b", "--args", "c:d", "--calls", "e:f", "--fail-on", "x"],
    ["aot-check", "m:f", "--aot", "m:g", "--arg", "f32[2]"],
    ["memory", "folder", "--module", "jit_f", "--timeout", "inf"],
    ["fusions", HLO, "--compile"],
    ["tui", MLIR, "--arg", "f32[1]"],
]


@pytest.mark.parametrize("argv", ARGVS, ids=lambda argv: argv[0])
def test_deferred_coercion_hands_commands_what_typer_does(argv):
    expected = parse(argv, deferred=False)
    got = parse(argv, deferred=True)
    assert got == expected
    for key, value in expected[1].items():
        assert type(got[1][key]) is type(value), key


@pytest.mark.parametrize("value", ["abc", "", "1,5"])
def test_deferred_coercion_fails_as_typer_does(value):
    argv = ["inspect", MLIR, "--timeout", value]
    with pytest.raises(typer.BadParameter) as expected:
        parse(argv, deferred=False)
    with pytest.raises(typer.BadParameter) as got:
        parse(argv, deferred=True)
    assert got.value.format_message() == expected.value.format_message()


def test_every_parameter_is_deferred():
    # A typer release that renames what `_coerce_without_pydantic` reaches into
    # leaves the parameters alone (and start-up 70 ms slower): this notices.
    group = typer.main.get_command(cli.app)
    assert isinstance(group, typer.core.TyperGroup)
    cli._coerce_without_pydantic(group)
    for command in (group, *group.commands.values()):
        for param in command.params:
            assert type(param._runtime_param).__name__ == "Deferred", (command.name, param.name)

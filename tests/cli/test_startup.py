"""Start-up: what a command loads before it reads anything.

Every command pays its imports before its first op, so a command loads its own
analyses and nothing else: `reports` imports each command's analyses in the function
that builds its report, and the text renderers (and rich) load only to print text.
These tests keep that boundary: a module here that a command starts to load again
costs every run of it. (typer validates every parameter with pydantic, which costs
each command about 100 ms; hloscope uses typer's public API as it is.)
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import DUMPS, ROOT

MLIR = str((DUMPS / "mlp.stablehlo.mlir").relative_to(ROOT))
HLO = str((DUMPS / "mlp.after_optimizations.hlo").relative_to(ROOT))
HOST = str((DUMPS / "host_call.stablehlo.mlir").relative_to(ROOT))

# What no command on a dump needs before printing: the browser and JAX.
NEVER = ("textual", "jax")
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
# What a --json run on a dump never loads: typer's rich help and errors, pydantic (typer
# 0.29 validates every parameter with it: about 0.15 s of each start-up; pyproject.toml
# keeps typer below it), the browser, JAX's side of the sources, the check's runner.
KEPT_OUT = (
    *NEVER,
    *TEXT,
    "typer.rich_utils",
    "pydantic",
    "hloscope.tui",
    "hloscope.sources.jax",
    "hloscope.check_run",
)
# What a command reads and builds, which --help and a usage error never load.
COMMAND_WORK = ("hloscope.sources.loader", "hloscope.reports", "jaxlib", "numpy")


def loaded_by(
    *argv: str, codes: tuple[int, ...] = (0, 1), also: tuple[str, ...] = ()
) -> tuple[set[str], str]:
    """The modules of interest (and ALSO) that `hloscope ARGV` loaded, run through the
    console script's `main` in a fresh process (exiting with one of CODES), and what
    it printed."""
    watched = (*NEVER, *ANALYSES.values(), *TEXT, *RENDERERS.values(), *also)
    code = (
        "import sys\n"
        "from hloscope.cli import main\n"
        "try:\n"
        f"    main({list(argv)!r})\n"
        "except SystemExit as exc:\n"
        f"    assert exc.code in {codes!r}, exc.code\n"
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
    # Placement names the entry's arguments as params does, from params' one naming
    # (`analyses.params.argument_paths`), and loads it for that.
    assert loaded_by("placement", MLIR, "--json")[0] == {
        ANALYSES["placement"],
        ANALYSES["params"],
    }
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


@pytest.mark.parametrize(
    "argv",
    [
        ("inspect", MLIR, "--json"),
        ("params", MLIR, "--json"),
        ("placement", HLO, "--json"),
        ("fusions", HLO, "--json"),
        ("diff", MLIR, HOST, "--json"),
    ],
    ids=lambda argv: argv[0],
)
def test_json_on_a_dump_keeps_rich_typers_rich_path_the_browser_and_jax_out(argv):
    loaded, stdout = loaded_by(*argv, also=KEPT_OUT)
    assert json.loads(stdout)["command"] == argv[0]
    assert not loaded & set(KEPT_OUT)


@pytest.mark.parametrize(
    "argv",
    [("--help",), ("diff", "--help"), ("check", "--help"), ("inspect",), (MLIR,)],
    ids=" ".join,
)
def test_help_and_usage_errors_load_nothing_a_command_reads(argv):
    # Shell completion runs the same way: what loads here loads on every TAB.
    loaded, _ = loaded_by(*argv, codes=(0, 2), also=(*KEPT_OUT, *COMMAND_WORK))
    assert not loaded & {*COMMAND_WORK, *KEPT_OUT}, loaded
    assert not loaded & set(ANALYSES.values())


def test_a_stablehlo_module_loads_no_other_dialects_python_classes():
    # The context registers JAX's dialects through their native extensions; MLIR's
    # bindings import a dialect's Python module (its op classes) only when an op of it
    # is met. The sample has func and stablehlo ops only.
    others = tuple(f"jaxlib.mlir.dialects.{name}" for name in ("chlo", "mhlo", "sdy", "mpmd"))
    loaded, stdout = loaded_by("inspect", MLIR, "--json", also=others)
    assert json.loads(stdout)["op_counts"]
    assert not loaded & set(others)


def test_a_json_run_does_not_load_importlib_metadata():
    # The environment's versions are read from the dist-info folders: importing
    # importlib.metadata cost every JSON run 20 to 30 ms.
    loaded, stdout = loaded_by("inspect", MLIR, "--json", also=("importlib.metadata",))
    assert json.loads(stdout)["environment"]["jax"]
    assert "importlib.metadata" not in loaded


@pytest.mark.parametrize("name", ["hloscope", "jax", "jaxlib", "typer", "ml-dtypes", "nope-x"])
def test_package_versions_are_importlib_metadatas(name):
    from importlib import metadata

    from hloscope.environment import package_version

    try:
        expected: str | None = metadata.version(name)
    except metadata.PackageNotFoundError:
        expected = None
    assert package_version(name) == expected

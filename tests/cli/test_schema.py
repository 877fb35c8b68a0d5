"""`hloscope schema COMMAND`: a JSON Schema (draft 2020-12) for each command's `--json`
document, and the documents held to it.

Every document the suite produces through `conftest.run_cli` is validated against its
command's closed schema (tests/schema_support.py); here, the schemas themselves, the
recorded goldens, DESIGN.md's required keys, documents that break them, and real Flax
NNX and Equinox programs through every command.
"""

from __future__ import annotations

import copy
import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import typer

from conftest import FIXTURES, ROOT, run_cli, sample
from hloscope.environment import environment_json
from hloscope.render.schema import command_names, schema_of
from schema_support import errors, validate

GOLDEN = Path(__file__).resolve().parent / "golden"
LIBRARY_TARGETS = "tests/fixtures/library_targets.py"
LIBRARY_SCRIPT = str((FIXTURES / "library_script.py").relative_to(ROOT))


def test_every_command_with_json_has_a_schema() -> None:
    from hloscope.cli import app

    group: Any = typer.main.get_command(app)
    with_json = {
        name
        for name, command in group.commands.items()
        if any("--json" in getattr(p, "opts", ()) for p in command.params)
    }
    assert with_json == set(command_names())


def test_schema_lists_the_commands() -> None:
    run = run_cli("schema")
    assert run.code == 0 and not run.stderr
    assert [line.split()[0] for line in run.stdout.splitlines()] == list(command_names())


@pytest.mark.parametrize("command", command_names())
def test_schema_prints_a_valid_draft_2020_12_schema(command: str) -> None:
    run = run_cli("schema", command)
    assert run.code == 0 and not run.stderr
    printed = json.loads(run.stdout)
    assert printed == schema_of(command)
    assert printed["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(printed)


def test_an_unknown_command_is_one_line_and_exit_2() -> None:
    run = run_cli("schema", "inspekt")
    assert run.code == 2 and not run.stdout
    assert run.stderr.count("\n") == 1
    assert "inspekt" in run.stderr and all(name in run.stderr for name in command_names())


def test_schema_needs_no_jsonschema_at_run_time() -> None:
    code = (
        "import sys\n"
        "from hloscope.cli import main\n"
        "try:\n    main(['schema', 'inspect'])\n"
        "except SystemExit:\n    pass\n"
        "sys.stderr.write(str('jsonschema' in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True
    )
    assert done.stderr.endswith("False")
    assert json.loads(done.stdout)["title"] == "hloscope inspect --json"


# --------------------------------------------------------------------------- goldens


def golden_documents() -> list[tuple[str, dict[str, Any]]]:
    """Each recorded `--json` document (the goldens leave out the environment and
    `compile_cached`, which are put back, and mask wall times as "<seconds>")."""
    documents = []
    for path in sorted(GOLDEN.glob("*/*.json")):
        stdout = path.read_text().split("--- stdout\n", 1)[1].split("--- stderr\n", 1)[0]
        if stdout.strip():
            document = json.loads(stdout)
            document["environment"] = environment_json()
            # Left out too, where the command has it: whether that run compiled or
            # read the compile cache.
            timings = document.get("timings")
            declared = schema_of(document["command"]).get("properties", {}).get("timings", {})
            if isinstance(timings, dict) and "compile_cached" in declared.get("properties", {}):
                timings.setdefault("compile_cached", False)
            documents.append((f"{path.parent.name}/{path.name}", document))
    return documents


def test_every_recorded_document_matches_its_schema() -> None:
    documents = golden_documents()
    commands = {document["command"] for _, document in documents}
    assert {"inspect", "params", "placement", "fusions", "aot-check", "diff"} <= commands
    for name, document in documents:
        assert errors(document, masked=True) == [], name


def _document(command: str) -> dict[str, Any]:
    suffix = f".{command}.json"
    for name, document in golden_documents():
        if name.startswith("samples/") and name.endswith(suffix) and document["command"]:
            return document
    raise AssertionError(f"no recorded {command} document")


def test_a_document_with_a_required_key_removed_fails() -> None:
    document = _document("params")
    assert errors(document, masked=True) == []
    broken = copy.deepcopy(document)
    del broken["parameters"][0]["path"]
    assert any("'path' is a required property" in e for e in errors(broken, masked=True))
    broken = copy.deepcopy(document)
    del broken["environment"]
    assert errors(broken, masked=True, strict=False)


def test_a_renamed_key_fails_and_an_added_key_is_allowed() -> None:
    document = _document("placement")
    renamed = copy.deepcopy(document)
    renamed["host_offload_regions"] = renamed.pop("host_regions")
    assert errors(renamed, masked=True, strict=False)
    added = copy.deepcopy(document)
    added["a_new_key"] = 1
    added["transfers"] = [{**t, "a_new_key": 1} for t in added["transfers"]]
    # The published schema takes additions; the suite's closed one names them.
    assert errors(added, masked=True, strict=False) == []
    assert errors(added, masked=True)


def test_a_key_of_the_wrong_type_or_version_fails() -> None:
    document = _document("fusions")
    wrong = copy.deepcopy(document)
    wrong["unfused_ops"] = "3"
    assert errors(wrong, masked=True, strict=False)
    wrong = copy.deepcopy(document)
    wrong["schema_version"] = 2
    assert errors(wrong, masked=True, strict=False)


# DESIGN.md's JSON contract: the keys it names for each command, as paths ("[]" for a
# list's items). Each must be required where the schema lists it.
DESIGN_KEYS: dict[str, list[str]] = {
    "params": [
        f"parameters[].{key}"
        for key in (
            "position",
            "path",
            "hlo_index",
            "status",
            "shape",
            "donated",
            "sharding",
            "memory_kind",
        )
    ],
    "placement": [
        "summary",
        "host_regions[].function",
        "host_regions[].ops",
        "host_regions[].sources",
        "transfers[].kind",
        "transfers[].detail",
        "transfers[].sources",
        "collectives[].op",
        "collectives[].count",
        "shardings[].value",
        "shardings[].sharding",
    ],
    "fusions": [
        "fusions[].name",
        "fusions[].kind",
        "fusions[].ops",
        "fusions[].sources",
        "fusions[].user_source",
        "unfused_ops",
        "unfused[].user_source",
    ],
    "aot-check": ["verdict", "aot_entry", "differences[].kind", "differences[].detail"],
    "diff": [
        "verdict",
        *(f"summary.{key}" for key in ("added", "removed", "changed", "unchanged")),
        *(f"changes[].{key}" for key in ("kind", "function", "op", "detail")),
    ],
    "inspect": ["functions[].name", "functions[].ops", "functions[].calls", "op_counts"],
    "compiles": [
        *(
            f"summary.{key}"
            for key in (
                "compiles",
                "functions",
                "compile_seconds",
                "wall_seconds",
                "eager_compiles",
            )
        ),
        *(
            f"functions[].{key}"
            for key in (
                "function",
                "source",
                "compiles",
                "signatures",
                "compile_seconds",
                "ops",
                "causes",
            )
        ),
        *(
            f"compiles[].{key}"
            for key in (
                "function",
                "source",
                "call_site",
                "eager",
                "cause",
                "trace_seconds",
                "lower_seconds",
                "compile_seconds",
                "ops",
            )
        ),
        "compiles[].changes[].path",
        "compiles[].changes[].before",
        "compiles[].changes[].after",
    ],
    "memory": [
        *(
            f"totals.{key}"
            for key in (
                "argument_bytes",
                "output_bytes",
                "temp_bytes",
                "alias_bytes",
                "generated_code_bytes",
            )
        ),
        "peak_bytes",
        "peak_at.index",
        "peak_at.instruction",
        "profile[].index",
        "profile[].bytes",
        *(
            f"buffers_at_peak[].{key}"
            for key in (
                "name",
                "bytes",
                "shape",
                "kind",
                "instruction",
                "fusion",
                "op_name",
                "sources",
            )
        ),
    ],
    "check": [
        "passed",
        "baseline",
        "backend",
        *(
            f"changes[].{key}"
            for key in (
                "fact",
                "before",
                "after",
                "tolerance",
                "regression",
                "detail",
                "sources",
            )
        ),
    ],
    "passes": [
        f"passes[].{key}"
        for key in ("index", "pipeline", "pass", "file", "ops", "ops_delta", "changed_kinds")
    ]
    + [
        "find.pattern",
        "find.first_seen",
        "find.gone_at",
        *(f"find.changes[].{key}" for key in ("index", "pass", "before", "after")),
    ],
    "profile": [
        "runs",
        "seconds_per_run.median",
        "seconds_per_run.min",
        "seconds_per_run.max",
        *(
            f"ops[].{key}"
            for key in ("name", "kind", "calls", "seconds", "share", "user_source", "sources")
        ),
        *(f"lines[].{key}" for key in ("source", "seconds", "share", "ops")),
        "coverage",
        *(
            f"functions[].{key}"
            for key in (
                "function",
                "calls",
                "compiles",
                "compile_seconds",
                "run_seconds",
                "seconds_per_call",
            )
        ),
        "eager.calls",
        "eager.seconds",
    ],
    # Issue 62's keys: a row per configuration, and the best.
    "compare": [
        "targets",
        "best",
        *(f"rows[].config.{key}" for key in ("target", "for", "env")),
        *(
            f"rows[].{key}"
            for key in (
                "fits",
                "peak_bytes",
                "capacity_bytes",
                "collectives",
                "compile_seconds",
                "error",
            )
        ),
        *(
            f"rows[].estimate.{key}"
            for key in ("seconds", "compute_seconds", "exposed_communication_seconds", "mfu")
        ),
        *(
            f"rows[].collectives[].{key}"
            for key in ("op", "count", "bytes", "in_loops", "across_slices")
        ),
    ],
}


def required_at(schema: dict[str, Any], path: str) -> bool:
    """Whether some form of `schema` (a branch of `anyOf`) requires the key at `path`."""
    forms = schema.get("anyOf", [schema])
    return any(_required(form, path.split(".")) for form in forms)


def _required(schema: dict[str, Any], steps: list[str]) -> bool:
    key, items = steps[0].removesuffix("[]"), steps[0].endswith("[]")
    if key not in schema.get("properties", {}):
        return False
    sub = schema["properties"][key]
    if len(steps) == 1:
        return key in schema["required"]
    sub = next((s for s in sub.get("anyOf", [sub]) if s.get("type") != "null"), sub)
    if items:
        sub = sub["items"]
    # An optional object (`find`, with --find) requires its own keys.
    return _required(sub, steps[1:])


@pytest.mark.parametrize("command", command_names())
def test_design_md_s_keys_are_required(command: str) -> None:
    schema = schema_of(command)
    for key in ["schema_version", "command", "target", "environment"]:
        assert required_at(schema, key), key
    missing = [path for path in DESIGN_KEYS.get(command, []) if not required_at(schema, path)]
    assert not missing, missing


# --------------------------------------------------------------------------- libraries

NNX = sample("flax_nnx", "train_step")
EQX = sample("equinox_model", "loss", "loss_args")


def _remat_target(library: str) -> list[str]:
    fixture = "tests/fixtures/remat_targets.py"
    return [f"{fixture}:{library}_grad", "--args", f"{fixture}:{library}_model_args"]


def library_runs(model: list[str], tmp_path: Path) -> list[list[str]]:
    """Every command with --json on one real model (and, for `diff`, `compiles` and
    `profile` in their script form, both models)."""
    baseline = str(tmp_path / "baseline.json")
    return [
        ["inspect", *model, "--json"],
        ["inspect", *model, "--compile", "--json"],
        ["params", *model, "--json"],
        ["placement", *model, "--json"],
        ["placement", *model, "--why", "--json"],
        ["fusions", *model, "--json"],
        ["aot-check", *model, "--json"],
        ["memory", *model, "--json"],
        ["passes", *model, "--find", "fusion", "--json"],
        ["compiles", *model, "--json"],
        ["check", *model, "--baseline", baseline, "--update", "--json"],
        ["check", *model, "--baseline", baseline, "--json"],
        ["profile", *model, "--runs", "2", "--json"],
        # remat differentiates a loss: the library's gradient of one (a step takes its own).
        ["remat", *_remat_target("nnx" if "flax" in model[0] else "eqx"), "--json"],
        *(
            [
                ["fusions", *model, "--for", "tpu:v5e:2x2", "--json"],
                ["memory", *model, "--for", "tpu:v5e:2x2", "--json"],
                ["compare", *model, "--for", "tpu:v5e:2x2", "--json"],
            ]
            if importlib.util.find_spec("libtpu") is not None
            else []
        ),
    ]


SCRIPT_RUNS = [
    ["diff", f"{LIBRARY_TARGETS}:nnx_lowered", f"{LIBRARY_TARGETS}:eqx_lowered", "--json"],
    ["compiles", LIBRARY_SCRIPT, "--json"],
    ["profile", LIBRARY_SCRIPT, "--json"],
]


@pytest.mark.slow
@pytest.mark.parametrize(("name", "model"), [("nnx", NNX), ("equinox", EQX)])
def test_every_command_on_nnx_and_equinox_matches_its_schema(
    name: str, model: list[str], tmp_path: Path
) -> None:
    seen = set()
    for argv in library_runs(model, tmp_path):
        run = run_cli(*argv)
        assert run.code in (0, 1) and run.stdout, (argv, run.stderr)
        document = run.json()
        validate(document, " ".join(argv))  # run_cli did too: the test says so itself
        seen.add(document["command"])
    # diff takes two targets (below); platforms none (its own test).
    # compare foresees another platform only (`--for`): with its compiler installed.
    foreseen = set() if importlib.util.find_spec("libtpu") is not None else {"compare"}
    assert seen == set(command_names()) - {"diff", "platforms"} - foreseen


def test_platforms_matches_its_schema() -> None:
    run = run_cli("platforms", "--json")
    assert run.code == 0
    validate(run.json(), "platforms --json")
    specs = [p["spec"] for p in run.json()["platforms"]]
    assert "tpu:v5e:2x4" in specs and "gpu:h100[xN]" in specs


@pytest.mark.slow
@pytest.mark.parametrize("argv", SCRIPT_RUNS, ids=[argv[0] for argv in SCRIPT_RUNS])
def test_both_libraries_in_one_program_match_the_schema(argv: list[str]) -> None:
    run = run_cli(*argv)
    assert run.code in (0, 1) and run.stdout, (argv, run.stderr)
    document = run.json()
    validate(document, " ".join(argv))
    if argv[0] != "diff":
        functions = [f["function"] for f in document["functions"]]
        assert any("train_step" in f for f in functions), functions

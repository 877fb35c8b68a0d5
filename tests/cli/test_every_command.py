"""Every command on the samples, checked against the JSON contract (DESIGN.md) rather
than recorded outputs, so that it holds on every JAX release hloscope supports: what
the smoke tier (`make smoke-jax`) runs on JAX 0.8 and 0.9 for the commands the goldens
do not cover (`memory`, `passes`, `compiles`, `profile`), and for `--version` and the
`environment` every JSON report carries.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from importlib import metadata
from typing import Any

import pytest

from conftest import ROOT, run_cli, sample

MEMORY_TOTALS = {"argument_bytes", "output_bytes", "temp_bytes", "alias_bytes"}
BUFFER_KEYS = {"name", "bytes", "shape", "kind", "instruction", "fusion", "op_name", "sources"}

CASES: list[tuple[str, list[str]]] = [
    ("memory", sample("memory_peak", "rank_scores")),
    ("memory", sample("nested_jits", "mlp")),
    ("memory", ["samples/dumps/mlp.before_optimizations.hlo"]),
    ("passes", sample("nested_jits", "mlp")),
    ("passes", [*sample("nested_jits", "mlp"), "--find", "fusion"]),
    ("compiles", ["samples/recompiles.py"]),
    ("compiles", sample("params", "loss_keep_unused")),
    ("inspect", sample("flax_nnx", "train_step")),
    ("params", sample("equinox_model", "forward")),
    ("fusions", sample("scanned_layers", "deep_mlp")),
    ("placement", [*sample("sharded_mlp", "mlp"), "--compile"]),
    ("aot-check", sample("aot", "step")),
    ("diff", ["samples/dumps/mlp.stablehlo.mlir", "samples/dumps/mlp.exported.bin"]),
    ("profile", [*sample("profile_step", "step"), "--runs", "2"]),
    ("profile", ["samples/dumps/mlp.before_optimizations.hlo", "--runs", "2"]),
    ("profile", ["samples/jit_granularity.py", "2"]),
    ("remat", sample("remat_policies", "loss")),
]


def check_contract(command: str, doc: dict[str, Any]) -> None:
    # remat's document speaks every report's words since version 2.
    assert doc["schema_version"] == (2 if command == "remat" else 1)
    assert doc["command"] == command
    assert isinstance(doc["target"], str)
    if command == "memory":
        assert doc["totals"].keys() >= MEMORY_TOTALS
        assert isinstance(doc["peak_bytes"], int) and doc["peak_bytes"] > 0
        assert doc["peak_at"].keys() >= {"index", "instruction"}
        assert doc["profile"] and all(p.keys() >= {"index", "bytes"} for p in doc["profile"])
        sizes = [b["bytes"] for b in doc["buffers_at_peak"]]
        assert sum(sizes) == doc["peak_bytes"]
        assert all(b.keys() >= BUFFER_KEYS for b in doc["buffers_at_peak"])
    elif command == "passes":
        steps = doc["passes"]
        assert steps and [s["index"] for s in steps] == sorted(s["index"] for s in steps)
        assert all(
            s.keys() >= {"index", "pipeline", "pass", "file", "ops", "ops_delta", "changed_kinds"}
            for s in steps
        )
        if "find" in doc:
            assert doc["find"].keys() >= {"pattern", "first_seen", "gone_at", "changes"}
            assert doc["find"]["first_seen"] is not None
    elif command == "compiles":
        summary = doc["summary"]
        assert summary["compiles"] + summary["eager_compiles"] == len(doc["compiles"])
        assert summary["functions"] == len(doc["functions"]) > 0
        assert all(
            c.keys() >= {"function", "source", "call_site", "eager", "cause", "changes"}
            for c in doc["compiles"]
        )
    elif command == "inspect":
        assert doc["functions"] and doc["op_counts"]
    elif command == "params":
        assert doc["parameters"] and all(
            p["status"] in {"used", "unused", "pruned"} for p in doc["parameters"]
        )
    elif command == "fusions":
        assert doc["fusions"] and all(f["kind"].startswith("k") for f in doc["fusions"])
    elif command == "placement":
        assert doc["summary"] and doc["shardings"]
    elif command == "profile" and "functions" in doc:
        assert {f["function"]: f["calls"] for f in doc["functions"]} == {
            "mlp": 2,
            "layer": 4,
            "head": 2,
        }
    elif command == "profile":
        assert doc["ops"] and doc["lines"] and doc["runs"] == 2
        assert sum(op["share"] for op in doc["ops"]) == pytest.approx(1.0)
    elif command == "remat":
        assert doc["residuals"] and doc["regions"] and doc["device_bytes"] > 0
        # DESIGN.md's keys, in the words every other report uses.
        for residual in doc["residuals"]:
            assert residual.keys() >= {"type", "bytes", "kind", "memory_kind", "name"}
            assert residual.keys() >= {"source", "sources"}
            assert residual["kind"] in ("argument", "saved", "offloaded")
            assert residual["memory_kind"] in ("device", "pinned_host")
        for region in doc["regions"]:
            assert region.keys() >= {"policy", "names", "source", "recomputed_ops"}
        assert isinstance(doc["unmatched_names"], list)
        assert sum(g["bytes"] for g in doc["groups"]) == doc["device_bytes"] + doc["host_bytes"]
    elif command == "aot-check" or command == "diff":
        assert doc["verdict"] == "same"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("command", "argv"), CASES, ids=[f"{c}-{' '.join(a[:1])}" for c, a in CASES]
)
def test_every_command_on_the_samples(command: str, argv: list[str]) -> None:
    run = run_cli(command, *argv, "--json")
    assert run.code == 0, run.stderr
    doc = run.json()
    check_contract(command, doc)
    environment = doc["environment"]
    assert environment["jax"] == metadata.version("jax")
    assert environment["jaxlib"] == metadata.version("jaxlib")
    import jax

    # The diff of two dumps starts no backend, nor does remat without --compile (it
    # traces the function's jaxpr): the backend is named only where this process started
    # one (here, maybe an earlier test). Every other case runs JAX.
    if command in ("diff", "remat"):
        assert environment["backend"] in (None, jax.default_backend())
    else:
        assert environment["backend"] == jax.default_backend()


def console(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hloscope", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ},
        check=False,
    )


def test_version_names_hloscope_jax_jaxlib_and_the_backend() -> None:
    import jax

    import hloscope

    run = console("--version")
    assert run.returncode == 0, run.stderr
    # Nothing but the versions: libtpu's and the CUDA plugin's start-up lines (on a
    # machine without their device) are kept off the terminal.
    assert run.stderr == ""
    lines = dict(line.split(" ", 1) for line in run.stdout.splitlines())
    assert lines["hloscope"] == hloscope.__version__ == metadata.version("hloscope")
    assert lines["jax"] == jax.__version__ == metadata.version("jax")
    assert lines["jaxlib"] == metadata.version("jaxlib")
    assert lines["backend"] == jax.default_backend()
    assert lines["python"] == ".".join(map(str, sys.version_info[:3]))


def test_a_dump_read_without_jax_names_no_backend() -> None:
    # Reading a dump starts no JAX backend (on a TPU VM, that would take the TPU from
    # the program being debugged): the versions are there, the backend is null.
    run = console("params", "samples/dumps/mlp.stablehlo.mlir", "--json")
    assert run.returncode == 0, run.stderr
    environment = json.loads(run.stdout)["environment"]
    assert environment == {
        "hloscope": metadata.version("hloscope"),
        "jax": metadata.version("jax"),
        "jax_tested": True,
        "jaxlib": metadata.version("jaxlib"),
        "python": ".".join(map(str, sys.version_info[:3])),
        "backend": None,
    }
    # Compiling it starts one.
    run = console("params", "samples/dumps/mlp.stablehlo.mlir", "--compile", "--json")
    assert run.returncode == 0, run.stderr
    import jax

    assert json.loads(run.stdout)["environment"]["backend"] == jax.default_backend()


def test_the_python_api_json_carries_the_environment_too() -> None:
    import hloscope

    doc = hloscope.inspect("samples/dumps/mlp.stablehlo.mlir").params.to_json()
    assert doc["environment"]["jaxlib"] == metadata.version("jaxlib")
    cli_doc = run_cli("params", "samples/dumps/mlp.stablehlo.mlir", "--json").json()
    assert doc == cli_doc


def test_shell_completion_installs_and_completes(tmp_path) -> None:
    # typer's completion was turned off: `--install-completion` was 'No such option'.
    home = tmp_path / "home"
    home.mkdir()
    env = {**os.environ, "HOME": str(home), "SHELL": "/bin/bash"}
    # typer asks which shell runs it (shellingham reads the process tree): bash here,
    # kept as the parent by the command after it (bash execs a lone command).
    run = subprocess.run(
        ["bash", "-c", f"{shlex.quote(sys.executable)} -m hloscope --install-completion; exit $?"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    script = home / ".bash_completions" / "hloscope.sh"
    assert script.is_file() and str(script) in (home / ".bashrc").read_text()
    assert "_HLOSCOPE_COMPLETE=complete_bash" in script.read_text()
    # What bash asks when the user presses TAB after `hloscope ins`.
    env |= {"_HLOSCOPE_COMPLETE": "complete_bash", "COMP_WORDS": "hloscope ins", "COMP_CWORD": "1"}
    run = subprocess.run(
        [sys.executable, "-m", "hloscope"], capture_output=True, text=True, env=env, check=False
    )
    assert run.stdout.split() == ["inspect"], run.stderr


@pytest.mark.slow
@pytest.mark.parametrize(
    "command", [["placement", "--compile"], ["fusions"], ["memory"], ["passes"], ["aot-check"]]
)
def test_host_memory_placement_by_release(command: list[str]) -> None:
    # The CPU XLA of jaxlib 0.8 and 0.9 compiles no host memory placement: there, one
    # line naming the installed JAX or jaxlib (the README's known limits); on 0.10 the
    # report.
    run = run_cli(command[0], *sample("memory_kinds", "host_output"), *command[1:], "--json")
    if metadata.version("jaxlib").startswith(("0.8.", "0.9.")):
        assert run.code == 2 and run.stdout == "" and run.stderr.count("\n") == 1
        assert "annotate_device_placement" in run.stderr
        assert f"jaxlib {metadata.version('jaxlib')}" in run.stderr
    else:
        assert run.code == 0, run.stderr
        check_contract(command[0], run.json())


@pytest.mark.slow
def test_check_records_then_passes_on_this_release(tmp_path) -> None:
    """`check` on the samples' training step, on every JAX release (the smoke tier
    runs this file): recorded, then compared with itself, the contract's keys."""
    baseline = str(tmp_path / "step.json")
    argv = [*sample("check/train_step", "step"), "--baseline", baseline]
    recorded = run_cli("check", *argv, "--update", "--json")
    assert recorded.code == 0, recorded.stderr
    run = run_cli("check", *argv, "--json")
    assert run.code == 0, run.stderr
    doc = run.json()
    assert doc["schema_version"] == 1 and doc["command"] == "check"
    assert doc["passed"] is True and doc["changes"] == []
    assert doc["baseline"] == baseline
    assert doc["backend"].keys() >= {"platform", "device_kind", "jax", "jaxlib"}
    assert doc["backend"]["jax"] == metadata.version("jax")
    facts = doc["targets"][0]["facts"]
    assert facts["memory.peak_bytes"] > 0 and facts["ops.optimized.total"] > 0

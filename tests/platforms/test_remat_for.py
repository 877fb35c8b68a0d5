"""`hloscope remat --for tpu:...`: the residuals at the memory peak of the gradient
compiled for a TPU, and an offloaded residual in the host's memory there, against
what JAX compiles for that TPU itself (`compiled.memory_analysis()`'s host bytes and
the `S(5)` shapes of `compiled.as_text()`, read in a process of its own).

On the CPU, JAX drops host offloading when it lowers: the same residual is on the
device of the CPU's program, and JAX's CPU compile has no host bytes.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

import jax
import numpy as np
import pytest

from conftest import ROOT, Run, run_cli
from schema_support import validate

pytestmark = pytest.mark.slow

FIXTURE = "tests/fixtures/remat_targets.py"
TARGET = [f"{FIXTURE}:scanned_offload", "--args", f"{FIXTURE}:offload_args"]
SPEC = "tpu:v5e:2x4"

# What JAX compiles for one v5e chip: the gradient of the scanned loss whose policy
# offloads `projected`.
JAX_TRUTH = """
import json, re, sys
sys.path.insert(0, "tests")
import jax
from jax.experimental import topologies
from jax.sharding import SingleDeviceSharding
from fixtures import remat_targets as t

device = topologies.get_topology_desc("v5e:2x4", "tpu").devices[0]
one = SingleDeviceSharding(device)
args = [jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=one) for a in t.offload_args()]
compiled = jax.jit(jax.grad(t.scanned_offload)).lower(*args).compile()
stats = compiled.memory_analysis()
host = {k: int(getattr(stats, k)) for k in dir(stats) if k.startswith("host_")}
spaces = re.findall(r"(\\w+\\[[\\d,]*\\])\\{[^}]*S\\(5\\)[^}]*\\}", compiled.as_text())
print(json.dumps({"host": host, "host_shapes": sorted(set(spaces))}))
"""


def _child_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    env["ALLOW_MULTIPLE_LIBTPU_LOAD"] = "1"
    env["COLUMNS"] = "400"
    return env


def _needs_libtpu() -> None:
    try:
        present = importlib.util.find_spec("libtpu") is not None
    except (ImportError, ValueError):
        present = False
    if not present:
        pytest.skip(f"libtpu is not installed: --for {SPEC} cannot compile here")


def _child(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=_child_env(),
        stdin=subprocess.DEVNULL,
        timeout=600,
        check=False,
    )


@pytest.fixture(scope="module")
def tpu_truth() -> dict:
    _needs_libtpu()
    run = _child("-c", JAX_TRUTH)
    assert run.returncode == 0, run.stderr[-4000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def tpu_remat() -> Run:
    """`hloscope remat --for tpu:v5e:2x4 --json`, in a process of its own as the
    console script runs (--for gives the program the platform's host devices)."""
    _needs_libtpu()
    args = ("remat", *TARGET, "--for", SPEC, "--json")
    run = _child("-m", "hloscope", *args)
    result = Run(run.returncode, run.stdout, run.stderr)
    assert result.code == 0, result.stderr[-4000:]
    validate(result.json(), "hloscope " + " ".join(args))
    return result


def test_an_offloaded_residual_is_in_the_tpus_host_memory(tpu_truth, tpu_remat) -> None:
    doc = tpu_remat.json()
    assert doc["compiled_for"]["spec"] == SPEC
    assert doc["compiled_for"]["platform"] == "tpu"
    offloaded = [r for r in doc["residuals"] if r["detail"] == "offloaded"]
    assert [(r["name"], r["memory_kind"]) for r in offloaded] == [("projected", "pinned_host")]
    projected = offloaded[0]
    # XLA placed one buffer in the host's memory space (S(5)): the stacked `projected`.
    dims = projected["type"][projected["type"].index("[") :]
    assert [s[s.index("[") :] for s in tpu_truth["host_shapes"]] == [dims]
    # Live at the peak, in host memory, as much as JAX's host temporaries.
    peak = doc["peak"]
    host_lines = [p for p in peak["by_line"] if p["memory_kind"] == "pinned_host"]
    assert [p["source"] for p in host_lines] == [projected["stacked_by"]]
    assert peak["host_bytes"] == sum(p["bytes"] for p in host_lines)
    assert peak["host_bytes"] == projected["bytes"] == tpu_truth["host"]["host_temp_size_in_bytes"]


def test_the_residuals_at_the_tpus_peak_by_line(tpu_remat) -> None:
    doc = tpu_remat.json()
    peak = doc["peak"]
    assert 0 < peak["residual_bytes"] <= peak["peak_bytes"]
    assert sum(p["bytes"] for p in peak["by_line"]) == peak["residual_bytes"]
    device = [p for p in peak["by_line"] if p["memory_kind"] == "device"]
    # On the device: the argument the backward reads and the stacked residuals the
    # loop saved (held by XLA in the bf16 the backward's dots read them in).
    lines = {p["source"] for p in device}
    assert "ws" in {p["path"] for p in device}
    stacked = {r["stacked_by"] for r in doc["residuals"] if r["stacked_by"]}
    assert lines & stacked, peak


def test_the_text_says_what_it_was_compiled_for_and_the_host_bytes() -> None:
    _needs_libtpu()
    run = _child("-m", "hloscope", "remat", *TARGET, "--for", SPEC)
    assert run.returncode == 0, run.stderr[-4000:]
    assert f"compiled for    {SPEC} (1 of 8 × TPU v5 lite" in run.stdout
    assert "are residuals (" in run.stdout and "KiB on the host" in run.stdout


def test_on_the_cpu_the_offloaded_residual_stays_on_the_device() -> None:
    # JAX's CPU compile of the same gradient has nothing on the host.
    from fixtures import remat_targets as targets

    args = [np.ones(a.shape, a.dtype) for a in targets.offload_args()]
    stats = jax.jit(jax.grad(targets.scanned_offload)).lower(*args).compile().memory_analysis()
    assert stats.host_temp_size_in_bytes == 0
    run = run_cli("remat", *TARGET, "--compile", "--json")
    assert run.code == 0, run.stderr
    doc = run.json()
    assert doc["compiled_for"]["platform"] == "cpu"
    assert doc["peak"]["host_bytes"] == 0
    # JAX's residuals still say where the policy puts it.
    assert [r["memory_kind"] for r in doc["residuals"] if r["name"] == "projected"] == [
        "pinned_host"
    ]


def test_a_sharded_arguments_bytes_are_one_tpus_as_its_buffer() -> None:
    # Compiled for eight chips, the weights split over `model`: the residuals' sizes
    # said global and per device, the argument's per-device bytes XLA's buffer of it.
    _needs_libtpu()
    args = (
        "remat",
        f"{FIXTURE}:scanned",
        "--args",
        f"{FIXTURE}:tpu_sharded_args",
        "--for",
        SPEC,
        "--json",
    )
    run = _child("-m", "hloscope", *args)
    assert run.returncode == 0, run.stderr[-4000:]
    doc = json.loads(run.stdout)
    validate(doc, "hloscope " + " ".join(args))
    assert doc["devices"] == 8
    (ws,) = [r for r in doc["residuals"] if r["path"] == "ws"]
    (buffer,) = [p for p in doc["peak"]["by_line"] if p["path"] == "ws"]
    assert ws["bytes_per_device"] == buffer["bytes"] == ws["bytes"] // 2

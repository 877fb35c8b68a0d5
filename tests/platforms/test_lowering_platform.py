"""`--for` lowers the program for that platform, as JAX would on the device: a rule
that depends on the platform (`lax.platform_dependent`, a Pallas kernel) takes the
TPU's or the GPU's path, not the CPU's. Run in processes of their own (`--for` sets the
host device count before the target is imported)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import pytest

from conftest import ROOT

pytestmark = pytest.mark.slow

TARGET = ["tests/fixtures/platform_targets.py:by_platform"]
ARGS = ["--args", "tests/fixtures/platform_targets.py:example_args"]


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def _op_counts(*options: str) -> dict[str, int]:
    run = subprocess.run(
        [sys.executable, "-m", "hloscope", "inspect", *TARGET, *ARGS, "--json", *options],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    assert run.stderr == ""
    return json.loads(run.stdout)["op_counts"]


def _math(counts: dict[str, int]) -> set[str]:
    return {op for op in counts if op in ("stablehlo.sine", "stablehlo.cosine", "stablehlo.tanh")}


def test_the_cpu_takes_its_own_path():
    assert _math(_op_counts("--compile")) == {"stablehlo.sine"}


@pytest.mark.skipif(not _installed("libtpu"), reason="libtpu is not installed (hloscope[tpu])")
def test_a_tpu_program_takes_the_tpu_path():
    assert _math(_op_counts("--for", "tpu:v5e:2x2")) == {"stablehlo.cosine"}


@pytest.mark.skipif(
    not _installed("jax_plugins.xla_cuda12"), reason="JAX's CUDA plugin is not installed"
)
def test_a_gpu_program_takes_the_cuda_path():
    assert _math(_op_counts("--for", "gpu:h100")) == {"stablehlo.tanh"}

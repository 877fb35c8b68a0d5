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


def _hloscope(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hloscope", *argv],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _op_counts(*options: str, target: list[str] = TARGET) -> dict[str, int]:
    run = _hloscope("inspect", *target, *ARGS, "--json", *options)
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


@pytest.mark.skipif(
    not _installed("jax_plugins.xla_cuda12"), reason="JAX's CUDA plugin is not installed"
)
def test_an_equinox_filter_jit_is_lowered_for_the_platform_too():
    # Its wrapper has no .trace: it is lowered through the jax.jit it holds, for the
    # GPU (it was lowered for the CPU, and a LAPACK custom call failed the compile).
    equinox = ["tests/fixtures/platform_targets.py:eqx_by_platform"]
    assert _math(_op_counts("--for", "gpu:h100", target=equinox)) == {"stablehlo.tanh"}
    assert _math(_op_counts("--compile", target=equinox)) == {"stablehlo.sine"}


@pytest.mark.skipif(
    not _installed("jax_plugins.xla_cuda12"), reason="JAX's CUDA plugin is not installed"
)
def test_a_lowering_that_fell_back_says_so_when_the_compile_fails():
    run = _hloscope(
        "fusions",
        "tests/fixtures/platform_targets.py:solve",
        "--args",
        "tests/fixtures/platform_targets.py:solve_args",
        "--for",
        "gpu:h100",
    )
    assert run.returncode == 2 and run.stderr.count("\n") == 1, run.stderr
    assert "failed to compile it for gpu:h100" in run.stderr
    assert "LowersOnly has no .trace: the program was lowered for this machine's" in run.stderr


@pytest.mark.skipif(not _installed("libtpu"), reason="libtpu is not installed (hloscope[tpu])")
def test_a_pallas_tpu_kernel_is_shown_as_xla_hlo():
    # XLA's converter to MLIR refuses the kernel's tiled layouts: that was an internal
    # error; it is XLA's own view of the module, with the kernel as a custom call.
    pallas = ["tests/fixtures/pallas_targets.py:add", "--arg", "f32[8,128]", "--arg", "f32[8,128]"]
    run = _hloscope("fusions", *pallas, "--for", "tpu:v5e:2x4", "--json")
    assert run.returncode == 0, run.stderr
    document = json.loads(run.stdout)
    assert document["source"]["ir"] == "hlo-native"
    assert document["compiled_for"]["device_kind"] == "TPU v5 lite"
    assert [op["target"] for op in document["unfused"]] == ["tpu_custom_call"]


@pytest.mark.parametrize(
    ("spec", "says"),
    [
        ("tpu:v5e:32x32", "1,024 chips: a v5e slice has 1 to 256"),
        ("tpu:v5e:2x2,slices=0", "slices=0: expected a count of 1 or more"),
        ("gpu:h100x0", "0 GPUs"),
        ("gpu:nosuchx8", "unknown GPU 'nosuch'"),
        ("gpu:tests/fixtures/platform_targets.py.txtpb", "cannot read the GPU spec"),
    ],
)
def test_a_spec_no_platform_has_is_one_line(spec: str, says: str):
    # libtpu aborts the process on a topology larger than its generation's pod: refused
    # before it is asked.
    run = _hloscope("fusions", *TARGET, *ARGS, "--for", spec)
    assert run.returncode == 2
    assert says in run.stderr and len(run.stderr.strip().splitlines()) == 1, run.stderr

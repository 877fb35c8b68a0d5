"""A module holding custom calls that the local backend cannot run (a GPU dump read on
the CPU) is refused before compiling, in one line naming them and the backend, instead
of after XLA's whole pipeline (about 50 s for the corpus's Mixtral module)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conftest import CORPUS, FIXTURES, ROOT, require_corpus
from hloscope.ir.custom_calls import XLA_OWN_TARGETS, unrunnable_custom_calls

GPU_DUMP = str((FIXTURES / "gpu_custom_calls.hlo").relative_to(ROOT))
REFUSAL = (
    "the module holds custom calls the local cpu backend cannot run "
    "(__cublas$lt$matmul, te_fused_attn_forward_ffi): compile it on the backend it was "
    "written for"
)


@pytest.mark.parametrize(
    "argv",
    [
        ["fusions", GPU_DUMP, "--compile"],
        ["inspect", GPU_DUMP, "--compile", "--print"],
        ["params", GPU_DUMP, "--compile"],
        ["placement", GPU_DUMP, "--compile", "--json"],
    ],
    ids=["fusions", "inspect", "params", "placement"],
)
def test_a_gpu_dump_is_refused_before_compiling_naming_its_gpu_calls(cli, argv):
    run = cli(*argv)
    assert run.code == 2 and run.stdout == ""
    # One line, naming the calls (not TopK, which XLA rewrites on any backend).
    assert run.stderr == f"hloscope: error: {GPU_DUMP}: {REFUSAL}\n"


def test_the_lowered_module_of_a_gpu_dump_is_still_read(cli):
    run = cli("inspect", GPU_DUMP, "--json")
    assert run.code == 0, run.stderr
    assert run.json()["op_counts"]["stablehlo.custom_call"] == 3


def test_registered_and_xla_own_targets_are_runnable_on_the_cpu(cli):
    # JAX registers its LAPACK kernels with XLA when it starts the CPU backend.
    assert cli("--version").code == 0
    from hloscope.sources.jax.compile import custom_call_refusal

    assert custom_call_refusal(["lapack_sgetrf_ffi"]) is None
    assert (
        unrunnable_custom_calls(["lapack_sgetrf_ffi", "xla_ffi_python_cpu_callback"], "cpu") == ()
    )
    assert unrunnable_custom_calls(XLA_OWN_TARGETS, "cpu") == ()
    assert unrunnable_custom_calls(["mhlo.erf", "xla.sdy.FuncResultSharding"], "cpu") == ()
    assert unrunnable_custom_calls(
        ["tpu_custom_call", "Sharding", "cu_threefry2x32_ffi"], "cpu"
    ) == (
        "cu_threefry2x32_ffi",
        "tpu_custom_call",
    )


def test_backends_whose_registry_jaxlib_does_not_show_are_not_checked():
    # A GPU or TPU backend is a plugin holding its own registry: XLA decides there.
    assert unrunnable_custom_calls(["te_fused_attn_forward_ffi"], "gpu") == ()
    assert unrunnable_custom_calls(["__cudnn$convForward"], "tpu") == ()


@pytest.mark.corpus
@pytest.mark.parametrize(
    ("relative", "named"),
    [
        (
            "xla/xla/tools/benchmarks/hlo/hlo_mixtral_8x7b_bf16_2x8.hlo",
            "custom calls the local cpu backend cannot run "
            "(te_fused_attn_backward_ffi, te_fused_attn_forward_ffi)",
        ),
        (
            "jax/export_back_compat_test_data/pallas/triton_add_one/data_2024_05_02.mlir",
            "a custom call the local cpu backend cannot run (__gpu$xla.gpu.triton)",
        ),
        (
            "jax/export_back_compat_test_data/cuda_lu_cusolver_getrf/data_2024_08_19_f32.mlir",
            "custom calls the local cpu backend cannot run "
            "(cu_lu_pivots_to_permutation, cusolver_getrf_ffi)",
        ),
    ],
    ids=["mixtral", "triton", "cusolver"],
)
def test_gpu_dumps_of_the_corpus_are_refused_before_compiling(cli, relative, named):
    require_corpus()
    target = f"../shared/corpus/{relative}"
    assert (CORPUS / relative).is_file()
    run = cli("fusions", target, "--compile")
    assert run.code == 2
    assert run.stderr == (
        f"hloscope: error: {target}: the module holds {named}: compile it on the backend "
        "it was written for\n"
    )


@pytest.mark.corpus
def test_a_cpu_export_calling_lapack_still_compiles(cli):
    require_corpus()
    target = (
        "../shared/corpus/jax/export_back_compat_test_data/cpu_lu_lapack_getrf/"
        "data_2024_05_31_c64.mlirbc"
    )
    run = cli("fusions", target, "--compile", "--json")
    assert run.code == 0, run.stderr
    assert run.json()["fusions"]


def test_asking_a_plain_dump_imports_no_jax():
    # The browser asks of every lowered dump; only custom calls that need a registered
    # implementation make it start JAX's backend to look.
    code = (
        "import sys\n"
        "from hloscope.sources import loader\n"
        "loaded = loader.load('samples/dumps/mlp.stablehlo.mlir')\n"
        "print(loaded.compile_refusal(), 'jax' in sys.modules)\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
        check=False,
    )
    assert run.stdout == "None False\n", run.stderr

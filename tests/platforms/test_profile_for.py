"""`profile TARGET --for SPEC`: a step's time on a TPU or GPU, estimated without the
device, checked against what JAX itself compiles for that platform (jax_truth.py, in
a child process): each TPU kernel's cycles are the `estimated_cycles` libtpu wrote in
`compiled.as_text()` of the same program, its time those cycles over the clock; the
kernels' flops per call add up to `compiled.cost_analysis()["flops"]` (which counts a
loop's body once; the step counts every iteration); a large bf16 matmul on one v5e
chip lands near its flops over the published peak; HFU counts what a checkpointed
gradient recomputes, MFU the flops of the same gradient without checkpoints, as JAX
compiles it. Bad input exits 2 in one line."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest
from test_compile_for import H100, child_env, hloscope, needs, one_line_error, run_truth

from conftest import ROOT

pytestmark = pytest.mark.slow

STEP = "samples/llm_step.py"
STEP_TARGET = [f"{STEP}:train_step", "--args", f"{STEP}:example_args"]
ESTIMATE = "tests/fixtures/estimate_targets.py"
MATMUL = [f"{ESTIMATE}:matmul", "--args", f"{ESTIMATE}:matmul_args"]
MODEL_FLOPS = "tests/fixtures/model_flops_targets.py"
REMAT = "samples/remat_policies.py"


def jax_truth(case: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = run_truth({"case": case})["case"]
    return result


def test_tpu_step_cycles_are_the_compilers_and_flops_its_cost_analysis():
    needs("tpu")
    truth = jax_truth(
        {
            "platform": "tpu",
            "topology": "v5e:2x4",
            "module": STEP,
            "function": "train_step",
            "args": "example_args",
            "make_mesh": ["data", "model"],
            "cycles": True,
        }
    )
    assert truth["cycles"], "libtpu wrote no estimated_cycles: the case tests nothing"
    document = hloscope("profile", *STEP_TARGET, "--for", "tpu:v5e:2x4", "--json").json()
    assert document["estimated"] is True and document["runs"] == 0
    clock = document["figures"]["clock_hz"]
    with_cycles = [op for op in document["ops"] if op["cycles"] is not None]
    assert len(with_cycles) >= len(truth["cycles"]) // 2
    for op in with_cycles:
        assert op["cycles"] == truth["cycles"][op["name"]], op["name"]
        assert op["basis"] == "compiler"
        assert op["seconds"] * clock / op["calls"] == pytest.approx(op["cycles"])
    # Every kernel the compiler estimated at the top level is estimated with its cycles.
    named = {op["name"] for op in document["ops"]}
    assert {op["name"] for op in with_cycles} == {name for name in truth["cycles"] if name in named}
    estimate = document["estimate"]
    # XLA's cost analysis of the whole program counts each loop body once: the
    # kernels' flops per call add up to it; the step's count every iteration.
    assert estimate["cost_analysis_flops"] == truth["cost_flops"]
    per_call = sum((op["flops"] or 0) / op["calls"] for op in document["ops"])
    assert per_call == pytest.approx(truth["cost_flops"], rel=0.01)
    per_step = sum(op["flops"] or 0 for op in document["ops"])
    assert estimate["flops"] == pytest.approx(per_step)
    assert estimate["flops"] > truth["cost_flops"]  # the scan's layers run twice
    assert estimate["hfu"] == pytest.approx(
        estimate["flops"] / (estimate["seconds"] * document["figures"]["peak_flops"])
    )
    assert 0 <= estimate["exposed_communication_seconds"] <= estimate["communication_seconds"]
    assert estimate["seconds"] == pytest.approx(
        estimate["compute_seconds"] + estimate["exposed_communication_seconds"]
    )
    # Every kind of collective placement --for lists is estimated, with its bytes.
    placement = hloscope("placement", *STEP_TARGET, "--for", "tpu:v5e:2x4", "--json").json()
    listed = {c["op"].replace("_", "-") for c in placement["collectives"]}
    estimated = {c["op"] for c in document["collectives"]}
    assert listed <= estimated
    # The TPU's reduce-scatters fused with their slice are collectives, not kernels.
    assert truth["fused_reduce_scatters"], "no fused reduce-scatter: the check tests nothing"
    kinds = {c["name"]: c["op"] for c in document["collectives"]}
    for name in truth["fused_reduce_scatters"]:
        assert kinds[name] == "reduce-scatter", name
    for collective in document["collectives"]:
        assert 0 <= collective["exposed_seconds"] <= collective["seconds"]
        assert collective["bytes"] >= 0 and collective["basis"] == "interconnect"
    # XLA's cost analysis says -1 (unknown) of the custom calls that allocate a
    # buffer: they do no work, so they are no kernel rows, and no cost is negative.
    assert truth["allocate_buffers"], "no AllocateBuffer: the check tests nothing"
    assert not named & set(truth["allocate_buffers"])
    for op in document["ops"]:
        assert op["seconds"] >= 0 and op["share"] >= 0, op["name"]
        assert (op["flops"] or 0) >= 0 and (op["bytes"] or 0) >= 0, op["name"]


def estimated(*args: str) -> dict[str, Any]:
    """`hloscope profile ARGS --for tpu:v5e:2x4 --json`'s document."""
    run = hloscope("profile", *args, "--for", "tpu:v5e:2x4", "--json")
    assert run.code == 0, run.stderr[-2000:]
    document: dict[str, Any] = run.json()
    return document


def test_hfu_counts_the_recomputed_forward_and_mfu_the_models_flops():
    # The truth: each sample's gradient without jax.checkpoint (model_flops_targets.py),
    # compiled by JAX itself for the slice; it recomputes nothing, so MFU = HFU, and its
    # kernels' flops per call add up to XLA's cost analysis of it. The same gradient
    # with checkpoints executes more (HFU's); its model flops (MFU's), from the step
    # compiled again with every checkpoint saving everything, are the truth's.
    needs("tpu")
    remat_args = ["--args", f"{MODEL_FLOPS}:remat_args"]
    truth = jax_truth(
        {
            "platform": "tpu",
            "topology": "v5e:2x4",
            "module": MODEL_FLOPS,
            "function": "remat_grad",
            "args": "remat_args",
            "cycles": True,
        }
    )
    plain = estimated(f"{MODEL_FLOPS}:remat_grad", *remat_args)
    without = plain["estimate"]
    assert without["model_flops_from"] == "no recomputation"
    assert without["mfu"] == without["hfu"] and without["model_flops"] == without["flops"]
    per_call = sum((op["flops"] or 0) / op["calls"] for op in plain["ops"])
    assert per_call == pytest.approx(truth["cost_flops"], rel=0.01)
    peak = plain["figures"]["peak_flops"]
    for target in (f"{REMAT}:grad_step", f"{MODEL_FLOPS}:typo_grad"):
        estimate = estimated(target, *remat_args)["estimate"]
        assert estimate["model_flops_from"] == "saving everything", target
        assert estimate["model_flops"] == pytest.approx(without["flops"], rel=0.01), target
        assert estimate["mfu"] == pytest.approx(
            estimate["model_flops"] / (estimate["seconds"] * peak)
        )
        assert estimate["hfu"] > estimate["mfu"], target
    # loss_typo's policy saves nothing: its backward runs every layer's two matmuls
    # again, 2 more of 6 a layer.
    assert estimate["flops"] > 1.25 * estimate["model_flops"]

    # The LLM step: its decoder layers checkpointed (dots saved), and without.
    plain = estimated(f"{MODEL_FLOPS}:train_step", "--args", f"{MODEL_FLOPS}:example_args")
    plain = plain["estimate"]
    assert plain["model_flops_from"] == "no recomputation" and plain["mfu"] == plain["hfu"]
    checkpointed = estimated(*STEP_TARGET)["estimate"]
    assert checkpointed["model_flops_from"] == "saving everything"
    assert checkpointed["model_flops"] == pytest.approx(plain["flops"], rel=0.01)
    assert checkpointed["flops"] > 1.02 * checkpointed["model_flops"]
    assert checkpointed["hfu"] > checkpointed["mfu"]
    # The model's flops given, for the step on all 8 devices (the compile is cached).
    given = estimated(*STEP_TARGET, "--model-flops", str(8 * plain["flops"]))["estimate"]
    assert given["model_flops_from"] == "given"
    assert given["model_flops"] == pytest.approx(plain["flops"])
    assert given["mfu"] == pytest.approx(plain["flops"] / (given["seconds"] * peak))
    assert given["hfu"] == pytest.approx(checkpointed["hfu"])


def test_a_large_bf16_matmul_on_one_v5e_chip_is_near_its_flops_over_the_peak():
    needs("tpu")
    truth = jax_truth(
        {
            "platform": "tpu",
            "topology": "v5e:2x2",
            "module": ESTIMATE,
            "function": "matmul",
            "args": "matmul_args",
            "cycles": True,
        }
    )
    document = hloscope("profile", *MATMUL, "--for", "tpu:v5e:2x2", "--json").json()
    flops = 2 * 8192**3
    # No loop: the kernels' flops are XLA's cost analysis of the program.
    assert document["estimate"]["flops"] == pytest.approx(truth["cost_flops"])
    assert truth["cost_flops"] == pytest.approx(flops, rel=1e-3)
    ratio = document["estimate"]["seconds"] / (flops / 197e12)
    assert 0.8 <= ratio <= 1.6, ratio
    (kernel,) = [op for op in document["ops"] if op["cycles"] is not None]
    assert kernel["cycles"] == truth["cycles"][kernel["name"]]
    assert kernel["bound"] == "compute"


def test_gpu_step_is_a_roofline_of_every_kernel():
    needs("gpu")
    document = hloscope("profile", *MATMUL, "--for", "gpu:h100", "--json").json()
    figures = document["figures"]
    assert figures["hbm_bytes_per_second"] == 3352320000000  # the spec file's
    for op in document["ops"]:
        assert op["basis"] == "roofline" and op["cycles"] is None
        floor = op["bytes"] / figures["hbm_bytes_per_second"]
        assert op["seconds"] >= floor * (1 - 1e-9)
    assert document["estimate"]["flops"] == pytest.approx(2 * 8192**3, rel=1e-3)


def test_bad_input_is_one_line(tmp_path):
    # A generation without the figures the estimate needs: refused before compiling.
    line = one_line_error(hloscope("profile", *MATMUL, "--for", "tpu:v6e:2x2"))
    assert "no published MXU count" in line
    # A GPU spec missing memory_bandwidth: the field and the file.
    spec = tmp_path / "no_bandwidth.txtpb"
    text = (ROOT / H100).read_text()
    spec_text = "\n".join(line for line in text.splitlines() if "memory_bandwidth" not in line)
    spec.write_text(spec_text)
    line = one_line_error(hloscope("profile", *MATMUL, "--for", f"gpu:{spec}"))
    assert "memory_bandwidth" in line and str(spec) in line
    # Nothing runs: no --runs.
    line = one_line_error(hloscope("profile", *MATMUL, "--for", "tpu:v5e:2x2", "--runs", "3"))
    assert "--runs" in line


def test_check_for_runtime_records_the_estimate_and_fails_a_slower_step(tmp_path):
    needs("tpu")
    baseline = tmp_path / "step.json"
    target = [*STEP_TARGET, "--for", "tpu:v5e:2x4", "--runtime", "--baseline", str(baseline)]
    small = {**child_env(), "LLM_STEP": "1,256,128,8"}
    recorded = hloscope("check", *target, "--update", env=small)
    assert recorded.code == 0, recorded.stderr
    facts = json.loads(baseline.read_text())["facts"]
    estimate = hloscope(
        "profile", *STEP_TARGET, "--for", "tpu:v5e:2x4", "--json", env=small
    ).json()["estimate"]
    assert facts["runtime.estimated_seconds"] == pytest.approx(estimate["seconds"], abs=1e-9)
    assert facts["runtime.exposed_communication_seconds"] == pytest.approx(
        estimate["exposed_communication_seconds"], abs=1e-9
    )
    assert "runtime.seconds_per_run" not in facts  # nothing was measured
    # The same step passes; a wider one (twice the model dimension) is slower.
    assert hloscope("check", *target, env=small).code == 0
    wider = {**child_env(), "LLM_STEP": "1,512,128,8"}
    run = hloscope("check", *target, "--json", env=wider)
    assert run.code == 1, run.stderr
    changes = {c["fact"]: c for c in run.json()["changes"]}
    assert changes["runtime.estimated_seconds"]["regression"] is True


def test_collectives_across_slices_go_over_the_data_centre_network():
    needs("tpu")
    target = [
        "tests/fixtures/multislice.py:step",
        "--args",
        "tests/fixtures/multislice.py:step_args",
        "--for",
        "tpu:v5e:2x4,slices=2",
        "--json",
    ]
    document = hloscope("profile", *target).json()
    placement = hloscope("placement", *target).json()
    listed = [c for c in placement["collectives"] if c["across_slices"]]
    assert listed, "no collective across slices: the case tests nothing"
    across = [c for c in document["collectives"] if c["across_slices"]]
    assert len(across) == sum(c["count"] for c in listed)
    assert sum(c["result_bytes"] for c in across) == sum(c["bytes"] for c in listed)
    dcn = document["figures"]["dcn_bytes_per_second"]
    for c in across:
        assert c["op"] == "all-reduce" and c["group_size"] == 2
        # A ring over 2 slices: an all-reduce moves 2 (n-1)/n of what each sends.
        assert c["bytes"] == pytest.approx(c["result_bytes"] * c["calls"])
        assert c["seconds"] == pytest.approx(c["bytes"] / dcn)
    assert not any("not estimated" in note for note in document["notes"])


def test_a_dump_before_optimizations_is_estimated_and_an_optimized_one_refused():
    needs("tpu")
    document = hloscope(
        "profile", "samples/dumps/mlp.before_optimizations.hlo", "--for", "tpu:v5e:2x4", "--json"
    ).json()
    assert document["estimated"] is True
    assert any(op["basis"] == "compiler" for op in document["ops"])
    line = one_line_error(
        hloscope("profile", "samples/dumps/mlp.after_optimizations.hlo", "--for", "tpu:v5e:2x4")
    )
    assert "compiled already" in line


def test_the_python_api_estimates_on_an_inspection_compiled_for_a_platform():
    needs("tpu")
    code = (
        "import jax, jax.numpy as jnp, hloscope\n"
        "a = jax.ShapeDtypeStruct((1024, 1024), jnp.bfloat16)\n"
        f"insp = hloscope.inspect('{ESTIMATE}:matmul', a, a)\n"
        "report = insp.compile_for('tpu:v5e:2x2').profile()\n"
        "print(type(report).__name__, report.analysis.seconds > 0, report.target)\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**child_env(), "ALLOW_MULTIPLE_LIBTPU_LOAD": "1"},
        timeout=600,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-4000:]
    assert run.stdout.strip().splitlines()[-1] == "EstimateReport True tpu:v5e:2x2"


RING = ["--args", f"{ESTIMATE}:ring_args", "--for", "tpu:v5e:2x4", "--json"]
PER_DEVICE = 32 * 1024 * 1024


def test_a_shift_to_the_next_chip_takes_one_link_one_way():
    """`ppermute` to `(i, (i + 1) % 8)` of 32 MiB a chip on a ring of 8 v5e chips: each
    chip sends its block over one link, one way (45 GB/s): 746 µs, not half of it (the
    both-ways factor of an all-gather, which splits its data over both directions)."""
    needs("tpu")
    document = hloscope("profile", f"{ESTIMATE}:ring_shift", *RING).json()
    (permute,) = document["collectives"]
    assert permute["op"] == "collective-permute"
    assert permute["result_bytes"] == PER_DEVICE
    link = document["figures"]["interconnect_bytes_per_second"]
    assert link == 45e9
    assert permute["seconds"] == pytest.approx(PER_DEVICE / link)
    assert permute["seconds"] == pytest.approx(746e-6, rel=1e-3)


def test_an_all_to_all_loads_each_link_with_an_eighth_of_the_array():
    """`all_to_all` of 32 MiB a chip over 8 v5e chips: each chip sends 4 MiB to each
    other chip the shorter way round the bidirectional ring, 16 hops of 4 MiB a chip
    over 16 directed links: 32 MiB a link, the scaling book's V / (4 W_ici) of the
    whole 256 MiB over a link's 90 GB/s both ways: 746 µs (an all-gather of its result
    was 326 µs)."""
    needs("tpu")
    document = hloscope("profile", f"{ESTIMATE}:all_to_all", *RING).json()
    (exchange,) = document["collectives"]
    assert exchange["op"] == "all-to-all" and exchange["group_size"] == 8
    assert exchange["result_bytes"] == PER_DEVICE
    # What each chip sends: 7/8 of its block.
    assert exchange["bytes"] == pytest.approx(PER_DEVICE * 7 / 8)
    link = document["figures"]["interconnect_bytes_per_second"]
    assert exchange["seconds"] == pytest.approx(8 * PER_DEVICE / (4 * 2 * link))
    assert exchange["seconds"] == pytest.approx(746e-6, rel=1e-3)


COUNTED = [f"{ESTIMATE}:counted_matmul", "--args", f"{ESTIMATE}:counted_matmul_args"]


def test_gpu_estimate_says_it_is_a_roofline_and_folds_kernels_of_no_time():
    """A GPU compiler writes no cycles: the `from` line says the kernels are a roofline,
    not "the compiler's estimated cycles where it wrote them"; the step counter's u32
    add (XLA's cost analysis: 1 flop, 8 bytes, 2 ps) is folded into one row of the
    text, and listed in JSON as it is."""
    needs("gpu")
    document = hloscope("profile", *COUNTED, "--for", "gpu:h100", "--json").json()
    assert {op["basis"] for op in document["ops"]} == {"roofline"}
    (tiny,) = [op for op in document["ops"] if op["seconds"] < 0.5e-9]
    assert tiny["flops"] == 1 and tiny["bytes"] == 8
    text = hloscope("profile", *COUNTED, "--for", "gpu:h100", env=child_env()).stdout
    (line,) = [line for line in text.splitlines() if line.startswith("from")]
    assert "roofline" in line and "estimated cycles" not in line
    assert "1 instruction under 1 ns" in text
    assert tiny["name"] not in text

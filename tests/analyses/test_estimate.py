"""`profile --for`'s estimate (`analyses.estimate`) on hand-built HLO modules: an
async all-gather with independent compute scheduled between its start and its done
is hidden, without it exposed, read in either form of the module; a GPU kernel's
roofline is the larger of its flops (XLA's own cost analysis, checked against the
matmul's 2*M*N*K) over the peak and its bytes over the memory bandwidth; the ring
algorithm's bytes; the published figures' refusals; HFU of the flops executed and
MFU of the model's."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hloscope.analyses.estimate import (
    analyze_estimate,
    ring_bytes,
    ring_link_bytes,
    step_flops,
)
from hloscope.analyses.fusions import analyze_fusions
from hloscope.analyses.kernels import program_kernels
from hloscope.compile_for import parse_compile_for
from hloscope.errors import HloscopeError
from hloscope.hardware_figures import TPU_FIGURES, figures_for, gpu_figures, tpu_figures
from hloscope.ir.context import xla_hlo
from hloscope.ir.kernel_costs import kernel_costs
from hloscope.sources.jax.backend import cpu_client
from hloscope.sources.loader import LoadOptions, load

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
GATHERED = 2048 * 1024 * 4
"""The all-gather's result, f32[2048,1024], over 8 devices."""
DOT_FLOPS = 2 * 4096**3
"""f32[4096,4096] @ f32[4096,4096]."""


def estimate(fixture: str, spec: str):
    path = FIXTURES / fixture
    loaded = load(str(path), LoadOptions())
    form = "hlo-native" if os.environ.get("HLOSCOPE_HLO_FORM") == "xla" else "hlo"
    assert loaded.source.ir == form
    computations = program_kernels(loaded.module)
    wanted = [
        k.name for c in computations for k in c.kernels if k.runs_kernel and not k.collectives
    ]
    proto = xla_hlo().hlo_module_from_text(path.read_text()).as_serialized_hlo_module_proto()
    costs = kernel_costs(proto, wanted, cpu_client())
    target = parse_compile_for(spec)
    assert target is not None
    figures = figures_for(target)
    analysis = analyze_estimate(
        loaded.module, computations, costs, figures, analyze_fusions(loaded.module)
    )
    return analysis, costs, figures


@pytest.fixture(params=["converted", "xla"])
def form(request, monkeypatch):
    """Each module read in either form: converted to MLIR (whose ops follow their
    dependencies, the schedule read from the module) and XLA's own (in the schedule)."""
    if request.param == "xla":
        monkeypatch.setenv("HLOSCOPE_HLO_FORM", "xla")
    else:
        monkeypatch.delenv("HLOSCOPE_HLO_FORM", raising=False)
    return request.param


def test_async_all_gather_with_compute_between_is_hidden(form):
    analysis, _, figures = estimate("async_overlap.hlo", "tpu:v5e:2x4")
    (gather,) = analysis.collectives
    assert gather.op == "all-gather" and gather.asynchronous
    assert gather.group_size == 8
    assert gather.overlapped_by == ("dot",)
    # The ring moves 7/8 of the result per device, over both ways of an ICI link.
    assert gather.bytes == pytest.approx(GATHERED * 7 / 8)
    assert gather.seconds == pytest.approx(
        GATHERED * 7 / 8 / (2 * figures.interconnect_bytes_per_second)
    )
    assert gather.hidden and gather.exposed_seconds == 0.0
    assert analysis.exposed_communication_seconds == 0.0
    assert analysis.seconds == pytest.approx(analysis.compute_seconds)


def test_async_all_gather_with_nothing_between_is_exposed(form):
    analysis, _, _ = estimate("async_exposed.hlo", "tpu:v5e:2x4")
    (gather,) = analysis.collectives
    assert gather.overlapped_by == ()
    assert not gather.hidden
    assert gather.exposed_seconds == pytest.approx(gather.seconds)
    assert analysis.seconds == pytest.approx(analysis.compute_seconds + gather.seconds)
    by_line = sum(line.seconds for line in analysis.lines)
    assert by_line == pytest.approx(analysis.seconds)


def test_gpu_roofline_is_the_larger_of_flops_over_peak_and_bytes_over_bandwidth():
    analysis, costs, figures = estimate("async_overlap.hlo", "gpu:h100x8")
    (dot,) = [op for op in analysis.ops if op.name == "dot"]
    # XLA's own flops for the matmul are 2*M*N*K.
    assert costs["dot"]["flops"] == DOT_FLOPS
    assert dot.basis == "roofline" and dot.cycles is None
    assert dot.flops == DOT_FLOPS
    peak = figures.peak_flops_by_type["f32"]
    expected = max(DOT_FLOPS / peak, costs["dot"]["bytes accessed"] / figures.hbm_bytes_per_second)
    assert dot.seconds == pytest.approx(expected)
    assert dot.bound == "compute"
    # The H100 spec's own memory bandwidth.
    assert figures.hbm_bytes_per_second == 3352320000000
    # Over NVLink, one way per GPU (nccl-tests' bus bandwidth).
    (gather,) = analysis.collectives
    assert gather.seconds == pytest.approx(GATHERED * 7 / 8 / figures.interconnect_bytes_per_second)


def test_ring_bytes():
    assert ring_bytes("all-gather", 800, 100, None) == pytest.approx(700)
    assert ring_bytes("reduce-scatter", 100, 800, None) == pytest.approx(700)
    assert ring_bytes("all-reduce", 800, 800, 8) == pytest.approx(1400)
    assert ring_bytes("collective-permute", 800, 800, None) == 800


def test_ring_link_bytes_are_the_busiest_links_one_way():
    # An all-gather splits its data over both ways of the ring.
    assert ring_link_bytes("all-gather", 700, 800, 8) == 350
    # A shift to the next device: each link carries one block one way.
    shift = [(i, (i + 1) % 8) for i in range(8)]
    assert ring_link_bytes("collective-permute", 800, 800, None, shift) == 800
    # Two devices on: every link carries two blocks (each passes two links).
    assert (
        ring_link_bytes("collective-permute", 800, 800, None, [(i, (i + 2) % 8) for i in range(8)])
        == 1600
    )
    # Neighbours swapping on a ring of four: one block each way of their link.
    swaps = [(0, 1), (1, 0), (2, 3), (3, 2)]
    assert ring_link_bytes("collective-permute", 800, 800, None, swaps) == 800
    # A broadcast sends its whole result both ways round: no split.
    assert ring_link_bytes("collective-broadcast", 800, 800, 8) == 800
    # All-to-all: result * (summed ring distances) / 2n; n/8 of the result for an even n.
    assert ring_link_bytes("all-to-all", 700, 800, 8) == pytest.approx(800)
    assert ring_link_bytes("all-to-all", 300, 400, 4) == pytest.approx(200)
    assert ring_link_bytes("all-to-all", 0, 400, 3) == pytest.approx(400 * 2 / 6)


def test_tpu_clock_is_the_peak_over_the_mxus_multiply_adds():
    target = parse_compile_for("tpu:v5e:2x4")
    assert target is not None
    figures = tpu_figures(target)
    # v5e: 197 TFLOP/s over 4 MXUs of 128x128 multiply-adds (2 flops each).
    assert figures.clock_hz == pytest.approx(1.97e14 / (2 * 4 * 128 * 128))
    assert 1.4e9 < (figures.clock_hz or 0) < 1.6e9
    assert figures.peak_flops == TPU_FIGURES["v5e"].peak_bf16_flops


def test_a_generation_without_a_published_figure_is_refused_naming_it():
    target = parse_compile_for("tpu:v6e:2x2")
    assert target is not None
    with pytest.raises(HloscopeError, match="no published MXU count"):
        figures_for(target)
    target = parse_compile_for("tpu:v2:2x2")
    assert target is not None
    with pytest.raises(HloscopeError, match="no published"):
        figures_for(target)


def test_a_gpu_spec_without_memory_bandwidth_is_refused_naming_field_and_file(tmp_path):
    spec = tmp_path / "no_bandwidth.txtpb"
    h100 = Path(__file__).resolve().parents[2] / "src/hloscope/gpu_specs/h100_sxm.txtpb"
    spec.write_text(
        "\n".join(line for line in h100.read_text().splitlines() if "memory_bandwidth" not in line)
    )
    target = parse_compile_for(f"gpu:{spec}")
    assert target is not None
    with pytest.raises(HloscopeError) as raised:
        gpu_figures(target)
    assert "memory_bandwidth" in str(raised.value) and str(spec) in str(raised.value)


def test_a_cost_xla_does_not_know_is_null_and_counts_nothing():
    # XLA's cost analysis says -1 of what it does not know (the TPU's no-op custom
    # calls): no negative flops, bytes, seconds or share, nothing added to the step.
    analysis, costs, figures = estimate("async_overlap.hlo", "gpu:h100x8")
    loaded = load(str(FIXTURES / "async_overlap.hlo"), LoadOptions())
    unknown = {**costs, "dot": {"flops": -1.0, "bytes accessed": -1.0}}
    again = analyze_estimate(
        loaded.module,
        program_kernels(loaded.module),
        unknown,
        figures,
        analyze_fusions(loaded.module),
    )
    (dot,) = [op for op in again.ops if op.name == "dot"]
    assert dot.flops is None and dot.bytes is None
    assert dot.seconds == 0 and dot.share == 0
    assert again.unknown_costs == ("dot",)
    assert again.flops == pytest.approx(analysis.flops - DOT_FLOPS)


def test_hfu_is_of_the_flops_executed_and_mfu_of_the_models():
    # HFU is of the flops the step executes (recomputation included), MFU of the
    # model's: those given (per device), or the executed ones where nothing is
    # recomputed; with jax.checkpoint regions and no model flops, MFU is not known.
    loaded = load(str(FIXTURES / "async_overlap.hlo"), LoadOptions())
    computations = program_kernels(loaded.module)
    wanted = [
        k.name for c in computations for k in c.kernels if k.runs_kernel and not k.collectives
    ]
    text = (FIXTURES / "async_overlap.hlo").read_text()
    proto = xla_hlo().hlo_module_from_text(text).as_serialized_hlo_module_proto()
    costs = kernel_costs(proto, wanted, cpu_client())
    target = parse_compile_for("gpu:h100x8")
    assert target is not None
    figures = figures_for(target)

    def estimated(**how):
        return analyze_estimate(
            loaded.module, computations, costs, figures, analyze_fusions(loaded.module), **how
        )

    capacity = estimated().seconds * figures.peak_flops
    recomputing = estimated(recomputes=True)
    assert recomputing.flops >= DOT_FLOPS
    assert recomputing.hfu == pytest.approx(recomputing.flops / capacity)
    assert recomputing.mfu is None and recomputing.model_flops is None
    assert recomputing.model_flops_from is None
    unknown = estimated()  # a dump: whether it recomputes is not known
    assert unknown.mfu is None and unknown.hfu == recomputing.hfu
    nothing_recomputed = estimated(recomputes=False)
    assert nothing_recomputed.model_flops_from == "no recomputation"
    assert nothing_recomputed.mfu == nothing_recomputed.hfu
    assert nothing_recomputed.model_flops == nothing_recomputed.flops
    given = estimated(recomputes=True, given_model_flops=DOT_FLOPS / 2)
    assert given.model_flops_from == "given" and given.model_flops == DOT_FLOPS / 2
    assert given.mfu == pytest.approx(DOT_FLOPS / 2 / capacity)
    assert given.hfu is not None and given.mfu < given.hfu
    saved = estimated(
        recomputes=True, given_model_flops=DOT_FLOPS, model_flops_from="saving everything"
    )
    assert saved.model_flops_from == "saving everything"
    # The flops of a program compiled again for MFU are counted as the step's are.
    assert step_flops(loaded.module, computations, costs) == pytest.approx(given.flops)


def test_a_step_recomputes_where_its_jaxpr_holds_a_checkpoint_region():
    # What MFU reads of the traced step: a jax.checkpoint region anywhere, a scan's
    # body included, and none in the same gradient without it.
    import jax
    import jax.numpy as jnp

    from hloscope.sources.jax.residuals import has_checkpoint_region

    def layer(x, w):
        return jnp.tanh(x @ w), None

    def loss(ws, x, checkpointed):
        y, _ = jax.lax.scan(jax.checkpoint(layer) if checkpointed else layer, x, ws)
        return jnp.sum(y)

    ws, x = jnp.ones((3, 8, 8)), jnp.ones((4, 8))
    for checkpointed in (True, False):
        step = jax.jit(jax.grad(lambda w, v, c=checkpointed: loss(w, v, c)))
        jaxpr = step.trace(ws, x).jaxpr.jaxpr
        assert has_checkpoint_region(jaxpr) is checkpointed

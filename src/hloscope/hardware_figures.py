"""The published figures `profile --for` estimates with: each TPU generation's peak
bf16 FLOP/s, matrix units, HBM, ICI and DCN bandwidth, and each GPU's tensor-core
peaks and NVLink bandwidth (its clock, cores and memory bandwidth come from its spec
file). Written once, here, each with where it comes from; a generation without a
figure the estimate needs is refused, naming it, never given a made-up number.

The TPU's clock is not published as such: it is derived, as the JAX scaling book
does, from the peak over the multiply-adds the MXUs do per cycle (a 128x128 MXU does
128*128 multiply-adds, 2 flops each): a v5e's 1.97e14 FLOP/s over 4 MXUs is 1.50 GHz.
"""

from __future__ import annotations

import dataclasses
from typing import Final

from hloscope.compile_for import CompileFor
from hloscope.errors import HloscopeError

SCALING_BOOK: Final = "https://jax-ml.github.io/scaling-book/tpus/"
"""How To Scale Your Model, "How to Think About TPUs": per-chip bf16 FLOP/s, HBM
bandwidth, ICI bandwidth per link (one way) and DCN bandwidth per chip."""
COLLECTIVES_BOOK: Final = "https://jax-ml.github.io/scaling-book/sharding/"
"""The scaling book's "Sharded Matrices" chapter: the cost of each collective over a
ring of ICI links (all-gather and reduce-scatter move (n-1)/n of the result per
device; an all-reduce is both)."""
NCCL_PERFORMANCE: Final = "https://github.com/NVIDIA/nccl-tests/blob/master/doc/PERFORMANCE.md"
"""nccl-tests' bus bandwidth: the same ring factors for GPUs over NVLink."""


@dataclasses.dataclass(frozen=True)
class TpuFigures:
    """One TPU generation's published figures, per chip."""

    generation: str
    peak_bf16_flops: float | None
    mxus: int | None
    """Matrix units per chip (over its TensorCores)."""
    mxu_size: int | None
    """Each MXU is mxu_size x mxu_size multiply-adds."""
    hbm_bytes_per_second: float | None
    ici_bytes_per_second_per_link: float | None
    """One way, one link."""
    dcn_bytes_per_second: float | None
    """Per chip, to other slices."""
    source: str


TPU_FIGURES: Final[dict[str, TpuFigures]] = {
    f.generation: f
    for f in (
        # Cloud TPU v4 page: 275 TFLOP/s bf16, 1200 GB/s HBM, 2 TensorCores of 4 MXUs;
        # ICI and DCN from the scaling book.
        TpuFigures(
            "v4",
            2.75e14,
            8,
            128,
            1.2e12,
            4.5e10,
            6.25e9,
            "cloud.google.com/tpu/docs/v4; " + SCALING_BOOK,
        ),
        # Cloud TPU v5e page: 197 TFLOP/s bf16, 819 GB/s HBM, one TensorCore of 4 MXUs.
        TpuFigures(
            "v5e",
            1.97e14,
            4,
            128,
            8.1e11,
            4.5e10,
            6.25e9,
            "cloud.google.com/tpu/docs/v5e; " + SCALING_BOOK,
        ),
        # Cloud TPU v5p page: 459 TFLOP/s bf16, 2765 GB/s HBM, 2 TensorCores of 4 MXUs.
        TpuFigures(
            "v5p",
            4.59e14,
            8,
            128,
            2.8e12,
            9e10,
            6.25e9,
            "cloud.google.com/tpu/docs/v5p; " + SCALING_BOOK,
        ),
        # Trillium's MXUs are 256x256; how many a chip has is not on its page, so
        # its clock (and its compiler's cycles in seconds) cannot be derived.
        TpuFigures(
            "v6e",
            9.18e14,
            None,
            256,
            1.6e12,
            9e10,
            6.25e9,
            "cloud.google.com/tpu/docs/v6e; " + SCALING_BOOK,
        ),
    )
}


@dataclasses.dataclass(frozen=True)
class GpuFigures:
    """A GPU's published tensor-core peaks (dense, without sparsity) and NVLink."""

    name: str
    peak_flops: dict[str, float]
    """FLOP/s by the matmul's operand type: `bf16` (and f16), `f32` (TF32 tensor
    cores, as XLA runs f32 dots by default), `f8`; `vector` for everything else (the
    CUDA cores' f32)."""
    interconnect_bytes_per_second: float
    """NVLink, one way, per GPU (PCIe for a GPU without NVLink)."""
    source: str


GPU_FIGURES: Final[dict[str, GpuFigures]] = {
    f.name: f
    for f in (
        GpuFigures(
            "h100",
            {"bf16": 989.4e12, "f32": 494.7e12, "f8": 1978.9e12, "vector": 66.9e12},
            450e9,
            "nvidia.com/en-us/data-center/h100 (SXM; NVLink 900 GB/s both ways)",
        ),
        GpuFigures(
            "a100",
            {"bf16": 312e12, "f32": 156e12, "vector": 19.5e12},
            300e9,
            "nvidia.com/en-us/data-center/a100 (SXM; NVLink 600 GB/s both ways)",
        ),
        GpuFigures(
            "l4",
            {"bf16": 121e12, "f32": 60e12, "f8": 242.5e12, "vector": 30.3e12},
            32e9,
            "nvidia.com/en-us/data-center/l4 (no NVLink: PCIe Gen4 x16, 64 GB/s both ways)",
        ),
    )
}


@dataclasses.dataclass(frozen=True)
class Figures:
    """The figures one estimate uses, per device."""

    platform: str
    clock_hz: float | None
    """The TPU's derived clock (the compiler's cycles over it are seconds); the GPU
    spec's `clock_rate_ghz`."""
    peak_flops: float
    """bf16 matmul peak: what MFU is over."""
    peak_flops_by_type: dict[str, float]
    """For a kernel's roofline, by its matmul's operand type (`vector` without one)."""
    hbm_bytes_per_second: float
    interconnect_bytes_per_second: float
    """ICI one way per link (TPU); NVLink one way per GPU."""
    dcn_bytes_per_second: float | None
    """Per chip, across slices (TPU multi-slice)."""
    source: str


def _missing(target: CompileFor, figure: str) -> HloscopeError:
    return HloscopeError(
        f"--for {target.spec}: no published {figure} for {target.description or target.name} "
        "in hloscope's figures (hardware_figures.py): profile --for cannot estimate for it"
    )


def tpu_figures(target: CompileFor) -> Figures:
    """A TPU generation's figures; a `HloscopeError` naming the first figure missing."""
    table = TPU_FIGURES.get(target.name)
    if table is None:
        raise _missing(target, "peak FLOP/s, HBM or ICI bandwidth")
    for figure, value in (
        ("peak bf16 FLOP/s", table.peak_bf16_flops),
        ("MXU count (to derive the clock from the peak)", table.mxus),
        ("HBM bandwidth", table.hbm_bytes_per_second),
        ("ICI bandwidth", table.ici_bytes_per_second_per_link),
    ):
        if value is None:
            raise _missing(target, figure)
    assert table.peak_bf16_flops and table.mxus and table.mxu_size
    assert table.hbm_bytes_per_second and table.ici_bytes_per_second_per_link
    if target.slices > 1 and table.dcn_bytes_per_second is None:
        raise _missing(target, "DCN bandwidth (for slices)")
    clock = table.peak_bf16_flops / (2 * table.mxus * table.mxu_size * table.mxu_size)
    return Figures(
        platform="tpu",
        clock_hz=clock,
        peak_flops=table.peak_bf16_flops,
        peak_flops_by_type={"bf16": table.peak_bf16_flops, "vector": table.peak_bf16_flops},
        hbm_bytes_per_second=table.hbm_bytes_per_second,
        interconnect_bytes_per_second=table.ici_bytes_per_second_per_link,
        dcn_bytes_per_second=table.dcn_bytes_per_second,
        source=table.source,
    )


def gpu_figures(target: CompileFor) -> Figures:
    """A GPU's figures: its spec file's memory bandwidth and clock, the tensor-core
    peaks and NVLink of the GPU it names; a `HloscopeError` naming a field the spec
    file lacks, or a GPU without published peaks."""
    from hloscope.ir.gpu_target import gpu_target_facts

    where = target.gpu_config_path or target.spec
    facts = gpu_target_facts(target.gpu_config or "", where)
    for field, value in (
        ("memory_bandwidth", facts.memory_bandwidth),
        ("clock_rate_ghz", facts.clock_rate_ghz),
        ("core_count", facts.core_count),
    ):
        if value is None:
            raise HloscopeError(
                f"the GPU spec has no gpu_device_info.{field}: profile --for needs it",
                where=where,
            )
    assert facts.memory_bandwidth and facts.clock_rate_ghz
    table = GPU_FIGURES.get(target.name)
    if table is None and facts.description:
        # A spec file of its own: the GPU its description names (`NVIDIA H100 80GB HBM3`).
        words = facts.description.lower().split()
        table = next((GPU_FIGURES[name] for name in GPU_FIGURES if name in words), None)
    if table is None:
        raise _missing(target, "tensor-core peak FLOP/s")
    return Figures(
        platform="gpu",
        clock_hz=facts.clock_rate_ghz * 1e9,
        peak_flops=table.peak_flops["bf16"],
        peak_flops_by_type=dict(table.peak_flops),
        hbm_bytes_per_second=float(facts.memory_bandwidth),
        interconnect_bytes_per_second=table.interconnect_bytes_per_second,
        dcn_bytes_per_second=None,
        source=f"{_spec_name(where)} (memory_bandwidth, clock_rate_ghz); {table.source}",
    )


def _spec_name(path: str) -> str:
    """A shipped spec by its name in the package (`gpu_specs/h100_sxm.txtpb`), a
    user's file as given."""
    from pathlib import Path

    from hloscope.compile_for import GPU_SPECS_FOLDER

    file = Path(path)
    return f"gpu_specs/{file.name}" if file.parent == GPU_SPECS_FOLDER else path


def figures_for(target: CompileFor) -> Figures:
    """The figures of what `--for` names."""
    return tpu_figures(target) if target.platform == "tpu" else gpu_figures(target)

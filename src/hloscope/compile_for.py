"""What to compile for: `--for SPEC` read into one value (`CompileFor`).

`cpu` (or no `--for`) is the local backend, as always. `tpu:GEN:TOPOLOGY` is a TPU
topology as JAX names it (`tpu:v5e:2x4`, `tpu:v4:2x2x1`, `,slices=2` for several
slices), compiled by libtpu without a TPU. `gpu:NAME` or `gpu:NAMExN` is a GPU spec
hloscope ships (`gpu_specs/`), `gpu:PATH.txtpb` any `GpuTargetConfigProto` in text
form, compiled by JAX's CUDA plugin without a GPU. This module only reads the spec:
the devices and the compiler are made in `hloscope.sources.jax.platforms`, the one
place that imports JAX for them; the analyses never see either.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Final, Literal

from hloscope.errors import HloscopeError

Platform = Literal["tpu", "gpu"]

GIB: Final = 1 << 30


@dataclasses.dataclass(frozen=True)
class TpuGeneration:
    """A TPU generation hloscope compiles for, and what JAX needs to make it."""

    name: str
    """As JAX's topology names spell it: `v5e`, `v4`, `tpu7x`."""
    dimensions: int
    """How many numbers its topology has: 2 (`2x4`) or 3 (`2x2x1`)."""
    hbm_bytes_per_device: int
    """The HBM one of JAX's devices of it has, from the generation's public spec sheet
    (a device is a chip, or a TensorCore where each core is its own device: v2, v3;
    TPU7x's two chiplets)."""
    device_kind: str
    """As XLA names its devices: `TPU v5 lite`."""
    devices_per_chip: int = 1
    """JAX's devices on one chip (two TensorCores each a device: v2, v3; TPU7x's two
    chiplets)."""
    max_chips: int = 256
    """The chips of its largest slice (the generation's public pod size): libtpu aborts
    on a larger topology rather than refusing it."""
    chip_config_name: str | None = None
    """`chip_config_name` for `get_topology_desc`: v4's `megacore` (one device per
    chip, as on a v4 VM; JAX's mesh helpers refuse the default's two)."""
    example: str = ""


TPU_GENERATIONS: Final[dict[str, TpuGeneration]] = {
    g.name: g
    for g in (
        TpuGeneration("v2", 2, 8 * GIB, "TPU v2", 2, 512, example="2x2"),
        TpuGeneration("v3", 2, 16 * GIB, "TPU v3", 2, 1024, example="2x2"),
        TpuGeneration("v4", 3, 32 * GIB, "TPU v4", 1, 4096, "megacore", example="2x2x1"),
        TpuGeneration("v5e", 2, 16 * GIB, "TPU v5 lite", 1, 256, example="2x4"),
        TpuGeneration("v5p", 3, 95 * GIB, "TPU v5", 1, 8960, example="2x2x1"),
        TpuGeneration("v6e", 2, 32 * GIB, "TPU v6 lite", 1, 256, example="4x4"),
        TpuGeneration("tpu7x", 3, 96 * GIB, "TPU7x", 2, 9216, example="2x2x1"),
    )
}


@dataclasses.dataclass(frozen=True)
class GpuSpec:
    """A GPU spec hloscope ships: a `GpuTargetConfigProto` in text form, with the
    facts a report names (from the vendor's public spec sheet; the file has them too)."""

    name: str
    """`h100`, `a100`, `l4`."""
    file: str
    """Its file in `hloscope/gpu_specs/`."""
    description: str
    """As the file's `device_description_str` says it: `NVIDIA H100 80GB HBM3`."""


GPU_SPECS: Final[dict[str, GpuSpec]] = {
    s.name: s
    for s in (
        GpuSpec("h100", "h100_sxm.txtpb", "NVIDIA H100 80GB HBM3 (SXM)"),
        GpuSpec("a100", "a100_sxm_80gb.txtpb", "NVIDIA A100-SXM4-80GB"),
        GpuSpec("l4", "l4.txtpb", "NVIDIA L4"),
    )
}

GPU_SPECS_FOLDER: Final = Path(__file__).resolve().parent / "gpu_specs"


@dataclasses.dataclass(frozen=True)
class PlatformCompiler:
    """What compiles for a platform without its device, and how to install it."""

    module: str
    """The Python module it comes in (found without importing it)."""
    distribution: str
    """Its package, whose version a report names."""
    extra: str
    """hloscope's extra that installs it: `pip install 'hloscope[EXTRA]'`."""


COMPILERS: Final[dict[str, PlatformCompiler]] = {
    "tpu": PlatformCompiler("libtpu", "libtpu", "tpu"),
    "gpu": PlatformCompiler("jax_plugins.xla_cuda12", "jax-cuda12-plugin", "cuda12"),
}


def compiler_installed(platform: str) -> bool:
    """Whether the package compiling for `platform` (`tpu`, `gpu`) is installed."""
    import importlib.util

    try:
        return importlib.util.find_spec(COMPILERS[platform].module) is not None
    except (ImportError, ValueError):
        return False


ACCEPTED_FORMS: Final = (
    "cpu, tpu:GEN:TOPOLOGY[,slices=N] (tpu:v5e:2x4, tpu:v4:2x2x1, tpu:v5p:4x4x4), "
    "gpu:NAME[xN] (gpu:h100, gpu:h100x8, gpu:a100, gpu:l4) or gpu:PATH.txtpb[,gpus=N]; "
    "hloscope platforms lists them"
)


@dataclasses.dataclass(frozen=True)
class CompileFor:
    """What to compile for, other than the local backend: a TPU topology or a GPU spec,
    compiled on this machine without the device. The one value the compile stage is
    given (`LoadOptions.compile_for`)."""

    spec: str
    """As the user wrote it, normalised: `tpu:v5e:2x4`, `gpu:h100x8`."""
    platform: Platform
    name: str
    """The TPU generation (`v5e`) or the GPU spec's name (`h100`, or the file's stem)."""
    topology: str
    """JAX's topology string: `v5e:2x4` for a TPU; `1x1x8` (slices x hosts x GPUs per
    host) for GPUs."""
    devices: int
    """How many devices JAX makes for it: what the program is given as host devices
    before it is imported (made before libtpu starts, so that a program setting
    LIBTPU_INIT_ARGS when imported sets them for its compilation)."""
    slices: int = 1
    """TPU slices (multi-slice)."""
    chip_config_name: str | None = None
    """For `get_topology_desc`: v4's `megacore`."""
    gpu_config: str | None = None
    """The GPU's `GpuTargetConfigProto` in text form."""
    gpu_config_path: str | None = None
    """Where it was read from."""
    memory_bytes: int | None = None
    """One device's memory: the TPU generation's HBM, the GPU spec's device memory."""
    description: str = ""
    """The device, in words: `TPU v5e`, `NVIDIA H100 80GB HBM3 (SXM)`."""

    @property
    def memory_name(self) -> str:
        """What the device's memory is called: `HBM`, or `GPU memory`."""
        return "HBM" if self.platform == "tpu" else "GPU memory"


def parse_compile_for(text: str | None) -> CompileFor | None:
    """`--for TEXT` as a `CompileFor`; None for `cpu` (or nothing): the local backend.
    A spec in none of the accepted forms is a `HloscopeError` naming them."""
    if text is None:
        return None
    spec = text.strip()
    if spec.lower() in ("", "cpu", "local"):
        return None
    platform, sep, rest = spec.partition(":")
    platform = platform.lower()
    if platform == "tpu" and sep:
        return _tpu(spec, rest)
    if platform in ("gpu", "cuda") and sep:
        return _gpu(spec, rest)
    raise _wrong(spec)


def _wrong(spec: str, why: str = "") -> HloscopeError:
    return HloscopeError(f"--for {spec}: {why + '; ' if why else ''}expected {ACCEPTED_FORMS}")


_TOPOLOGY = re.compile(r"^\d+(x\d+){1,2}$")


def _options(spec: str, text: str, allowed: tuple[str, ...]) -> tuple[str, dict[str, int]]:
    """`BODY,key=N,...` as BODY and its options."""
    body, *pairs = text.split(",")
    options: dict[str, int] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        key = key.strip().lower()
        if not sep or key not in allowed:
            raise _wrong(spec, f"unknown option {pair.strip()!r}")
        if not value.strip().isdigit() or int(value) < 1:
            raise _wrong(spec, f"{key}={value.strip()}: expected a count of 1 or more")
        options[key] = int(value)
    return body.strip(), options


def _tpu(spec: str, rest: str) -> CompileFor:
    body, options = _options(spec, rest, ("slices",))
    generation_name, sep, topology = body.partition(":")
    generation = TPU_GENERATIONS.get(generation_name.lower())
    if generation is None:
        raise _wrong(
            spec,
            f"unknown TPU generation {generation_name!r} (one of {', '.join(TPU_GENERATIONS)})",
        )
    topology = topology.lower()
    if not sep or not _TOPOLOGY.match(topology):
        raise _wrong(
            spec,
            f"a TPU topology is chips along each axis, as {generation.name}:{generation.example}",
        )
    if topology.count("x") + 1 != generation.dimensions:
        raise _wrong(
            spec,
            f"a {generation.name} topology has {generation.dimensions} numbers, as "
            f"{generation.name}:{generation.example}",
        )
    chips = 1
    for size in topology.split("x"):
        chips *= int(size)
    if not 1 <= chips <= generation.max_chips:
        raise _wrong(
            spec,
            f"{chips:,} chips: a {generation.name} slice has 1 to "
            f"{generation.max_chips:,} (slices=N for more)",
        )
    slices = options.get("slices", 1)
    normal = f"tpu:{generation.name}:{topology}" + (f",slices={slices}" if slices > 1 else "")
    return CompileFor(
        spec=normal,
        platform="tpu",
        name=generation.name,
        topology=f"{generation.name}:{topology}",
        devices=chips * generation.devices_per_chip * slices,
        slices=slices,
        chip_config_name=generation.chip_config_name,
        memory_bytes=generation.hbm_bytes_per_device,
        description=generation.device_kind,
    )


_GPU_COUNT = re.compile(r"^(?P<name>.+?)x(?P<count>\d+)$", re.IGNORECASE)


def _gpu(spec: str, rest: str) -> CompileFor:
    body, options = _options(spec, rest, ("gpus",))
    if body.endswith((".txtpb", ".pbtxt", ".textproto")):
        path = Path(body).expanduser()
        count = options.get("gpus", 1)
        normal = f"gpu:{body}" + (f",gpus={count}" if count > 1 else "")
        return _gpu_spec(spec, normal, path.stem, path, count, None)
    if options:
        raise _wrong(spec, "gpus=N goes with a spec file; a named GPU takes xN (gpu:h100x8)")
    name, count = body.lower(), 1
    match = _GPU_COUNT.match(name)
    if match and name not in GPU_SPECS:
        name, count = match["name"], int(match["count"])
    gpu = GPU_SPECS.get(name)
    if gpu is None:
        raise _wrong(spec, f"unknown GPU {name!r} (one of {', '.join(GPU_SPECS)})")
    if count < 1:
        raise _wrong(spec, f"{count} GPUs")
    normal = f"gpu:{name}" + (f"x{count}" if count > 1 else "")
    return _gpu_spec(spec, normal, name, GPU_SPECS_FOLDER / gpu.file, count, gpu.description)


def _gpu_spec(
    spec: str, normal: str, name: str, path: Path, count: int, description: str | None
) -> CompileFor:
    """A GPU spec read from `path` (a `GpuTargetConfigProto` in text form), `count` of
    them."""
    from hloscope.ir.gpu_target import gpu_target_facts

    try:
        config = path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise HloscopeError(f"--for {spec}: cannot read the GPU spec: {exc}") from None
    try:
        facts = gpu_target_facts(config, str(path))
    except HloscopeError as exc:
        raise HloscopeError(f"--for {spec}: {exc.message}") from None
    return CompileFor(
        spec=normal,
        platform="gpu",
        name=name,
        topology=f"1x1x{count}",
        devices=count,
        gpu_config=config,
        gpu_config_path=str(path),
        memory_bytes=facts.memory_bytes,
        description=description or facts.description or name,
    )


@dataclasses.dataclass(frozen=True)
class PlatformRow:
    """One line of `hloscope platforms`."""

    spec: str
    device: str
    memory_bytes: int | None
    notes: str


def platform_rows() -> tuple[PlatformRow, ...]:
    """What `--for` accepts, one example per TPU generation and GPU spec."""
    rows = [PlatformRow("cpu", "the local backend (no --for)", None, "")]
    for generation in TPU_GENERATIONS.values():
        spec = f"tpu:{generation.name}:{generation.example}"
        note = "one device per chip (megacore)" if generation.chip_config_name else ""
        rows.append(
            PlatformRow(spec, generation.device_kind, generation.hbm_bytes_per_device, note)
        )
    for gpu in GPU_SPECS.values():
        parsed = _gpu(f"gpu:{gpu.name}", gpu.name)
        rows.append(
            PlatformRow(f"gpu:{gpu.name}[xN]", gpu.description, parsed.memory_bytes, gpu.file)
        )
    rows.append(PlatformRow("gpu:PATH.txtpb[,gpus=N]", "any GpuTargetConfigProto", None, ""))
    return tuple(rows)

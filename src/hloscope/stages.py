"""What the sources produced for a target, as plain data (no JAX objects but an
opaque handle): where a module came from (`Source`) and what JAX and XLA made of it.
The sources build these and the analyses, reports and renderers read them, so none of
those imports the sources (or JAX), as `jax._src.stages` sits between JAX's lowering
and its users.

`hloscope.sources.jax` builds the JAX ones; named after JAX's own stages
(`jax.stages.Lowered` -> `Compiled`).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Final, Literal

if TYPE_CHECKING:
    from hloscope.ir.parsed import ParsedFormat


@dataclasses.dataclass(frozen=True)
class ArgumentLeaf:
    """One flattened leaf of the Python call's arguments."""

    position: int
    """Index among the flattened leaves of `(args, kwargs)`."""
    path: str
    """Pytree path: `params['w']`, `batch['x']`, `step`, `scale` (a keyword)."""
    shape: str
    """HLO spelling: `f32[16,4]`."""
    nbytes: int | None
    donated: bool
    """The caller asked for its donation (`donate_argnums`, `donate_argnames`, a
    library's `donate=`). Whether JAX kept it is `donated_in_module`."""
    hlo_index: int | None
    """Its index among the kept arguments, None when jit pruned it. This is its HLO
    parameter number unless JAX put implicit parameters first (ordered-effect tokens,
    the platform index, dimension variables): `analyses.params` accounts for those."""
    sharding: str | None
    memory_kind: str | None
    donated_in_module: bool | None = None
    """Whether JAX's lowered module donates its parameter (`tf.aliasing_output` or
    `jax.buffer_donor` on it): False where JAX dropped a donation the caller asked for
    (no result of the parameter's shape and dtype to reuse its buffer); None when it
    was pruned or the lowered module is not known."""
    also: tuple[str, ...] = ()
    """The other paths by which the call reaches the same value, passed once: a Flax
    Variable that the model and the optimizer both hold (`optimizer.params.w` beside
    `model.w`)."""
    sharding_source: str | None = None
    """`file.py:LINE` of the user's code that built the sharding it was given (the
    `--args` factory's `jax.device_put(x, NamedSharding(...))`); None where unknown."""


@dataclasses.dataclass(frozen=True)
class StaticArgument:
    """An argument JAX treated as static: part of the trace, not a parameter."""

    path: str
    """The parameter's name (`n`), or `args[1]` when it has none."""
    value: str
    """Its value, as `repr` prints it (shortened)."""
    position: int | None
    """Its index among the positional arguments; None for a keyword argument."""


CompilerOptions = tuple[tuple[str, str], ...]
"""XLA debug options for one compilation, as `compiler_options` pairs
(`("xla_dump_to", "/tmp/d")`): hashable, so load options stay frozen."""

LoweringKind = Literal["function", "jitted", "lowered", "compiled", "exported"]
"""What an entrypoint named (`Lowering.kind`)."""


LOCAL_LOWERING = "the program was lowered for this machine's platform"
"""What a lowering's note says where `--for` could not lower for the platform (a
library's jit with no `.trace`): a compile that fails then says so too."""


@dataclasses.dataclass(frozen=True)
class Lowering:
    """What JAX produced for an entrypoint, before XLA optimizes it."""

    kind: LoweringKind
    """`function`, `jitted`, `lowered`, `compiled` or `exported`."""
    name: str
    """The function's name (`f`) as JAX knows it."""
    mlir_bytecode: bytes | None
    """The lowered StableHLO module (bytecode); None when only a `Compiled` was given."""
    arguments: tuple[ArgumentLeaf, ...]
    static_arguments: tuple[str, ...]
    """Names of arguments JAX treated as static (not parameters): positional ones
    (`static_argnums`) first, then keywords."""
    lower_seconds: float | None
    notes: tuple[str, ...]
    """Warnings JAX emitted while lowering, and the like."""
    handle: Any = dataclasses.field(default=None, repr=False, compare=False)
    """The JAX object to compile later (`Lowered`, `Compiled`, `Exported`)."""
    static: tuple[StaticArgument, ...] = ()
    """The static arguments with their values (known when hloscope traced the
    function itself; a given `Lowered` does not record them)."""
    cost_analysis: Callable[[], Mapping[str, float] | None] | None = dataclasses.field(
        default=None, repr=False, compare=False
    )
    """Runs XLA's cost analysis of the lowered module; None where there is none."""
    results: tuple[str, ...] = ()
    """The name of each output leaf, in order, as the user would write it
    (`libraries.result_paths`: `result[0]`, or an `nnx.jit` step's `model.w1`); empty
    where not known (a stage given without its function, an `Exported`)."""
    runnable: Any = dataclasses.field(default=None, repr=False, compare=False)
    """The jitted callable and the example arguments it was lowered on, `(jitted,
    args, kwargs)`, for running the program as it is called (`profile`); None for a
    stage given as it is (nothing to call it with)."""
    checkpointed: bool | None = None
    """Whether the traced function holds a `jax.checkpoint` region (its backward pass
    then recomputes what the region's policy does not save); None where not known (a
    stage given as it is, a lowering for the local platform)."""

    @functools.cached_property
    def cost(self) -> Mapping[str, float] | None:
        """XLA's cost analysis of the lowered module (flops, bytes accessed), run
        when first read: it converts the module to HLO again (a third of a second
        at 10k ops), and a compiled target reports the optimized module's cost
        instead."""
        return self.cost_analysis() if self.cost_analysis is not None else None


@dataclasses.dataclass(frozen=True)
class CompiledFor:
    """What a module was compiled for: the local backend, or the TPU topology or GPU
    spec `--for` named, compiled here without the device (`hloscope.compile_for`)."""

    platform: str
    """`cpu`, `tpu`, `gpu` (a GPU spec), or the local backend's platform."""
    name: str
    """The TPU generation (`v5e`), the GPU spec (`h100`), or the local device kind."""
    spec: str | None
    """`--for` as given, normalised (`tpu:v5e:2x4`); None for the local backend."""
    topology: str | None
    """JAX's topology (`v5e:2x4`; `1x1x8` for GPUs); None for the local backend."""
    devices: int
    """The devices compiled for (the program's partitions x replicas), of how many the
    platform has (`platform_devices`)."""
    platform_devices: int
    device_kind: str
    """As XLA names the device: `TPU v5 lite`, `NVIDIA H100 80GB HBM3`, `cpu`."""
    compiler: str
    """What compiled it: `libtpu`, `jax-cuda12-plugin`, `jaxlib` (XLA's CPU compiler)."""
    compiler_version: str | None
    deviceless: bool
    """Compiled on a machine without the device (JAX's compile-only devices)."""
    autotuned: bool | None
    """On a GPU: whether XLA autotuned its kernels (never without the device); None
    elsewhere."""
    memory_bytes: int | None = None
    """One device's memory (the TPU's HBM, the GPU spec's device memory); None where
    not known."""
    memory_name: str = "memory"
    """What that memory is called: `HBM`, `GPU memory`."""
    slices: int = 1
    device_ids: tuple[int, ...] | None = None
    """With `--for`: the ids of the platform's devices compiled over, in the device
    assignment's order (partition by partition); None for the local backend."""
    slice_mesh_order: bool | None = None
    """With `--for`: whether that order is the one JAX's mesh helpers
    (`jax.make_mesh`, `mesh_utils.create_device_mesh`) give the platform's devices,
    the program having made its mesh with them; false where it is the program's own
    device list (or the platform's first devices); None for the local backend."""

    def __post_init__(self) -> None:
        # Read back from a child process's JSON (a dump compiled there): a list.
        if self.device_ids is not None:
            object.__setattr__(self, "device_ids", tuple(self.device_ids))


@dataclasses.dataclass(frozen=True)
class Compilation:
    """What XLA made of a module for the local backend, or for what `compiled_for`
    names."""

    hlo_proto: bytes
    """The optimized `HloModuleProto`."""
    hlo_text: str
    compile_seconds: float | None
    cost: Mapping[str, float] | None
    memory: Mapping[str, int] | None
    platform: str
    compiled_for: CompiledFor | None = None
    """What it was compiled for; None where not recorded (a `Compiled` given as it
    is)."""
    cached: bool = False
    """Read from hloscope's compile cache (`sources.compile_cache`), not compiled in
    this run: `compile_seconds` is then the seconds of the compile that made it."""


# --------------------------------------------------------------------------- sources

DumpFormat = Literal["mlir-bytecode", "mlir-text", "hlo-text", "hlo-proto", "jax-exported"]
"""What a dump holds."""

Stage = Literal["lowered", "optimized"]
"""Before XLA's optimizations (what JAX hands XLA) or after them."""
LOWERED: Final = "lowered"
OPTIMIZED: Final = "optimized"

SourceKind = Literal["entrypoint", "dump"]
"""A Python entrypoint (or object in hand) or a dumped module."""
SourceFormat = DumpFormat | Literal["entrypoint", "python-object"]
"""What was read to get the module."""


@dataclasses.dataclass(frozen=True)
class Source:
    """Where the module came from."""

    target: str
    """The target as the user gave it."""
    kind: SourceKind
    """`entrypoint` or `dump`."""
    format: SourceFormat
    """What was read: `entrypoint`, `mlir-text`, `mlir-bytecode`, `hlo-text`,
    `hlo-proto`, `jax-exported`."""
    ir: ParsedFormat
    """What the model was built from: `stablehlo`, `mlir`, `vhlo`, `hlo`, `hlo-native`."""
    stage: Stage
    """`lowered` (before XLA's optimizations) or `optimized`."""
    path: str | None
    """The file read, for dumps."""
    folder_module: str | None = None
    """The module picked in a dump folder."""
    folder_modules: tuple[str, ...] = ()
    """Every module of the dump folder."""
    compiled_for: CompiledFor | None = None
    """What the optimized module was compiled for, when it was compiled here; None for
    a lowered module and for an optimized module read as it is."""

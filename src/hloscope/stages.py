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
    runnable: Any = dataclasses.field(default=None, repr=False, compare=False)
    """The jitted callable and the example arguments it was lowered on, `(jitted,
    args, kwargs)`, for running the program as it is called (`profile`); None for a
    stage given as it is (nothing to call it with)."""

    @functools.cached_property
    def cost(self) -> Mapping[str, float] | None:
        """XLA's cost analysis of the lowered module (flops, bytes accessed), run
        when first read: it converts the module to HLO again (a third of a second
        at 10k ops), and a compiled target reports the optimized module's cost
        instead."""
        return self.cost_analysis() if self.cost_analysis is not None else None


@dataclasses.dataclass(frozen=True)
class Compilation:
    """What XLA made of a module for the local backend."""

    hlo_proto: bytes
    """The optimized `HloModuleProto`."""
    hlo_text: str
    compile_seconds: float | None
    cost: Mapping[str, float] | None
    memory: Mapping[str, int] | None
    platform: str


# --------------------------------------------------------------------------- profile


@dataclasses.dataclass(frozen=True)
class TraceEvent:
    """One execution of one XLA instruction, as JAX's profiler recorded it."""

    name: str
    """The instruction (`broadcast_add_fusion`, `while.6`): the trace's `hlo_op`."""
    run: int
    """Which measured run it belongs to (0 for the first), by the trace's `run_id`."""
    device: int
    """The device it ran on (the trace's `device_ordinal`)."""
    thread: int
    """The trace line (a host thread, a device stream) it was recorded on: events of
    one line nest, an instruction holding its while body's ones."""
    start_ns: float
    duration_ns: float


@dataclasses.dataclass(frozen=True)
class ProfiledRuns:
    """A compiled program run under JAX's profiler: the measured runs' wall times and
    the executions of its instructions the trace recorded."""

    module: str
    """The module that ran (`jit_f`): events of other modules are not kept."""
    run_seconds: tuple[float, ...]
    """Wall time of each measured run, as the caller saw it: the call until its
    results are ready."""
    warmup: int
    """Runs before the measured ones, not traced."""
    events: tuple[TraceEvent, ...]
    inputs: str
    """Where the inputs came from: `given`, `generated` (seeded random values for
    shapes), or both."""
    trace_file: str | None
    """The `.xplane.pb` kept in `--trace-dir`; None when the trace was temporary."""


@dataclasses.dataclass(frozen=True)
class ProgramRun:
    """One execution of a compiled program while a script ran under JAX's profiler."""

    module: str
    """The module that ran (`jit_step`), as the trace names it."""
    start_ns: float
    """When its first instruction started."""
    end_ns: float
    """When its last instruction ended."""


@dataclasses.dataclass(frozen=True)
class ProfiledScript:
    """A script run under JAX's profiler: what JAX compiled (`RecordedRun`) and every
    execution of a compiled program the trace recorded."""

    recorded: RecordedRun
    programs: tuple[ProgramRun, ...]
    trace_file: str | None
    """The `.xplane.pb` kept in `--trace-dir`; None when the trace was temporary."""


# --------------------------------------------------------------------------- aot-check


@dataclasses.dataclass(frozen=True)
class CompiledModule:
    """A module JAX handed XLA to compile, as it was handed over (StableHLO, before
    XLA's optimizations)."""

    name: str
    """The module's name: `jit_f`."""
    mlir_bytecode: bytes


InputOrigin = Literal["generated", "given", "python"]
"""Where a concrete input came from (`InputLeaf.origin`)."""


@dataclasses.dataclass(frozen=True)
class InputLeaf:
    """One leaf of the concrete arguments both paths were run on."""

    path: str
    """Pytree path of the leaf in the call: `args[0]`, `params['w']`, `lr`."""
    shape: str
    """HLO spelling (`f32[8,128]`), or the Python type of a non-array leaf."""
    origin: InputOrigin
    """`generated` (pseudo-random values for a `jax.ShapeDtypeStruct` or an `--arg`
    shape), `given` (an array the factory returned) or `python` (any other value,
    passed as it is)."""
    sharding: str | None
    """The sharding the array was placed with, when one was given."""


@dataclasses.dataclass(frozen=True)
class ResultLeaf:
    """One leaf of what a path returned, copied to the host."""

    path: str
    """Pytree path in the output: `result`, `result['w']`, `result[0]`."""
    shape: str
    """HLO spelling (`f32[8,128]`), or the Python type of a non-array leaf."""
    dtype: str | None
    """NumPy's name of the dtype (`float32`, `bfloat16`); None for a non-array leaf."""
    value: Any = dataclasses.field(repr=False, compare=False)
    """The values as a NumPy array, or the leaf itself when it is no array."""


@dataclasses.dataclass(frozen=True)
class PathRun:
    """One way of running a target: what JAX compiled while it ran and what it
    returned."""

    modules: tuple[CompiledModule, ...]
    """Every module compiled while the path ran, in order. For the AOT path: the
    modules compiled while the compiled executable ran (host callbacks running JAX
    code); the lowered module itself is `AotRuns.aot_lowering`."""
    structure: str
    """The output's pytree structure, as JAX prints it."""
    results: tuple[ResultLeaf, ...]
    seconds: float
    """Wall time of the call (for the AOT path: of running the compiled executable)."""
    notes: tuple[str, ...]
    """What the code printed or warned while it ran."""


AotVia = Literal["own", "__wrapped__", "jax.jit", "--aot"]
"""How the AOT entry was found (`AotEntry.via`)."""


@dataclasses.dataclass(frozen=True)
class AotEntry:
    """What the ahead-of-time path lowers, and why that object."""

    name: str
    """Its qualified name: `wrapped.difference`, or `jax.jit(params.loss)` when
    hloscope jitted the target."""
    via: AotVia
    """`own` (the target's own `.lower`), `__wrapped__` (found along the chain that
    `functools.wraps` leaves), `jax.jit` (hloscope jitted the target) or `--aot`
    (named by the user)."""
    expression: str
    """How the user reaches it: `difference.__wrapped__`, `jax.jit(loss)`."""
    reason: str
    """One sentence: why the AOT path is this object."""


@dataclasses.dataclass(frozen=True)
class AotRuns:
    """The target run both ways on the same concrete inputs: called as user code
    calls it, and lowered, compiled and run ahead of time."""

    entry: AotEntry
    inputs: tuple[InputLeaf, ...]
    seed: int
    """The seed of the pseudo-random inputs."""
    call: PathRun
    aot: PathRun
    aot_lowering: Lowering | None
    """What `.lower(...)` produced on the AOT path; None when `--aot` named a
    `jax.stages.Compiled` (no lowered module to compare)."""
    compile_seconds: float | None
    """Wall time of `.compile()` on the AOT path."""


@dataclasses.dataclass(frozen=True)
class ArgumentChange:
    """What changed in one argument between a function's closest earlier compilation
    and this one, as JAX's cache-miss explanation says."""

    path: str
    """Pytree path of the argument (`x`, `batch['x']`), or a static argument's name."""
    before: str
    """`f32[8,16]`, `f32[]{weak_type=True}`, a static value, a pytree node."""
    after: str
    kind: ChangeKind
    """What changed: a `type` (shape, dtype, weak type, sharding), a `static` value
    or the `pytree` structure."""


ChangeKind = Literal["type", "static", "pytree"]


@dataclasses.dataclass(frozen=True)
class RecordedCompile:
    """One compilation JAX performed while a program ran (`hloscope compiles`)."""

    function: str
    """The name JAX gives the function (`step`, `<lambda>`, `sin` for an eager op)."""
    source: str | None
    """`file.py:LINE` of its definition, as JAX reports it; None when JAX did not
    explain (functions outside the user's code, eager ops)."""
    call_site: str | None
    """`file.py:LINE` of the innermost frame of the user's code that led to it."""
    eager: bool
    """An op run outside any jit (a primitive, or one of JAX's own jitted functions
    such as `jnp.sin`), which JAX compiles alone."""
    signature: str | None
    """What JAX traced it for: argument avals (weak types and shardings included) and
    the input pytree (static values included); None when unknown."""
    cause: str | None
    """JAX's cache-miss explanation, on one line; None when JAX gave none."""
    changes: tuple[ArgumentChange, ...]
    started_seconds: float
    """When it started, in seconds after the recording began."""
    trace_seconds: float | None
    lower_seconds: float | None
    compile_seconds: float | None
    """XLA's compilation (or the persistent cache's lookup, when it served it)."""
    ops: int | None
    """Ops in the module JAX handed XLA (functions, returns and the module itself
    not counted)."""
    persistent_cache_hit: bool
    """Whether JAX's persistent compilation cache served the executable."""
    module: CompiledModule | None = dataclasses.field(default=None, repr=False, compare=False)
    """The module JAX handed XLA, when it was kept (the recording keeps the latest
    ones, within a memory bound)."""
    module_name: str | None = None
    """The module's name (`jit_step`), kept when the module is not: what JAX's profiler
    names the executions of its program (`hloscope profile SCRIPT.py`)."""


@dataclasses.dataclass(frozen=True)
class RecordedRun:
    """Everything JAX compiled while a program ran, and how the program ended."""

    label: str
    """What ran: the script and its arguments, or the function."""
    compiles: tuple[RecordedCompile, ...]
    wall_seconds: float
    exit_code: int
    """The program's exit code (`sys.exit(n)`; 0 when it returned)."""
    error: str | None
    """The exception the program raised, on one line (`ValueError: ... (at f.py:3)`)."""
    modules_dropped: int = 0
    """Modules not kept, over the memory bound."""


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

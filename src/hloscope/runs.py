"""What running a target recorded, as plain data: its compilations (`compiles`), the
profiled runs of its programs (`profile`), and the two runs `aot-check` compares.
Like `hloscope.stages`, the sources build these (`hloscope.sources.jax`) and the
analyses, reports and renderers read them; a command that reads a dump never loads
them.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from hloscope.stages import Lowering


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
    """`file.py:LINE` of the innermost frame of the user's code that led to it; None
    where no frame of the user's code led to it (`called_by_hloscope`)."""
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
    called_by_hloscope: bool = False
    """hloscope made the call itself (a jitted target called on `--args`): there is no
    call site in the user's code."""


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

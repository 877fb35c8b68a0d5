"""The front of the pipeline: a target in, a parsed module out.

    target -> source (entrypoint | dump) -> lower / compile (jax) -> parse (jaxlib)

`load` decides what a target string names, imports and lowers an entrypoint (or
reads and sniffs a dump), compiles when the optimized module is wanted, and parses
the result into the model. `load_object` does the same for a Python object in hand
(a function, a `Lowered`, `Compiled` or `Exported`) and `load_data` for module text
or bytes in hand (the Python API's inputs); the three share every step after
finding what to lower or parse. `load_runs` (for `aot-check`) imports an entrypoint,
runs it as called and through its AOT path, and parses every module either path
compiled; `load_runs_object` does it for a function in hand. Example arguments come
from the command line's `--arg`/`--args`, or as Python values (`Call`). Every failure
is a `HloscopeError` naming the input.
"""

from __future__ import annotations

import contextlib
import dataclasses
import re
import tempfile
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from hloscope.compile_for import CompileFor
from hloscope.errors import DoesNotFit, HloscopeError, display_path
from hloscope.ir import parse
from hloscope.ir.attributes import Mesh
from hloscope.ir.model import Module
from hloscope.ir.parsed import ParsedModule
from hloscope.sources import dumps
from hloscope.sources.entrypoint import ProgramEnv, environment_set, forget_imported, import_target
from hloscope.sources.programs import LoweringProgram, ModuleProgram, Program
from hloscope.sources.target import (
    DumpTarget,
    EntrypointTarget,
    parse_arg_spec,
    parse_target,
)
from hloscope.stages import (
    LOWERED,
    OPTIMIZED,
    DumpFormat,
    Source,
    SourceFormat,
    Stage,
)

if TYPE_CHECKING:
    from hloscope.runs import AotRuns, CompiledModule, ProfiledRuns
    from hloscope.stages import Compilation, CompilerOptions, Lowering

PYTHON_OBJECT: Final = "python-object"
"""`Source.format` of a Python object given in hand (the Python API)."""

# How to give example arguments, in the Python API's words (`sources.jax.arguments` has
# the command line's, `CLI_ARGUMENTS_HINT`).
API_ARGUMENTS_HINT = (
    "pass them after it, as it is called: hloscope.inspect(f, *args, **kwargs), with "
    "arrays or jax.ShapeDtypeStructs (any pytree)"
)


@dataclasses.dataclass(frozen=True, eq=False)
class Call:
    """Example arguments given as Python values (the Python API): what the function
    is called with. Leaves are arrays or `jax.ShapeDtypeStruct`s (any pytree); other
    values are passed as they are (static arguments)."""

    args: tuple[Any, ...] = ()
    kwargs: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def given(self) -> bool:
        """Whether any argument was given."""
        return bool(self.args or self.kwargs)


@dataclasses.dataclass(frozen=True)
class LoadOptions:
    """How to load a target (the command line's target options)."""

    args: tuple[str, ...] = ()
    """`--arg` shape specs, one per positional argument."""
    args_factory: str | None = None
    """`--args` target returning the example arguments."""
    module: str | None = None
    """`--module`: which module of a dump folder."""
    optimized: bool = False
    """Read the optimized module (compiling when needed) instead of the lowered one."""
    compile_dumps: bool = True
    """With `optimized`: compile a before-optimization dump. False refuses one
    instead, naming `--compile` (commands that always read the optimized module
    compile dumps only when asked)."""
    compiler_options: CompilerOptions = ()
    """XLA debug options for the compilation done here (`xla_dump_to` and the
    dump flags of the views that read XLA's dump files)."""
    defer_model: bool = False
    """Build the model of a module parsed as MLIR when it is first asked for
    (`ParsedModule.model`), not while loading: the browser prints a module first."""
    compile_for: CompileFor | None = None
    """`--for`: compile for this TPU topology or GPU spec, without the device, instead
    of the local backend (it implies `optimized`)."""
    env: ProgramEnv | None = None
    """Environment variables set while an entrypoint is imported (afresh), its
    arguments built, and it is lowered and compiled (`diff --env-a`); None: the
    process's environment, and a module imported already is not imported again."""


@dataclasses.dataclass(eq=False)
class Loaded:
    """A loaded target: the model and everything known about where it came from."""

    source: Source
    parsed: ParsedModule
    lowering: Lowering | None
    """For entrypoints and Exported artifacts: what JAX knows about the lowering."""
    compilation: Compilation | None
    """When the optimized module was produced by compiling here."""
    load_seconds: float
    notes: tuple[str, ...] = ()
    options: LoadOptions = dataclasses.field(default_factory=LoadOptions)
    program: Program | None = dataclasses.field(default=None, repr=False)
    """What can be compiled (again): None for an optimized module read as it is."""
    declared_meshes: tuple[Mesh, ...] = ()
    """For a module compiled here: the meshes the module it was compiled from
    declares, under the user's axis names (XLA's own say `axis_0`, `axis_1`)."""

    @property
    def module(self) -> Module:
        return self.parsed.model

    @property
    def label(self) -> str:
        return self.source.target

    def lowered_model(self) -> Module | None:
        """The lowered module: the module loaded when it is the lowered one, else the
        lowering's module JAX gave (read again from its bytecode, not lowered again);
        None without one (a dump)."""
        if self.source.stage != OPTIMIZED:
            return self.module
        lowering = self.lowering
        if lowering is None or lowering.mlir_bytecode is None:
            return None
        parsed = parse.parse_mlir(
            lowering.mlir_bytecode,
            f"{self.label} (lowered)",
            trusted=lowering.kind != "exported",
        )
        return parsed.model

    def optimized(self) -> Loaded:
        """The same target's optimized module: this one when it is, else compiled
        here with the load options' `compiler_options`."""
        if self.source.stage == OPTIMIZED:
            return self
        return self.compiled()

    def compiled(self, compiler_options: CompilerOptions = ()) -> Loaded:
        """The optimized module compiled here (again, when this is it already), with the
        load options' `compiler_options` and then `compiler_options`."""
        if self.program is None:
            raise HloscopeError(
                "this is an optimized module, read as it is: there is nothing to compile",
                where=self.label,
            )
        start = time.perf_counter()
        options = dataclasses.replace(
            self.options,
            optimized=True,
            compiler_options=(*self.options.compiler_options, *compiler_options),
        )
        compilation = self.program.compile(self.label, options.compiler_options)
        return self._with_compilation(compilation, options, start)

    def reread(self) -> Loaded:
        """The optimized module compiled here, read again from its compilation (in the
        form the caller's `parse.in_xla_form()` asks for), not compiled again."""
        assert self.compilation is not None and self.program is not None
        read = self.parsed.notes
        kept = self.notes[: -len(read)] if read and self.notes[-len(read) :] == read else self.notes
        unread = dataclasses.replace(self, notes=kept)
        return unread._with_compilation(self.compilation, self.options, time.perf_counter())

    def profiled(
        self, runs: int | None = None, warmup: int = 1, trace_dir: str | None = None
    ) -> tuple[Loaded, ProfiledRuns]:
        """Compile the target here and run it under JAX's profiler (`Program.profile`):
        the optimized module that ran, and the runs' times and events. The trace goes
        to `trace_dir`, or to a temporary folder it owns."""
        if self.options.compile_for is not None:
            raise needs_the_device("profile", self.options.compile_for)
        if self.program is None:
            raise HloscopeError(
                "this is an optimized module, read as it is: profiling compiles and runs "
                "a program here, so give the module before optimizations (a dump "
                "folder's before_optimizations file) or the Python function",
                where=self.label,
            )
        start = time.perf_counter()
        options = dataclasses.replace(self.options, optimized=True)
        compilation, profiled = self.program.profile(
            self.label, self.module, runs, warmup, trace_dir
        )
        return self._with_compilation(compilation, options, start), profiled

    def _with_compilation(
        self, compilation: Compilation, options: LoadOptions, start: float
    ) -> Loaded:
        """The same target, as the optimized module `compilation` holds."""
        assert self.program is not None
        parsed = self.program.read_optimized(compilation, self.label)
        return Loaded(
            source=dataclasses.replace(
                self.source,
                ir=parsed.format,
                stage=OPTIMIZED,
                compiled_for=compilation.compiled_for,
            ),
            parsed=parsed,
            lowering=self.lowering,
            compilation=compilation,
            load_seconds=self.load_seconds + time.perf_counter() - start,
            notes=self.notes + parsed.notes,
            options=options,
            program=self.program,
            declared_meshes=self.declared_meshes or self.module.meshes,
        )

    def compile_refusal(self) -> str | None:
        """Why compiling the target here would fail, known without compiling (custom
        calls the local backend cannot run); None when nothing says so or when there is
        nothing to compile."""
        return self.program.refusal() if self.program is not None else None

    @contextlib.contextmanager
    def compiled_with_dumps(
        self, compiler_options: CompilerOptions, refusal: str, keep_refused: bool = False
    ) -> Iterator[XlaDump]:
        """Compile the target here with XLA dumping into a temporary folder (with
        `compiler_options`: which files to write) and hand over what it wrote; the
        folder is removed when the `with` block ends. `refusal` says why an optimized
        module read as it is (nothing to compile) cannot give what was wanted.
        `keep_refused`: when XLA refuses a program that does not fit the device
        (`DoesNotFit`), hand over what it wrote before refusing, with no `compiled`."""
        if self.program is None:
            raise HloscopeError(refusal, where=self.label)
        with tempfile.TemporaryDirectory(prefix="hloscope-xla-") as folder:
            try:
                compiled = self.compiled((("xla_dump_to", folder), *compiler_options))
            except DoesNotFit as exc:
                if not keep_refused:
                    raise
                yield XlaDump(Path(folder), None, exc)
                return
            yield XlaDump(Path(folder), compiled)


@dataclasses.dataclass(frozen=True)
class XlaDump:
    """What XLA wrote while compiling a loaded target here (`Loaded.compiled_with_dumps`)."""

    folder: Path
    """The dump folder (temporary: gone after the `with` block)."""
    compiled: Loaded | None
    """The optimized module XLA made; None when XLA refused it (`refused`)."""
    refused: DoesNotFit | None = None
    """XLA's refusal of a program that does not fit the device, when kept."""


def loading_step(target: str) -> str:
    """What loading `target` does, for a progress line: `importing and lowering the
    entrypoint`, `reading the module file`, `reading the dump folder`."""
    try:
        parsed = parse_target(target)
    except HloscopeError:
        return "loading"
    if isinstance(parsed, EntrypointTarget):
        return "importing and lowering the entrypoint"
    return "reading the dump folder" if parsed.path.is_dir() else "reading the module file"


def load(target: str, options: LoadOptions | None = None, call: Call | None = None) -> Loaded:
    """Load `target` (a path or an entrypoint) as `options` say. `call` gives an
    entrypoint's example arguments as Python values instead of `--arg`/`--args`."""
    options = options or LoadOptions()
    start = time.perf_counter()
    parsed_target = parse_target(target)
    if isinstance(parsed_target, EntrypointTarget):
        with environment_set(options.env):
            loaded = _load_entrypoint(target, parsed_target, options, call)
    else:
        if call is not None and call.given:
            raise HloscopeError(
                "example arguments are for functions, and this is a module file or folder",
                where=target,
            )
        loaded = _load_dump(target, parsed_target, options)
    loaded.load_seconds = time.perf_counter() - start
    return loaded


def load_object(
    obj: Any, label: str, options: LoadOptions | None = None, call: Call | None = None
) -> Loaded:
    """Load a Python object in hand, as an entrypoint naming it would be: a function
    (jitted or not) lowered on `call`'s arguments, a `jax.stages.Lowered` or
    `Compiled`, a `jax.export.Exported`, or a zero-argument callable returning one of
    those. `label` names it in reports and errors (`module:qualname`)."""
    options = options or LoadOptions()
    start = time.perf_counter()
    _refuse_target_options(options, "a Python object")
    call = call or Call()
    if call.given:
        from hloscope.sources.jax.lower import is_stage

        if is_stage(obj):
            raise HloscopeError(
                f"it is already traced ({type(obj).__name__}): example arguments are for functions",
                where=label,
            )
    entrypoint = _Entrypoint(obj, call.args, dict(call.kwargs), call.given, ())
    with environment_set(options.env):
        loaded = _lower_entrypoint(label, label, PYTHON_OBJECT, entrypoint, options, call)
    loaded.load_seconds = time.perf_counter() - start
    return loaded


def load_data(data: str | bytes, label: str, options: LoadOptions | None = None) -> Loaded:
    """Load module text or bytes in hand, as a file holding them would be: any format
    a dump may have (StableHLO/MLIR text or bytecode, VHLO, HLO text or proto, a
    serialized `jax.export.Exported`), recognised by content. `label` names it in
    reports and errors (`<string>`)."""
    options = options or LoadOptions()
    start = time.perf_counter()
    _refuse_target_options(options, "module text or bytes")
    raw = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    if not raw.strip():
        raise HloscopeError("the module is empty", where=label)
    loaded = _load_dump_data(label, raw, label, options, path=None, file_name="")
    loaded.load_seconds = time.perf_counter() - start
    return loaded


def takes_arguments(obj: Any) -> bool:
    """Whether `obj` is lowered on example arguments: a function, jitted or not (a
    `Lowered`, `Compiled` or `Exported` is already traced)."""
    if not callable(obj):
        return False
    from hloscope.sources.jax.lower import is_stage

    return not is_stage(obj)


def _hint(call: Call | None) -> str:
    """How to give example arguments, in the words of the front end that asked."""
    if call is not None:
        return API_ARGUMENTS_HINT
    from hloscope.sources.jax.arguments import CLI_ARGUMENTS_HINT

    return CLI_ARGUMENTS_HINT


def _refuse_target_options(options: LoadOptions, what: str) -> None:
    if options.module is not None:
        raise HloscopeError(f"module= picks a module of a dump folder; this is {what}")
    if options.args or options.args_factory:
        raise HloscopeError(f"--arg and --args are for target strings; this is {what}")


def needs_the_device(command: str, target: CompileFor) -> HloscopeError:
    """The refusal of a command that runs the program (`aot-check`, `profile`): `--for`
    compiles without the device, and running needs it."""
    return HloscopeError(
        f"{command} runs the program, which needs the device: --for {target.spec} compiles "
        f"without one. Run {command} on a machine with the device, without --for"
    )


# --------------------------------------------------------------------------- entrypoints


@dataclasses.dataclass(frozen=True)
class _Entrypoint:
    """An imported entrypoint and its example arguments."""

    obj: Any
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    given_args: bool
    """Whether the user gave example arguments (`--arg` or `--args`)."""
    notes: tuple[str, ...]
    """What importing printed or warned."""
    sharding_lines: Mapping[int, str] = dataclasses.field(default_factory=dict)
    """Per argument leaf's position, the line of the `--args` factory that built its
    sharding (`arguments.factory_arguments`)."""


def _import_entrypoint(
    target: EntrypointTarget,
    options: LoadOptions,
    extra: EntrypointTarget | None = None,
    call: Call | None = None,
) -> tuple[_Entrypoint, Any]:
    """Import the target (and `extra`, another object the command needs) and build
    its example arguments (from `--arg`/`--args`, or `call`'s values)."""
    if options.module is not None:
        raise HloscopeError("--module picks a module of a dump folder; this is an entrypoint")
    specs = [parse_arg_spec(spec) for spec in options.args]
    if specs and options.args_factory:
        raise HloscopeError("give example arguments with --arg or with --args, not both")
    if call is not None and (specs or options.args_factory):
        raise HloscopeError("example arguments given twice: as Python values and with --arg/--args")
    # The user's module first: it may configure JAX (XLA_FLAGS, jax.config) when
    # imported, which only works before a backend exists.
    import_notes: list[str] = []
    given_devices = None
    if options.compile_for is not None:
        from hloscope.native_stderr import native_stderr_captured

        with native_stderr_captured():
            # Importing JAX here, before the user's module does (inside `user_code`):
            # with JAX's CUDA plugin installed, it logs to the native stderr.
            from hloscope.sources.jax.platforms import give_program_devices

        # As many host devices as the platform has, before the program builds a mesh.
        given_devices = give_program_devices(options.compile_for)
    factory_target = parse_target(options.args_factory) if options.args_factory else None
    if options.env is not None:
        forget_imported([t for t in (target, factory_target) if isinstance(t, EntrypointTarget)])
    obj = import_target(target, import_notes)
    extra_obj = import_target(extra, import_notes) if extra is not None else None
    factory = None
    if options.args_factory:
        if not isinstance(factory_target, EntrypointTarget):
            raise HloscopeError(
                f"--args {options.args_factory}: expected module:callable or file.py:callable"
            )
        factory = import_target(factory_target, import_notes)
    if options.compile_for is not None:
        from hloscope.sources.jax.platforms import program_device_count

        program_device_count(options.compile_for, given_devices)
    from hloscope.sources.jax.backend import plugins_loaded_quietly

    # Imported as it is (it may configure JAX or libtpu when imported); before its
    # arguments are made and it runs, which start JAX's backends.
    plugins_loaded_quietly()

    from hloscope.sources.jax.arguments import example_arguments, factory_arguments

    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = {}
    sharding_lines: dict[int, str] = {}
    if call is not None:
        args, kwargs = tuple(call.args), dict(call.kwargs)
    elif factory is not None:
        args, kwargs = factory_arguments(factory, options.args_factory or "", sharding_lines)
    elif specs:
        args = example_arguments(specs)
    given = call.given if call is not None else bool(specs or factory is not None)
    entrypoint = _Entrypoint(obj, args, kwargs, given, tuple(import_notes), sharding_lines)
    return entrypoint, extra_obj


def _load_entrypoint(
    text: str, target: EntrypointTarget, options: LoadOptions, call: Call | None = None
) -> Loaded:
    mesh_notes: list[str] = []
    with _slice_meshes(options, mesh_notes, call):
        entrypoint, _ = _import_entrypoint(target, options, call=call)
        loaded = _lower_entrypoint(text, target.label, "entrypoint", entrypoint, options, call)
    loaded.notes += tuple(mesh_notes)
    return loaded


def _slice_meshes(options: LoadOptions, notes: list[str], call: Call | None) -> Any:
    """Under `--for`, a mesh JAX's helpers make while the target is imported, its
    arguments made (not given: `call`'s keep theirs) and it is lowered is the slice's."""
    if options.compile_for is None or (call is not None and call.given):
        return contextlib.nullcontext()
    from hloscope.native_stderr import native_stderr_captured

    with native_stderr_captured():  # importing JAX logs there with its CUDA plugin
        from hloscope.sources.jax.slice_mesh import slice_meshes
    return slice_meshes(options.compile_for, notes)


def _lower_entrypoint(
    text: str,
    label: str,
    fmt: SourceFormat,
    entrypoint: _Entrypoint,
    options: LoadOptions,
    call: Call | None,
) -> Loaded:
    """Lower (and, when asked or needed, compile) what an entrypoint or an object in
    hand names, and parse the module."""
    from hloscope.sources.jax.lower import lower

    platform = None
    if options.compile_for is not None:
        from hloscope.sources.jax.platforms import lowering_platform

        platform = lowering_platform(options.compile_for)
    lowering = lower(
        entrypoint.obj,
        entrypoint.args,
        entrypoint.kwargs,
        label,
        given_args=entrypoint.given_args,
        arguments_hint=_hint(call),
        platform=platform,
    )
    if entrypoint.sharding_lines:
        lowering = dataclasses.replace(
            lowering,
            arguments=tuple(
                dataclasses.replace(
                    leaf, sharding_source=entrypoint.sharding_lines.get(leaf.position)
                )
                for leaf in lowering.arguments
            ),
        )
    notes = entrypoint.notes + lowering.notes
    program = LoweringProgram(lowering, options.compile_for)
    stage: Stage
    if lowering.mlir_bytecode is None or options.optimized:
        compilation = program.compile(label, options.compiler_options)
        parsed = program.read_optimized(compilation, label)
        stage = OPTIMIZED
    else:
        compilation = None
        parsed = parse.parse_mlir(
            lowering.mlir_bytecode, label, trusted=True, defer_model=options.defer_model
        )
        stage = LOWERED
    source = Source(
        target=text,
        kind="entrypoint",
        format=fmt,
        ir=parsed.format,
        stage=stage,
        path=None,
        compiled_for=compilation.compiled_for if compilation is not None else None,
    )
    declared: tuple[Mesh, ...] = ()
    if stage == OPTIMIZED and lowering.mlir_bytecode is not None:
        declared = parse.declared_meshes(lowering.mlir_bytecode)
    return Loaded(
        source,
        parsed,
        lowering,
        compilation,
        0.0,
        notes + parsed.notes,
        options,
        program,
        declared_meshes=declared,
    )


# --------------------------------------------------------------------------- aot-check


@dataclasses.dataclass(eq=False)
class LoadedRuns:
    """An entrypoint run both ways (called, and through the AOT path), with the
    modules each path compiled parsed into the model."""

    target: str
    """The target as the user gave it."""
    aot_target: str | None
    """`--aot`, when given."""
    runs: AotRuns
    call_modules: tuple[ParsedModule, ...]
    """Every module compiled during the call, in order."""
    aot_module: ParsedModule | None
    """The module the AOT path lowered (None when `--aot` named a `Compiled`)."""
    aot_run_modules: tuple[ParsedModule, ...]
    """Modules compiled while the AOT-compiled executable ran (host callbacks)."""
    load_seconds: float
    notes: tuple[str, ...]


def load_runs(
    target: str,
    options: LoadOptions,
    aot_target: str | None = None,
    call: Call | None = None,
) -> LoadedRuns:
    """Import an entrypoint, run it as called and through the AOT path on the same
    concrete inputs, and parse every module either path compiled. `call` gives the
    example arguments as Python values instead of `--arg`/`--args`."""
    start = time.perf_counter()
    parsed_target = parse_target(target)
    if isinstance(parsed_target, DumpTarget) and parsed_target.path.suffix == ".py":
        from hloscope.sources.entrypoint import python_file_error

        raise python_file_error(parsed_target.path)
    if not isinstance(parsed_target, EntrypointTarget):
        raise HloscopeError(
            "aot-check runs a function: name an entrypoint (file.py:function or "
            "pkg.module:function), not a dump",
            where=target,
        )
    if options.compile_for is not None:
        raise needs_the_device("aot-check", options.compile_for)
    if options.optimized:
        raise HloscopeError("aot-check compares the lowered modules; --compile does not apply")
    aot_parsed = _aot_target(aot_target) if aot_target is not None else None
    entrypoint, aot_obj = _import_entrypoint(parsed_target, options, aot_parsed, call)
    return _run_both_ways(
        target,
        parsed_target.label,
        entrypoint,
        aot_obj,
        aot_target,
        aot_parsed.label if aot_parsed is not None else None,
        start,
        _hint(call),
    )


def load_runs_object(
    obj: Any, label: str, call: Call | None = None, aot: Any = None, aot_label: str | None = None
) -> LoadedRuns:
    """`load_runs` for a function in hand, called on `call`'s arguments. `aot` names
    the AOT object: a target string, or an object in hand (named `aot_label`)."""
    start = time.perf_counter()
    call = call or Call()
    notes: list[str] = []
    aot_obj = aot
    if isinstance(aot, str):
        aot_parsed = _aot_target(aot, "aot=")
        aot_obj, aot_label = import_target(aot_parsed, notes), aot_parsed.label
    entrypoint = _Entrypoint(obj, call.args, dict(call.kwargs), call.given, tuple(notes))
    return _run_both_ways(
        label, label, entrypoint, aot_obj, aot_label, aot_label, start, API_ARGUMENTS_HINT
    )


def _aot_target(text: str, option: str = "--aot ") -> EntrypointTarget:
    parsed = parse_target(text)
    if not isinstance(parsed, EntrypointTarget):
        raise HloscopeError(f"{option}{text}: expected module:attribute or file.py:attribute")
    return parsed


def _run_both_ways(
    target: str,
    label: str,
    entrypoint: _Entrypoint,
    aot_obj: Any,
    aot_target: str | None,
    aot_label: str | None,
    start: float,
    arguments_hint: str,
) -> LoadedRuns:
    from hloscope.sources.jax.aot import aot_runs

    runs = aot_runs(
        entrypoint.obj,
        entrypoint.args,
        entrypoint.kwargs,
        label,
        aot_obj,
        aot_label,
        arguments_hint=arguments_hint,
    )

    def parse_compiled(module: CompiledModule) -> ParsedModule:
        return parse.parse_mlir(module.mlir_bytecode, f"{label} ({module.name})")

    call_modules = tuple(parse_compiled(m) for m in runs.call.modules)
    aot_run_modules = tuple(parse_compiled(m) for m in runs.aot.modules)
    aot_module = None
    lowering = runs.aot_lowering
    if lowering is not None and lowering.mlir_bytecode is not None:
        aot_module = parse.parse_mlir(lowering.mlir_bytecode, f"{label} (AOT)")
    notes = (
        entrypoint.notes
        + runs.call.notes
        + (lowering.notes if lowering is not None else ())
        + runs.aot.notes
    )
    return LoadedRuns(
        target=target,
        aot_target=aot_target,
        runs=runs,
        call_modules=call_modules,
        aot_module=aot_module,
        aot_run_modules=aot_run_modules,
        load_seconds=time.perf_counter() - start,
        notes=tuple(dict.fromkeys(notes)),
    )


# --------------------------------------------------------------------------- dumps


def _load_dump(text: str, target: DumpTarget, options: LoadOptions) -> Loaded:
    path = target.path
    notes: list[str] = []
    folder_module = None
    folder_modules: tuple[str, ...] = ()
    stage_hint: Stage | None = None
    if path.is_dir():
        folder = dumps.list_folder(path)
        if folder.truncated:
            notes.append(
                f"the folder has more than {dumps.MAX_FOLDER_ENTRIES:,} entries; only "
                f"{dumps.MAX_FOLDER_ENTRIES:,} of them were listed"
            )
        picked, note = folder.pick(options.module)
        if note:
            notes.append(note)
        folder_module = picked.key
        folder_modules = tuple(m.key for m in folder.modules)
        if (
            options.optimized
            and picked.after is not None
            and (options.compile_for is None or picked.before is None)
        ):
            file, stage_hint = picked.after, OPTIMIZED
        elif picked.before is not None:
            # A plain folder of modules names no stage: each file's content (and
            # name) says it, as for the file alone.
            file = picked.before
            stage_hint = LOWERED if folder.kind != "folder" else None
        elif picked.after is not None:
            file, stage_hint = picked.after, OPTIMIZED
        else:
            # Only per-pass files: the module after the last pass dumped.
            file, stage_hint = picked.passes[-1].path, OPTIMIZED
    else:
        if path.suffix == ".py":
            from hloscope.sources.entrypoint import python_file_error

            raise python_file_error(path)
        if options.module is not None:
            raise HloscopeError("--module picks a module of a dump folder; this is a file")
        file = path
    if options.args or options.args_factory:
        raise HloscopeError("--arg and --args give example arguments to entrypoints, not dumps")
    data = dumps.read_file(file)
    label = display_path(file)
    return _load_dump_data(
        text,
        data,
        label,
        options,
        path=label,
        file_name=file.name,
        stage_hint=stage_hint,
        notes=tuple(notes),
        folder_module=folder_module,
        folder_modules=folder_modules,
    )


def _load_dump_data(
    text: str,
    data: bytes,
    label: str,
    options: LoadOptions,
    *,
    path: str | None,
    file_name: str,
    stage_hint: Stage | None = None,
    notes: tuple[str, ...] = (),
    folder_module: str | None = None,
    folder_modules: tuple[str, ...] = (),
) -> Loaded:
    """Parse a dump's bytes (read from a file, or given in hand), compiling them when
    the optimized module is wanted. `path`: the file read, if any."""
    if options.optimized and options.compile_dumps:
        # The compiling child gets ready while the dump is parsed here.
        from hloscope.sources.jax.module_run import start_runner

        start_runner()
    fmt, parsed, lowering = _parse_dump(data, label, options.defer_model)
    stage = stage_hint or _stage_of(parsed, data, file_name)
    compilation = None
    program = None if stage == OPTIMIZED else ModuleProgram(parsed, compile_for=options.compile_for)
    if program is None and options.compile_for is not None:
        raise HloscopeError(
            f"this is a module after XLA's optimizations, compiled already: --for "
            f"{options.compile_for.spec} compiles a module before them (a dump folder's "
            "before_optimizations file, or the Python function)",
            where=label,
        )
    if program is not None and options.optimized:
        if not options.compile_dumps:
            raise HloscopeError(
                "this is a module before XLA's optimizations, and this view reads the "
                "optimized one: add --compile to compile it for the local backend",
                where=label,
            )
        compilation = program.compile(label, options.compiler_options)
        parsed = program.read_optimized(compilation, label)
        stage = OPTIMIZED
    source = Source(
        target=text,
        kind="dump",
        format=fmt,
        ir=parsed.format,
        stage=stage,
        path=path,
        folder_module=folder_module,
        folder_modules=folder_modules,
        compiled_for=compilation.compiled_for if compilation is not None else None,
    )
    all_notes = notes + (lowering.notes if lowering else ()) + parsed.notes
    return Loaded(source, parsed, lowering, compilation, 0.0, all_notes, options, program)


def _parse_dump(
    data: bytes, label: str, defer_model: bool = False
) -> tuple[DumpFormat, ParsedModule, Lowering | None]:
    fmt = dumps.sniff_bytes(data)
    if fmt == dumps.MLIR_BYTECODE:
        return fmt, parse.parse_mlir(data, label, defer_model=defer_model), None
    if fmt == dumps.HLO_PROTO:
        try:
            return fmt, parse.parse_hlo_proto(data, label), None
        except HloscopeError:
            if not dumps.looks_like_flatbuffer(data):
                raise
            fmt = dumps.JAX_EXPORTED
    if fmt == dumps.JAX_EXPORTED:
        from hloscope.sources.jax.lower import deserialize_exported

        lowering = deserialize_exported(data, label)
        assert lowering.mlir_bytecode is not None
        parsed = parse.parse_mlir(lowering.mlir_bytecode, label, defer_model=defer_model)
        return fmt, parsed, lowering
    if fmt == dumps.UNKNOWN_BINARY:
        raise HloscopeError(
            f"not a module: a binary file in none of the formats hloscope reads ({READ_FORMATS})",
            where=label,
        )
    text = dumps.decode_text(data) or ""
    if fmt == dumps.UNKNOWN_TEXT:
        # Neither looks right; accept whichever parser takes it.
        for attempt in (dumps.MLIR_TEXT, dumps.HLO_TEXT):
            try:
                return attempt, _parse_text(attempt, text, label, defer_model), None
            except HloscopeError:
                continue
        raise _not_a_module_text(label)
    try:
        return fmt, _parse_text(fmt, text, label, defer_model), None
    except HloscopeError as first:
        other: DumpFormat = dumps.HLO_TEXT if fmt == dumps.MLIR_TEXT else dumps.MLIR_TEXT
        try:
            return other, _parse_text(other, text, label, defer_model), None
        except HloscopeError:
            if not dumps.starts_like_a_module(text):
                # A README or a config file: where its parse failed says nothing.
                raise _not_a_module_text(label) from None
            raise first from None


READ_FORMATS = (
    "hloscope reads StableHLO/MLIR text or bytecode, HLO text or an HloModuleProto, a "
    "serialized jax.export.Exported, an XLA or JAX dump folder, or a Python function "
    "as file.py:function"
)


def _not_a_module_text(label: str) -> HloscopeError:
    return HloscopeError(
        f"not a module: a text file that is neither MLIR (StableHLO) nor HLO text ({READ_FORMATS})",
        where=label,
    )


def _parse_text(fmt: DumpFormat, text: str, label: str, defer_model: bool) -> ParsedModule:
    if fmt == dumps.HLO_TEXT:
        return parse.parse_hlo_text(text, label)
    return parse.parse_mlir(text, label, defer_model=defer_model)


_SCHEDULED = re.compile(r"^\s*HloModule\b[^\n]*\bis_scheduled=true", re.MULTILINE)


def _stage_of(parsed: ParsedModule, data: bytes, file_name: str) -> Stage:
    if "after_optimizations" in file_name:
        return OPTIMIZED
    if parsed.format in ("hlo", "hlo-native"):
        if _SCHEDULED.search(data[:65536].decode("utf-8", "replace")):
            return OPTIMIZED
        if any(op.name in ("mhlo.fusion", "hlo.fusion") for op in parsed.model.ops):
            return OPTIMIZED
    return LOWERED

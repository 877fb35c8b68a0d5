"""The Python API for interactive debugging: `hloscope.inspect` and `hloscope.diff`.

In a REPL, a notebook or at a pdb breakpoint, the function and its arguments are in
hand:

    insp = hloscope.inspect(train_step, params, batch)   # lowered on those arguments
    insp.params            # which arguments the compiler got
    insp.fusions()         # what XLA fused (compiles)
    insp.memory()          # what is live at the memory peak (compiles)
    insp.remat()           # what the backward pass keeps (insp: the loss)
    insp.browse()          # the browser, in this terminal

`inspect` loads what it is given through the same pipeline as the command line
(`hloscope.sources.loader`: `load`, `load_object`, `load_data`), and the reports are
the objects the commands print (`hloscope.reports`), shown with the commands'
renderers (`render.display`): `insp.params.to_json()` is what `hloscope params --json`
prints. Importing this module imports nothing heavy; the first `inspect` loads JAX
and jaxlib, `browse` loads textual.
"""

from __future__ import annotations

import dataclasses
import functools
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hloscope.errors import HloscopeError
from hloscope.render.display import Displayed, renderers, shown

if TYPE_CHECKING:
    from rich.console import Console

    from hloscope.analyses.structure import Structure
    from hloscope.ir.model import Module
    from hloscope.reports import (
        AotReport,
        CompilesReport,
        DiffReport,
        EstimateReport,
        FusionsReport,
        InspectReport,
        MemoryReport,
        ParamsReport,
        PassesReport,
        PlacementReport,
        ProfileReport,
        RematReport,
    )
    from hloscope.reports.compare import CompareRow, CompareSort, Comparison
    from hloscope.sources.loader import Call, Loaded, LoadOptions
    from hloscope.stages import Source

__all__ = ["Inspection", "Watch", "compare", "diff", "inspect", "watch"]

# Labels of module text and bytes given in hand (as Python names source it has no
# file for: `<string>`).
TEXT_LABEL = "<string>"
BYTES_LABEL = "<bytes>"


@dataclasses.dataclass(frozen=True, eq=False)
class _Origin:
    """What an `Inspection` was made from, to load it again another way (the
    optimized module of a dump folder) or run it (`aot_check`)."""

    kind: str
    """`target` (a path or an entrypoint string), `object` (a Python object) or
    `data` (module text or bytes)."""
    value: Any
    call: Call | None
    """Example arguments as Python values (objects and entrypoint strings)."""
    options: LoadOptions


def inspect(obj: Any, /, *args: Any, **kwargs: Any) -> Inspection:
    """Load `obj` and return an `Inspection` of its module.

    `obj` may be a function (plain, or jitted by `jax.jit`, `jax.pmap`, `nnx.jit`,
    `eqx.filter_jit`; a bound method or a partial of one), lowered on `args` and
    `kwargs` as it would be called (arrays or `jax.ShapeDtypeStruct`s, any pytree:
    Flax and Equinox modules, Optax states); a `jax.stages.Traced`, `Lowered` or
    `Compiled` (or a Flax NNX or Equinox stage wrapping one); a
    `jax.export.Exported`; a zero-argument callable returning one of those; module
    text (a string holding a newline or a brace) or bytes, in any format a dump may
    have; or a path (`str` or `pathlib.Path`) to a module file or a dump folder
    (`module="NAME"` picks one of a folder's modules); or a target string `pkg.module:function` or
    `path/to/file.py:function` (lowered on `args` and `kwargs`).

    Raises `HloscopeError` when it cannot be loaded.
    """
    if isinstance(obj, Inspection):
        _refuse_arguments(args, kwargs, "it is an Inspection already")
        return obj
    from hloscope.sources import loader

    if isinstance(obj, os.PathLike):
        path = os.fsdecode(os.fspath(obj))
        if not Path(path).exists():
            raise HloscopeError("no such file or directory", where=path)
        return _from_dump_path(path, args, kwargs)
    if isinstance(obj, (bytes, bytearray, memoryview)):
        _refuse_arguments(args, kwargs, "these are module bytes")
        origin = _Origin("data", bytes(obj), None, loader.LoadOptions())
        return Inspection(loader.load_data(origin.value, BYTES_LABEL, origin.options), origin)
    if isinstance(obj, str):
        if _is_module_text(obj):
            _refuse_arguments(args, kwargs, "this is module text")
            origin = _Origin("data", obj, None, loader.LoadOptions())
            return Inspection(loader.load_data(obj, TEXT_LABEL, origin.options), origin)
        return _from_target(obj, args, kwargs)
    call = loader.Call(tuple(args), dict(kwargs))
    origin = _Origin("object", obj, call, loader.LoadOptions())
    return Inspection(loader.load_object(obj, object_label(obj), origin.options, call), origin)


def diff(a: Any, b: Any, /, *args: Any, **kwargs: Any) -> DiffReport:
    """The structural diff of two modules, as `hloscope diff A B` makes it: A and B
    are anything `inspect` takes (or `Inspection`s). `args` and `kwargs` are the
    example arguments of the sides that are functions (or entrypoint strings), as
    the command line's `--arg`/`--args` apply to each entrypoint side; without them,
    a function B is lowered on the arguments of A's inspection."""
    takes = [_takes_arguments(side) for side in (a, b)]
    if (args or kwargs) and not any(takes):
        raise HloscopeError(
            "example arguments are for functions, and neither side is one (to pick a "
            'module of a dump folder, pass hloscope.inspect(folder, module="NAME"))'
        )
    first = inspect(a, *args, **kwargs) if takes[0] else inspect(a)
    return first.diff(b, *args, **kwargs) if takes[1] else first.diff(b)


def compare(
    targets: str | Sequence[str],
    /,
    compile_for: str | Sequence[str],
    *,
    vary: Mapping[str, Sequence[str]] | None = None,
    env: Mapping[str, str] | None = None,
    args: Sequence[str] = (),
    args_factory: str | None = None,
    tokens_per_step: int | None = None,
    sort: CompareSort = "time",
    jobs: int | None = None,
    timeout: float | None = None,
    on_row: Callable[[CompareRow, int, int], None] | None = None,
) -> Comparison:
    """Configurations of one step side by side on the target, as `hloscope compare`
    makes them: the product of `targets` (entrypoint strings, `file.py:step`: each
    configuration imports its target afresh), the `compile_for` specs and the values of
    each environment variable of `vary` (`{"LLM_MESH": ["2x8", "4x4"]}`), over the
    variables of `env` every configuration shares, each loaded
    and compiled in a child process of its own, `jobs` at a time (default: the cores).
    `args`/`args_factory` are `--arg`/`--args`; `on_row(row, done, total)` is called as
    each row finishes. Returns the frozen `Comparison`: `rows`, `best` (the index of
    the fastest row that fits, or None)."""
    from hloscope.sources.compare_run import CompareOptions, configurations, run_comparison

    if sort not in ("time", "memory", "name"):
        raise HloscopeError(f"sort={sort!r}: expected time, memory or name")
    names = [targets] if isinstance(targets, str) else list(targets)
    specs = [compile_for] if isinstance(compile_for, str) else list(compile_for)
    varied = [f"{name}={','.join(values)}" for name, values in (vary or {}).items()]
    options = CompareOptions(
        args=tuple(args),
        args_factory=args_factory,
        tokens_per_step=tokens_per_step,
        timeout_seconds=timeout,
    )
    shared = [f"{name}={value}" for name, value in (env or {}).items()]
    configs = configurations(names, specs, varied, shared)
    return run_comparison(configs, options, jobs or os.cpu_count() or 1, on_row, sort)


def object_label(obj: Any) -> str:
    """How a Python object is named in reports and errors: `module:qualname` for a
    function (as an entrypoint target names it), `<Lowered>` for an object without a
    name."""
    name = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
    if isinstance(name, str) and name:
        module = getattr(obj, "__module__", None)
        return f"{module}:{name}" if isinstance(module, str) and module else name
    return f"<{type(obj).__name__}>"


def _is_module_text(text: str) -> bool:
    # Module text always has a brace (`module {`, `HloModule m, ... { ... }`) and
    # almost always a newline; a path or an entrypoint target has neither.
    return "\n" in text or "{" in text


def _takes_arguments(obj: Any) -> bool:
    if isinstance(obj, Inspection):
        return False
    if isinstance(obj, str) and not _is_module_text(obj):
        from hloscope.sources.target import EntrypointTarget, parse_target

        try:
            return isinstance(parse_target(obj), EntrypointTarget)
        except HloscopeError:
            return False
    if isinstance(obj, (str, bytes, bytearray, memoryview, os.PathLike)):
        return False
    from hloscope.sources import loader

    return loader.takes_arguments(obj)


def _refuse_arguments(args: tuple[Any, ...], kwargs: dict[str, Any], why: str) -> None:
    if args or kwargs:
        raise HloscopeError(f"example arguments are for functions, and {why}")


def _from_target(text: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Inspection:
    from hloscope.sources import loader
    from hloscope.sources.target import EntrypointTarget, parse_target

    if isinstance(parse_target(text), EntrypointTarget):
        call = loader.Call(tuple(args), dict(kwargs))
        origin = _Origin("target", text, call, loader.LoadOptions())
        return Inspection(loader.load(text, origin.options, call), origin)
    return _from_dump_path(text, args, kwargs)


def _from_dump_path(path: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Inspection:
    from hloscope.sources import loader

    module = kwargs.pop("module", None)
    _refuse_arguments(args, kwargs, f"{path} is a module file or a dump folder")
    if module is not None and not Path(path).is_dir():
        raise HloscopeError('module="NAME" picks a module of a dump folder; this is a file')
    options = loader.LoadOptions(module=None if module is None else str(module))
    origin = _Origin("target", path, None, options)
    return Inspection(loader.load(path, options), origin)


class Inspection(Displayed):
    """One loaded module and its reports, made by `hloscope.inspect`.

    The reports are computed when first asked for and kept: `overview` (what
    `hloscope inspect` shows), `structure`, `params`, `placement`. `fusions()` and
    `aot_check()` are methods, since they compile or run the user's code. Each
    report's repr (and `str`) is the report as the command prints it, it shows
    itself in rich and in a notebook, and `to_json()` is the command's `--json`
    document. The inspection itself shows as its overview.
    """

    def __init__(self, loaded: Loaded, origin: _Origin) -> None:
        self.loaded = loaded
        """What was loaded: the parsed module, its source, what JAX and XLA reported."""
        self._origin = origin
        self._optimized: Inspection | None = None
        self._fusions: FusionsReport | None = None
        self._memory: MemoryReport | None = None
        self._remat: dict[bool, RematReport] = {}
        self._placement_why: PlacementReport | None = None
        self._platforms: dict[str, Inspection] = {}

    # -- what it is ------------------------------------------------------------------

    @property
    def label(self) -> str:
        """How reports name it: the target as given, `module:qualname` for a Python
        object, `<string>` or `<bytes>` for module text or bytes."""
        return self.loaded.label

    @property
    def source(self) -> Source:
        """Where the module came from: kind, format, stage (`lowered` or `optimized`)."""
        return self.loaded.source

    @property
    def module(self) -> Module:
        """The parsed module (`hloscope.ir.model.Module`): ops, functions, values."""
        return self.loaded.module

    def text(self, locations: bool = False) -> str:
        """The module's IR as MLIR's printer prints it (XLA's HLO text for a module
        shown in XLA's own form); `locations` prints the source locations too."""
        return self.loaded.parsed.text(debug_info=locations)

    # -- reports -------------------------------------------------------------------

    @functools.cached_property
    def overview(self) -> InspectReport:
        """The overview `hloscope inspect` shows: functions, call graph, op counts,
        timings, cost, and the parameter, placement and fusion summaries."""
        from hloscope import reports

        return shown(reports.inspect_report(self.loaded))

    @property
    def structure(self) -> Structure:
        """Functions, the call graph (nested jits) and op counts: the overview's
        analysis, as data."""
        return self.overview.structure

    @functools.cached_property
    def params(self) -> ParamsReport:
        """Every argument mapped to its HLO parameter: used, unused or pruned, with
        donation, sharding and memory kind (`hloscope params`)."""
        from hloscope import reports

        return shown(reports.params_report(self.loaded))

    @functools.cached_property
    def placement(self) -> PlacementReport:
        """Compute placement, memory kinds, transfers, shardings and collectives
        (`hloscope placement`)."""
        from hloscope import reports

        return shown(reports.placement_report(self.loaded))

    def placement_why(self) -> PlacementReport:
        """The `placement` report of the optimized module with each collective's cause
        in `why` (`hloscope placement --why`): compiles once with Shardy's verbose
        dumps into a temporary folder; without Shardy's origins (GSPMD, an optimized
        module read as it is), `why.note` says why."""
        if self._placement_why is None:
            from hloscope import reports

            self._placement_why = shown(reports.placement_why_report(self.loaded))
        return self._placement_why

    def optimized(self) -> Inspection:
        """The optimized module, as `--compile` reads it: a function is compiled for
        the local backend, a dump folder's after-optimization file is read, a
        before-optimization module is compiled. Compiles once; this inspection when
        it is the optimized module already."""
        if self.source.stage == "optimized":
            return self
        if self._optimized is None:
            from hloscope.sources import loader

            origin = dataclasses.replace(
                self._origin, options=dataclasses.replace(self._origin.options, optimized=True)
            )
            if self._origin.kind == "target" and self.source.folder_modules:
                loaded = loader.load(self._origin.value, origin.options)
            else:
                loaded = self.loaded.optimized()
            self._optimized = Inspection(loaded, origin)
        return self._optimized

    def compile_for(self, spec: str) -> Inspection:
        """The program compiled for a TPU topology or a GPU spec on this machine,
        without the device, as `--for SPEC` reads it (`tpu:v5e:2x4`, `tpu:v4:2x2x1`,
        `gpu:h100x8`, `gpu:PATH.txtpb`; `cpu`: the local backend's, as `optimized()`):
        every report of the inspection it returns (`params`, `placement`, `fusions()`,
        `memory()`, `passes()`, `placement_why()`) reads that program. A function is
        lowered again for that platform; a dump's module before optimizations is
        compiled in a child process. Compiles once per spec."""
        from hloscope.compile_for import parse_compile_for
        from hloscope.sources import loader

        target = parse_compile_for(spec)
        if target is None:
            return self.optimized()
        made = self._platforms.get(target.spec)
        if made is not None:
            return made
        origin = self._origin
        options = dataclasses.replace(origin.options, optimized=True, compile_for=target)
        origin = dataclasses.replace(origin, options=options)
        if origin.kind == "object":
            loaded = loader.load_object(origin.value, self.label, options, origin.call)
        elif origin.kind == "data":
            loaded = loader.load_data(origin.value, self.label, options)
        else:
            loaded = loader.load(origin.value, options, origin.call)
        made = Inspection(loaded, origin)
        self._platforms[target.spec] = made
        return made

    def fusions(self) -> FusionsReport:
        """What XLA fused, from which source lines, and what it left unfused
        (`hloscope fusions`); compiles first, once, when this is the lowered module."""
        optimized = self.optimized()
        if optimized is not self:
            return optimized.fusions()
        if self._fusions is None:
            from hloscope import reports

            self._fusions = shown(reports.fusions_report(self.loaded))
        return self._fusions

    def memory(self) -> MemoryReport:
        """What is live at the memory peak, from XLA's buffer assignment, mapped to
        source lines (`hloscope memory`): compiles once with XLA dumping its buffer
        assignment into a temporary folder, or reads a dump folder's files."""
        if self._memory is None:
            from hloscope import reports

            self._memory = shown(reports.loaded_memory_report(self.loaded))
        return self._memory

    def remat(self, compile: bool = False) -> RematReport:
        """What the backward pass keeps from the forward (`hloscope remat`): this
        inspection's function is the loss (or a gradient of it, unwrapped), and each
        residual JAX keeps when differentiating it on its example arguments is listed,
        saved, offloaded or recomputed by its `jax.checkpoint` policies, by line and
        checkpoint name. `compile` (as `--compile`; always on an inspection made by
        `optimized()` or `compile_for()`, for its platform) compiles the jitted
        gradient and counts the residuals live at its memory peak. Kept."""
        from hloscope import reports
        from hloscope.sources.remat import remat_source

        origin = self._origin
        options = origin.options
        compile = compile or options.optimized or options.compile_for is not None
        if compile not in self._remat:
            options = dataclasses.replace(options, optimized=compile)
            if origin.kind == "object":
                source = remat_source(self.label, options, origin.call, obj=origin.value)
            elif origin.kind == "target":
                source = remat_source(origin.value, options, origin.call)
            else:
                raise HloscopeError(
                    "remat() differentiates a function, and this is a module "
                    f"({self.source.format}): inspect the loss instead",
                    where=self.label,
                )
            self._remat[compile] = shown(reports.remat_report(source))
        return self._remat[compile]

    def profile(
        self,
        runs: int | None = None,
        warmup: int = 1,
        trace_dir: str | None = None,
        model_flops: float | None = None,
    ) -> ProfileReport | EstimateReport:
        """Where the run time goes, by XLA instruction and by line (`hloscope
        profile`): compiles, then runs the program under JAX's profiler, `warmup`
        times and then `runs` times (by default as many as fit in about two seconds),
        each time it is asked (times differ from run to run). The trace stays in
        `trace_dir` when given. On an inspection made by `compile_for(spec)`: the
        estimate of a step on that platform (`profile --for`), nothing run, its MFU of
        `model_flops` (the model's flops for one step, all devices together) where
        given."""
        from hloscope import reports
        from hloscope.sources.profile import check_model_flops, profiled

        compile_for = self.loaded.options.compile_for
        check_model_flops(compile_for, model_flops)
        if compile_for is not None:
            if runs is not None or trace_dir is not None:
                raise HloscopeError("an estimate runs nothing: runs and trace_dir do not apply")
            return shown(reports.estimate_report(self.loaded, model_flops=model_flops))

        program = profiled(self.loaded, runs=runs, warmup=warmup, trace_dir=trace_dir)
        return shown(reports.profile_report(program.lowered, program.loaded, program.runs))

    def aot_check(self, aot: Any = None) -> AotReport:
        """The direct call against the AOT path (`hloscope aot-check`): calls the
        function on its example arguments (values are made for shapes), then lowers,
        compiles and runs its AOT path, and compares them. `aot` names the AOT object
        (`--aot`): a function, a `Lowered` or `Compiled`, or a target string. Runs
        both paths at every call, and clears JAX's in-memory caches first."""
        from hloscope import reports
        from hloscope.sources import loader

        origin = self._origin
        if origin.kind == "object":
            aot_label = None if aot is None or isinstance(aot, str) else object_label(aot)
            runs = loader.load_runs_object(origin.value, self.label, origin.call, aot, aot_label)
        elif origin.kind == "target" and self.source.kind == "entrypoint":
            if aot is not None and not isinstance(aot, str):
                raise HloscopeError(
                    "aot= names the AOT object of a target string with a target string "
                    "(pkg.module:function or file.py:function)"
                )
            runs = loader.load_runs(origin.value, origin.options, aot, origin.call)
        else:
            raise HloscopeError(
                "aot_check() calls a function, and this is a module "
                f"({self.source.format}): inspect the function instead",
                where=self.label,
            )
        return shown(reports.aot_check_report(runs))

    def diff(self, other: Any, /, *args: Any, **kwargs: Any) -> DiffReport:
        """The structural diff from this module (A) to `other` (B), as `hloscope diff`
        makes it. `other` is anything `hloscope.inspect` takes, on `args` and
        `kwargs`; a function given without arguments is lowered on this
        inspection's."""
        from hloscope import reports

        if not isinstance(other, Inspection):
            call = self._origin.call
            if not (args or kwargs) and call is not None and _takes_arguments(other):
                args, kwargs = tuple(call.args), dict(call.kwargs)
            other = inspect(other, *args, **kwargs)
        elif args or kwargs:
            _refuse_arguments(args, kwargs, "the other side is an Inspection already")
        return shown(reports.diff_loaded(self.loaded, other.loaded, summary=True))

    def passes(self, find: str | None = None, diff: str | int | None = None) -> PassesReport:
        """XLA's optimization pipeline pass by pass (`hloscope passes`): compiles the
        module here with XLA's per-pass dumps (a dump folder's own per-pass files are
        read instead); `find` tells where a pattern (an op kind, a custom-call target,
        attribute text, `file.py:LINE`) appears, changes and is gone; `diff` (a pass's
        index or name) adds that pass's structural diff. Compiles at every call."""
        from hloscope import reports
        from hloscope.sources.passes import loaded_pass_dumps

        with loaded_pass_dumps(self.loaded) as dumped:
            report = reports.passes_report(dumped, find, None if diff is None else str(diff))
        return shown(report)

    # -- the browser ---------------------------------------------------------------

    def browse(self, start: str = "ir") -> None:
        """Open the browser on this module in the current terminal, on its `start`
        tab (`ir`, `overview`, ...), and return when the user quits (q). Works from a
        REPL and at a pdb prompt; raises `HloscopeError` where there is no terminal
        (a notebook, a pipe)."""
        from hloscope.tui.app import browse

        browse(self.loaded, start=start)

    # -- showing itself --------------------------------------------------------------

    def _json_document(self) -> dict[str, Any]:
        return renderers(self.overview)[0](self.overview)

    def _render_into(self, console: Console) -> None:
        from rich.text import Text

        renderers(self.overview)[1](self.overview, console)
        origin = self._origin
        runs = (origin.kind == "target" and self.source.kind == "entrypoint") or (
            origin.kind == "object" and _takes_arguments(origin.value)
        )
        more = [".params", ".placement", ".fusions()"]
        more += [".aot_check()"] if runs else []
        more += [".diff(other)", ".text()", ".browse()", ".to_json()"]
        console.print()
        console.print(Text(f"more: {' '.join(more)}", style="dim"))


# --------------------------------------------------------------------------- watch


def watch() -> Watch:
    """Record every compilation JAX performs inside a `with` block:

        with hloscope.watch() as w:
            train()
        w              # the report `hloscope compiles` prints
        w.to_json()    # its --json document

    The program runs as it would without it (its results, its logging); what JAX
    compiled, why (in JAX's words) and what it cost is in `w.report`."""
    return Watch()


class Watch(Displayed):
    """The compilations recorded by `hloscope.watch()`. Inside the block, `report`
    holds what was recorded so far; after it, everything."""

    def __init__(self) -> None:
        self._recording: Any = None
        self._recorder: Any = None
        self._start = 0.0
        self._wall: float | None = None
        self._error: str | None = None

    def __enter__(self) -> Watch:
        import time

        from hloscope.sources.jax.capture import recording

        if self._recording is not None:
            raise HloscopeError("this watch() is in use; make a new one")
        self._recording = recording()
        self._recorder = self._recording.__enter__()
        self._start = time.perf_counter()
        return self

    def __exit__(self, exc_type: Any, exc: Any, traceback: Any) -> None:
        import time

        from hloscope.errors import describe_exception

        self._wall = time.perf_counter() - self._start
        if exc is not None and isinstance(exc, Exception):
            self._error = describe_exception(exc)
        self._recording.__exit__(exc_type, exc, traceback)

    @property
    def report(self) -> CompilesReport:
        """The `compiles` report of what was recorded (so far, inside the block)."""
        import time

        from hloscope import reports
        from hloscope.runs import RecordedRun

        if self._recorder is None:
            raise HloscopeError("nothing recorded: use it as `with hloscope.watch() as w:`")
        wall = self._wall if self._wall is not None else time.perf_counter() - self._start
        run = RecordedRun(
            label="hloscope.watch()",
            compiles=tuple(self._recorder.compiles),
            wall_seconds=wall,
            exit_code=0,
            error=self._error,
            modules_dropped=self._recorder.modules_dropped,
        )
        return shown(reports.compiles_report(run))

    def browse(self) -> None:
        """Open the browser's Compiles view on the recording in the current terminal."""
        from hloscope.tui.compiles_app import browse_compiles

        browse_compiles(self.report)

    def _json_document(self) -> dict[str, Any]:
        return renderers(self.report)[0](self.report)

    def _render_into(self, console: Console) -> None:
        renderers(self.report)[1](self.report, console)

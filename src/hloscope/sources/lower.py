"""The JAX adapter: the only module in hloscope that imports `jax`.

It turns what an entrypoint names (a function, jitted or not, a
`jax.stages.Lowered` or `Compiled`, a `jax.export.Exported`, or a zero-argument
callable returning one of those) into a `Lowering`: the StableHLO bytecode JAX
produced plus what only JAX knows about it (the Python argument tree, which
arguments were kept, donation, shardings, timings). `compile_lowering` and
`compile_module` produce a `Compilation`: the optimized HLO module and XLA's cost
and memory analyses (both plain data, defined in `hloscope.sources.stages`).
`aot_runs` (for `aot-check`) calls a function as user code would and runs its
ahead-of-time path on the same concrete inputs, recording every module JAX compiles
on the way and what each path returns (`AotRuns`).

JAX private APIs (`jax._src...` and underscored attributes) are read only in the
`_private_*` functions below; `private_api_ok()`, run by `tests/test_layering.py`,
fails loudly when a JAX release changes them.
"""

from __future__ import annotations

import contextlib
import inspect
import io
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import jax
import jax.extend
import numpy as np
from jax._src import compiler as _jax_compiler
from jax._src.lib import xla_client as _xla_client

from hloscope.errors import (
    HloscopeError,
    describe_exception,
    native_stderr_captured,
    one_line,
)
from hloscope.sources.entrypoint import user_code
from hloscope.sources.stages import (
    AotEntry,
    AotRuns,
    ArgumentLeaf,
    Compilation,
    CompiledModule,
    InputLeaf,
    Lowering,
    PathRun,
    ResultLeaf,
    StaticArgument,
)
from hloscope.sources.target import ArgSpec, hlo_dtype

# --------------------------------------------------------------------------- arguments


def example_arguments(specs: Sequence[ArgSpec]) -> tuple[Any, ...]:
    """`jax.ShapeDtypeStruct`s for `--arg` specs."""
    out = []
    for spec in specs:
        try:
            dtype = np.dtype(getattr(jax.numpy, spec.dtype))
        except (AttributeError, TypeError) as exc:
            raise HloscopeError(f"bad --arg '{spec.text}': JAX has no dtype {spec.dtype}") from exc
        out.append(jax.ShapeDtypeStruct(spec.shape, dtype))
    return tuple(out)


def factory_arguments(factory: Any, label: str) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """Call an `--args` factory; accept a tuple of arguments or `(args, kwargs)`."""
    if not callable(factory):
        value = factory
    else:
        try:
            with user_code():
                value = factory()
        except HloscopeError:
            raise
        except Exception as exc:
            raise HloscopeError(
                f"the --args factory raised {describe_exception(exc)}", where=label
            ) from exc
    if (
        isinstance(value, tuple)
        and len(value) == 2
        and isinstance(value[0], (tuple, list))
        and isinstance(value[1], dict)
    ):
        return tuple(value[0]), dict(value[1])
    if isinstance(value, list):
        value = tuple(value)
    if not isinstance(value, tuple):
        raise HloscopeError(
            f"the --args factory returned a {type(value).__name__}; expected a tuple of "
            "positional arguments or a pair (args_tuple, kwargs_dict)",
            where=label,
        )
    return value, {}


# --------------------------------------------------------------------------- lowering


def is_stage(obj: Any) -> bool:
    """A `Lowered`, `Compiled` or `Exported`: something already traced."""
    return isinstance(obj, (jax.stages.Lowered, jax.stages.Compiled, jax.export.Exported))


def needs_arguments(obj: Any) -> list[str] | None:
    """Names of required parameters of a callable (None when it cannot be told)."""
    try:
        signature = inspect.signature(obj)
    except (TypeError, ValueError):
        return None
    return [
        p.name
        for p in signature.parameters.values()
        if p.default is inspect.Parameter.empty
        and p.kind not in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    ]


# How to give example arguments, in the command line's words (the default).
CLI_ARGUMENTS_HINT = (
    "pass --arg SHAPE once per argument (--arg f32[8,128]) or --args module:factory "
    "returning a tuple of arguments"
)


def _require_no_arguments(obj: Any, label: str, arguments_hint: str) -> None:
    """Refuse a function that needs arguments when none were given, saying how to give
    them (`arguments_hint`, in the words of the front end that asked)."""
    required = needs_arguments(obj)
    if required:
        raise HloscopeError(
            f"it takes {len(required)} argument{'s' if len(required) > 1 else ''} "
            f"({', '.join(required)}) but no example arguments were given: {arguments_hint}",
            where=label,
        )


def lower(
    obj: Any,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    label: str,
    given_args: bool,
    arguments_hint: str = CLI_ARGUMENTS_HINT,
) -> Lowering:
    """Lower what an entrypoint names. `given_args` says whether the user gave
    example arguments (a zero-argument callable returning a stage is called)."""
    if not is_stage(obj) and callable(obj) and not given_args and not _is_jitted(obj):
        required = needs_arguments(obj)
        if required == []:
            try:
                with user_code(), _private_caller_frames_hidden(obj):
                    produced = obj()
            except HloscopeError:
                raise
            except Exception as exc:
                raise HloscopeError(
                    f"calling it raised {describe_exception(exc)}", where=label
                ) from exc
            if is_stage(produced):
                obj = produced
            elif _is_jitted(produced) or callable(produced):
                raise HloscopeError(
                    f"it returned a {type(produced).__name__}; a zero-argument target must "
                    "return a jax.stages.Lowered, Compiled or jax.export.Exported",
                    where=label,
                )
    if isinstance(obj, jax.stages.Lowered):
        return _from_lowered(obj, "lowered", label, None, kwargs)
    if isinstance(obj, jax.stages.Compiled):
        return _from_compiled(obj, label)
    if isinstance(obj, jax.export.Exported):
        return from_exported(obj, label)
    if not callable(obj):
        raise HloscopeError(
            f"it is a {type(obj).__name__}, not a function, a jax.stages.Lowered or "
            "Compiled, or a jax.export.Exported",
            where=label,
        )
    if not args and not kwargs:
        _require_no_arguments(obj, label, arguments_hint)
    kind = "jitted" if _is_jitted(obj) else "function"
    jitted = obj if kind == "jitted" else jax.jit(obj)
    start = time.perf_counter()
    try:
        with user_code() as caught, _private_caller_frames_hidden(obj):
            lowered = jitted.lower(*args, **kwargs)
    except HloscopeError:
        raise
    except Exception as exc:
        raise HloscopeError(f"tracing it raised {describe_exception(exc)}", where=label) from exc
    elapsed = time.perf_counter() - start
    static = _static_positional(jitted, args) if kind == "jitted" else ()
    return _from_lowered(lowered, kind, label, elapsed, kwargs, tuple(caught), static)


def _is_jitted(obj: Any) -> bool:
    return callable(getattr(obj, "lower", None)) and callable(getattr(obj, "trace", None))


def _from_lowered(
    lowered: Any,
    kind: str,
    label: str,
    elapsed: float | None,
    kwargs: Mapping[str, Any],
    notes: tuple[str, ...] = (),
    static_positional: tuple[StaticArgument, ...] = (),
) -> Lowering:
    with native_stderr_captured():
        module = lowered.compiler_ir("stablehlo")
        buffer = io.BytesIO()
        module.operation.write_bytecode(file=buffer)
        cost = _cost(lowered)
    leaves = _private_argument_leaves(lowered)
    in_tree_kwargs = _kwarg_names(lowered)
    static_keywords = tuple(
        StaticArgument(k, _static_value(kwargs[k]), None)
        for k in sorted(kwargs)
        if k not in in_tree_kwargs
    )
    static = static_positional + static_keywords
    return Lowering(
        kind=kind,
        name=_private_function_name(lowered) or label.rpartition(":")[2],
        mlir_bytecode=buffer.getvalue(),
        arguments=leaves,
        static_arguments=tuple(s.path for s in static),
        lower_seconds=elapsed,
        cost=cost,
        notes=notes,
        handle=lowered,
        static=static,
    )


def _static_positional(jitted: Any, args: tuple[Any, ...]) -> tuple[StaticArgument, ...]:
    """The positional arguments a jitted function treats as static (`static_argnums`)."""
    try:
        argnums = _private_static_argnums(jitted)
    except Exception:
        return ()
    names: list[str] = []
    with contextlib.suppress(TypeError, ValueError):
        names = [
            p.name
            for p in inspect.signature(jitted).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ]
    out = []
    for index in sorted({i if i >= 0 else len(args) + i for i in argnums}):
        if 0 <= index < len(args):
            name = names[index] if index < len(names) else f"args[{index}]"
            out.append(StaticArgument(name, _static_value(args[index]), index))
    return tuple(out)


def _static_value(value: Any) -> str:
    try:
        text = repr(value)
    except Exception:
        text = f"<{type(value).__name__}>"
    return one_line(text, 80)


def _from_compiled(compiled: Any, label: str) -> Lowering:
    return Lowering(
        kind="compiled",
        name=label.rpartition(":")[2],
        mlir_bytecode=None,
        arguments=(),
        static_arguments=(),
        lower_seconds=None,
        cost=None,
        notes=("a jax.stages.Compiled carries no lowered module; showing the optimized one",),
        handle=compiled,
    )


def from_exported(exported: Any, label: str) -> Lowering:
    """A `Lowering` for a `jax.export.Exported` (its module is a portable artifact)."""
    leaves: list[ArgumentLeaf] = []
    kept = sorted(getattr(exported, "module_kept_var_idx", ()) or range(len(exported.in_avals)))
    hlo_of = {flat: hlo for hlo, flat in enumerate(kept)}
    paths = _tree_paths(exported.in_tree, None)
    shardings = getattr(exported, "in_shardings_hlo", ()) or ()
    for position, aval in enumerate(exported.in_avals):
        sharding = shardings[position] if position < len(shardings) else None
        leaves.append(
            ArgumentLeaf(
                position=position,
                path=paths[position] if position < len(paths) else f"arg{position}",
                shape=_aval_shape(aval),
                nbytes=_aval_bytes(aval),
                donated=False,
                hlo_index=hlo_of.get(position),
                sharding=str(sharding) if sharding is not None else None,
                memory_kind=_aval_memory_kind(aval),
            )
        )
    return Lowering(
        kind="exported",
        name=str(exported.fun_name),
        mlir_bytecode=bytes(exported.mlir_module_serialized),
        arguments=tuple(leaves),
        static_arguments=(),
        lower_seconds=None,
        cost=None,
        notes=(),
        handle=exported,
    )


def deserialize_exported(data: bytes, label: str) -> Lowering:
    """Read a serialized `jax.export.Exported` (flatbuffer). Raises `HloscopeError`."""
    try:
        exported = jax.export.deserialize(bytearray(data))
    except ImportError as exc:
        raise HloscopeError(f"cannot read a serialized Exported: {exc}", where=label) from exc
    except Exception as exc:
        raise HloscopeError(
            f"not a valid serialized jax.export.Exported ({one_line(str(exc), 200)})",
            where=label,
        ) from exc
    return from_exported(exported, label)


# --------------------------------------------------------------------------- compiling


def compile_lowering(lowering: Lowering, label: str) -> Compilation:
    """Compile (or, for a `Compiled`, read) the optimized module of a lowering."""
    handle = lowering.handle
    if isinstance(handle, jax.stages.Compiled):
        return _compilation(handle, None, label)
    if isinstance(handle, jax.stages.Lowered):
        start = time.perf_counter()
        try:
            with user_code():
                compiled = handle.compile()
        except Exception as exc:
            raise HloscopeError(
                f"XLA failed to compile it: {one_line(str(exc), 300)}", where=label
            ) from exc
        return _compilation(compiled, time.perf_counter() - start, label)
    if lowering.mlir_bytecode is not None:
        return compile_module(lowering.mlir_bytecode, label)
    raise HloscopeError("nothing to compile", where=label)


def compile_module(
    mlir: bytes | str, label: str, partitions: int = 1, replicas: int = 1
) -> Compilation:
    """Compile a StableHLO module (text or bytecode) for the local backend."""
    with native_stderr_captured():
        # Creating the backend logs the device count to stderr (pjrt_client.cc).
        backend = jax.extend.backend.get_backend()
    needed = partitions * replicas
    devices = backend.local_devices()
    if needed > len(devices):
        raise HloscopeError(
            f"the module needs {needed} devices ({replicas} replicas x {partitions} "
            f"partitions) and this {backend.platform} backend has {len(devices)}; on the CPU, "
            f"set XLA_FLAGS=--xla_force_host_platform_device_count={needed}",
            where=label,
        )
    options = _jax_compiler.get_compile_options(
        num_replicas=replicas, num_partitions=partitions, backend=backend
    )
    if needed > 1:
        assignment = np.arange(needed).reshape(replicas, partitions)
        options.device_assignment = _xla_client.DeviceAssignment.create(assignment)
    start = time.perf_counter()
    try:
        with native_stderr_captured():
            executable = backend.compile_and_load(
                mlir if isinstance(mlir, bytes) else mlir.encode(),
                _xla_client.DeviceList(tuple(devices[:needed])),
                options,
            )
    except Exception as exc:
        raise HloscopeError(
            f"XLA failed to compile it: {one_line(str(exc), 300)}", where=label
        ) from exc
    elapsed = time.perf_counter() - start
    return _with_analyses(
        executable.hlo_modules()[0],
        elapsed,
        backend.platform,
        executable.cost_analysis,
        executable.get_compiled_memory_stats,
    )


def _compilation(compiled: Any, elapsed: float | None, label: str) -> Compilation:
    with native_stderr_captured():
        executable = compiled.runtime_executable()
        modules = executable.hlo_modules() if executable is not None else []
        if not modules:
            raise HloscopeError("the compiled executable has no HLO module", where=label)
        return _with_analyses(
            modules[0],
            elapsed,
            jax.extend.backend.get_backend().platform,
            compiled.cost_analysis,
            compiled.memory_analysis,
        )


def _with_analyses(
    module: Any,
    elapsed: float | None,
    platform: str,
    cost_analysis: Callable[[], Any],
    memory_analysis: Callable[[], Any],
) -> Compilation:
    """The optimized module with XLA's cost and memory analyses, where the backend
    has them (they raise on backends and executables that do not)."""
    cost = None
    with contextlib.suppress(Exception):
        cost = _normalise_cost(cost_analysis())
    memory = None
    with contextlib.suppress(Exception):
        memory = _memory(memory_analysis())
    return Compilation(
        hlo_proto=module.as_serialized_hlo_module_proto(),
        hlo_text=str(module.to_string()),
        compile_seconds=elapsed,
        cost=cost,
        memory=memory,
        platform=platform,
    )


def _cost(lowered: Any) -> Mapping[str, float] | None:
    try:
        return _normalise_cost(lowered.cost_analysis())
    except Exception:
        return None


def _normalise_cost(raw: Any) -> Mapping[str, float] | None:
    if isinstance(raw, (list, tuple)):
        raw = raw[0] if raw else None
    if not isinstance(raw, Mapping):
        return None
    out: dict[str, float] = {}
    for key in ("flops", "transcendentals", "bytes accessed", "optimal_seconds"):
        if key in raw:
            out[key.replace(" ", "_")] = float(raw[key])
    return out or None


def _memory(stats: Any) -> Mapping[str, int] | None:
    if stats is None:
        return None
    fields = (
        "argument_size_in_bytes",
        "output_size_in_bytes",
        "alias_size_in_bytes",
        "temp_size_in_bytes",
        "generated_code_size_in_bytes",
        "host_argument_size_in_bytes",
        "host_output_size_in_bytes",
        "host_temp_size_in_bytes",
    )
    out = {f: int(getattr(stats, f)) for f in fields if hasattr(stats, f)}
    return out or None


# --------------------------------------------------------------------------- avals & trees


def _aval_shape(aval: Any) -> str:
    hlo = hlo_dtype(np.dtype(aval.dtype).name)
    dims = ",".join(str(d) for d in aval.shape)
    return f"{hlo}[{dims}]"


def _aval_bytes(aval: Any) -> int | None:
    try:
        return int(np.prod(aval.shape, dtype=np.int64)) * int(np.dtype(aval.dtype).itemsize)
    except Exception:
        return None


def _aval_memory_kind(aval: Any) -> str | None:
    space = getattr(aval, "memory_space", None)
    if space is None:
        return None
    name = str(space).rpartition(".")[2].lower()
    return None if name in ("device", "any") else name


def _tree_paths(in_tree: Any, parameter_names: Sequence[str] | None) -> list[str]:
    """Readable pytree paths of the leaves of an `(args, kwargs)` tree."""
    try:
        count = in_tree.num_leaves
        skeleton = jax.tree_util.tree_unflatten(in_tree, list(range(count)))
        with_paths, _ = jax.tree_util.tree_flatten_with_path(skeleton)
    except Exception:
        return []
    paths: list[str] = []
    for path, _leaf in with_paths:
        paths.append(_format_path(path, parameter_names))
    return paths


def _format_path(path: Sequence[Any], parameter_names: Sequence[str] | None) -> str:
    if len(path) >= 2 and isinstance(path[0], jax.tree_util.SequenceKey):
        head, second, rest = path[0], path[1], path[2:]
        if head.idx == 0 and isinstance(second, jax.tree_util.SequenceKey):
            index = second.idx
            if parameter_names and index < len(parameter_names):
                name = str(parameter_names[index])
            else:
                name = f"args[{index}]"
            return name + str(jax.tree_util.keystr(tuple(rest)))
        if head.idx == 1 and isinstance(second, jax.tree_util.DictKey):
            return str(second.key) + str(jax.tree_util.keystr(tuple(rest)))
    return str(jax.tree_util.keystr(tuple(path)))


def _kwarg_names(lowered: Any) -> set[str]:
    try:
        _args, kwargs = jax.tree_util.tree_unflatten(
            lowered.in_tree, [None] * lowered.in_tree.num_leaves
        )
        return set(kwargs)
    except Exception:
        return set()


# --------------------------------------------------------------------------- aot-check

# Seed of the pseudo-random inputs made for shapes (`--arg`, `jax.ShapeDtypeStruct`).
INPUT_SEED = 0


def aot_runs(
    obj: Any,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    label: str,
    aot_obj: Any = None,
    aot_label: str | None = None,
    arguments_hint: str = CLI_ARGUMENTS_HINT,
) -> AotRuns:
    """Run `obj` both ways on the same concrete inputs: called as user code calls it
    (`obj(*args, **kwargs)`), and through the AOT path (`.lower(...)`, `.compile()`,
    then the compiled executable), recording every module JAX compiles on the way
    and what each path returns. `aot_obj` (from `--aot`) names the AOT object;
    otherwise it is the one a user reaching for AOT would take (see `_aot_entry`).

    JAX's caches are cleared before each path, so that a function the target's
    module already called when imported is compiled again, where it can be seen."""
    if is_stage(obj) or not callable(obj):
        raise HloscopeError(
            f"aot-check calls the target, and it is {_article(type(obj).__name__)}: name the "
            "function (jitted or not) instead",
            where=label,
        )
    if not args and not kwargs:
        _require_no_arguments(obj, label, arguments_hint)
    entry_obj, entry = _aot_entry(obj, label, aot_obj, aot_label)
    plan = _InputPlan(obj, args, kwargs, label)
    # Both sets before either path runs: the call may donate (delete) its inputs,
    # and making them must not be counted as the call's compilations.
    call_args, call_kwargs = plan.make()
    aot_args, aot_kwargs = plan.make()

    jax.clear_caches()
    start = time.perf_counter()
    try:
        with (
            _private_compiled_modules() as call_modules,
            user_code() as call_notes,
            _private_caller_frames_hidden(obj),
        ):
            call_out = obj(*call_args, **call_kwargs)
            jax.block_until_ready(call_out)
    except HloscopeError:
        raise
    except Exception as exc:
        raise HloscopeError(f"calling it raised {describe_exception(exc)}", where=label) from exc
    call_seconds = time.perf_counter() - start
    call = PathRun(
        modules=tuple(call_modules),
        structure=str(jax.tree_util.tree_structure(call_out)),
        results=_result_leaves(call_out),
        seconds=call_seconds,
        notes=tuple(call_notes),
    )

    jax.clear_caches()
    lowering, compiled, compile_seconds = _aot_compiled(
        entry_obj, entry, aot_args, aot_kwargs, label
    )
    run_args, run_kwargs = _dynamic_arguments(entry_obj, compiled, aot_args, aot_kwargs)
    start = time.perf_counter()
    try:
        with _private_compiled_modules() as run_modules, user_code() as run_notes:
            aot_out = compiled(*run_args, **run_kwargs)
            jax.block_until_ready(aot_out)
    except HloscopeError:
        raise
    except Exception as exc:
        raise HloscopeError(
            f"running the AOT-compiled {entry.expression} raised {describe_exception(exc)}",
            where=label,
        ) from exc
    aot = PathRun(
        modules=tuple(run_modules),
        structure=str(jax.tree_util.tree_structure(aot_out)),
        results=_result_leaves(aot_out),
        seconds=time.perf_counter() - start,
        notes=tuple(run_notes),
    )
    return AotRuns(
        entry=entry,
        inputs=plan.leaves,
        seed=INPUT_SEED,
        call=call,
        aot=aot,
        aot_lowering=lowering,
        compile_seconds=compile_seconds,
    )


def _article(noun: str) -> str:
    return f"{'an' if noun[:1].lower() in 'aeiou' else 'a'} {noun}"


def _has_lower(obj: Any) -> bool:
    return not isinstance(obj, (str, bytes)) and callable(getattr(obj, "lower", None))


def _qualified_name(obj: Any) -> str:
    name = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
    if not isinstance(name, str):
        return type(obj).__name__
    module = getattr(obj, "__module__", None)
    return f"{module}.{name}" if isinstance(module, str) and module else name


def _aot_entry(obj: Any, label: str, aot_obj: Any, aot_label: str | None) -> tuple[Any, AotEntry]:
    """What a user reaching for AOT lowers: `--aot`'s object; else the target's own
    `.lower`; else the nearest `.lower` along the `__wrapped__` chain that
    `functools.wraps` leaves; else `jax.jit(target)`."""
    attribute = label.rpartition(":")[2]
    if aot_obj is not None:
        shown = aot_label or "--aot"
        if isinstance(aot_obj, (jax.stages.Lowered, jax.stages.Compiled)):
            kind = "Lowered" if isinstance(aot_obj, jax.stages.Lowered) else "Compiled"
            return aot_obj, AotEntry(
                name=shown.rpartition(":")[2],
                via="--aot",
                expression=shown.rpartition(":")[2],
                reason=f"named with --aot: a jax.stages.{kind}, compiled and run as it is",
            )
        if is_stage(aot_obj) or not callable(aot_obj):
            raise HloscopeError(
                f"--aot names {_article(type(aot_obj).__name__)}; expected a function "
                "(jitted or not), a jax.stages.Lowered or a jax.stages.Compiled",
                where=shown,
            )
        if _has_lower(aot_obj):
            return aot_obj, AotEntry(
                name=_qualified_name(aot_obj),
                via="--aot",
                expression=shown.rpartition(":")[2],
                reason="named with --aot; it has its own .lower",
            )
        return jax.jit(aot_obj), AotEntry(
            name=f"jax.jit({_qualified_name(aot_obj)})",
            via="--aot",
            expression=f"jax.jit({shown.rpartition(':')[2]})",
            reason="named with --aot; it has no .lower, so hloscope jits it",
        )
    if _has_lower(obj):
        return obj, AotEntry(
            name=_qualified_name(obj),
            via="own",
            expression=attribute,
            reason="the target has its own .lower (a jitted function): "
            f"{attribute}.lower(...).compile() is the AOT path",
        )
    current, expression, seen = obj, attribute, {id(obj)}
    while True:
        current = getattr(current, "__wrapped__", None)
        if current is None or id(current) in seen:
            break
        seen.add(id(current))
        expression += ".__wrapped__"
        if _has_lower(current):
            return current, AotEntry(
                name=_qualified_name(current),
                via="__wrapped__",
                expression=expression,
                reason="the target has no .lower of its own; functools.wraps left the "
                f"jitted function it wraps reachable as {expression}, and its .lower is "
                "what a user reaching for AOT gets",
            )
    return jax.jit(obj), AotEntry(
        name=f"jax.jit({_qualified_name(obj)})",
        via="jax.jit",
        expression=f"jax.jit({attribute})",
        reason="neither the target nor anything along its __wrapped__ chain has a .lower, "
        f"so the AOT path is jax.jit({attribute}).lower(...).compile()",
    )


def _aot_compiled(
    entry_obj: Any,
    entry: AotEntry,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    label: str,
) -> tuple[Lowering | None, Any, float | None]:
    """Lower and compile the AOT entry on the inputs (a given `Compiled` is used as
    it is)."""
    if isinstance(entry_obj, jax.stages.Compiled):
        return None, entry_obj, None
    if isinstance(entry_obj, jax.stages.Lowered):
        lowered = entry_obj
        lowering = _from_lowered(lowered, "lowered", label, None, kwargs)
    else:
        start = time.perf_counter()
        try:
            with user_code() as caught, _private_caller_frames_hidden(entry_obj):
                lowered = entry_obj.lower(*args, **kwargs)
        except HloscopeError:
            raise
        except Exception as exc:
            raise HloscopeError(
                f"the AOT path cannot be lowered: {entry.expression}.lower(...) raised "
                f"{describe_exception(exc)}",
                where=label,
            ) from exc
        elapsed = time.perf_counter() - start
        static = _static_positional(entry_obj, args) if _is_jitted(entry_obj) else ()
        kind = "function" if entry.expression.startswith("jax.jit(") else "jitted"
        lowering = _from_lowered(lowered, kind, label, elapsed, kwargs, tuple(caught), static)
    start = time.perf_counter()
    try:
        with user_code():
            compiled = lowered.compile()
    except Exception as exc:
        raise HloscopeError(
            f"XLA failed to compile the AOT path's module: {one_line(str(exc), 300)}",
            where=label,
        ) from exc
    return lowering, compiled, time.perf_counter() - start


def _dynamic_arguments(
    entry_obj: Any, compiled: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """What a `Compiled` is called with: the arguments without the static ones, which
    are part of its trace."""
    static: set[int] = set()
    if _is_jitted(entry_obj):
        with contextlib.suppress(Exception):
            static = {i if i >= 0 else len(args) + i for i in _private_static_argnums(entry_obj)}
    dynamic_args = tuple(a for i, a in enumerate(args) if i not in static)
    names = _kwarg_names(compiled)
    return dynamic_args, {k: v for k, v in kwargs.items() if k in names}


class _InputPlan:
    """The concrete inputs both paths run on, made afresh for each path: values for
    shapes come from a NumPy generator with a fixed seed (so two runs agree), and
    arrays are copied, since a path may donate (delete) what it is given."""

    def __init__(self, obj: Any, args: tuple[Any, ...], kwargs: dict[str, Any], label: str):
        names: list[str] = []
        with contextlib.suppress(TypeError, ValueError):
            names = [
                p.name
                for p in inspect.signature(obj).parameters.values()
                if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
            ]
        is_leaf = lambda x: isinstance(x, jax.ShapeDtypeStruct)  # noqa: E731
        with_paths, self._tree = jax.tree_util.tree_flatten_with_path(
            (tuple(args), dict(kwargs)), is_leaf=is_leaf
        )
        rng = np.random.default_rng(INPUT_SEED)
        self._makers: list[Any] = []
        leaves: list[InputLeaf] = []
        for path, leaf in with_paths:
            name = _format_path(path, names)
            maker, described = _input_leaf(leaf, name, rng, label)
            self._makers.append(maker)
            leaves.append(described)
        self.leaves = tuple(leaves)

    def make(self) -> tuple[tuple[Any, ...], dict[str, Any]]:
        try:
            values = [maker() for maker in self._makers]
        except Exception as exc:
            raise HloscopeError(
                f"cannot place the example arguments: {one_line(str(exc), 300)}"
            ) from exc
        args, kwargs = jax.tree_util.tree_unflatten(self._tree, values)
        return tuple(args), dict(kwargs)


def _input_leaf(leaf: Any, path: str, rng: Any, label: str) -> tuple[Any, InputLeaf]:
    if isinstance(leaf, jax.ShapeDtypeStruct):
        if jax.dtypes.issubdtype(leaf.dtype, jax.dtypes.extended):
            raise HloscopeError(
                f"cannot make a value for {path} ({leaf.dtype}): give concrete arrays "
                "(for PRNG keys, jax.random.key(...)) from the --args factory",
                where=label,
            )
        try:
            sharding = leaf.sharding
        except Exception as exc:
            raise HloscopeError(
                f"the sharding of {path}: {one_line(str(exc), 200)}", where=label
            ) from exc
        host = _random_values(rng, tuple(leaf.shape), np.dtype(leaf.dtype))
        return _placed(host, sharding), InputLeaf(
            path, _array_shape(host), "generated", _sharding_text(sharding)
        )
    if isinstance(leaf, jax.Array):
        sharding = leaf.sharding
        if jax.dtypes.issubdtype(leaf.dtype, jax.dtypes.extended):
            # Keys have no NumPy form; both paths get the array itself.
            return (lambda: leaf), InputLeaf(path, str(leaf.dtype), "given", None)
        host = np.asarray(leaf)
        return _placed(host, sharding), InputLeaf(
            path, _array_shape(host), "given", _sharding_text(sharding)
        )
    if isinstance(leaf, np.ndarray):
        host = leaf.copy()
        return (lambda: host.copy()), InputLeaf(path, _array_shape(host), "given", None)
    return (lambda: leaf), InputLeaf(path, type(leaf).__name__, "python", None)


def _placed(host: Any, sharding: Any) -> Any:
    if sharding is None:
        return lambda: jax.device_put(host)
    return lambda: jax.device_put(host, sharding)


def _sharding_text(sharding: Any) -> str | None:
    if sharding is None or isinstance(sharding, jax.sharding.SingleDeviceSharding):
        return None
    text, memory_kind = _describe_sharding(sharding)
    if memory_kind and memory_kind != "device" and text and memory_kind not in text:
        text = f"{text} in {memory_kind}"
    return text


def _random_values(rng: Any, shape: tuple[int, ...], dtype: Any) -> Any:
    """Deterministic example values of a dtype: normal floats, small integers."""
    if dtype == np.bool_:
        return rng.integers(0, 2, size=shape).astype(np.bool_)
    if np.issubdtype(dtype, np.unsignedinteger):
        return rng.integers(0, 8, size=shape).astype(dtype)
    if np.issubdtype(dtype, np.integer):
        return rng.integers(-4, 5, size=shape).astype(dtype)
    if np.issubdtype(dtype, np.complexfloating):
        real = rng.standard_normal(size=shape)
        imaginary = rng.standard_normal(size=shape)
        return (real + 1j * imaginary).astype(dtype)
    # float64, float32, float16 and JAX's ml_dtypes floats (bfloat16, float8_*).
    return rng.standard_normal(size=shape).astype(dtype)


def _array_shape(value: Any) -> str:
    dims = ",".join(str(d) for d in value.shape)
    return f"{hlo_dtype(np.dtype(value.dtype).name)}[{dims}]"


def _result_leaves(out: Any) -> tuple[ResultLeaf, ...]:
    """What a path returned, leaf by leaf, copied to the host."""
    leaves = []
    for path, leaf in jax.tree_util.tree_flatten_with_path(out)[0]:
        name = "result" + str(jax.tree_util.keystr(tuple(path)))
        if isinstance(leaf, jax.Array) and jax.dtypes.issubdtype(leaf.dtype, jax.dtypes.extended):
            data = np.asarray(jax.random.key_data(leaf))
            leaves.append(ResultLeaf(name, str(leaf.dtype), str(leaf.dtype), data))
        elif isinstance(leaf, (jax.Array, np.ndarray, np.generic, bool, int, float, complex)):
            value = np.asarray(leaf)
            leaves.append(ResultLeaf(name, _array_shape(value), value.dtype.name, value))
        else:
            leaves.append(ResultLeaf(name, type(leaf).__name__, None, leaf))
    return tuple(leaves)


# --------------------------------------------------------------------------- JAX private API


def _private_compile_args(lowered: Any) -> Mapping[str, Any]:
    """`Lowered._lowering.compile_args`: JAX's record of kept arguments and shardings."""
    return lowered._lowering.compile_args  # type: ignore[no-any-return]


def _private_static_argnums(jitted: Any) -> tuple[int, ...]:
    """`jax.jit(f, static_argnums=...)`'s resolved static argument positions (static
    keyword names are resolved to positions too). `Lowered` does not record them."""
    return tuple(int(i) for i in jitted._jit_info.static_argnums)


def _private_function_name(lowered: Any) -> str | None:
    try:
        info = _private_compile_args(lowered)["all_args_info"].debug_info
        src = str(info.func_src_info or "")
        return src.split(" at ", 1)[0] or None
    except Exception:
        return None


def _private_argument_leaves(lowered: Any) -> tuple[ArgumentLeaf, ...]:
    """Every flattened argument leaf, with its HLO parameter index when kept."""
    compile_args = _private_compile_args(lowered)
    all_args = compile_args["all_args_info"]
    kept = sorted(compile_args["kept_var_idx"])
    hlo_of = {flat: hlo for hlo, flat in enumerate(kept)}
    names = list(all_args.debug_info.arg_names or ())
    avals = list(all_args.in_avals)
    flat_info = jax.tree_util.tree_leaves(lowered.args_info)
    shardings = list(compile_args.get("in_shardings") or ())
    leaves = []
    for position, aval in enumerate(avals):
        info = flat_info[position] if position < len(flat_info) else None
        hlo_index = hlo_of.get(position)
        sharding = (
            shardings[hlo_index] if hlo_index is not None and hlo_index < len(shardings) else None
        )
        sharding_text, memory_kind = _describe_sharding(sharding)
        leaves.append(
            ArgumentLeaf(
                position=position,
                path=names[position]
                if position < len(names) and names[position]
                else f"arg{position}",
                shape=_aval_shape(aval),
                nbytes=_aval_bytes(aval),
                donated=bool(getattr(info, "donated", False)),
                hlo_index=hlo_index,
                sharding=sharding_text,
                memory_kind=memory_kind or _aval_memory_kind(aval),
            )
        )
    return tuple(leaves)


def _describe_sharding(sharding: Any) -> tuple[str | None, str | None]:
    if sharding is None or type(sharding).__name__ in ("UnspecifiedValue", "AUTO"):
        return None, None
    memory_kind = getattr(sharding, "memory_kind", None)
    spec = getattr(sharding, "spec", None)
    if spec is not None:
        mesh = getattr(sharding, "mesh", None)
        axes = getattr(mesh, "shape", None)
        mesh_text = ", ".join(f"{k}={v}" for k, v in dict(axes).items()) if axes else ""
        text = f"{spec}" + (f" over mesh({mesh_text})" if mesh_text else "")
    else:
        text = str(sharding)
    return text, (str(memory_kind) if memory_kind else None)


@contextlib.contextmanager
def _private_caller_frames_hidden(obj: Any) -> Iterator[None]:
    """Keep the frames of whoever called hloscope (its command line, typer, a test
    runner) out of the source locations JAX records while tracing `obj`, as JAX
    keeps its own frames out: an op made by a `jax.jit` that hloscope wrapped
    around a plain function, or a `shard_map` called from JAX's code only, then has
    no source rather than the line that called `.lower()`. The file defining `obj`
    stays in, even when it is on the stack."""
    import sys

    from jax._src import source_info_util

    try:
        keep = inspect.getsourcefile(inspect.unwrap(obj))
    except (TypeError, ValueError):
        keep = None
    files: set[str] = set()
    frame = sys._getframe(1)
    while frame is not None:
        files.add(frame.f_code.co_filename)
        frame = frame.f_back  # type: ignore[assignment]
    added = [f for f in sorted(files) if f != keep]
    for name in added:
        source_info_util.register_exclusion(name)
    try:
        yield
    finally:
        for name in added:
            source_info_util._exclude_paths.remove(name)
        source_info_util._exclude_path_regex.cache_clear()
        source_info_util.is_user_filename.cache_clear()


@contextlib.contextmanager
def _private_compiled_modules() -> Iterator[list[CompiledModule]]:
    """Record every module JAX hands XLA while the block runs.

    Every compilation of `jax.jit` (and of an op run eagerly, which JAX jits) goes
    through `jax._src.compiler.compile_or_get_cached`, called as a module attribute
    from `jax._src.interpreters.pxla`; wrapping it there sees persistent-cache hits
    too. The original is restored when the block ends, whatever happens."""
    original = _jax_compiler.compile_or_get_cached
    captured: list[CompiledModule] = []

    def recording(backend: Any, computation: Any, *args: Any, **kwargs: Any) -> Any:
        captured.append(_compiled_module(computation))
        return original(backend, computation, *args, **kwargs)

    _jax_compiler.compile_or_get_cached = recording
    try:
        yield captured
    finally:
        _jax_compiler.compile_or_get_cached = original


def _compiled_module(computation: Any) -> CompiledModule:
    buffer = io.BytesIO()
    with native_stderr_captured():
        computation.operation.write_bytecode(file=buffer)
    name = str(computation.operation.attributes["sym_name"]).strip('"')
    return CompiledModule(name=name, mlir_bytecode=buffer.getvalue())


def private_api_ok() -> list[str]:
    """Names of the private JAX APIs hloscope reads that are missing (for a test)."""
    missing = []
    lowered = jax.jit(lambda a, b: a).lower(np.float32(1), np.float32(2))
    try:
        compile_args = _private_compile_args(lowered)
    except AttributeError:
        return ["Lowered._lowering.compile_args"]
    for key in ("kept_var_idx", "all_args_info", "in_shardings"):
        if key not in compile_args:
            missing.append(f"compile_args[{key!r}]")
    info = compile_args.get("all_args_info")
    if info is not None:
        for attr in ("in_avals", "debug_info"):
            if not hasattr(info, attr):
                missing.append(f"AllArgsInfo.{attr}")
        if hasattr(info, "debug_info") and not hasattr(info.debug_info, "arg_names"):
            missing.append("DebugInfo.arg_names")
    try:
        if _private_static_argnums(jax.jit(lambda a, n: a, static_argnums=1)) != (1,):
            missing.append("jit(f)._jit_info.static_argnums (changed meaning)")
    except AttributeError:
        missing.append("jit(f)._jit_info.static_argnums")
    from jax._src import source_info_util

    for name in ("register_exclusion", "_exclude_paths", "_exclude_path_regex"):
        if not hasattr(source_info_util, name):
            missing.append(f"jax._src.source_info_util.{name}")
    if not hasattr(getattr(source_info_util, "is_user_filename", None), "cache_clear"):
        missing.append("jax._src.source_info_util.is_user_filename.cache_clear")
    missing.extend(_compile_capture_missing())
    if not hasattr(_jax_compiler, "get_compile_options"):
        missing.append("jax._src.compiler.get_compile_options")
    for name in ("DeviceAssignment", "DeviceList"):
        if not hasattr(_xla_client, name):
            missing.append(f"jax._src.lib.xla_client.{name}")
    return missing


def _compile_capture_missing() -> list[str]:
    """What `_private_compiled_modules` needs: `compile_or_get_cached(backend,
    computation, ...)` in `jax._src.compiler`, called through that module by
    `pxla`, seeing what a jitted call compiles, and restored afterwards."""
    from jax._src.interpreters import pxla

    compiler: Any = _jax_compiler
    function = getattr(compiler, "compile_or_get_cached", None)
    if function is None:
        return ["jax._src.compiler.compile_or_get_cached"]
    parameters = list(inspect.signature(function).parameters)
    if parameters[:2] != ["backend", "computation"]:
        return [f"jax._src.compiler.compile_or_get_cached{tuple(parameters)} (changed)"]
    if getattr(pxla, "compiler", None) is not compiler:
        return ["jax._src.interpreters.pxla.compiler (pxla no longer compiles through it)"]
    jax.clear_caches()
    with _private_compiled_modules() as modules:
        jax.block_until_ready(jax.jit(lambda a: a * 2)(np.float32(1)))
    missing = []
    if [m.name for m in modules] != ["jit__lambda"]:
        missing.append(
            "jax._src.compiler.compile_or_get_cached (a jitted call compiled "
            f"{[m.name for m in modules]} through it, expected ['jit__lambda'])"
        )
    if getattr(_jax_compiler, "compile_or_get_cached", None) is not function:
        missing.append("jax._src.compiler.compile_or_get_cached (not restored)")
    return missing

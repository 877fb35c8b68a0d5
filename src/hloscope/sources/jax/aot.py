"""The runs of `aot-check`: a function called as user code calls it, and run
through its ahead-of-time path (`.lower(...)`, `.compile()`, then the compiled
executable) on the same concrete inputs, recording every module JAX compiles on
the way and what each path returns (`AotRuns`).
"""

from __future__ import annotations

import contextlib
import inspect
import time
from typing import Any

import jax
import numpy as np

from hloscope.environment import package_version, xla_of_jaxlib
from hloscope.errors import HloscopeError, describe_exception, one_line
from hloscope.runs import AotEntry, AotRuns, PathRun, ResultLeaf
from hloscope.sources.entrypoint import user_code
from hloscope.sources.jax.arguments import (
    CLI_ARGUMENTS_HINT,
    aval_shape,
    is_float0,
    is_key_dtype,
    kwarg_names,
    require_no_arguments,
)
from hloscope.sources.jax.inputs import INPUT_SEED, InputPlan
from hloscope.sources.jax.libraries import (
    bound_call,
    has_lower,
    jax_stage,
    library_of,
    library_static,
)
from hloscope.sources.jax.lower import (
    forget_traces,
    from_lowered,
    is_jitted,
    is_stage,
    jittable,
    lowered_stage,
    static_positional,
)
from hloscope.sources.jax.private import (
    private_caller_frames_hidden,
    private_compiled_modules,
    private_static_argnums,
)
from hloscope.stages import Lowering, LoweringKind


def _runtime_note(exc: Exception) -> str:
    """` (JAX 0.9.2, jaxlib 0.9.2)` after an error JAX's runtime raised (what it runs
    differs by release), nothing after the user's own."""
    if type(exc).__name__ not in ("JaxRuntimeError", "XlaRuntimeError"):
        return ""
    return f" (JAX {jax.__version__}, jaxlib {package_version('jaxlib')})"


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
        require_no_arguments(obj, label, arguments_hint)
    entry_obj, entry, bound = _aot_entry(obj, label, aot_obj, aot_label)
    plan = InputPlan(obj, args, kwargs, label)
    # Both sets before either path runs: the call may donate (delete) its inputs,
    # and making them must not be counted as the call's compilations.
    call_args, call_kwargs = plan.make()
    aot_args, aot_kwargs = plan.make()

    forget_traces()
    start = time.perf_counter()
    try:
        with (
            private_compiled_modules() as call_modules,
            user_code() as call_notes,
            private_caller_frames_hidden(obj),
        ):
            call_out = obj(*call_args, **call_kwargs)
            jax.block_until_ready(call_out)
    except HloscopeError:
        raise
    except Exception as exc:
        raise HloscopeError(
            f"calling it raised {describe_exception(exc)}{_runtime_note(exc)}", where=label
        ) from exc
    call_seconds = time.perf_counter() - start
    call = PathRun(
        modules=tuple(call_modules),
        structure=str(jax.tree_util.tree_structure(call_out)),
        results=_result_leaves(call_out),
        seconds=call_seconds,
        notes=tuple(call_notes),
    )

    forget_traces()
    # A bound method or a partial is lowered through the function it binds, with
    # the arguments it binds first.
    aot_args = (*bound[0], *aot_args)
    aot_kwargs = {**bound[1], **aot_kwargs}
    lowering, compiled, compile_seconds = _aot_compiled(
        entry_obj, entry, aot_args, aot_kwargs, label
    )
    run_args, run_kwargs = _dynamic_arguments(entry_obj, compiled, aot_args, aot_kwargs)
    start = time.perf_counter()
    try:
        with private_compiled_modules() as run_modules, user_code() as run_notes:
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


def _qualified_name(obj: Any) -> str:
    name = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
    if not isinstance(name, str):
        return type(obj).__name__
    module = getattr(obj, "__module__", None)
    return f"{module}.{name}" if isinstance(module, str) and module else name


_Bound = tuple[tuple[Any, ...], dict[str, Any]]
"""Arguments a bound method or a partial binds before the call's own."""
_UNBOUND: _Bound = ((), {})


def _aot_entry(
    obj: Any, label: str, aot_obj: Any, aot_label: str | None
) -> tuple[Any, AotEntry, _Bound]:
    """What a user reaching for AOT lowers: `--aot`'s object; else the target's own
    `.lower` (a bound method's or a partial's: the function it binds, with what it
    binds); else the nearest `.lower` along the `__wrapped__` chain that
    `functools.wraps` leaves; else `jax.jit(target)`."""
    attribute = label.rpartition(":")[2]
    if aot_obj is not None:
        shown = aot_label or "--aot"
        stage = jax_stage(aot_obj)
        if isinstance(stage, (jax.stages.Lowered, jax.stages.Compiled)):
            kind = "Lowered" if isinstance(stage, jax.stages.Lowered) else "Compiled"
            return (
                aot_obj,
                AotEntry(
                    name=shown.rpartition(":")[2],
                    via="--aot",
                    expression=shown.rpartition(":")[2],
                    reason=f"named with --aot: a jax.stages.{kind}, compiled and run as it is",
                ),
                _UNBOUND,
            )
        if is_stage(aot_obj) or not callable(aot_obj):
            raise HloscopeError(
                f"--aot names {_article(type(aot_obj).__name__)}; expected a function "
                "(jitted or not), a jax.stages.Lowered or a jax.stages.Compiled",
                where=shown,
            )
        if has_lower(aot_obj):
            return (
                aot_obj,
                AotEntry(
                    name=_qualified_name(aot_obj),
                    via="--aot",
                    expression=shown.rpartition(":")[2],
                    reason="named with --aot; it has its own .lower",
                ),
                _UNBOUND,
            )
        return (
            jax.jit(jittable(aot_obj)),
            AotEntry(
                name=f"jax.jit({_qualified_name(aot_obj)})",
                via="--aot",
                expression=f"jax.jit({shown.rpartition(':')[2]})",
                reason="named with --aot; it has no .lower, so hloscope jits it",
            ),
            _UNBOUND,
        )
    function, bound_args, bound_kwargs = bound_call(obj, (), {})
    if function is not obj:
        reached = attribute + _binding(obj)
        return (
            function,
            AotEntry(
                name=_qualified_name(function),
                via="own",
                expression=reached,
                reason=f"the target binds a jitted function ({reached}), whose .lower "
                f"takes what it binds first: {reached}.lower(...).compile() is the AOT path",
            ),
            (bound_args, bound_kwargs),
        )
    if has_lower(obj):
        jit = {"flax": "nnx.jit", "equinox": "eqx.filter_jit"}.get(library_of(obj) or "", "")
        return (
            obj,
            AotEntry(
                name=_qualified_name(obj),
                via="own",
                expression=attribute,
                reason="the target has its own .lower "
                f"({f'jitted by {jit}' if jit else 'a jitted function'}): "
                f"{attribute}.lower(...).compile() is the AOT path",
            ),
            _UNBOUND,
        )
    current, expression, seen = obj, attribute, {id(obj)}
    while True:
        current = getattr(current, "__wrapped__", None)
        if current is None or id(current) in seen:
            break
        seen.add(id(current))
        expression += ".__wrapped__"
        if has_lower(current):
            return (
                current,
                AotEntry(
                    name=_qualified_name(current),
                    via="__wrapped__",
                    expression=expression,
                    reason="the target has no .lower of its own; functools.wraps left the "
                    f"jitted function it wraps reachable as {expression}, and its .lower "
                    "is what a user reaching for AOT gets",
                ),
                _UNBOUND,
            )
    return (
        jax.jit(jittable(obj)),
        AotEntry(
            name=f"jax.jit({_qualified_name(obj)})",
            via="jax.jit",
            expression=f"jax.jit({attribute})",
            reason="neither the target nor anything along its __wrapped__ chain has a "
            f".lower, so the AOT path is jax.jit({attribute}).lower(...).compile()",
        ),
        _UNBOUND,
    )


def _binding(obj: Any) -> str:
    """How the jitted function a bound method or a partial binds is reached from it:
    `.__func__`, `.func`, or `.__call__.func` for a module whose `__call__` is jitted."""
    if inspect.ismethod(obj):
        return ".__func__"
    if has_lower(getattr(obj, "func", None)):
        return ".func"
    return ".__call__" + _binding(obj.__call__)


def _aot_compiled(
    entry_obj: Any,
    entry: AotEntry,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    label: str,
) -> tuple[Lowering | None, Any, float | None]:
    """Lower and compile the AOT entry on the inputs (a given `Compiled` is used as
    it is)."""
    stage = jax_stage(entry_obj)
    if isinstance(stage, jax.stages.Compiled):
        return None, entry_obj, None
    if isinstance(stage, jax.stages.Lowered):
        # A library's Lowered is compiled as it is: its Compiled takes the call's
        # arguments as the library's call does.
        lowered = entry_obj
        lowering = from_lowered(stage, "lowered", label, None, kwargs)
    else:
        start = time.perf_counter()
        try:
            with user_code() as caught, private_caller_frames_hidden(entry_obj):
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
        static = static_positional(entry_obj, args) if is_jitted(entry_obj) else ()
        static += library_static(entry_obj, (args, kwargs))
        kind: LoweringKind = "function" if entry.expression.startswith("jax.jit(") else "jitted"
        lowering = from_lowered(
            lowered_stage(lowered, label),
            kind,
            label,
            elapsed,
            kwargs,
            tuple(caught),
            static,
            entry_obj,
            (args, kwargs),
        )
    start = time.perf_counter()
    try:
        with user_code():
            compiled = lowered.compile()
    except Exception as exc:
        raise HloscopeError(
            f"{xla_of_jaxlib()} failed to compile the AOT path's module: {one_line(str(exc), 300)}",
            where=label,
        ) from exc
    return lowering, compiled, time.perf_counter() - start


def _dynamic_arguments(
    entry_obj: Any, compiled: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """What a `Compiled` is called with: the arguments without the static ones, which
    are part of its trace. A library's `Compiled` takes the call's arguments as they
    are, as the library's call does."""
    if library_of(compiled) is not None:
        return args, kwargs
    static: set[int] = set()
    if is_jitted(entry_obj):
        with contextlib.suppress(Exception):
            static = {i if i >= 0 else len(args) + i for i in private_static_argnums(entry_obj)}
    dynamic_args = tuple(a for i, a in enumerate(args) if i not in static)
    names = kwarg_names(compiled)
    return dynamic_args, {k: v for k, v in kwargs.items() if k in names}


def _result_leaves(out: Any) -> tuple[ResultLeaf, ...]:
    """What a path returned, leaf by leaf, copied to the host. A typed key is
    compared through its key data, a `float0` array as booleans (its only value)."""
    leaves = []
    for path, leaf in jax.tree_util.tree_flatten_with_path(out)[0]:
        name = "result" + str(jax.tree_util.keystr(tuple(path)))
        dtype = getattr(leaf, "dtype", None)
        if isinstance(leaf, (jax.Array, np.ndarray)) and is_key_dtype(dtype):
            data = np.asarray(jax.random.key_data(leaf))
            leaves.append(ResultLeaf(name, aval_shape(leaf), str(dtype), data))
        elif isinstance(leaf, (jax.Array, np.ndarray)) and is_float0(dtype):
            value = np.zeros(leaf.shape, np.bool_)
            leaves.append(ResultLeaf(name, aval_shape(leaf), "float0", value))
        elif isinstance(leaf, jax.Array) and jax.dtypes.issubdtype(dtype, jax.dtypes.extended):
            leaves.append(ResultLeaf(name, aval_shape(leaf), str(dtype), None))
        elif isinstance(leaf, (jax.Array, np.ndarray, np.generic, bool, int, float, complex)):
            value = np.asarray(leaf)
            leaves.append(ResultLeaf(name, aval_shape(value), value.dtype.name, value))
        else:
            leaves.append(ResultLeaf(name, type(leaf).__name__, None, leaf))
    return tuple(leaves)

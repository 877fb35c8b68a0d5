"""Lowering: what an entrypoint names, turned into a `Lowering`.

A function (jitted or not), a `jax.stages.Lowered` or `Compiled`, a
`jax.export.Exported` (or its serialized form), or a zero-argument callable
returning one of those becomes a `Lowering`: the StableHLO bytecode JAX produced
plus what only JAX knows about it (the Python argument tree, which arguments were
kept, donation, shardings, static arguments, timings).
"""

from __future__ import annotations

import contextlib
import inspect
import io
import time
from collections.abc import Mapping
from typing import Any

import jax

from hloscope.errors import (
    HloscopeError,
    describe_exception,
    native_stderr_captured,
    one_line,
)
from hloscope.sources.entrypoint import user_code
from hloscope.sources.jax.arguments import (
    CLI_ARGUMENTS_HINT,
    aval_bytes,
    aval_memory_kind,
    aval_shape,
    kwarg_names,
    needs_arguments,
    require_no_arguments,
    tree_paths,
)
from hloscope.sources.jax.compile import normalise_cost
from hloscope.sources.jax.private import (
    private_argument_leaves,
    private_caller_frames_hidden,
    private_function_name,
    private_static_argnums,
)
from hloscope.sources.stages import ArgumentLeaf, Lowering, LoweringKind, StaticArgument


def is_stage(obj: Any) -> bool:
    """A `Lowered`, `Compiled` or `Exported`: something already traced."""
    return isinstance(obj, (jax.stages.Lowered, jax.stages.Compiled, jax.export.Exported))


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
    if not is_stage(obj) and callable(obj) and not given_args and not is_jitted(obj):
        required = needs_arguments(obj)
        if required == []:
            try:
                with user_code(), private_caller_frames_hidden(obj):
                    produced = obj()
            except HloscopeError:
                raise
            except Exception as exc:
                raise HloscopeError(
                    f"calling it raised {describe_exception(exc)}", where=label
                ) from exc
            if is_stage(produced):
                obj = produced
            elif is_jitted(produced) or callable(produced):
                raise HloscopeError(
                    f"it returned a {type(produced).__name__}; a zero-argument target must "
                    "return a jax.stages.Lowered, Compiled or jax.export.Exported",
                    where=label,
                )
    if isinstance(obj, jax.stages.Lowered):
        return from_lowered(obj, "lowered", label, None, kwargs)
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
        require_no_arguments(obj, label, arguments_hint)
    kind: LoweringKind = "jitted" if is_jitted(obj) else "function"
    jitted = obj if kind == "jitted" else jax.jit(obj)
    start = time.perf_counter()
    try:
        with user_code() as caught, private_caller_frames_hidden(obj):
            lowered = jitted.lower(*args, **kwargs)
    except HloscopeError:
        raise
    except Exception as exc:
        raise HloscopeError(f"tracing it raised {describe_exception(exc)}", where=label) from exc
    elapsed = time.perf_counter() - start
    static = static_positional(jitted, args) if kind == "jitted" else ()
    return from_lowered(lowered, kind, label, elapsed, kwargs, tuple(caught), static)


def is_jitted(obj: Any) -> bool:
    return callable(getattr(obj, "lower", None)) and callable(getattr(obj, "trace", None))


def from_lowered(
    lowered: Any,
    kind: LoweringKind,
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
    leaves = private_argument_leaves(lowered)
    in_tree_kwargs = kwarg_names(lowered)
    static_keywords = tuple(
        StaticArgument(k, _static_value(kwargs[k]), None)
        for k in sorted(kwargs)
        if k not in in_tree_kwargs
    )
    static = static_positional + static_keywords
    return Lowering(
        kind=kind,
        name=private_function_name(lowered) or label.rpartition(":")[2],
        mlir_bytecode=buffer.getvalue(),
        arguments=leaves,
        static_arguments=tuple(s.path for s in static),
        lower_seconds=elapsed,
        notes=notes,
        handle=lowered,
        static=static,
        cost_analysis=lambda: _cost(lowered),
    )


def static_positional(jitted: Any, args: tuple[Any, ...]) -> tuple[StaticArgument, ...]:
    """The positional arguments a jitted function treats as static (`static_argnums`)."""
    try:
        argnums = private_static_argnums(jitted)
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
        notes=("a jax.stages.Compiled carries no lowered module; showing the optimized one",),
        handle=compiled,
    )


def from_exported(exported: Any, label: str) -> Lowering:
    """A `Lowering` for a `jax.export.Exported` (its module is a portable artifact)."""
    leaves: list[ArgumentLeaf] = []
    kept = sorted(getattr(exported, "module_kept_var_idx", ()) or range(len(exported.in_avals)))
    hlo_of = {flat: hlo for hlo, flat in enumerate(kept)}
    paths = tree_paths(exported.in_tree, None)
    shardings = getattr(exported, "in_shardings_hlo", ()) or ()
    for position, aval in enumerate(exported.in_avals):
        sharding = shardings[position] if position < len(shardings) else None
        leaves.append(
            ArgumentLeaf(
                position=position,
                path=paths[position] if position < len(paths) else f"arg{position}",
                shape=aval_shape(aval),
                nbytes=aval_bytes(aval),
                donated=False,
                hlo_index=hlo_of.get(position),
                sharding=str(sharding) if sharding is not None else None,
                memory_kind=aval_memory_kind(aval),
            )
        )
    return Lowering(
        kind="exported",
        name=str(exported.fun_name),
        mlir_bytecode=bytes(exported.mlir_module_serialized),
        arguments=tuple(leaves),
        static_arguments=(),
        lower_seconds=None,
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


def _cost(lowered: Any) -> Mapping[str, float] | None:
    try:
        with native_stderr_captured():
            return normalise_cost(lowered.cost_analysis())
    except Exception:
        return None

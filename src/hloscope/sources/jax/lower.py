"""Lowering: what an entrypoint names, turned into a `Lowering`.

A function (plain, or jitted by `jax.jit`, `jax.pmap`, `nnx.jit`,
`eqx.filter_jit`; a bound method or a partial of one), a `jax.stages.Traced`,
`Lowered` or `Compiled` (or a Flax NNX or Equinox stage wrapping one), a
`jax.export.Exported` (or its serialized form), or a zero-argument callable
returning one of those becomes a `Lowering`: the StableHLO bytecode JAX produced
plus what only JAX knows about it (the Python argument tree, which arguments were
kept, donation, shardings, static arguments, timings).
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import io
import time
from collections.abc import Mapping
from typing import Any

import jax

from hloscope.errors import HloscopeError, describe_exception, one_line
from hloscope.native_stderr import native_stderr_captured
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
from hloscope.sources.jax.libraries import (
    bound_call,
    concrete_shapes,
    has_lower,
    holds_equinox_module,
    jax_stage,
    library_of,
    library_static,
    lowered_for_platform,
    readable_paths,
    result_paths,
)
from hloscope.sources.jax.private import (
    private_argument_leaves,
    private_caller_frames_hidden,
    private_function_name,
    private_lowering_notes,
    private_static_argnums,
)
from hloscope.sources.jax.residuals import has_checkpoint_region
from hloscope.stages import (
    LOCAL_LOWERING,
    ArgumentLeaf,
    Lowering,
    LoweringKind,
    StaticArgument,
)
from hloscope.units import with_article


def is_stage(obj: Any) -> bool:
    """A `Traced`, `Lowered`, `Compiled` or `Exported` (or a library's stage wrapping
    one): something already traced."""
    return jax_stage(obj) is not None


def forget_traces() -> None:
    """Clear JAX's caches (traces, lowerings, compilations), so that what is lowered
    next is lowered as if first in this process. JAX reuses what it made of an inner
    jit (`dynamic_update_index_in_dim` in a scan) by its jaxpr, not by where it was
    called from: a second program would get the first one's lowering of it, source
    locations included, and a function already called is not compiled again."""
    jax.clear_caches()


ACCEPTED = (
    "a function (plain, or jitted by jax.jit, jax.pmap, nnx.jit or eqx.filter_jit), "
    "a jax.stages.Traced, Lowered or Compiled, or a jax.export.Exported"
)
"""What an entrypoint may name, for messages refusing something else."""


def lower(
    obj: Any,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    label: str,
    given_args: bool,
    arguments_hint: str = CLI_ARGUMENTS_HINT,
    platform: str | None = None,
) -> Lowering:
    """Lower what an entrypoint names. `given_args` says whether the user gave
    example arguments (a zero-argument callable returning a stage is called).
    `platform`: lower for that platform (`tpu`, `cuda`) instead of the local one, so
    that platform-specific lowering rules take its path."""
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
                    f"it returned {_article(type(produced).__name__)}; a zero-argument "
                    "target must return a jax.stages.Traced, Lowered or Compiled, or a "
                    "jax.export.Exported",
                    where=label,
                )
    stage = jax_stage(obj)
    if isinstance(stage, jax.stages.Traced):
        return _from_traced(stage, label, kwargs, platform)
    if isinstance(stage, jax.stages.Lowered):
        return from_lowered(stage, "lowered", label, None, kwargs)
    if isinstance(stage, jax.stages.Compiled):
        return _from_compiled(stage, label)
    if isinstance(stage, jax.export.Exported):
        return from_exported(stage, label)
    if not callable(obj):
        raise HloscopeError(
            f"it is {with_article(_type_name(obj))}, not {ACCEPTED}",
            where=label,
        )
    if not args and not kwargs:
        require_no_arguments(obj, label, arguments_hint)
    shown = obj
    obj, args, kwargs = bound_call(obj, args, kwargs)
    kind: LoweringKind = "jitted" if is_jitted(obj) else "function"
    jitted = obj if kind == "jitted" else jit_for(obj, args, kwargs)
    if library_of(jitted) == "equinox":
        args, kwargs = concrete_shapes(args, kwargs)
    start = time.perf_counter()
    platform_notes: tuple[str, ...] = ()
    try:
        with user_code() as caught, private_caller_frames_hidden(shown):
            produced_stage, platform_notes, checkpointed = _lower_for(
                jitted, args, kwargs, platform
            )
    except HloscopeError:
        raise
    except Exception as exc:
        raise HloscopeError(f"tracing it raised {describe_exception(exc)}", where=label) from exc
    elapsed = time.perf_counter() - start
    lowered = lowered_stage(produced_stage, label)
    static = static_positional(jitted, args) if kind == "jitted" else ()
    static += library_static(jitted, (args, kwargs))
    lowering = from_lowered(
        lowered,
        kind,
        label,
        elapsed,
        kwargs,
        private_lowering_notes(lowered, tuple(caught)) + platform_notes,
        static,
        jitted,
        (args, kwargs),
    )
    return dataclasses.replace(lowering, checkpointed=checkpointed)


def _lower_for(
    jitted: Any, args: tuple[Any, ...], kwargs: dict[str, Any], platform: str | None
) -> tuple[Any, tuple[str, ...], bool | None]:
    """`jitted.lower(*args, **kwargs)`, for `platform` when given: traced, then lowered
    with `lowering_platforms` (a jit's `.lower` takes no platform); Equinox's wrapper,
    which has no `.trace`, through the `jax.jit` it holds. Any other jit with no
    `.trace` is lowered for the local platform, and a note says so. With it, whether
    the traced jaxpr holds a `jax.checkpoint` region (`profile --for`'s MFU reads it);
    None where no jaxpr was traced here."""
    if platform is None:
        return jitted.lower(*args, **kwargs), (), None
    trace = getattr(jitted, "trace", None)
    traced = jax_stage(trace(*args, **kwargs)) if callable(trace) else None
    if isinstance(traced, jax.stages.Traced):
        checkpointed = has_checkpoint_region(traced.jaxpr.jaxpr)
        return traced.lower(lowering_platforms=(platform,)), (), checkpointed
    with lowered_for_platform(jitted, platform) as routed:
        if routed:
            return jitted.lower(*args, **kwargs), (), None
    note = (
        f"{type(jitted).__name__} has no .trace: {LOCAL_LOWERING} and compiled for "
        f"{platform} (platform-specific lowering rules took the local path)"
    )
    return jitted.lower(*args, **kwargs), (note,), None


def is_jitted(obj: Any) -> bool:
    """Whether `obj` has its own `.lower` (`jax.jit`, `jax.pmap`, `nnx.jit`,
    `eqx.filter_jit`)."""
    return has_lower(obj)


def jit_for(obj: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """The jit hloscope puts around a plain function: `jax.jit`, or `eqx.filter_jit`
    when an argument holds an Equinox module (its non-array fields, an activation
    function or a name, are no JAX types; `filter_jit` keeps them static, as the
    Equinox code calling the function does)."""
    if holds_equinox_module((args, kwargs)):
        import equinox

        return equinox.filter_jit(jittable(obj))
    return jax.jit(jittable(obj))


def jittable(obj: Any) -> Any:
    """`obj`, or a function calling it when `jax.jit` cannot take it: jit keys its
    cache on the callable's hash, and a module holding arrays (an `eqx.Module`, a
    Flax module) has none. Its arrays are then constants of the trace."""
    try:
        hash(obj)
        return obj
    except TypeError:
        pass

    def call(*args: Any, **kwargs: Any) -> Any:
        return obj(*args, **kwargs)

    call.__name__ = call.__qualname__ = type(obj).__name__
    with contextlib.suppress(TypeError, ValueError):
        call.__signature__ = inspect.signature(obj)  # type: ignore[attr-defined]
    return call


def lowered_stage(produced: Any, label: str) -> Any:
    """JAX's `Lowered` in what a `.lower(...)` returned (a library's wraps it)."""
    stage = jax_stage(produced)
    if isinstance(stage, jax.stages.Lowered):
        return stage
    raise HloscopeError(
        f"its .lower(...) returned {with_article(_type_name(produced))}, which holds no "
        "jax.stages.Lowered",
        where=label,
    )


def _from_traced(
    traced: Any, label: str, kwargs: Mapping[str, Any], platform: str | None = None
) -> Lowering:
    start = time.perf_counter()
    try:
        with user_code() as caught:
            lowered = traced.lower(lowering_platforms=(platform,)) if platform else traced.lower()
    except HloscopeError:
        raise
    except Exception as exc:
        raise HloscopeError(
            f"lowering the jax.stages.Traced raised {describe_exception(exc)}", where=label
        ) from exc
    elapsed = time.perf_counter() - start
    return from_lowered(
        lowered, "lowered", label, elapsed, kwargs, private_lowering_notes(lowered, tuple(caught))
    )


def _article(noun: str) -> str:
    return f"{'an' if noun[:1].lower() in 'aeiou' else 'a'} {noun}"


def _type_name(obj: Any) -> str:
    """The name of `obj`'s type, with the module it comes from when that is not
    Python's own: `GradientTransformationExtraArgs (optax._src.base)`."""
    kind = type(obj)
    module = getattr(kind, "__module__", "") or ""
    return (
        f"{kind.__qualname__} ({module})" if module and module != "builtins" else kind.__qualname__
    )


def from_lowered(
    lowered: Any,
    kind: LoweringKind,
    label: str,
    elapsed: float | None,
    kwargs: Mapping[str, Any],
    notes: tuple[str, ...] = (),
    static_positional: tuple[StaticArgument, ...] = (),
    lowered_from: Any = None,
    call: tuple[tuple[Any, ...], dict[str, Any]] | None = None,
) -> Lowering:
    """A `Lowering` of JAX's `lowered`. `lowered_from`: the function lowered (None
    for a stage given as it is) and `call` its arguments, which name the leaves
    where a library or `jax.pmap` renamed them."""
    with native_stderr_captured():
        module = lowered.compiler_ir("stablehlo")
        buffer = io.BytesIO()
        module.operation.write_bytecode(file=buffer)
    leaves = readable_paths(lowered_from, lowered, private_argument_leaves(lowered), call)
    in_tree_kwargs = kwarg_names(lowered)
    static_keywords = tuple(
        StaticArgument(k, _static_value(kwargs[k]), None)
        for k in sorted(kwargs)
        if k not in in_tree_kwargs
    )
    named = {s.path for s in static_positional}
    static = static_positional + tuple(s for s in static_keywords if s.path not in named)
    return Lowering(
        kind=kind,
        name=_function_name(lowered, lowered_from) or label.rpartition(":")[2],
        mlir_bytecode=buffer.getvalue(),
        arguments=leaves,
        static_arguments=tuple(s.path for s in static),
        lower_seconds=elapsed,
        notes=notes,
        handle=lowered,
        static=static,
        cost_analysis=lambda: _cost(lowered),
        results=result_paths(lowered_from, lowered),
        runnable=(lowered_from, call[0], call[1])
        if lowered_from is not None and call is not None
        else None,
    )


def _function_name(lowered: Any, lowered_from: Any) -> str | None:
    """The function's name as JAX knows it; `jax.pmap` traces its own wrapper
    (`_fun`), so the name of the function it maps is taken instead."""
    name = private_function_name(lowered)
    if name == "_fun" and lowered_from is not None:
        own = getattr(lowered_from, "__name__", None)
        if isinstance(own, str):
            return own
    return name


def static_positional(jitted: Any, args: tuple[Any, ...]) -> tuple[StaticArgument, ...]:
    """The positional arguments a jitted function treats as static (`static_argnums`)."""
    # nnx.jit keeps the jax.jit it calls in a public field, with the same positions.
    inner = getattr(jitted, "jitted_fn", None) if library_of(jitted) == "flax" else None
    try:
        argnums = private_static_argnums(inner if inner is not None else jitted)
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

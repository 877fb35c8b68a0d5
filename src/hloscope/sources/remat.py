"""What `hloscope remat` loads: the loss (or a gradient of it) an entrypoint names,
its example arguments, JAX's residuals of it (`sources.jax.residuals`), and with
`--compile` (or `--for`) the buffer assignment of its jitted gradient
(`sources.memory`)."""

from __future__ import annotations

import dataclasses
from typing import Any

from hloscope.errors import HloscopeError
from hloscope.remat_facts import RematFacts
from hloscope.sources.loader import (
    Call,
    LoadOptions,
    _Entrypoint,
    _import_entrypoint,
    _slice_meshes,
    load_object,
)
from hloscope.sources.memory import BufferDumps, compiled_memory_dumps
from hloscope.sources.target import EntrypointTarget, parse_target


@dataclasses.dataclass(frozen=True)
class RematSource:
    """JAX's residuals of a target, and the memory of its compiled gradient."""

    target: str
    facts: RematFacts
    notes: tuple[str, ...]
    buffers: BufferDumps | None = None


def remat_source(
    target: str, options: LoadOptions | None = None, call: Call | None = None, obj: Any = None
) -> RematSource:
    """The residuals of `target` (an entrypoint; or `obj`, a Python object, with
    `call`'s arguments), compiled too when `options` say (`--compile`, `--for`)."""
    options = options or LoadOptions()
    if obj is not None:
        return _remat_source(target, options, call, obj)
    # Imported, its arguments made, traced and its gradient lowered: under --for, in
    # the slice's meshes throughout (`slice_mesh`).
    mesh_notes: list[str] = []
    with _slice_meshes(options, mesh_notes, call):
        source = _remat_source(target, options, call, obj)
    return dataclasses.replace(source, notes=source.notes + tuple(mesh_notes))


def _remat_source(target: str, options: LoadOptions, call: Call | None, obj: Any) -> RematSource:
    if obj is None:
        parsed = parse_target(target)
        if not isinstance(parsed, EntrypointTarget):
            raise HloscopeError(
                "remat differentiates a function: give an entrypoint (module:loss or "
                "file.py:loss), not a module file or dump folder",
                where=target,
            )
        entrypoint, _ = _import_entrypoint(
            parsed, dataclasses.replace(options, optimized=False), call=call
        )
    else:
        call = call or Call()
        entrypoint = _Entrypoint(obj, tuple(call.args), dict(call.kwargs), call.given, ())
    if not entrypoint.given_args:
        from hloscope.sources.jax.arguments import CLI_ARGUMENTS_HINT

        raise HloscopeError(
            f"remat needs example arguments to differentiate it: {CLI_ARGUMENTS_HINT}"
            if obj is None
            else "remat needs example arguments: hloscope.inspect(loss, *args).remat()",
            where=target,
        )
    from hloscope.sources.jax.residuals import gradient_of, remat_facts

    facts = remat_facts(entrypoint.obj, entrypoint.args, entrypoint.kwargs, target)
    notes = entrypoint.notes
    step = facts.unwrapped is not None and facts.unwrapped.startswith("a training step")
    if step:
        notes += (
            f"{facts.unwrapped}: the residuals of the loss it differentiates "
            f"({facts.function or 'a function'}), on the arguments the step calls it with"
            + ("; compiled: the whole step, its update too" if options.optimized else ""),
        )
    buffers = None
    if options.optimized or options.compile_for is not None:
        gradient = gradient_of(entrypoint.obj, entrypoint.args, entrypoint.kwargs, step=step)
        loaded = load_object(
            gradient,
            target,
            LoadOptions(compile_for=options.compile_for),
            Call(entrypoint.args, entrypoint.kwargs),
        )
        buffers = compiled_memory_dumps(loaded)
    return RematSource(target, facts, notes, buffers)


def gradient_residuals(
    target: str, options: LoadOptions, call: Call | None = None, obj: Any = None
) -> RematFacts | None:
    """The residuals of the loss `target` (or `obj`) differentiates where it is a
    gradient (`jax.grad`, `nnx.grad`, `eqx.filter_grad`, ...), for `check`'s facts;
    None for anything else, or where JAX's residuals cannot be had (the check stands
    without them)."""
    from hloscope.sources.jax.private import private_grad_target

    try:
        if obj is None:
            parsed = parse_target(target)
            if not isinstance(parsed, EntrypointTarget):
                return None
            from hloscope.sources.entrypoint import import_target

            # Imported already by the check (cached): its arguments are made again
            # only for a gradient.
            if private_grad_target(import_target(parsed)) is None:
                return None
            entrypoint, _ = _import_entrypoint(
                parsed, dataclasses.replace(options, optimized=False), call=call
            )
        else:
            call = call or Call()
            entrypoint = _Entrypoint(obj, tuple(call.args), dict(call.kwargs), call.given, ())
        if private_grad_target(entrypoint.obj) is None or not entrypoint.given_args:
            return None
        from hloscope.sources.jax.residuals import remat_facts

        return remat_facts(entrypoint.obj, entrypoint.args, entrypoint.kwargs, target)
    except HloscopeError:
        return None

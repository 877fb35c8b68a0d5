"""The residuals of a function being differentiated, read from JAX's own jaxprs.

The forward pass of `jax.vjp(f)` is traced as `jax.ad_checkpoint.saved_residuals`
traces it (`private_vjp_residuals`): its last outputs are the residuals, the values
the backward pass reads. Each is described as JAX describes it (an argument, or the
output of a primitive at a line), then looked through `reduce_precision`, an
offloading `device_put` and a loop's body to the op that made the value, its
`checkpoint_name` and the user's line (`ir.locations.user_frame`, the rule of every
view). The `jax.checkpoint` regions are read from the jaxpr of `f` itself: their
policies, the names given inside, and what JAX's split of each by its policy runs
again in the backward (`private_recomputed`).

A gradient (`jax.grad`, `jax.value_and_grad`, jitted or not; `nnx.grad`;
`eqx.filter_grad`) is unwrapped to the loss it differentiates, with respect to the
arguments it differentiates.
"""

from __future__ import annotations

import collections
import functools
import os
from collections.abc import Callable, Iterator
from typing import Any

import jax
import numpy as np

from hloscope.errors import HloscopeError, describe_exception, one_line
from hloscope.ir.locations import Frame, is_user_file, user_frame
from hloscope.remat_facts import RecomputedOp, RegionFact, RematFacts, ResidualFact
from hloscope.sources.entrypoint import user_code
from hloscope.sources.jax.arguments import (
    aval_bytes,
    aval_memory_kind,
    aval_shape,
    explicit_sharding,
    leaf_sharding,
    shard_bytes,
)
from hloscope.sources.jax.libraries import argument_leaf_names
from hloscope.sources.jax.private import (
    private_argument_names,
    private_checkpoint_name,
    private_eqn_frames,
    private_grad_target,
    private_is_checkpoint,
    private_policy,
    private_recomputed,
    private_vjp_residuals,
)

# Ops whose output is the value JAX saves for another op's: looked through.
_LOOK_THROUGH = ("reduce_precision", "copy", "copy_p")
# Call primitives whose body made their outputs.
_CALLS = ("pjit", "jit", "closed_call", "core_call", "custom_jvp_call", "custom_vjp_call")


def remat_facts(obj: Any, args: tuple[Any, ...], kwargs: dict[str, Any], label: str) -> RematFacts:
    """The residuals and checkpoint regions of `obj` (a loss, a gradient of one, or a
    training step that takes a gradient inside) called on `args`, `kwargs`."""
    grad = private_grad_target(obj)
    unwrapped = None
    argnums: tuple[int, ...] | None = None
    filtered = False
    if grad is not None:
        obj, argnums, filtered = grad
        unwrapped = "a gradient"
    while hasattr(obj, "__wrapped__") and _is_jit(obj):
        obj = obj.__wrapped__
    if not callable(obj):
        raise HloscopeError(f"it is a {type(obj).__name__}, not a function to differentiate")
    if grad is None:
        from hloscope.sources.jax.step_gradient import step_gradient_facts

        read = functools.partial(_step_loss_facts, label=label)
        step, closed = step_gradient_facts(obj, args, kwargs, label, read)
        if step is not None:
            return step
        if closed is not None:
            _refuse_a_step(closed, label)
    return loss_facts(
        obj, args, kwargs, label, argnums=argnums, filtered=filtered, unwrapped=unwrapped
    )


def _step_loss_facts(
    fun: Any,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    *,
    label: str,
    transform: str,
    called_at: Frame | None,
    **how: Any,
) -> RematFacts:
    """The loss a training step differentiates, read where the step calls its
    gradient (`step_gradient`)."""
    at = f" at {_source(called_at)}" if called_at is not None else ""
    return loss_facts(
        fun, args, kwargs, label, unwrapped=f"a training step, {transform}{at}", **how
    )


def _refuse_a_step(closed: Any, label: str) -> None:
    """A step whose jaxpr holds a backward pass not taken by a transform
    `step_gradient` wraps (`jax.vjp`, a gradient made before it was traced): the loss
    it differentiates is not an object one can name from it; ask for the loss."""
    if not any("transpose(" in str(e.source_info.name_stack) for e in _eqns(closed.jaxpr)):
        return
    jitted = sorted(
        {
            str(e.params.get("name"))
            for e in _eqns(closed.jaxpr)
            if e.params.get("name")
            and "transpose(" not in str(e.source_info.name_stack)
            and e.primitive.name in _CALLS
        }
    )
    hint = f" (jitted inside it: {', '.join(jitted)})" if jitted else ""
    raise HloscopeError(
        "it takes a gradient inside (its jaxpr holds the backward pass already), not by "
        "calling jax.grad, jax.value_and_grad, nnx.grad or eqx.filter_grad as it runs: "
        f"give the loss it differentiates{hint}, as module:loss with its arguments",
        where=label,
    )


def loss_facts(
    obj: Any,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    label: str,
    *,
    argnums: tuple[int, ...] | None = None,
    filtered: bool = False,
    has_aux: bool = False,
    unwrapped: str | None = None,
    shardings: list[Any] | None = None,
) -> RematFacts:
    """The residuals and checkpoint regions of the loss `obj` on `args`, `kwargs`,
    differentiated with respect to the inexact leaves of the arguments `argnums` (every
    argument's when None; of the first only, `filtered`, as Equinox does); `has_aux`:
    it returns `(loss, aux)`; `shardings`: each leaf's, where its own does not say (a
    tracer of the step that calls the loss)."""
    leaves, tree = jax.tree_util.tree_flatten((args, kwargs))
    # Named as params names arguments; JAX's own names where those do not line up.
    names = (
        argument_leaf_names(obj, args, kwargs)
        or private_argument_names(obj, args, kwargs)
        or tuple(f"leaf {i}" for i in range(len(leaves)))
    )
    diff_at = _differentiated(args, kwargs, argnums, filtered)
    if not diff_at:
        raise HloscopeError(
            "it has no argument to differentiate: no floating-point array among "
            + ("its arguments" if argnums is None else f"the arguments {list(argnums)}"),
            where=label,
        )
    rest_at = [i for i in range(len(leaves)) if i not in diff_at]
    arrays = [i for i in rest_at if _is_array(leaves[i])]
    static = {i: leaves[i] for i in rest_at if i not in arrays}

    def flat(diff: tuple[Any, ...], rest: tuple[Any, ...]) -> Any:
        values = dict(static)
        values.update(zip(diff_at, diff, strict=True))
        values.update(zip(arrays, rest, strict=True))
        a, k = jax.tree_util.tree_unflatten(tree, [values[i] for i in range(len(leaves))])
        out = obj(*a, **k)
        if has_aux and isinstance(out, tuple | list) and len(out) == 2:
            out = out[0]
        _require_scalar(out, label)
        return out

    diff = tuple(leaves[i] for i in diff_at)
    rest = tuple(leaves[i] for i in arrays)
    try:
        with user_code():
            jaxpr, residual_vars = private_vjp_residuals(flat, diff, rest)
            loss_jaxpr = jax.make_jaxpr(flat)(diff, rest).jaxpr
            # The backward too: a loop JAX cannot transpose fails here, not above.
            jax.eval_shape(lambda d, r: jax.grad(lambda dd: flat(dd, r))(d), diff, rest)
    except HloscopeError:
        raise
    except Exception as exc:
        raise HloscopeError(
            f"JAX cannot differentiate it: {one_line(describe_exception(exc), limit=400)}",
            where=label,
        ) from exc
    invar_names = [names[i] if i < len(names) else f"leaf {i}" for i in [*diff_at, *arrays]]
    placed = shardings or [None] * len(leaves)
    invar_shardings = [
        leaf_sharding(leaves[i]) or _a_sharding(placed[i]) for i in [*diff_at, *arrays]
    ]
    regions, region_frames, output_frames = _regions(loss_jaxpr)
    # In the order JAX lists them (`saved_residuals`): literals, constants, arguments
    # in argument order, then by the equation that made them.
    # By identity: a literal residual (a constant factor's, `* 2.0`) is unhashable.
    position = {id(v): (i, 0) for i, v in enumerate(jaxpr.invars)}
    position.update(
        {id(v): (i, j) for i, e in enumerate(jaxpr.eqns) for j, v in enumerate(e.outvars)}
    )
    made = [
        _residual(v, jaxpr, invar_names, invar_shardings, region_frames, output_frames)
        for v in residual_vars
    ]
    order = {id(r): position.get(id(v), (0, 0)) for r, v in zip(made, residual_vars, strict=True)}
    residuals = tuple(sorted(made, key=lambda r: _jax_order(r, order)))
    return RematFacts(
        function=getattr(obj, "__name__", None),
        differentiated=tuple(invar_names[: len(diff_at)]),
        unwrapped=unwrapped,
        residuals=residuals,
        regions=tuple(regions),
        names=tuple(sorted(set(_names(loss_jaxpr)))),
        devices=_devices([*invar_shardings, *(explicit_sharding(v.aval) for v in residual_vars)]),
    )


def _a_sharding(value: Any) -> Any:
    return value if isinstance(value, jax.sharding.Sharding) else None


def _devices(shardings: list[Any]) -> int:
    """The most devices any of `shardings` spans (1 with none)."""
    return max((_span(s) for s in shardings if s is not None), default=1)


def _span(sharding: Any) -> int:
    # A traced value's mesh is abstract: its size, as it has no devices.
    mesh = getattr(sharding, "mesh", None)
    size = getattr(mesh, "size", None)
    return int(size) if size is not None else len(sharding.device_set)


def gradient_of(
    obj: Any, args: tuple[Any, ...], kwargs: dict[str, Any], *, step: bool = False
) -> Any:
    """What to compile for the memory of the backward: the target itself where it is a
    gradient or a training step (jitted), else `jax.jit(jax.grad(loss))` with respect
    to every positional argument. Lowered as a process that lowers nothing before
    would lower it (`inspect`, `memory`): JAX keeps what it traced of the residuals'
    reading (`jax.checkpoint`'s and a loop's jaxprs, with the frames of that trace)
    and lowering from those gives another module, another compile cache key, another
    compile of the same program."""
    jax.clear_caches()
    if step or private_grad_target(obj) is not None:
        return obj if hasattr(obj, "lower") else jax.jit(obj)
    argnums = tuple(range(len(args))) or 0
    return jax.jit(jax.grad(obj, argnums=argnums, allow_int=True))


def _is_jit(obj: Any) -> bool:
    return hasattr(obj, "lower") and hasattr(obj, "__wrapped__")


def _is_array(leaf: Any) -> bool:
    return isinstance(leaf, jax.Array | np.ndarray | jax.ShapeDtypeStruct | np.generic)


def _is_inexact(leaf: Any) -> bool:
    return _is_array(leaf) and jax.numpy.issubdtype(leaf.dtype, jax.numpy.inexact)


def _differentiated(
    args: tuple[Any, ...], kwargs: dict[str, Any], argnums: tuple[int, ...] | None, filtered: bool
) -> list[int]:
    """Flat indices of the leaves differentiated: the floating-point arrays of the
    arguments `argnums` (every argument's when None)."""
    at: list[int] = []
    index = 0
    for position, arg in enumerate(args):
        leaves = jax.tree_util.tree_leaves(arg)
        chosen = argnums is None or position in argnums
        at.extend(index + i for i, leaf in enumerate(leaves) if chosen and _is_inexact(leaf))
        index += len(leaves)
    if argnums is None and not filtered:
        leaves = jax.tree_util.tree_leaves(kwargs)
        at.extend(index + i for i, leaf in enumerate(leaves) if _is_inexact(leaf))
    return at


def _require_scalar(out: Any, label: str) -> None:
    shape = getattr(out, "shape", None)
    if shape is None or tuple(shape) != ():
        what = f"an array of shape {tuple(shape)}" if shape is not None else type(out).__name__
        raise HloscopeError(
            f"it returns {what}, not a scalar: give the loss (a function returning one "
            "number), or wrap it in jax.grad",
            where=label,
        )


def _eqns(jaxpr: Any) -> Iterator[Any]:
    """Every equation of `jaxpr` and of the jaxprs inside it."""
    for eqn in jaxpr.eqns:
        yield eqn
        for sub in _subjaxprs(eqn):
            yield from _eqns(sub)


def has_checkpoint_region(jaxpr: Any) -> bool:
    """Whether `jaxpr` (a traced step's, nested jaxprs included) holds a
    `jax.checkpoint` region: where it does, its backward pass may run part of the
    forward again (what the region's policy does not save)."""
    return any(private_is_checkpoint(eqn) for eqn in _eqns(jaxpr))


def _subjaxprs(eqn: Any) -> Iterator[Any]:
    for value in eqn.params.values():
        for item in value if isinstance(value, tuple | list) else (value,):
            inner = getattr(item, "jaxpr", item)
            if hasattr(inner, "eqns"):
                yield inner


def _names(jaxpr: Any) -> Iterator[str]:
    for eqn in _eqns(jaxpr):
        name = private_checkpoint_name(eqn)
        if name is not None:
            yield name


@functools.lru_cache(maxsize=4096)
def _frames_of(frames: tuple[tuple[str, str, int, int], ...]) -> tuple[Frame, ...]:
    return tuple(Frame(fn, file, line, col) for file, fn, line, col in frames)


def _user_key(eqn: Any) -> tuple[tuple[str, int, int], ...]:
    """The user's frames of an equation: what stays the same between two traces."""
    frames = _frames_of(tuple(private_eqn_frames(eqn)))
    return tuple((f.file, f.line, f.column) for f in frames if is_user_file(f.file))


def _source(frame: Frame) -> str:
    """`file.py:LINE`, the file relative to the working directory when below it, as
    the memory report names its buffers' lines (its `source_root`): the same line
    in both, and in the JSON."""
    root = os.getcwd().rstrip(os.sep) + os.sep
    file = frame.file[len(root) :] if frame.file.startswith(root) else frame.file
    return f"{file}:{frame.line}"


def _region_function(body: Any, debug: Any) -> str | None:
    """The function a checkpoint region checkpoints: JAX's name for it, or, where that
    is a library's wrapper (`eqx.filter_checkpoint` checkpoints its `fun_checkpoint`),
    the user's function inside it: the outermost of the user's frames of its first
    equation (the body is traced on its own, from the wrapper down)."""
    name = getattr(debug, "func_name", None)
    where = str(getattr(debug, "func_src_info", None) or "").partition(" at ")[2]
    wrapper_file = where.rpartition(":")[0]
    if not wrapper_file or is_user_file(wrapper_file):
        return name
    for eqn in _eqns(body):
        frames = [f for f in _frames_of(tuple(private_eqn_frames(eqn))) if is_user_file(f.file)]
        if frames:
            return frames[-1].function  # innermost first
    return name


def _line(eqn: Any) -> tuple[str | None, str | None]:
    frame = user_frame(_frames_of(tuple(private_eqn_frames(eqn))))
    return (_source(frame), frame.function) if frame is not None else (None, None)


def _regions(
    jaxpr: Any,
) -> tuple[list[RegionFact], dict[tuple[Any, ...], int], set[tuple[Any, ...]]]:
    """The checkpoint regions of the loss's jaxpr, the user frames of the equations
    inside each (region index by frames), and those of each region's outputs."""
    regions: list[RegionFact] = []
    inside: dict[tuple[Any, ...], int] = {}
    outputs: set[tuple[Any, ...]] = set()

    def walk(jaxpr: Any, loop: str | None) -> None:
        for eqn in jaxpr.eqns:
            if private_is_checkpoint(eqn):
                index = len(regions)
                body = eqn.params["jaxpr"]
                policy, policy_names, offload_to = private_policy(eqn.params.get("policy"))
                debug = getattr(body, "debug_info", None)
                line = (
                    _line(eqn)[0] or _caller_line(body, getattr(debug, "func_name", None)) or loop
                )
                recomputed: collections.Counter[tuple[str, str | None]] = collections.Counter()
                try:
                    for op in private_recomputed(eqn):
                        if op.primitive.name in ("name", "device_put"):
                            continue  # a name, or the offloaded value brought back
                        recomputed[(op.primitive.name, _line(op)[0])] += 1
                except Exception:
                    pass  # an equation JAX's split cannot take here: nothing listed
                regions.append(
                    RegionFact(
                        index=index,
                        function=_region_function(body, debug),
                        source=line,
                        policy=policy,
                        policy_names=policy_names,
                        offload_to=offload_to,
                        names=tuple(sorted(set(_names(body)))),
                        in_loop=loop,
                        recomputed=tuple(
                            RecomputedOp(p, ln, n) for (p, ln), n in recomputed.items()
                        ),
                    )
                )
                made = {v: e for e in body.eqns for v in e.outvars}
                # An equation with none of the user's frames (the body of a jitted
                # library function, `jnp.where`'s) says nothing of where it is: every
                # such body outside the region has the same empty key.
                for e in _eqns(body):
                    if key := _user_key(e):
                        inside.setdefault(key, index)
                for v in body.outvars:
                    if v in made and (key := _user_key(made[v])):
                        outputs.add(key)
                walk(body, loop)
                continue
            inner_loop = _line(eqn)[0] if eqn.primitive.name in ("scan", "while") else loop
            for sub in _subjaxprs(eqn):
                walk(sub, inner_loop)

    walk(jaxpr, None)
    return regions, inside, outputs


def _caller_line(body: Any, function: str | None) -> str | None:
    """The line that called the checkpointed function, from the frames of the
    first equation inside it (where JAX records none on the region itself)."""
    for eqn in body.eqns:
        frames = _frames_of(tuple(private_eqn_frames(eqn)))
        user = [f for f in frames if is_user_file(f.file)]
        # Innermost first: the caller is the frame outside the checkpointed function's
        # (a helper it calls, rms_norm, is inside it); a body traced on its own, in a
        # loop's, has none.
        at = [i for i, f in enumerate(user) if f.function == function]
        outside = user[at[-1] + 1 :] if at else [f for f in user if f.function != function]
        if outside:
            return _source(outside[0])
        if at:
            return None
    return None


def _jax_order(
    residual: ResidualFact, order: dict[Any, tuple[int, int]]
) -> tuple[int, tuple[int, int]]:
    kinds = {"literal": 0, "constant": 1, "argument": 2, "op": 3}
    return kinds[residual.made_by], order.get(id(residual), (0, 0))


def _residual(
    var: Any,
    jaxpr: Any,
    invar_names: list[str],
    invar_shardings: list[Any],
    region_frames: dict[tuple[Any, ...], int],
    output_frames: set[tuple[Any, ...]],
) -> ResidualFact:
    aval = var.aval
    kind = aval_memory_kind(aval)
    # JAX's MemorySpace.Host is the `pinned_host` memory kind (`core.mem_space_to_kind`).
    memory = "device" if kind is None else "pinned_host" if kind == "host" else kind
    nbytes = aval_bytes(aval) or 0
    base: dict[str, Any] = {
        "type": aval_shape(aval),
        "bytes": nbytes,
        "memory": memory,
        # An argument is placed as its leaf's sharding says (the trace's aval keeps no
        # more than its mesh); any other value where its mesh's axes are explicit.
        "shard_bytes": shard_bytes(
            aval.shape,
            nbytes,
            invar_shardings[jaxpr.invars.index(var)]
            if var in jaxpr.invars
            else explicit_sharding(aval),
        ),
    }
    if _is_literal(var):
        return ResidualFact(**base, **_nothing("literal"))
    if var in jaxpr.constvars:
        return ResidualFact(**base, **_nothing("constant"))
    made = {v: e for e in jaxpr.eqns for v in e.outvars}
    if var in jaxpr.invars:
        fields = _nothing("argument")
        fields["argument"] = invar_names[jaxpr.invars.index(var)]
        return ResidualFact(**base, **fields)
    top = made[var]
    primitive_line, primitive_function = _line(top)
    # Looked through to the op that made the value, as JAX looks through reduce_precision.
    eqn, offloaded, stacked_by = top, False, None
    # The innermost equation on the way down that has the user's frames: where the
    # value was made, for its region (a jitted library function's body has none).
    located = top
    while True:
        prim = eqn.primitive.name
        if prim in _LOOK_THROUGH or (prim == "device_put" and _to_host(eqn)):
            offloaded = offloaded or prim == "device_put"
            index = eqn.outvars.index(var)
            var = eqn.invars[min(index, len(eqn.invars) - 1)]
        elif prim == "scan" or prim in _CALLS:
            body = next(_subjaxprs(eqn), None)
            index = eqn.outvars.index(var)
            if body is None or index >= len(body.outvars):
                break
            if prim == "scan":
                stacked_by = stacked_by or primitive_line
            var = body.outvars[index]
            made = {v: e for e in body.eqns for v in e.outvars}
        else:
            break
        if var not in made:
            break
        eqn = made[var]
        if _user_key(eqn):
            located = eqn
    line, function = _line(eqn)
    if line is None:
        # A body traced on its own (a custom_jvp's: jax.nn.relu's) keeps no frame of the
        # user's: the value is made on the line that called it, as JAX's
        # print_saved_residuals says.
        line, function = primitive_line, primitive_function
    key = _user_key(located)
    region = region_frames.get(key) if key else None
    return ResidualFact(
        **base,
        made_by="op",
        argument=None,
        primitive=top.primitive.name,
        primitive_line=primitive_line,
        name=private_checkpoint_name(eqn),
        op=eqn.primitive.name,
        line=line,
        function=function,
        offloaded=offloaded,
        stacked_by=stacked_by,
        region=region,
        region_output=region is not None and key in output_frames,
    )


def _is_literal(var: Any) -> bool:
    """A jaxpr's literal (a constant written in it), not a variable."""
    return not hasattr(var, "count") and hasattr(var, "val")


def _to_host(eqn: Any) -> bool:
    return any("host" in str(d).lower() for d in eqn.params.get("devices", ()))


def _nothing(made_by: str) -> dict[str, Any]:
    return {
        "made_by": made_by,
        "argument": None,
        "primitive": None,
        "primitive_line": None,
        "name": None,
        "op": None,
        "line": None,
        "function": None,
        "offloaded": False,
        "stacked_by": None,
        "region": None,
        "region_output": False,
    }


Loss = Callable[..., Any]

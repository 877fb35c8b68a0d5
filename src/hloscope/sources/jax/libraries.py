"""What Flax NNX and Equinox wrap around JAX's objects, read through their public API.

`nnx.jit` and `eqx.filter_jit` return objects with their own `.lower`, whose
`Lowered` (and its `Compiled`, and NNX's `Traced`) wraps JAX's stage in a public
field (`.lowered`, `.compiled`, `.traced`); `jax_stage` finds JAX's stage in
either. A bound method or a `functools.partial` of a jitted function is lowered
through the function it binds (`bound_call`).

Both libraries change the argument tree JAX sees, so JAX names the leaves after
their split, not after the user's call: NNX passes each graph node as flat state
lists (`model.states[0][3]`), a Flax `Variable` given to a plain `jax.jit` adds
`.value`, Equinox splits every argument into its array leaves
(`dynamic_nodonate['first'][2]`), and `jax.pmap` calls its arguments
`flat_args[0]`. `readable_paths` names the leaves as the user wrote them
(`model.blocks[0].linear.kernel`, `optimizer.opt_state[0].mu.head.bias`). NNX passes
a Variable reachable from several arguments (an optimizer holding the model's own
Variables) once, under the first: it is named by that path, and its other paths are
listed beside it (`also`).

Neither library is imported here unless the object in hand is one of theirs: a
library object is told by the module its type comes from.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import inspect
from collections.abc import Iterator, Sequence
from typing import Any, Literal

import jax
import numpy as np

from hloscope.errors import one_line
from hloscope.sources.jax.arguments import example_value, format_path, tree_paths
from hloscope.stages import ArgumentLeaf, StaticArgument

Library = Literal["flax", "equinox"]
"""A library that wraps JAX's jit and stages."""

JAX_STAGES = (jax.stages.Traced, jax.stages.Lowered, jax.stages.Compiled, jax.export.Exported)
"""JAX's own stage objects: something already traced."""

# The public fields in which Flax NNX's and Equinox's stage objects hold JAX's.
_STAGE_FIELDS = ("lowered", "compiled", "traced")


def library_of(obj: Any) -> Library | None:
    """The library `obj`'s type (or a class it derives from: a user's `eqx.Module`)
    comes from, when it is one that wraps JAX."""
    for kind in getattr(type(obj), "__mro__", ()):
        root = str(getattr(kind, "__module__", "") or "").partition(".")[0]
        if root == "flax":
            return "flax"
        if root == "equinox":
            return "equinox"
    return None


class _LowerFor:
    """Stands for an Equinox wrapper's inner `jax.jit` (its `_cached`) while it is
    lowered: `.lower` traces it and lowers for `platform`."""

    def __init__(self, jitted: Any, platform: str) -> None:
        self._jitted, self._platform = jitted, platform

    def lower(self, *args: Any, **kwargs: Any) -> Any:
        return self._jitted.trace(*args, **kwargs).lower(lowering_platforms=(self._platform,))


@contextlib.contextmanager
def lowered_for_platform(wrapper: Any, platform: str) -> Iterator[bool]:
    """While open, `wrapper.lower(...)` lowers for `platform`, where `wrapper` is
    Equinox's `filter_jit`, which has no `.trace` but holds a `jax.jit` that has (its
    `.lower` calls that jit's); yields whether it does. The jit is put back after."""
    inner = getattr(wrapper, "_cached", None) if library_of(wrapper) == "equinox" else None
    if not callable(getattr(inner, "trace", None)):
        yield False
        return
    # An eqx.Module is a frozen dataclass: its field is swapped past __setattr__.
    object.__setattr__(wrapper, "_cached", _LowerFor(inner, platform))
    try:
        yield True
    finally:
        object.__setattr__(wrapper, "_cached", inner)


def holds_equinox_module(tree: Any) -> bool:
    """Whether an `eqx.Module` is anywhere in `tree` (a user's subclass included)."""
    found = jax.tree_util.tree_leaves(tree, is_leaf=lambda x: library_of(x) == "equinox")
    return any(library_of(node) == "equinox" for node in found)


def jax_stage(obj: Any) -> Any | None:
    """JAX's stage object for `obj`: `obj` itself when it is one (`Traced`,
    `Lowered`, `Compiled`, `Exported`), the one a Flax NNX or Equinox stage wraps,
    or None."""
    if isinstance(obj, JAX_STAGES):
        return obj
    if library_of(obj) is None:
        return None
    for field in _STAGE_FIELDS:
        try:
            inner = getattr(obj, field, None)
        except Exception:
            continue
        if isinstance(inner, JAX_STAGES):
            return inner
    return None


def has_lower(obj: Any) -> bool:
    """Whether `obj` has a `.lower` of its own (a jitted function: `jax.jit`,
    `jax.pmap`, `nnx.jit`, `eqx.filter_jit`)."""
    if isinstance(obj, (str, bytes)) or jax_stage(obj) is not None:
        return False
    try:
        return callable(getattr(obj, "lower", None))
    except Exception:
        return False


def bound_call(
    obj: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[Any, tuple[Any, ...], dict[str, Any]]:
    """The jitted function a bound method or a partial binds, and the arguments it
    is called with: `model.step(x)` is `Model.step(model, x)`, and
    `functools.partial(f, a)(x)` is `f(a, x)`. Anything else is returned as it is."""
    if inspect.ismethod(obj) and has_lower(obj.__func__):
        return obj.__func__, (obj.__self__, *args), kwargs
    if library_of(obj) is not None and not has_lower(obj) and not inspect.isroutine(obj):
        # A Flax or Equinox module whose __call__ is jitted: its bound __call__.
        try:
            call = obj.__call__
        except Exception:
            call = None
        if call is not None and call is not obj:
            function, call_args, call_kwargs = bound_call(call, args, kwargs)
            if function is not call:
                return function, call_args, call_kwargs
    func = getattr(obj, "func", None)
    bound_args = getattr(obj, "args", None)
    keywords = getattr(obj, "keywords", None)
    is_partial = isinstance(obj, functools.partial) or (
        library_of(obj) == "equinox" and type(obj).__name__ == "Partial"
    )
    if (
        is_partial
        and has_lower(func)
        and isinstance(bound_args, tuple)
        and isinstance(keywords, dict)
    ):
        return func, (*bound_args, *args), {**keywords, **kwargs}
    return obj, args, kwargs


def concrete_shapes(
    args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """`jax.ShapeDtypeStruct` leaves made zero arrays of their shape: `eqx.filter_jit`
    traces arrays only and keeps anything else static, so a shape would reach the
    function as a Python object."""

    def concrete(leaf: Any) -> Any:
        if not isinstance(leaf, jax.ShapeDtypeStruct):
            return leaf
        return example_value(leaf)

    is_shape = lambda x: isinstance(x, jax.ShapeDtypeStruct)  # noqa: E731
    new_args, new_kwargs = jax.tree_util.tree_map(concrete, (args, kwargs), is_leaf=is_shape)
    return tuple(new_args), dict(new_kwargs)


# --------------------------------------------------------------------------- paths


def argument_leaf_names(obj: Any, args: Any, kwargs: Any) -> list[str] | None:
    """The name of each leaf of `(args, kwargs)`, a call of `obj`, as `params` names
    arguments: the parameter's name and the path below it, without the `.value` of a
    Flax `Variable` (`model.blocks[0].linear.bias`); None where they do not line up."""
    try:
        paths = user_key_paths((tuple(args), dict(kwargs)))
        if len(paths) != len(jax.tree_util.tree_leaves((tuple(args), dict(kwargs)))):
            return None
        names = _parameter_names(obj)
        return [format_path(path, names) for path in paths]
    except Exception:
        return None


def user_key_paths(tree: Any, is_leaf: Any = None) -> list[tuple[Any, ...]]:
    """The key path of each leaf of `tree` (as `jax.tree_util` flattens it with
    `is_leaf`) without the level a Flax `Variable` adds (`.value`)."""

    def stop(x: Any) -> bool:
        return _is_variable(x) or bool(is_leaf is not None and is_leaf(x))

    out: list[tuple[Any, ...]] = []
    for path, node in jax.tree_util.tree_flatten_with_path(tree, is_leaf=stop)[0]:
        if _is_variable(node):
            out.extend([tuple(path)] * len(jax.tree_util.tree_leaves(node, is_leaf=is_leaf)))
        else:
            out.append(tuple(path))
    return out


def readable_paths(
    obj: Any,
    lowered: Any,
    leaves: tuple[ArgumentLeaf, ...],
    call: tuple[tuple[Any, ...], dict[str, Any]] | None,
) -> tuple[ArgumentLeaf, ...]:
    """`leaves` with their paths as the user wrote them where a library or `pmap`
    renamed them (JAX's names are kept everywhere else). `obj` is what was lowered
    (None for a stage given as it is); `call` its arguments, when known."""
    try:
        renamed = _renamed(obj, lowered, [leaf.path for leaf in leaves], call)
    except Exception:
        return leaves
    if renamed is None or len(renamed.paths) != len(leaves):
        return leaves
    return tuple(
        dataclasses.replace(leaf, path=path, also=renamed.also.get(leaf.position, ()))
        for leaf, path in zip(leaves, renamed.paths, strict=True)
    )


def result_paths(obj: Any, lowered: Any) -> tuple[str, ...]:
    """The name of each output leaf of `lowered`, in order, as the user would write
    it: JAX's own (`result`, `result[1]['loss']`, its `jax.result_info`), except where
    `nnx.jit` returns its arguments' updated states beside the function's value
    (`((states of each argument), keyword states, value)`): a state leaf is named as
    the argument leaf is (`model.w1`, `optimizer.momentum.w1`), the value as JAX names
    the function's own output (`result`). `obj`: what was lowered (None for a stage
    given as it is); none where JAX's stage has no output tree."""
    try:
        tree = lowered.out_tree
        skeleton = jax.tree_util.tree_unflatten(tree, [_Slot(i) for i in range(tree.num_leaves)])
        paths = jax.tree_util.tree_flatten_with_path(skeleton)[0]
    except Exception:
        return ()
    names = ["result" + _keys(path) for path, _ in paths]
    if library_of(obj) != "flax" or not (isinstance(skeleton, tuple) and len(skeleton) == 3):
        return tuple(names)
    try:
        renamed = _flax_result_paths(obj, skeleton, names)
    except Exception:
        return tuple(names)
    return tuple(renamed) if len(renamed) == len(names) else tuple(names)


def _flax_result_paths(obj: Any, skeleton: Any, names: list[str]) -> list[str]:
    """`names` of nnx.jit's outputs under the user's names: the updated states of the
    arguments and keywords (`(args, kwargs)`, named as `format_path` names argument
    leaves, each graph rebuilt as the arguments' are), and the value."""
    args, kwargs, value = skeleton
    out = list(names)
    # The outputs are split in one context, as the arguments are: a later state's
    # graph refers to Variables of an earlier one by index; such a Variable keeps the
    # name of the first (as an argument reachable from several does).
    shared_index = _shared_index()
    parameters = _parameter_names(obj)
    named: set[int] = set()
    for path, node in jax.tree_util.tree_flatten_with_path((args, kwargs), is_leaf=_is_node_states)[
        0
    ]:
        if not _is_node_states(node):
            continue
        head = format_path(tuple(path), parameters)
        for position, graph_path in _graph_paths(_rebuilt(node, shared_index)).items():
            if position < len(out) and position not in named:
                out[position] = head + graph_path
                named.add(position)
    for path, slot in jax.tree_util.tree_flatten_with_path(value)[0]:
        if isinstance(slot, _Slot) and slot.position < len(out):
            out[slot.position] = "result" + _keys(path)
    return out


def library_static(
    obj: Any, call: tuple[tuple[Any, ...], dict[str, Any]]
) -> tuple[StaticArgument, ...]:
    """What `eqx.filter_jit` keeps static: every leaf of the arguments that is not an
    array (a module's activation function, its sizes, its name)."""
    if library_of(obj) != "equinox":
        return ()
    try:
        bound_args, bound_kwargs, names = _bound(obj, call)
    except Exception:
        return ()
    out = []
    for index, value in enumerate(bound_args):
        for path, leaf in jax.tree_util.tree_flatten_with_path(value)[0]:
            if not _is_array(leaf):
                out.append(StaticArgument(_name(names, index) + _keys(path), _shown(leaf), index))
    for key, value in bound_kwargs.items():
        for path, leaf in jax.tree_util.tree_flatten_with_path(value)[0]:
            if not _is_array(leaf):
                out.append(StaticArgument(str(key) + _keys(path), _shown(leaf), None))
    return tuple(out)


@dataclasses.dataclass(frozen=True)
class _Renamed:
    paths: list[str]
    """Per leaf, its path as the user wrote it."""
    also: dict[int, tuple[str, ...]] = dataclasses.field(default_factory=dict)
    """Position -> the other paths a shared Flax Variable is reachable by."""


def _renamed(
    obj: Any,
    lowered: Any,
    names: list[str],
    call: tuple[tuple[Any, ...], dict[str, Any]] | None,
) -> _Renamed | None:
    if names and all(n.startswith("flat_args[") for n in names):
        # jax.pmap names its arguments by their place in its own flat list.
        paths = tree_paths(lowered.in_tree, _parameter_names(obj))
        return _Renamed(paths) if paths else None
    if (
        library_of(obj) == "equinox"
        and call is not None
        and any(n.startswith(("dynamic_donate", "dynamic_nodonate")) for n in names)
    ):
        return _Renamed(_equinox_paths(obj, lowered, call))
    return _flax_paths(obj, lowered, names)


@dataclasses.dataclass(frozen=True, eq=False)
class _Slot:
    """A placeholder for a leaf of the argument tree, standing for its position."""

    position: int


def _skeleton(lowered: Any) -> Any:
    tree = lowered.in_tree
    return jax.tree_util.tree_unflatten(tree, [_Slot(i) for i in range(tree.num_leaves)])


def _flax_paths(obj: Any, lowered: Any, names: list[str]) -> _Renamed | None:
    """Names under Flax NNX's split states and Flax `Variable`s: the graph path of
    each state leaf, and no `.value`; and the other paths of a Variable that several
    arguments (or several fields) reach."""

    def is_flax_node(x: Any) -> bool:
        return _is_node_states(x) or _is_tree_state(x) or _is_variable(x)

    found = jax.tree_util.tree_flatten_with_path(_skeleton(lowered), is_leaf=is_flax_node)[0]
    if not any(is_flax_node(node) for _, node in found):
        return None
    out = list(names)
    # nnx.jit splits all its arguments in one context: a Variable an earlier argument
    # holds is passed there only, and a later argument's graph refers to it by index.
    # So the graphs are rebuilt in argument order, sharing those indexes.
    shared_index = _shared_index()
    all_paths: dict[int, list[str]] = {}
    for path, node in found:
        if not is_flax_node(node):
            continue
        inner = jax.tree_util.tree_flatten_with_path(node)[0]
        graph: dict[int, str] = {}
        if _is_node_states(node):
            rebuilt = _rebuilt(node, shared_index)
            graph = _graph_paths(rebuilt)
            head = _argument_head(obj, path, inner, out)
            for position, reached in _every_path(rebuilt).items():
                all_paths.setdefault(position, []).extend(head + p for p in reached)
        shown = user_key_paths(node) if _is_tree_state(node) else []
        for index, (sub_path, slot) in enumerate(inner):
            if not isinstance(slot, _Slot) or slot.position >= len(out):
                continue
            jax_name = out[slot.position]
            suffix = _keys(sub_path)
            if not jax_name.endswith(suffix):
                continue
            head = jax_name[: len(jax_name) - len(suffix)]
            if _is_tree_state(node):
                # The state under `__state__`, keyed as the module's fields.
                keys = shown[index][1:] if len(shown) == len(inner) else sub_path[1:]
                out[slot.position] = head + "".join(_key_text(_key(k)) for k in keys)
            else:
                out[slot.position] = head + graph.get(slot.position, "")
    also = {}
    for position, reached in all_paths.items():
        if position < len(out):
            others = tuple(dict.fromkeys(p for p in reached if p != out[position]))
            if others:
                also[position] = others
    return _Renamed(out, also)


def _shared_index() -> Any:
    from flax import nnx

    return nnx.graph.IndexMap()


def _rebuilt(node_states: Any, shared_index: Any) -> Any:
    """The graph of an NNX `NodeStates` rebuilt on placeholders (`_Slot`s), resolving
    references to Variables of earlier arguments through `shared_index`."""
    from flax import nnx

    return nnx.graph.unflatten(node_states.graphdef, *node_states.states, index_ref=shared_index)


def _graph_paths(rebuilt: Any) -> dict[int, str]:
    """Position -> graph path (`.blocks[0].linear.kernel`) of the leaves of a rebuilt
    NNX graph, as Flax's own `flatten` gives them (one path per Variable)."""
    from flax import nnx

    _graphdef, flat = nnx.graph.flatten(rebuilt, with_paths=True)
    out: dict[int, str] = {}
    for path, value in flat:
        slot = _slot_of(value)
        if isinstance(slot, _Slot):
            out[slot.position] = "".join(_key_text(k) for k in path)
    return out


def _slot_of(value: Any) -> Any:
    if _is_variable(value):
        getter = getattr(value, "get_value", None)
        return getter() if callable(getter) else getattr(value, "value", value)
    return value


_MAX_VISITS = 8
"""How often one graph node is walked into by `_every_path`: enough for the paths
people share Variables by, without walking a graph of many shared nodes once per path
(exponentially many)."""


def _every_path(rebuilt: Any) -> dict[int, list[str]]:
    """Position -> every path (not only Flax's first) by which the rebuilt graph
    reaches the Variable holding that leaf, in Flax's order of traversal."""
    from flax import nnx

    out: dict[int, list[str]] = {}
    visits: dict[int, int] = {}

    def walk(node: Any, path: str, ancestors: frozenset[int]) -> None:
        if _is_variable(node):
            slot = _slot_of(node)
            if isinstance(slot, _Slot):
                out.setdefault(slot.position, []).append(path)
            return
        impl = nnx.graph.get_node_impl(node)
        if impl is None or id(node) in ancestors:
            return
        visits[id(node)] = visits.get(id(node), 0) + 1
        if visits[id(node)] > _MAX_VISITS:
            return
        for key, child in impl.node_dict(node).items():
            if isinstance(key, str) and key.startswith("_pytree__"):
                continue  # Flax's own bookkeeping, no Variables
            walk(child, path + _key_text(key), ancestors | {id(node)})

    walk(rebuilt, "", frozenset())
    return out


def _argument_head(obj: Any, path: Any, inner: list[Any], names: list[str]) -> str:
    """The name JAX gives the argument holding an NNX `NodeStates` (`optimizer`): read
    off one of its leaves' names, or, for one without leaves of its own, made from the
    function's parameter names."""
    for sub_path, slot in inner:
        if isinstance(slot, _Slot) and slot.position < len(names):
            suffix = _keys(sub_path)
            if names[slot.position].endswith(suffix):
                return names[slot.position][: len(names[slot.position]) - len(suffix)]
    return format_path(tuple(path), _parameter_names(obj))


def _is_node_states(x: Any) -> bool:
    return type(x).__name__ == "NodeStates" and str(type(x).__module__).startswith("flax.")


def _is_tree_state(x: Any) -> bool:
    """NNX's `TreeState`: a module passed by `nnx.jit(graph_updates=False)`."""
    return type(x).__name__ == "TreeState" and str(type(x).__module__).startswith("flax.")


def _key(key: Any) -> Any:
    """What a JAX key path entry names: a dict key, an index, an attribute."""
    for field in ("key", "idx", "name"):
        if hasattr(key, field):
            return getattr(key, field)
    return key


def _is_variable(x: Any) -> bool:
    return any(
        t.__name__ == "Variable" and str(t.__module__).startswith("flax.") for t in type(x).__mro__
    )


def _equinox_paths(
    obj: Any, lowered: Any, call: tuple[tuple[Any, ...], dict[str, Any]]
) -> list[str]:
    """Names under `eqx.filter_jit`'s split: its `first` part holds the leaves of the
    first argument, `rest` those of `(other arguments, keywords)`, `fun` those of
    the function itself, each by its index among all the leaves (arrays or not)."""
    bound_args, bound_kwargs, names = _bound(obj, call)
    first: list[str] = []
    if bound_args:
        first = [names[0] + _keys(p) for p, _ in _leaves_with_paths(bound_args[0])]
    rest: list[str] = []
    for path, _leaf in _leaves_with_paths(((*bound_args[1:], None), bound_kwargs)):
        group, key, tail = path[0], path[1], path[2:]
        if getattr(group, "idx", None) == 0:
            rest.append(_name(names, int(key.idx) + 1) + _keys(tail))
        else:
            rest.append(str(key.key) + _keys(tail))
    out = []
    for path, _slot in jax.tree_util.tree_flatten_with_path(_skeleton(lowered))[0]:
        # (args, kwargs) -> args[0 or 1] (donated or not) -> part -> leaf index.
        part = getattr(path[2], "key", None) if len(path) > 3 else None
        index = getattr(path[3], "idx", None) if len(path) > 3 else None
        tail = _keys(path[4:])
        if part == "first" and index is not None and index < len(first):
            out.append(first[index] + tail)
        elif part == "rest" and index is not None and index < len(rest):
            out.append(rest[index] + tail)
        elif part == "fun":
            out.append(f"{_function_name(obj)}{_keys(path[3:])}")
        else:
            out.append(_keys(path))
    return out


def _bound(
    obj: Any, call: tuple[tuple[Any, ...], dict[str, Any]]
) -> tuple[tuple[Any, ...], dict[str, Any], list[str]]:
    """The arguments bound to `obj`'s signature as `eqx.filter_jit` binds them, and
    the names of the positional ones."""
    args, kwargs = call
    signature = inspect.signature(obj)
    bound = signature.bind(*args, **kwargs)
    names: list[str] = []
    for parameter in signature.parameters.values():
        if parameter.kind in (parameter.POSITIONAL_ONLY, parameter.POSITIONAL_OR_KEYWORD):
            names.append(parameter.name)
        elif parameter.kind == parameter.VAR_POSITIONAL:
            extra = len(bound.args) - len(names)
            names.extend(f"{parameter.name}[{i}]" for i in range(extra))
    return tuple(bound.args), dict(bound.kwargs), names


def _leaves_with_paths(tree: Any) -> list[tuple[Any, Any]]:
    return list(jax.tree_util.tree_flatten_with_path(tree)[0])


def _parameter_names(obj: Any) -> list[str] | None:
    if obj is None:
        return None
    try:
        parameters = inspect.signature(obj).parameters.values()
    except (TypeError, ValueError):
        return None
    return [p.name for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]


def _function_name(obj: Any) -> str:
    name = getattr(obj, "__name__", None)
    return name if isinstance(name, str) else "function"


def _name(names: Sequence[str], index: int) -> str:
    return names[index] if index < len(names) else f"args[{index}]"


def _keys(path: Sequence[Any]) -> str:
    return str(jax.tree_util.keystr(tuple(path))) if path else ""


def _key_text(key: Any) -> str:
    if isinstance(key, int):
        return f"[{key}]"
    if isinstance(key, str) and key.isidentifier():
        return f".{key}"
    return f"[{key!r}]"


def _is_array(leaf: Any) -> bool:
    return isinstance(leaf, (jax.Array, np.ndarray, np.generic))


def _shown(value: Any) -> str:
    """A static value as the user would name it: a function by its qualified name
    (its repr carries an address that changes every run)."""
    if callable(value) and not isinstance(value, type):
        target = inspect.unwrap(value) if hasattr(value, "__wrapped__") else value
        name = getattr(target, "__qualname__", None)
        if isinstance(name, str):
            return f"<function {name}>"
    try:
        text = repr(value)
    except Exception:
        text = f"<{type(value).__name__}>"
    return one_line(text, 80)

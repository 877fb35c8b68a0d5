"""Example arguments, and the readable names and shapes of argument leaves.

What a function requires (`needs_arguments`; `require_no_arguments` refuses one
given none, saying how to give them), the arguments that `--arg` shapes and an
`--args` factory stand for, and what JAX reports about arguments in hloscope's
words: an aval's HLO shape, size and memory kind, and the pytree path of a leaf in
an `(args, kwargs)` tree.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import Any

import jax
import numpy as np

from hloscope.errors import HloscopeError, describe_exception
from hloscope.sources.entrypoint import user_code
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


def require_no_arguments(obj: Any, label: str, arguments_hint: str) -> None:
    """Refuse a function that needs arguments when none were given, saying how to give
    them (`arguments_hint`, in the words of the front end that asked)."""
    required = needs_arguments(obj)
    if required:
        raise HloscopeError(
            f"it takes {len(required)} argument{'s' if len(required) > 1 else ''} "
            f"({', '.join(required)}) but no example arguments were given: {arguments_hint}",
            where=label,
        )


# --------------------------------------------------------------------------- avals & trees


def aval_shape(aval: Any) -> str:
    hlo = hlo_dtype(np.dtype(aval.dtype).name)
    dims = ",".join(str(d) for d in aval.shape)
    return f"{hlo}[{dims}]"


def aval_bytes(aval: Any) -> int | None:
    try:
        return int(np.prod(aval.shape, dtype=np.int64)) * int(np.dtype(aval.dtype).itemsize)
    except Exception:
        return None


def aval_memory_kind(aval: Any) -> str | None:
    space = getattr(aval, "memory_space", None)
    if space is None:
        return None
    name = str(space).rpartition(".")[2].lower()
    return None if name in ("device", "any") else name


def tree_paths(in_tree: Any, parameter_names: Sequence[str] | None) -> list[str]:
    """Readable pytree paths of the leaves of an `(args, kwargs)` tree."""
    try:
        count = in_tree.num_leaves
        skeleton = jax.tree_util.tree_unflatten(in_tree, list(range(count)))
        with_paths, _ = jax.tree_util.tree_flatten_with_path(skeleton)
    except Exception:
        return []
    paths: list[str] = []
    for path, _leaf in with_paths:
        paths.append(format_path(path, parameter_names))
    return paths


def format_path(path: Sequence[Any], parameter_names: Sequence[str] | None) -> str:
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


def kwarg_names(lowered: Any) -> set[str]:
    try:
        _args, kwargs = jax.tree_util.tree_unflatten(
            lowered.in_tree, [None] * lowered.in_tree.num_leaves
        )
        return set(kwargs)
    except Exception:
        return set()

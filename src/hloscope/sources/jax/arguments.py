"""Example arguments, and the readable names and shapes of argument leaves.

What a function requires (`needs_arguments`; `require_no_arguments` refuses one
given none, saying how to give them), the arguments that `--arg` shapes and an
`--args` factory stand for, and what JAX reports about arguments in hloscope's
words: an aval's HLO shape, size and memory kind, and the pytree path of a leaf in
an `(args, kwargs)` tree.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import os
import sys
import types
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import jax
import numpy as np

from hloscope.errors import HloscopeError, describe_exception
from hloscope.ir.locations import is_user_file
from hloscope.sources.entrypoint import user_code
from hloscope.sources.target import KEY_IMPLS, ArgSpec, hlo_dtype
from hloscope.units import with_article

# --------------------------------------------------------------------------- arguments


def example_arguments(specs: Sequence[ArgSpec]) -> tuple[Any, ...]:
    """`jax.ShapeDtypeStruct`s for `--arg` specs (of a typed key dtype for
    `key<fry>[]`)."""
    out = []
    for spec in specs:
        if spec.dtype.startswith("key<"):
            impl = KEY_IMPLS[spec.dtype[4:-1]]
            key_dtype = jax.eval_shape(lambda impl=impl: jax.random.key(0, impl=impl)).dtype
            out.append(jax.ShapeDtypeStruct(spec.shape, key_dtype))
            continue
        try:
            dtype = np.dtype(getattr(jax.numpy, spec.dtype))
        except (AttributeError, TypeError) as exc:
            raise HloscopeError(f"bad --arg '{spec.text}': JAX has no dtype {spec.dtype}") from exc
        out.append(jax.ShapeDtypeStruct(spec.shape, dtype))
    return tuple(out)


_SHARDING_TAKERS = frozenset(
    ("device_put", "make_array_from_callback", "make_array_from_single_device_arrays", "__init__")
)
"""JAX's public functions that give an array its sharding (`__init__`: a
`ShapeDtypeStruct(..., sharding=)`), whose caller's line built the sharding."""


@contextlib.contextmanager
def sharding_lines() -> Iterator[dict[int, str]]:
    """While the block runs, each sharding handed to one of JAX's `_SHARDING_TAKERS`,
    by `id`, and the line of the user's code that handed it (`file.py:LINE`, relative
    to the working directory where below it): where the user built an argument's
    sharding, which no module records. Read by Python's profiler hook, which sees the
    calls into JAX's Python functions with their arguments."""
    found: dict[int, str] = {}
    jax_folder = os.path.dirname(jax.__file__) + os.sep

    def hook(frame: types.FrameType, event: str, _arg: object) -> None:
        code = frame.f_code
        if event != "call" or code.co_name not in _SHARDING_TAKERS:
            return
        if not code.co_filename.startswith(jax_folder):
            return
        for value in frame.f_locals.values():
            if isinstance(value, jax.sharding.Sharding) and id(value) not in found:
                line = _user_line(frame.f_back)
                if line is not None:
                    found[id(value)] = line

    before = sys.getprofile()
    sys.setprofile(hook)
    try:
        yield found
    finally:
        sys.setprofile(before)


def _user_line(frame: types.FrameType | None) -> str | None:
    """`file.py:LINE` of the innermost frame from `frame` out that is the user's."""
    while frame is not None:
        path = frame.f_code.co_filename
        if is_user_file(path) and not path.startswith("<"):
            relative = os.path.relpath(path)
            shown = path if relative.startswith(os.pardir) else relative
            return f"{shown}:{frame.f_lineno}"
        frame = frame.f_back
    return None


def leaf_sharding_lines(
    args: tuple[Any, ...], kwargs: dict[str, Any], lines: Mapping[int, str]
) -> dict[int, str]:
    """Per position among the flattened leaves of `(args, kwargs)`, the line that
    built the leaf's sharding (`sharding_lines`), where one did."""
    leaves = jax.tree_util.tree_leaves((args, kwargs))
    found = {}
    for position, leaf in enumerate(leaves):
        line = lines.get(id(getattr(leaf, "sharding", None)))
        if line is not None:
            found[position] = line
    return found


def factory_arguments(
    factory: Any, label: str, lines: dict[int, str] | None = None
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """Call an `--args` factory; accept a tuple of arguments or `(args, kwargs)`.
    `lines`, when given, gets where the factory built each leaf's sharding (by leaf
    position, `leaf_sharding_lines`)."""
    built: dict[int, str] = {}
    if not callable(factory):
        value = factory
    else:
        try:
            with user_code(), sharding_lines() as built:
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
        args, kwargs = tuple(value[0]), dict(value[1])
        if lines is not None:
            lines.update(leaf_sharding_lines(args, kwargs, built))
        return args, kwargs
    if isinstance(value, list):
        value = tuple(value)
    if not isinstance(value, tuple):
        raise HloscopeError(
            f"the --args factory returned {with_article(type(value).__name__)}; expected a "
            "tuple of "
            "positional arguments or a pair (args_tuple, kwargs_dict)",
            where=label,
        )
    if lines is not None:
        lines.update(leaf_sharding_lines(value, {}, built))
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
    """The shape of a leaf as the user knows it, in HLO-like spelling: `f32[4,8]`,
    `bf16[4]`, `s4[8]`, and for the dtypes XLA has no element type for, JAX's own
    name: `key<fry>[]` (a typed PRNG key), `float0[2]` (the tangent of an integer)."""
    dims = ",".join(str(d) for d in aval.shape)
    return f"{dtype_text(aval.dtype)}[{dims}]"


def dtype_text(dtype: Any) -> str:
    """HLO spelling of a dtype (`f32`, `pred`, `s4`); `key<fry>`, `key<rbg>`,
    `key<urbg>` for typed PRNG keys, as JAX prints them; `float0`."""
    if is_key_dtype(dtype):
        return str(dtype)
    if is_float0(dtype):
        return "float0"
    return hlo_dtype(np.dtype(dtype).name)


def is_key_dtype(dtype: Any) -> bool:
    """Whether `dtype` is JAX's dtype of typed PRNG keys (`key<fry>`, any impl)."""
    try:
        return bool(jax.dtypes.issubdtype(dtype, jax.dtypes.prng_key))
    except TypeError:
        return False


def is_float0(dtype: Any) -> bool:
    """Whether `dtype` is `jax.dtypes.float0` (the tangent type of integers)."""
    try:
        return bool(np.dtype(dtype) == jax.dtypes.float0)
    except TypeError:
        return False


def aval_bytes(aval: Any) -> int | None:
    """Bytes of the array XLA is passed for a leaf: a typed key's `key_data`
    (`u32[2]` for `key<fry>[]`), a `float0` array's `pred` array, sub-byte types
    packed as XLA holds them (`s4[8]`: 4 bytes). None when it cannot be told."""
    try:
        elements = int(np.prod(aval.shape, dtype=np.int64))
        bits = element_bits(aval.dtype)
    except Exception:
        return None
    if bits is None:
        return None
    return (elements * bits + 7) // 8


def element_bits(dtype: Any) -> int | None:
    """Bits per element of what XLA is passed for `dtype` (None when unknown)."""
    if is_key_dtype(dtype):
        return _key_bits(dtype)
    if is_float0(dtype):
        # JAX passes a float0 array as booleans (`pred`, one byte each).
        return 8
    try:
        return int(jax.dtypes.itemsize_bits(dtype))
    except Exception:
        return None


@functools.lru_cache(maxsize=32)
def _key_bits(dtype: Any) -> int | None:
    """Bits of one key of a typed key dtype: JAX's `key_data` of a key of that impl
    (`u32[2]` for threefry, `u32[4]` for rbg), as `jax.eval_shape` reports it."""
    try:
        data = jax.eval_shape(jax.random.key_data, jax.ShapeDtypeStruct((), dtype))
        return int(np.prod(data.shape, dtype=np.int64)) * int(jax.dtypes.itemsize_bits(data.dtype))
    except Exception:
        return None


def key_data_shape(aval: Any) -> tuple[tuple[int, ...], Any] | None:
    """The shape and dtype of a typed key array's `key_data` (the array XLA is
    passed): `((3, 2), uint32)` for `key<fry>[3]`. None for any other leaf."""
    if not is_key_dtype(aval.dtype):
        return None
    data = jax.eval_shape(jax.random.key_data, jax.ShapeDtypeStruct(tuple(aval.shape), aval.dtype))
    return tuple(data.shape), data.dtype


def key_impl(dtype: Any) -> Any:
    """The PRNG implementation of a typed key dtype, as `jax.random.key_impl` names
    it for a key of that dtype (`threefry2x32`, `rbg`, `unsafe_rbg`, or a custom
    `PRNGSpec`), traced abstractly: no key is made."""
    found: list[Any] = []

    def probe(key: Any) -> Any:
        found.append(jax.random.key_impl(key))
        return jax.random.key_data(key)

    jax.eval_shape(probe, jax.ShapeDtypeStruct((), dtype))
    return found[0]


def example_value(shape: Any, seed: int = 0) -> Any:
    """A concrete value for a `jax.ShapeDtypeStruct`, placed as its sharding says:
    zeros, or real keys of its implementation for a typed key dtype (split from
    `jax.random.key(seed)`), or a `float0` array."""
    sharding = getattr(shape, "sharding", None)
    dims = tuple(shape.shape)
    if is_key_dtype(shape.dtype):
        value = jax.random.split(jax.random.key(seed, impl=key_impl(shape.dtype)), dims)
    elif is_float0(shape.dtype):
        # JAX passes float0 arrays as they are (device_put keeps them on the host).
        return np.zeros(dims, jax.dtypes.float0)
    else:
        value = np.zeros(dims, shape.dtype)
    return jax.device_put(value, sharding) if sharding is not None else jax.device_put(value)


def shard_bytes(shape: Sequence[int], nbytes: int, sharding: Any) -> int | None:
    """Bytes of one device's shard of an array of `shape` (`nbytes` in all) placed by
    `sharding`, from JAX's `Sharding.shard_shape`; None without a sharding."""
    if not isinstance(sharding, jax.sharding.Sharding):
        return None
    try:
        shard = sharding.shard_shape(tuple(shape))
    except Exception:
        return None  # a sharding that does not fit the shape: JAX refuses it elsewhere
    whole = int(np.prod(shape, dtype=np.int64))
    return nbytes * int(np.prod(shard, dtype=np.int64)) // whole if whole else 0


def leaf_sharding(leaf: Any) -> Any:
    """The sharding an argument leaf is placed with (a `jax.Array`'s, a
    `ShapeDtypeStruct`'s), or None where it has none and jit chooses; None for a
    tracer, whose sharding is its trace's mesh, not where it is placed."""
    if isinstance(leaf, jax.core.Tracer):
        return None
    try:
        sharding = getattr(leaf, "sharding", None)
    except Exception:
        return None  # an array already deleted, or donated
    return sharding if isinstance(sharding, jax.sharding.Sharding) else None


def explicit_sharding(aval: Any) -> Any:
    """A traced value's sharding where JAX decides it (every axis of its mesh that splits
    anything is `Explicit`), else None: on `Auto` axes, or outside any mesh, XLA chooses
    as it compiles."""
    sharding = getattr(aval, "sharding", None)
    mesh = getattr(sharding, "mesh", None)
    try:
        axes = zip(mesh.axis_names, mesh.axis_types, strict=True)  # type: ignore[union-attr]
        sizes = dict(mesh.shape)  # type: ignore[union-attr]
    except (AttributeError, TypeError, ValueError):
        return None
    explicit = jax.sharding.AxisType.Explicit
    if not sizes or any(sizes[name] > 1 and kind != explicit for name, kind in axes):
        return None
    return sharding


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

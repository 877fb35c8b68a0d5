"""Concrete inputs for running a function on its example arguments: values made for
shapes (`--arg`, `jax.ShapeDtypeStruct`) from a seeded generator, and copies of the
arrays given, placed as they were. `aot-check` runs both paths on them, and `profile`
runs the compiled program on them.
"""

from __future__ import annotations

import contextlib
import inspect
from typing import Any

import jax
import numpy as np

from hloscope.errors import HloscopeError, describe_exception, one_line
from hloscope.runs import InputLeaf
from hloscope.sources.jax.arguments import (
    aval_shape,
    format_path,
    is_float0,
    is_key_dtype,
    key_impl,
)
from hloscope.sources.jax.libraries import bound_call, user_key_paths
from hloscope.sources.jax.private import describe_sharding

# Seed of the pseudo-random inputs made for shapes (`--arg`, `jax.ShapeDtypeStruct`).
INPUT_SEED = 0


class InputPlan:
    """The concrete inputs both paths run on, made afresh for each path: values for
    shapes come from a NumPy generator with a fixed seed (so two runs agree), and
    arrays are copied, since a path may donate (delete) what it is given."""

    def __init__(self, obj: Any, args: tuple[Any, ...], kwargs: dict[str, Any], label: str):
        names = _positional_names(obj)
        is_leaf = lambda x: isinstance(x, jax.ShapeDtypeStruct)  # noqa: E731
        tree = (tuple(args), dict(kwargs))
        with_paths, self._tree = jax.tree_util.tree_flatten_with_path(tree, is_leaf=is_leaf)
        shown_paths = user_key_paths(tree, is_leaf)
        rng = np.random.default_rng(INPUT_SEED)
        self._makers: list[Any] = []
        leaves: list[InputLeaf] = []
        for index, (path, leaf) in enumerate(with_paths):
            shown = shown_paths[index] if len(shown_paths) == len(with_paths) else path
            name = format_path(shown, names)
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


def _positional_names(obj: Any) -> list[str]:
    """Names of `obj`'s positional parameters; for a bound method or a partial, those
    of the function it binds after the ones it binds."""
    function, bound, _ = bound_call(obj, (), {})
    for candidate, skip in ((obj, 0), (function, len(bound))):
        with contextlib.suppress(TypeError, ValueError):
            names = [
                p.name
                for p in inspect.signature(candidate).parameters.values()
                if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
            ]
            return names[skip:]
    return []


def _input_leaf(leaf: Any, path: str, rng: Any, label: str) -> tuple[Any, InputLeaf]:
    if isinstance(leaf, jax.ShapeDtypeStruct):
        try:
            sharding = leaf.sharding
        except Exception as exc:
            raise HloscopeError(
                f"the sharding of {path}: {one_line(str(exc), 200)}", where=label
            ) from exc
        if is_key_dtype(leaf.dtype):
            # Keys of the struct's impl, split from one seeded key: real keys, so the
            # function's random draws are what it would draw.
            impl = _key_impl(leaf.dtype, path, label)
            seed = int(rng.integers(0, 2**31))
            keys = jax.random.split(jax.random.key(seed, impl=impl), tuple(leaf.shape))
            data = np.asarray(jax.random.key_data(keys))
            return _placed_keys(data, impl, sharding), InputLeaf(
                path, aval_shape(leaf), "generated", _sharding_text(sharding)
            )
        if is_float0(leaf.dtype):
            # float0 has one value; JAX passes such arrays as they are.
            zeros = np.zeros(tuple(leaf.shape), jax.dtypes.float0)
            return (lambda: zeros.copy()), InputLeaf(path, aval_shape(leaf), "generated", None)
        if jax.dtypes.issubdtype(leaf.dtype, jax.dtypes.extended):
            raise HloscopeError(
                f"cannot make a value for {path} ({leaf.dtype}): give concrete arrays "
                "from the --args factory",
                where=label,
            )
        host = _random_values(rng, tuple(leaf.shape), np.dtype(leaf.dtype))
        return _placed(host, sharding), InputLeaf(
            path, aval_shape(leaf), "generated", _sharding_text(sharding)
        )
    if isinstance(leaf, jax.Array):
        # An array JAX may still move (not committed to a device) is placed as one.
        sharding = leaf.sharding if getattr(leaf, "committed", True) else None
        if is_key_dtype(leaf.dtype):
            # A key array is copied through its key data, as any array is (a path may
            # donate, and so delete, what it is given).
            impl = jax.random.key_impl(leaf)
            data = np.asarray(jax.random.key_data(leaf))
            return _placed_keys(data, impl, sharding), InputLeaf(
                path, aval_shape(leaf), "given", _sharding_text(sharding)
            )
        if jax.dtypes.issubdtype(leaf.dtype, jax.dtypes.extended):
            # Another extended dtype has no NumPy form; both paths get the array.
            return (lambda: leaf), InputLeaf(path, str(leaf.dtype), "given", None)
        host = np.asarray(leaf)
        return _placed(host, sharding), InputLeaf(
            path, _array_shape(host), "given", _sharding_text(sharding)
        )
    if isinstance(leaf, np.ndarray):
        host = leaf.copy()
        return (lambda: host.copy()), InputLeaf(path, _array_shape(host), "given", None)
    return (lambda: leaf), InputLeaf(path, type(leaf).__name__, "python", None)


def _key_impl(dtype: Any, path: str, label: str) -> Any:
    try:
        return key_impl(dtype)
    except Exception as exc:
        raise HloscopeError(
            f"cannot make a key for {path} ({dtype}): {describe_exception(exc)}", where=label
        ) from exc


def _placed_keys(data: Any, impl: Any, sharding: Any) -> Any:
    """A maker of fresh key arrays of `impl` from their key data, placed as given."""

    def make() -> Any:
        keys = jax.random.wrap_key_data(data.copy(), impl=impl)
        return jax.device_put(keys) if sharding is None else jax.device_put(keys, sharding)

    return make


def _placed(host: Any, sharding: Any) -> Any:
    if sharding is None:
        return lambda: jax.device_put(host)
    return lambda: jax.device_put(host, sharding)


def _sharding_text(sharding: Any) -> str | None:
    if sharding is None or isinstance(sharding, jax.sharding.SingleDeviceSharding):
        return None
    text, memory_kind = describe_sharding(sharding)
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
    return aval_shape(value)

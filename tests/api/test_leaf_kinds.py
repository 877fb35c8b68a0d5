"""Every kind of leaf JAX accepts as an argument, through `hloscope.inspect(...)
.params`, against JAX's own answers.

The leaves: typed PRNG keys of each implementation (`key<fry>`, `key<rbg>`,
`key<urbg>`), `float0` arrays, Python and NumPy scalars (weak types), `ml_dtypes`
types (`bfloat16`, `float8_e4m3fn`, `int4`), `jax.ShapeDtypeStruct`s (with a
`NamedSharding` over the 8 CPU devices, or none) and arrays committed to a device,
in pytrees holding `None` and empty containers (which are no leaves, and must not
shift the positions of those that are).

JAX's answers: the kept leaves (`kept_var_idx` of JAX's compile arguments), the
leaves' avals (`in_avals`, printed by JAX's `str_short`), the types of the lowered
module's parameters, and its donation attributes (`tf.aliasing_output`,
`jax.buffer_donor`) and result types, read with MLIR's own Python bindings.

A property test draws such pytrees (Hypothesis), a jitted function that uses some
leaves and ignores the others (so JAX prunes them), with or without
`donate_argnums` and `keep_unused`. `make test` runs a few examples, derandomized;
`make fuzz` runs a few hundred new ones (`HLOSCOPE_FUZZ_EXAMPLES`).
"""

from __future__ import annotations

import os
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, note, settings
from hypothesis import strategies as st
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

import hloscope
from hloscope import HloscopeError
from leaf_support import check_params_against_jax

EXAMPLES = int(os.environ.get("HLOSCOPE_FUZZ_EXAMPLES", "40"))
LONG = "HLOSCOPE_FUZZ_EXAMPLES" in os.environ
# A few hundred examples in `make fuzz`, whatever its count for the loaders.
LEAF_EXAMPLES = min(EXAMPLES, 400) if LONG else EXAMPLES

KEY_IMPLS = ("threefry2x32", "rbg", "unsafe_rbg")

# --------------------------------------------------------------------------- leaves


def _mesh_sharding() -> NamedSharding:
    mesh = jax.make_mesh((8,), ("d",), devices=jax.devices()[:8])
    return NamedSharding(mesh, P("d"))


def make_leaf(kind: tuple[Any, ...], committed: bool) -> Any:
    """A leaf of JAX from its description (drawn by Hypothesis)."""
    name = kind[0]
    if name == "key":
        _, impl, shape, seed = kind
        key = jax.random.key(seed, impl=impl)
        value = jax.random.split(key, shape) if shape else key
    elif name == "float0":
        return np.zeros(kind[1], dtype=jax.dtypes.float0)
    elif name == "python":
        return kind[1]
    elif name == "numpy_scalar":
        return np.dtype(kind[1]).type(kind[2])
    elif name == "array":
        _, dtype, shape = kind
        value = jnp.ones(shape, dtype)
    elif name == "sds":
        _, dtype, shape, sharded = kind
        if sharded:
            return jax.ShapeDtypeStruct(shape, dtype, sharding=_mesh_sharding())
        if dtype == "key":
            return jax.ShapeDtypeStruct(shape, jax.random.key(0).dtype)
        return jax.ShapeDtypeStruct(shape, dtype)
    else:
        raise AssertionError(kind)
    return jax.device_put(value, jax.devices()[1]) if committed else value


def use(leaf: Any) -> Any:
    """Something computed from a traced leaf, of its own type (so a donated leaf
    can be aliased)."""
    dtype = leaf.dtype
    if jax.dtypes.issubdtype(dtype, jax.dtypes.prng_key):
        # Keys of any shape: new key data of the same implementation.
        data = jax.random.key_data(leaf)
        return jax.random.wrap_key_data(data ^ 1, impl=jax.random.key_impl(leaf))
    if dtype == jax.dtypes.float0:
        return leaf
    if dtype == jnp.bool_:
        return jnp.logical_not(leaf)
    return leaf + leaf


SHAPES = st.sampled_from([(), (2,), (3,), (2, 4)])
ARRAY_DTYPES = st.sampled_from(
    [
        "float32",
        "int32",
        "bfloat16",
        "float8_e4m3fn",
        "int4",
        "bool",
        "float4_e2m1fn",
        "int2",
        "uint4",
    ]
)

LEAF_KINDS = st.one_of(
    st.tuples(
        st.just("key"),
        st.sampled_from(KEY_IMPLS),
        st.sampled_from([(), (3,)]),
        st.integers(0, 3),
    ),
    st.tuples(st.just("float0"), SHAPES),
    st.tuples(st.just("python"), st.sampled_from([1.0, 3, True, -2.5, 0])),
    st.tuples(
        st.just("numpy_scalar"),
        st.sampled_from(["float32", "int32", "bool", "float16"]),
        st.just(1),
    ),
    st.tuples(st.just("array"), ARRAY_DTYPES, SHAPES),
    st.tuples(st.just("sds"), st.sampled_from(["float32", "int32", "key"]), SHAPES, st.just(False)),
    st.tuples(st.just("sds"), st.just("float32"), st.just((8, 2)), st.just(True)),
)

EMPTY = st.sampled_from([None, (), {}, []])
NAMES = st.sampled_from(["a", "b", "w", "key", "x"])


def trees(leaves: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Nested tuples, lists and dicts of leaf descriptions, None and empty
    containers."""
    return st.recursive(
        st.one_of(leaves.map(lambda kind: ("leaf", kind)), EMPTY),
        lambda children: st.one_of(
            st.lists(children, max_size=3).map(tuple),
            st.lists(children, max_size=3),
            st.dictionaries(NAMES, children, max_size=3),
        ),
        max_leaves=6,
    )


def _is_description(node: Any) -> bool:
    return isinstance(node, tuple) and len(node) == 2 and node[0] == "leaf"


def build(tree: Any, committed: bool) -> Any:
    if _is_description(tree):
        return make_leaf(tree[1], committed)
    if isinstance(tree, tuple):
        return tuple(build(t, committed) for t in tree)
    if isinstance(tree, list):
        return [build(t, committed) for t in tree]
    if isinstance(tree, dict):
        return {k: build(v, committed) for k, v in tree.items()}
    return tree


def _sharded(tree: Any) -> bool:
    if _is_description(tree):
        kind = tree[1]
        return kind[0] == "sds" and bool(kind[3])
    if isinstance(tree, (tuple, list)):
        return any(_sharded(t) for t in tree)
    if isinstance(tree, dict):
        return any(_sharded(t) for t in tree.values())
    return False


@st.composite
def cases(draw: st.DrawFn) -> tuple[tuple[Any, ...], Any, tuple[int, ...], bool, list[bool]]:
    arguments = draw(st.lists(trees(LEAF_KINDS), min_size=1, max_size=4))
    sharded = any(_sharded(a) for a in arguments)
    # An array committed to one device and a ShapeDtypeStruct over eight cannot meet
    # in one jit (JAX refuses: test_refused_by_jax_is_one_error).
    committed = (not sharded) and draw(st.booleans())
    args = tuple(build(a, committed) for a in arguments)
    count = len(jax.tree_util.tree_leaves(args))
    used = draw(st.lists(st.booleans(), min_size=count, max_size=count))
    donate = tuple(i for i in range(len(args)) if draw(st.booleans()) and draw(st.booleans()))
    keep_unused = draw(st.booleans())
    return args, arguments, donate, keep_unused, used


def jitted_using(used: list[bool], donate: tuple[int, ...], keep_unused: bool) -> Any:
    def function(*args: Any) -> Any:
        leaves = jax.tree_util.tree_leaves(args)
        return tuple(use(leaf) for leaf, wanted in zip(leaves, used, strict=True) if wanted)

    return jax.jit(function, donate_argnums=donate, keep_unused=keep_unused)


@settings(
    max_examples=LEAF_EXAMPLES,
    derandomize=not LONG,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(cases())
def test_the_parameter_map_of_any_leaves_is_jax_s(case: Any) -> None:
    args, described, donate, keep_unused, used = case
    note(f"arguments {described}, donate_argnums={donate}, keep_unused={keep_unused}")
    note(f"used {used}")
    doc = check_params_against_jax(jitted_using(used, donate, keep_unused), args)
    for parameter in doc["parameters"]:
        kind = parameter["shape"].partition("[")[0]
        event(f"{kind} {parameter['status']}" + (" donated" if parameter["donated"] else ""))


# --------------------------------------------------------------------------- each kind


def test_typed_keys_of_every_impl_show_as_jax_types_them():
    keys = (
        jax.random.key(0),
        jax.random.key(1, impl="rbg"),
        jax.random.split(jax.random.key(2, impl="unsafe_rbg"), 3),
    )

    def draw(a, b, c, x):
        return x + jax.random.normal(a, x.shape) + jax.random.normal(b, x.shape), c

    doc = check_params_against_jax(jax.jit(draw), (*keys, jnp.ones((4, 8))))
    shown = [(p["shape"], p["hlo_shape"], p["bytes"]) for p in doc["parameters"]]
    assert shown == [
        ("key<fry>[]", "u32[2]", 8),
        ("key<rbg>[]", "u32[4]", 16),
        ("key<urbg>[3]", "u32[3,4]", 48),
        ("f32[4,8]", "f32[4,8]", 128),
    ]
    # JAX's own sizes of the keys' data.
    assert [jax.random.key_data(k).nbytes for k in keys] == [8, 16, 48]


def test_float0_gradients_of_integers_as_arguments():
    """`jax.grad(..., allow_int=True)` gives float0 tangents for integer inputs; as
    an argument, JAX passes one as booleans (`pred`)."""
    _, tangent = jax.grad(lambda x, n: x * n, argnums=(0, 1), allow_int=True)(1.0, 3)
    assert tangent.dtype == jax.dtypes.float0
    tangents = np.zeros((2,), dtype=jax.dtypes.float0)
    doc = check_params_against_jax(
        jax.jit(lambda t, s, x: (t, x * 2)), (tangents, tangent, jnp.ones(3))
    )
    assert [(p["shape"], p["hlo_shape"], p["status"]) for p in doc["parameters"]] == [
        ("float0[2]", "pred[2]", "used"),
        ("float0[]", None, "pruned"),
        ("f32[3]", "f32[3]", "used"),
    ]


def test_scalars_ml_dtypes_none_and_empty_containers():
    tree = {
        "none": None,
        "empty": ((), {}, []),
        "scalars": (1.0, np.float32(2), True, 3),
        "ml": (jnp.ones(4, jnp.bfloat16), jnp.ones(4, jnp.float8_e4m3fn), jnp.ones(8, jnp.int4)),
    }
    doc = check_params_against_jax(
        jax.jit(lambda t: jax.tree_util.tree_map(lambda v: v + v, (t["scalars"][0], t["ml"]))),
        (tree,),
    )
    assert [(p["path"], p["shape"], p["bytes"], p["status"]) for p in doc["parameters"]] == [
        ("t['ml'][0]", "bf16[4]", 8, "used"),
        ("t['ml'][1]", "f8e4m3fn[4]", 4, "used"),
        ("t['ml'][2]", "s4[8]", 4, "used"),
        ("t['scalars'][0]", "f32[]", 4, "used"),
        ("t['scalars'][1]", "f32[]", 4, "pruned"),
        ("t['scalars'][2]", "pred[]", 1, "pruned"),
        ("t['scalars'][3]", "s32[]", 4, "pruned"),
    ]


def test_sharded_shape_dtype_structs_and_committed_arrays():
    sharded = jax.ShapeDtypeStruct((16, 4), jnp.float32, sharding=_mesh_sharding())
    doc = check_params_against_jax(
        jax.jit(lambda w, k: (w * 2, jax.random.fold_in(k, 1))),
        (sharded, jax.ShapeDtypeStruct((), jax.random.key(0).dtype)),
    )
    first, second = doc["parameters"]
    assert (first["shape"], first["sharding"]) == ("f32[16,4]", "P('d',) over mesh(d=8)")
    assert (second["shape"], second["hlo_shape"]) == ("key<fry>[]", "u32[2]")
    committed = (
        jax.device_put(jnp.ones(3), jax.devices()[1]),
        jax.device_put(jax.random.key(0), jax.devices()[1]),
    )
    doc = check_params_against_jax(jax.jit(lambda x, k: (x, jax.random.fold_in(k, 2))), committed)
    assert [p["shape"] for p in doc["parameters"]] == ["f32[3]", "key<fry>[]"]


def test_donated_keys_alias_a_key_result():
    """A donated key buffer becomes the buffer of the key the function returns."""
    doc = check_params_against_jax(
        jax.jit(lambda k, x: (jax.random.fold_in(k, 1), x * 2), donate_argnums=(0, 1)),
        (jax.random.key(0, impl="rbg"), jnp.ones(4)),
    )
    key = doc["parameters"][0]
    assert (key["shape"], key["donated"], key["aliases_output"]) == ("key<rbg>[]", True, 0)


def test_refused_by_jax_is_one_error():
    """What JAX itself refuses (an array committed to one device beside one sharded
    over eight) is an `HloscopeError` saying JAX's reason, not a crash."""
    sharded = jax.ShapeDtypeStruct((16, 4), jnp.float32, sharding=_mesh_sharding())
    committed = jax.device_put(jnp.ones(3), jax.devices()[1])
    jitted = jax.jit(lambda a, b: (a, b))
    with pytest.raises(ValueError, match="incompatible devices"):
        jitted.lower(sharded, committed)
    with pytest.raises(HloscopeError, match="incompatible devices"):
        hloscope.inspect(jitted, sharded, committed)

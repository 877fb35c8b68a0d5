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

import inspect
import math
import os
import re
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, note, settings
from hypothesis import strategies as st
from hypothesis.control import currently_in_test_context
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P
from jaxlib.mlir import ir

import hloscope
from hloscope import HloscopeError

EXAMPLES = int(os.environ.get("HLOSCOPE_FUZZ_EXAMPLES", "40"))
LONG = "HLOSCOPE_FUZZ_EXAMPLES" in os.environ
# A few hundred examples in `make fuzz`, whatever its count for the loaders.
LEAF_EXAMPLES = min(EXAMPLES, 400) if LONG else EXAMPLES

KEY_IMPLS = ("threefry2x32", "rbg", "unsafe_rbg")

# --------------------------------------------------------------------------- JAX's answers


def jax_short(aval: Any) -> str:
    """JAX's own short spelling of an aval (`f32[4,8]`, `key<fry>[]`, `i4[8]`,
    `bool[]`, `f8_e4m3fn[4]`), in HLO's words for the element types HLO names
    otherwise (`s4`, `pred`, `f8e4m3fn`): what hloscope's `shape` must say."""
    # A dimension sharded over explicit mesh axes prints as `8@d`: the global size is
    # the shape.
    text = re.sub(r"@[^,\]]+", "", aval.str_short(short_dtypes=True))
    dtype, bracket, dims = text.partition("[")
    if dtype.startswith("key<") or dtype == "float0":
        return text
    if dtype == "bool":
        dtype = "pred"
    elif re.fullmatch(r"i\d+", dtype):
        dtype = "s" + dtype[1:]
    dtype = dtype.replace("_", "")
    return dtype + bracket + dims


_MLIR_ELEMENT = {"i1": "pred"}


def mlir_shape(tensor: Any) -> str:
    """HLO spelling of an MLIR tensor type of the lowered module: `tensor<2xui32>`
    -> `u32[2]`, `tensor<4xf8E4M3FN>` -> `f8e4m3fn[4]`."""
    ranked = ir.RankedTensorType(tensor)
    element = str(ranked.element_type)
    if element in _MLIR_ELEMENT:
        element = _MLIR_ELEMENT[element]
    elif element.startswith("ui"):
        element = "u" + element[2:]
    elif re.fullmatch(r"i\d+", element):
        element = "s" + element[1:]
    else:
        element = element.lower()
    return f"{element}[{','.join(str(d) for d in ranked.shape)}]"


def mlir_bytes(tensor: Any) -> int:
    """Bytes of an MLIR tensor type as XLA holds it: packed sub-byte types, one byte
    per boolean."""
    ranked = ir.RankedTensorType(tensor)
    element = ranked.element_type
    bits = 8 if str(element) == "i1" else int(element.width)
    return (math.prod(ranked.shape) * bits + 7) // 8


def aval_bytes(aval: Any) -> int:
    """Bytes of what XLA is passed for a leaf, from JAX's avals: a typed key's
    `key_data` (as `jax.eval_shape` gives it), a float0 array as booleans."""
    if jax.dtypes.issubdtype(aval.dtype, jax.dtypes.prng_key):
        data = jax.eval_shape(jax.random.key_data, jax.ShapeDtypeStruct(aval.shape, aval.dtype))
        return math.prod(data.shape) * data.dtype.itemsize
    if aval.dtype == jax.dtypes.float0:
        return math.prod(aval.shape)
    return (math.prod(aval.shape) * jax.dtypes.itemsize_bits(aval.dtype) + 7) // 8


@dataclass(frozen=True)
class ModuleArgument:
    shape: str
    nbytes: int
    attributes: dict[str, Any]


def main_function(lowered: Any) -> tuple[list[ModuleArgument], list[str]]:
    """The arguments (type, bytes, attributes) and result types of the lowered
    module's `main`, read with MLIR's Python bindings."""
    module = lowered.compiler_ir("stablehlo")
    main = next(
        op
        for op in module.body.operations
        if op.operation.name == "func.func" and str(op.attributes["sym_name"]) == '"main"'
    )
    function_type = ir.FunctionType(ir.TypeAttr(main.attributes["function_type"]).value)
    try:
        arg_attrs = main.attributes["arg_attrs"]
    except KeyError:
        arg_attrs = None
    arguments = []
    for index, tensor in enumerate(function_type.inputs):
        attributes: dict[str, Any] = {}
        if arg_attrs is not None:
            dictionary = ir.DictAttr(ir.ArrayAttr(arg_attrs)[index])
            for name in ("tf.aliasing_output", "jax.buffer_donor"):
                if name in dictionary:
                    value = dictionary[name]
                    attributes[name] = (
                        ir.IntegerAttr(value).value if name == "tf.aliasing_output" else True
                    )
        arguments.append(ModuleArgument(mlir_shape(tensor), mlir_bytes(tensor), attributes))
    return arguments, [mlir_shape(t) for t in function_type.results]


def compile_args(lowered: Any) -> Any:
    """JAX's record of the arguments it kept (`kept_var_idx`) and their avals: a
    private attribute, which `hloscope.sources.jax.private` wraps the same way."""
    return lowered._lowering.compile_args


# --------------------------------------------------------------------------- the check


def _note(text: str) -> None:
    """Hypothesis's `note` where Hypothesis runs the test (it shows with a failing
    example), nothing elsewhere."""
    if currently_in_test_context():
        note(text)


def check_params_against_jax(jitted: Any, args: tuple[Any, ...]) -> dict[str, Any]:
    """Lower `jitted` on `args` with JAX and through `hloscope.inspect`, and check
    hloscope's parameter map against JAX's answers, leaf by leaf. Returns the
    params JSON."""
    lowered = jitted.lower(*args)
    info = compile_args(lowered)
    avals = list(info["all_args_info"].in_avals)
    kept = sorted(info["kept_var_idx"])
    module_arguments, module_results = main_function(lowered)
    assert len(module_arguments) == len(kept)  # no implicit parameters here
    flat_out = jax.tree_util.tree_leaves(lowered.out_info)
    assert len(flat_out) == len(module_results)
    names = [
        p.name
        for p in inspect.signature(jitted).parameters.values()
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    leaf_paths = [
        names[path[0].idx] + jax.tree_util.keystr(tuple(path[1:]))
        if path[0].idx < len(names)
        else "args" + jax.tree_util.keystr(tuple(path))
        for path, _ in jax.tree_util.tree_flatten_with_path(args)[0]
    ]

    doc = hloscope.inspect(jitted, *args).params.to_json()
    parameters = doc["parameters"]
    _note(f"avals {avals}, kept {kept}")
    _note(f"hloscope: {[(p['path'], p['shape'], p['hlo_index']) for p in parameters]}")

    # Every leaf, in order: none lost, none added, None and empty containers no leaves.
    assert [p["position"] for p in parameters] == list(range(len(avals)))
    assert [p["path"] for p in parameters] == leaf_paths
    # The kept ones are JAX's, each at its rank among them.
    assert [p["position"] for p in parameters if p["hlo_index"] is not None] == kept
    assert [p["hlo_index"] for p in parameters if p["hlo_index"] is not None] == list(
        range(len(kept))
    )
    assert {p["position"] for p in parameters if p["status"] == "pruned"} == set(
        range(len(avals))
    ) - set(kept)
    bytes_passed = 0
    bytes_donated = 0
    for parameter, aval in zip(parameters, avals, strict=True):
        assert parameter["shape"] == jax_short(aval), parameter
        if parameter["hlo_index"] is None:
            assert parameter["hlo_shape"] is None
            assert parameter["bytes"] == aval_bytes(aval), parameter
            continue
        argument = module_arguments[parameter["hlo_index"]]
        assert parameter["hlo_shape"] == argument.shape, parameter
        assert parameter["bytes"] == argument.nbytes == aval_bytes(aval), parameter
        bytes_passed += argument.nbytes
        # Donation as the module carries it.
        in_module = bool(argument.attributes)
        assert parameter["donated"] == in_module, (parameter, argument.attributes)
        assert parameter["aliases_output"] == argument.attributes.get("tf.aliasing_output")
        if in_module:
            bytes_donated += argument.nbytes
        alias = parameter["aliases_output"]
        if alias is not None:
            # JAX aliases a result of the argument's own type: the same aval, the
            # same module type.
            out = flat_out[alias]
            assert (tuple(out.shape), out.dtype) == (tuple(aval.shape), aval.dtype)
            assert module_results[alias] == argument.shape
    assert doc["totals"]["bytes_passed"] == bytes_passed
    assert doc["totals"]["bytes_donated"] == bytes_donated
    return doc


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
ARRAY_DTYPES = st.sampled_from(["float32", "int32", "bfloat16", "float8_e4m3fn", "int4", "bool"])

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

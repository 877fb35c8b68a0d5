"""JAX's own answers about the arguments of a lowered call, and the check of
hloscope's parameter map (`params --json`, `Inspection.params.to_json()`) against
them: `tests/api/test_leaf_kinds.py` and `tests/cli/test_leaf_kinds_cli.py`."""

from __future__ import annotations

import inspect
import math
import re
from dataclasses import dataclass
from typing import Any

import jax
from hypothesis import note
from hypothesis.control import currently_in_test_context
from jaxlib.mlir import ir

import hloscope

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
    hloscope's parameter map against JAX's answers, leaf by leaf (paths included).
    Returns the params JSON."""
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
    check_params_doc(doc, jitted.lower(*args), leaf_paths)
    return doc


def check_params_doc(doc: dict[str, Any], lowered: Any, paths: list[str] | None = None) -> None:
    """Check a params JSON document against JAX's `lowered` (a `jax.stages.Lowered`
    of the same call): every leaf in order (and its `paths`, when given), the kept
    ones, each leaf's shape as JAX types it, its HLO parameter's type and bytes, and
    donation as the module carries it."""
    info = compile_args(lowered)
    avals = list(info["all_args_info"].in_avals)
    kept = sorted(info["kept_var_idx"])
    module_arguments, module_results = main_function(lowered)
    assert len(module_arguments) == len(kept)  # no implicit parameters here
    flat_out = jax.tree_util.tree_leaves(lowered.out_info)
    assert len(flat_out) == len(module_results)
    parameters = doc["parameters"]
    _note(f"avals {avals}, kept {kept}")
    _note(f"hloscope: {[(p['path'], p['shape'], p['hlo_index']) for p in parameters]}")

    # Every leaf, in order: none lost, none added, None and empty containers no leaves.
    assert [p["position"] for p in parameters] == list(range(len(avals)))
    if paths is not None:
        assert [p["path"] for p in parameters] == paths
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

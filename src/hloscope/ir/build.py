"""The model builder: `hloscope.ir.model` from an MLIR module, in one walk.

This walk is most of the cost of loading a module beyond MLIR's own parse, so it
prints each distinct type, attribute and location once (MLIR uniques them) and
summarises what would be copied into every report otherwise (multi-megabyte
constants, serialized kernels).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from hloscope.gc_pause import gc_paused
from hloscope.ir import model
from hloscope.ir.attributes import split_top_level, string_attribute
from hloscope.ir.context import walk_operations
from hloscope.ir.types import parse_type

# Attributes longer than this are summarised: multi-megabyte constants and
# serialized kernels (`backend_config`) would otherwise be copied into every report.
MAX_ATTRIBUTE_CHARS = 2000


# Dense constants with more elements than this are summarised without printing.
MAX_DENSE_ELEMENTS = 64


# Module attributes kept whole however long they are: analyses read every entry
# (`analyses.params` maps each parameter to the output it aliases).
FULL_MODULE_ATTRIBUTES = frozenset({"mhlo.input_output_alias"})


def build_model(module: Any) -> model.Module:
    """Build the model in one pre-order walk of an `ir.Module`.

    Strings for types, attributes and locations are cached by the (uniqued) MLIR
    object, so each distinct one is printed once. This loop is most of the time of
    loading a module beyond MLIR's own parse (see `make bench`), hence the local
    bindings and the bulk accessors (`results.types`, `map` over operands).
    """
    from jaxlib.mlir import ir

    ops: list[model.Op] = []
    value_types: list[str] = []
    value_owner: list[int] = []
    value_ids: dict[Any, int] = {}
    type_text: dict[Any, str] = {}
    attr_text: dict[Any, str] = {}
    locations: dict[Any, str] = {}
    unresolved: list[tuple[model.Op, list[Any]]] = []
    functions: dict[str, model.Function] = {}
    dense_type = ir.DenseElementsAttr
    empty = model.EMPTY_ATTRIBUTES
    new_op = model.Op
    new_block = model.Block
    new_region = model.Region
    add_op = ops.append
    add_type = value_types.append
    add_owner = value_owner.append
    value_id = value_ids.get
    cached_type = type_text.get
    cached_attr = attr_text.get
    cached_location = locations.get

    def attribute(attr: Any) -> str:
        text = cached_attr(attr)
        if text is None:
            text = attr_text[attr] = _attribute_text(attr, dense_type)
        return text

    def location(loc: Any) -> str:
        # Keyed by the location's attribute: ir.Location hashes by Python object,
        # ir.Attribute by the uniqued MLIR attribute.
        key = loc.attr
        text = cached_location(key)
        if text is None:
            text = locations[key] = str(loc)
        return text

    def new_values(values: Any, owner: int) -> tuple[int, ...]:
        first = len(value_types)
        for t in values.types:
            text = cached_type(t)
            if text is None:
                text = type_text[t] = str(t)
            add_type(text)
            add_owner(owner)
        index = first
        for value in values:
            value_ids[value] = index
            index += 1
        return tuple(range(first, index))

    def visit(operation: Any, parent: model.Op | None, function: str | None) -> model.Op:
        op_id = len(ops)
        operands = tuple(map(value_id, operation.operands))
        attrs = operation.attributes
        attributes: dict[str, str] | Mapping[str, str] = empty
        if len(attrs):
            try:
                attributes = {name: attribute(attr) for name, attr in attrs.items()}
            except TypeError:
                attributes = _attributes_one_by_one(operation, attribute)
        loc = operation.location
        key = loc.attr
        loc_text = cached_location(key)
        if loc_text is None:
            loc_text = locations[key] = str(loc)
        if None in operands:
            # Used before defined (graph regions, later blocks): resolved at the end.
            op = new_op(op_id, operation.name, (), (), attributes, loc_text, parent, function)
            unresolved.append((op, list(operation.operands)))
        else:
            op = new_op(op_id, operation.name, operands, (), attributes, loc_text, parent, function)  # type: ignore[arg-type]
        add_op(op)
        results = operation.results
        if len(results):
            op.results = new_values(results, op_id)
        regions = operation.regions
        if len(regions):
            is_function = parent is None and op.name == "func.func"
            if is_function:
                function = string_attribute(attributes.get("sym_name", '""'))
            built_regions = []
            for region in regions:
                blocks = []
                for block in region.blocks:
                    arguments = block.arguments
                    argument_ids = new_values(arguments, op_id) if len(arguments) else ()
                    children = [visit(child.operation, op, function) for child in block.operations]
                    blocks.append(new_block(argument_ids, tuple(children)))
                built_regions.append(new_region(tuple(blocks)))
            op.regions = tuple(built_regions)
            op.end = len(ops)
            if is_function:
                built = _function(op, operation, value_types, attribute, location)
                if built is not None:
                    functions.setdefault(built.name, built)
        elif parent is None and op.name == "func.func":
            # A declaration (no body).
            built = _function(op, operation, value_types, attribute, location)
            if built is not None:
                functions.setdefault(built.name, built)
        return op

    # Recursing over each block's ops (which the bindings hand over as their dialects'
    # Python op classes) is faster here than MLIR's native walk, which hands over
    # plain operations but leaves each op's block to be asked for: 1.3-1.8 s against
    # 1.7-2.3 s for a first build of 100k ops, alternating, 2026-11-26.
    body_ops: list[model.Op] = []
    with gc_paused():
        for child in module.body.operations:
            body_ops.append(visit(child.operation, None, None))

    for op, values in unresolved:
        op.operands = tuple(-1 if i is None else i for i in map(value_id, values))

    module_attrs = module.operation.attributes
    attributes = {
        name: str(attr) if name in FULL_MODULE_ATTRIBUTES else attribute(attr)
        for name, attr in module_attrs.items()
    }
    name = attributes.get("sym_name")
    return model.Module(
        name=string_attribute(name) if name else None,
        attributes=attributes,
        ops=ops,
        body=tuple(body_ops),
        functions=functions,
        value_types=value_types,
        value_owner=value_owner,
    )


def read_names(module: Any) -> None:
    """Read every name `build_model` takes from jaxlib's bindings unprinted: op names,
    attribute names, and the entry names of function argument and result attributes.

    The reader process runs this on untrusted input instead of building the model:
    jaxlib's bindings abort (or raise nanobind's "conversion error") on a name that
    is not valid UTF-8, which bytecode and string escapes can spell, and these names
    are the only strings the builder reads without MLIR's printer, which escapes
    every byte above 0x7f. It raises what the builder would raise on them.
    """

    def visit(operation: Any) -> None:
        attrs = operation.attributes
        attrs.keys()
        if operation.name == "func.func":
            _dict_list(attrs, "arg_attrs", _ignore_attribute)
            _dict_list(attrs, "res_attrs", _ignore_attribute)

    walk_operations(module.operation, visit)


def _ignore_attribute(attr: Any) -> str:
    return ""


def _attributes_one_by_one(operation: Any, attribute: Callable[[Any], str]) -> dict[str, str]:
    """Attributes of an op some of whose attributes the bindings cannot represent.

    jaxlib's bindings raise TypeError for complex-valued dense constants (and abort
    the process if one is reached through `NamedAttribute.attr`), so such values are
    read from the op's generic printed form instead.
    """
    attrs = operation.attributes
    out: dict[str, str] = {}
    generic: str | None = None
    for name in attrs.keys():  # noqa: SIM118 (an MLIR attribute map, not a dict)
        try:
            out[name] = attribute(attrs[name])
        except TypeError:
            if generic is None:
                generic = operation.get_asm(
                    print_generic_op_form=True,
                    skip_regions=True,
                    large_elements_limit=MAX_DENSE_ELEMENTS,
                    assume_verified=True,
                )
            out[name] = _printed_attribute(generic, name)
    return out


def _printed_attribute(generic: str, name: str) -> str:
    """The value of attribute `name` in an op's generic printed form."""
    match = re.search(rf"[{{,<]\s*{re.escape(name)} = ", generic)
    if not match:
        return "?"
    depth = 0
    start = match.end()
    for i in range(start, len(generic)):
        ch = generic[i]
        if ch in "<([{":
            depth += 1
        elif ch in ">)]}":
            if depth == 0:
                return generic[start:i].strip()
            depth -= 1
        elif ch == "," and depth == 0:
            return generic[start:i].strip()
    return generic[start:].strip()


def _attribute_text(attr: Any, dense_type: Any) -> str:
    if isinstance(attr, dense_type):
        try:
            large = not attr.is_splat and len(attr) > MAX_DENSE_ELEMENTS
        except Exception:
            # Element types the bindings cannot size (complex): size it from the type.
            large = _type_elements(str(attr.type)) > MAX_DENSE_ELEMENTS
        if large:
            count = _type_elements(str(attr.type))
            return f"dense<...{count} elements, {_digest(attr)}> : {attr.type}"
    text = str(attr)
    if len(text) > MAX_ATTRIBUTE_CHARS:
        import hashlib  # here: few modules have such attributes, and it costs each start-up

        digest = hashlib.blake2b(text.encode(), digest_size=8).hexdigest()
        return f"{text[:200]}...({len(text)} chars, {digest})"
    return text


def _type_elements(mlir_type: str) -> int:
    types = parse_type(mlir_type)
    return (types[0].elements or 0) if types else 0


def _digest(attr: Any) -> str:
    import hashlib

    try:
        import numpy as np

        data = np.ascontiguousarray(np.asarray(attr)).tobytes()
    except Exception:
        return "contents not summarised"
    return hashlib.blake2b(data, digest_size=8).hexdigest()


def _function(
    op: model.Op,
    operation: Any,
    value_types: list[str],
    attribute: Callable[[Any], str],
    location: Callable[[Any], str],
) -> model.Function | None:
    name = string_attribute(op.attributes.get("sym_name", ""))
    if not name:
        return None
    visibility = string_attribute(op.attributes.get("sym_visibility", '"public"'))
    raw_attrs = operation.attributes
    arg_attrs = _dict_list(raw_attrs, "arg_attrs", attribute)
    res_attrs = _dict_list(raw_attrs, "res_attrs", attribute)
    function_type = str(raw_attrs["function_type"]) if "function_type" in raw_attrs else ""
    input_types, result_types = _split_function_type(function_type)
    arguments: list[model.Argument] = []
    if op.regions and op.regions[0].blocks:
        block = operation.regions[0].blocks[0]
        for index, value in enumerate(op.regions[0].blocks[0].arguments):
            attrs = arg_attrs[index] if index < len(arg_attrs) else model.EMPTY_ATTRIBUTES
            arguments.append(
                model.Argument(
                    index=index,
                    value=value,
                    type=value_types[value],
                    location_text=location(block.arguments[index].location),
                    attributes=attrs,
                )
            )
    else:
        # A declaration: no block, so no argument values.
        arguments = [
            model.Argument(i, -1, t, "loc(unknown)", model.EMPTY_ATTRIBUTES)
            for i, t in enumerate(input_types)
        ]
    results = tuple(
        model.Result(i, t, res_attrs[i] if i < len(res_attrs) else model.EMPTY_ATTRIBUTES)
        for i, t in enumerate(result_types)
    )
    return model.Function(name, visibility, op, tuple(arguments), results)


def _dict_list(attrs: Any, key: str, attribute: Callable[[Any], str]) -> list[Mapping[str, str]]:
    if key not in attrs:
        return []
    out: list[Mapping[str, str]] = []
    try:
        entries_list = list(attrs[key])
    except TypeError:
        return out
    for entry in entries_list:
        entries: dict[str, str] = {}
        # By name, never through NamedAttribute.attr (see _attributes_one_by_one).
        for i in range(len(entry)):
            name = entry[i].name
            try:
                entries[name] = attribute(entry[name])
            except TypeError:
                entries[name] = "?"
        out.append(entries or model.EMPTY_ATTRIBUTES)
    return out


def _split_function_type(text: str) -> tuple[list[str], list[str]]:
    """`(tensor<4xf32>, tensor<i32>) -> (tensor<f32>)` into input and result types."""
    if not text.startswith("("):
        return [], []
    depth = 0
    for i, ch in enumerate(text):
        if ch in "(<[{":
            depth += 1
        elif ch in ")>]}":
            depth -= 1
            if depth == 0:
                inputs = split_top_level(text[1:i])
                rest = text[i + 1 :].strip()
                if rest.startswith("->"):
                    rest = rest[2:].strip()
                    if rest.startswith("(") and rest.endswith(")"):
                        results = split_top_level(rest[1:-1])
                    else:
                        results = [rest] if rest else []
                else:
                    results = []
                return inputs, results
    return [], []

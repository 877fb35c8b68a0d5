"""Shardy's record of where each sharding came from, read from its verbose dumps.

Compiling with `xla_dump_hlo_pass_re=shardy-verbose` makes XLA write
`shardy/<module>/02.after_propagation.mlir` beside its other dumps. There every
value Shardy sharded carries `sdy.sharding_origins`, per mesh axis: `"self"` (the
argument, result or constraint set it itself), `"input: N"` (entry argument N),
`"output: N"` (entry result N), `"constraint_N"` (the N-th sharding constraint,
whose `sdy.reshard` carries `sdy.sharding_origin_name`). Measured on jaxlib 0.10.2
(CPU, 8 devices).

The file is parsed with the MLIR context's bindings, and the attributes read through
their attribute classes (`sdy.TensorShardingAttr`, `ir.DictAttr`), never as text;
only the origin strings (`"input: 1"`) are decoded here, once. The dump carries no
locations: the ops are listed in module order, and `hloscope.analyses.placement.why`
lines them up with the module XLA was given.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from hloscope.errors import HloscopeError
from hloscope.ir.context import native
from hloscope.ir.shardy_model import (
    Origin,
    ShardyOp,
    ShardyPropagation,
    ShardyValue,
    decode_origin,
)

PROPAGATED_FILE = "02.after_propagation.mlir"
"""The dump, in a module's `shardy/` folder, that holds the origins."""

_LOOP = "stablehlo.while"


def read_propagation(path: Path) -> ShardyPropagation:
    """Read `02.after_propagation.mlir` (or any dump of Shardy's with origins)."""
    from jaxlib.mlir import ir

    from hloscope.ir.context import mlir_context

    text = path.read_text(encoding="utf-8", errors="replace")
    with native():
        context = mlir_context()
        try:
            module = ir.Module.parse(text, context=context)
        except Exception as exc:  # MLIR raises its own error types
            raise HloscopeError(f"cannot read Shardy's dump: {exc}", where=str(path)) from exc
        return _read(module)


def _read(module: Any) -> ShardyPropagation:
    from jaxlib.mlir import ir

    meshes: dict[str, tuple[tuple[str, int], ...]] = {}
    main: Any = None
    for operation in module.body.operations:
        op = operation.operation
        if op.name == "sdy.mesh":
            mesh = _mesh(op.attributes["mesh"])
            meshes[ir.StringAttr(op.attributes["sym_name"]).value] = mesh
        elif op.name == "func.func":
            name = ir.StringAttr(op.attributes["sym_name"]).value
            if main is None or name == "main":
                main = op
    values: list[ShardyValue] = []
    ops: list[ShardyOp] = []
    results: list[ShardyValue] = []
    returned: tuple[int, ...] = ()
    if main is None:
        return ShardyPropagation(meshes, (), 0, (), (), ())
    block = main.regions[0].blocks[0]
    ids: dict[Any, int] = {}
    arg_attrs = _dicts(main.attributes, "arg_attrs")
    for index, argument in enumerate(block.arguments):
        attrs = arg_attrs[index] if index < len(arg_attrs) else {}
        values.append(
            _value(
                attrs.get("sdy.sharding"),
                attrs.get("sdy.sharding_origins"),
                Origin("argument", index, f"input: {index}"),
            )
        )
        ids[argument] = index
    res_attrs = _dicts(main.attributes, "res_attrs")
    for index, attrs in enumerate(res_attrs):
        results.append(
            _value(
                attrs.get("sdy.sharding"),
                attrs.get("sdy.sharding_origins"),
                Origin("result", index, f"output: {index}"),
            )
        )
    top_level: dict[Any, int] = {}
    constraints: list[tuple[int, Any]] = []

    def walk(block: Any, loop: int | None) -> tuple[int, ...]:
        """Read `block`'s ops into `ops` and `values`; the values it returns."""
        yielded: tuple[int, ...] = ()
        for operation in block.operations:
            op = operation.operation
            operands = tuple(ids.get(operand, -1) for operand in op.operands)
            if op.name in ("func.return", "stablehlo.return"):
                yielded = operands
                continue
            attrs = op.attributes
            origin_name = (
                ir.StringAttr(attrs["sdy.sharding_origin_name"]).value
                if "sdy.sharding_origin_name" in attrs
                else None
            )
            owner = decode_origin(origin_name, None) if origin_name else None
            sharding_attr = _attribute(attrs, "sdy.sharding")
            shardings = _per_value(sharding_attr) if sharding_attr is not None else []
            # An op whose results are the edges of its data flow (a loop, the
            # optimization barrier of `jax.checkpoint`) writes their origins apart.
            origins = _attribute(attrs, "sdy.result_sharding_origins")
            if origins is None:
                origins = _attribute(attrs, "sdy.sharding_origins")
            per_result: list[Any] = []
            if origins is not None and _is(ir.ArrayAttr, origins):
                per_result = list(ir.ArrayAttr(origins))
            elif origins is not None:
                per_result = [origins]
            first = len(values)
            for k, result in enumerate(op.results):
                sharding = shardings[k] if k < len(shardings) else None
                if sharding is None and op.name in ("sdy.reshard", "sdy.sharding_constraint"):
                    sharding = attrs["sharding"]
                origin = per_result[k] if k < len(per_result) else None
                values.append(_value(sharding, origin, owner))
                ids[result] = len(values) - 1
            ops.append(
                ShardyOp(
                    op.name,
                    operands,
                    tuple(range(first, len(values))),
                    origin_name,
                    owner,
                    _rule(_attribute(attrs, "sdy.sharding_rule")),
                    loop=loop,
                )
            )
            index = len(ops) - 1
            if loop is None:
                top_level[op] = index
            if origin_name is not None:
                constraints.append((index, op))
            if op.name == _LOOP:
                # The loop's carry: Shardy gives a block argument of its condition and
                # body the sharding of the loop's result in its place, so each is
                # that result's value. Its regions' ops follow it, as Shardy prints
                # them (condition, then body).
                carried: tuple[int, ...] = ()
                for region in op.regions:
                    for inner in region.blocks:
                        for k, argument in enumerate(inner.arguments):
                            ids[argument] = first + k
                        carried = walk(inner, index)
                # The body's block is the last: what it returns is the next carry.
                ops[index] = dataclasses.replace(ops[index], carried=carried)
        return yielded

    returned = walk(block, None)
    for index, op in constraints:
        if ops[index].loop is not None:
            continue
        loop = _reading_loop(op, top_level)
        if loop is not None and ops[loop].name == _LOOP:
            ops[index] = dataclasses.replace(ops[index], read_by_loop=loop)
    return ShardyPropagation(
        meshes, tuple(values), len(block.arguments), tuple(results), returned, tuple(ops)
    )


def _reading_loop(op: Any, top_level: dict[Any, int]) -> int | None:
    """The index of the one top-level op inside whose regions every use of `op`'s
    results lies; None where a use is outside any region, or in several ops'."""
    found: set[int] = set()
    for result in op.results:
        for use in result.uses:
            owner = use.owner
            owner = getattr(owner, "operation", owner)
            nested = False
            while owner is not None and owner not in top_level:
                parent = owner.parent
                owner = getattr(parent, "operation", parent) if parent is not None else None
                nested = True
            if owner is None or not nested:
                return None
            found.add(top_level[owner])
    return found.pop() if len(found) == 1 else None


def _rule(attr: Any) -> tuple[tuple[tuple[int, ...], ...], ...] | None:
    from jaxlib.mlir.dialects import sdy

    if attr is None or not _is(sdy.OpShardingRuleAttr, attr):
        return None
    rule = sdy.OpShardingRuleAttr(attr)
    return tuple(
        tuple(
            tuple(int(i) for i in sdy.DimMappingAttr(dim).factor_indices)
            for dim in sdy.TensorMappingAttr(tensor).dim_mappings
        )
        for tensor in (*rule.operand_mappings, *rule.result_mappings)
    )


def _mesh(attr: Any) -> tuple[tuple[str, int], ...]:
    from jaxlib.mlir.dialects import sdy

    axes = (sdy.MeshAxisAttr(axis) for axis in sdy.MeshAttr(attr).axes)
    return tuple((str(axis.name), int(axis.size)) for axis in axes)


def _dicts(attributes: Any, name: str) -> list[dict[str, Any]]:
    from jaxlib.mlir import ir

    if name not in attributes:
        return []
    out = []
    for entry in ir.ArrayAttr(attributes[name]):
        dictionary = ir.DictAttr(entry)
        out.append({dictionary[i].name: dictionary[i].attr for i in range(len(dictionary))})
    return out


def _per_value(attr: Any) -> list[Any]:
    from jaxlib.mlir.dialects import sdy

    if _is(sdy.TensorShardingPerValueAttr, attr):
        return list(sdy.TensorShardingPerValueAttr(attr).shardings)
    return [attr]


def _value(sharding: Any, origins: Any, owner: Origin | None) -> ShardyValue:
    from jaxlib.mlir import ir
    from jaxlib.mlir.dialects import sdy

    dimensions: tuple[tuple[str, ...], ...] | None = None
    if sharding is not None and _is(sdy.TensorShardingAttr, sharding):
        dimensions = tuple(
            tuple(_axis_name(axis) for axis in sdy.DimensionShardingAttr(dim).axes)
            for dim in sdy.TensorShardingAttr(sharding).dimension_shardings
        )
    decoded: dict[str, Origin] = {}
    if origins is not None and _is(ir.DictAttr, origins):
        dictionary = ir.DictAttr(origins)
        for i in range(len(dictionary)):
            named = dictionary[i]
            if _is(ir.StringAttr, named.attr):
                decoded[named.name] = decode_origin(ir.StringAttr(named.attr).value, owner)
    return ShardyValue(dimensions, decoded)


def _axis_name(axis: Any) -> str:
    from jaxlib.mlir.dialects import sdy

    return str(sdy.AxisRefAttr(axis).name)


def _is(kind: Any, attr: Any) -> bool:
    """Whether `attr` is of the attribute class `kind`: builtin attributes come
    downcast (jaxlib 0.10), dialect ones are checked by their class's `isinstance`."""
    if isinstance(attr, kind):
        return True
    check = getattr(kind, "isinstance", None)
    return bool(check(attr)) if check is not None else False


def _attribute(attributes: Any, name: str) -> Any:
    """An op's attribute by name, None when absent (the bindings' map has no `get`)."""
    return attributes[name] if name in attributes else None  # noqa: SIM401

"""The memory spaces of an HLO module's entry layout, which its MLIR conversion drops.

XLA's HLO-to-MLIR conversion keeps an instruction's non-default layout, memory
space included, in an `xla_shape` attribute (`"f32[1024]{0:S(5)}"`), but drops the
memory spaces of the entry computation's layout (`entry_computation_layout=
{(f32[8]{0:S(5)})->f32[8]{0}}`): it keeps only the dimension order. A parameter or
result in host memory (`S(5)`, what `memory_kind="pinned_host"` becomes after
optimization) would look like any other. So the layout is read from XLA's printed
module header and, where a parameter's or result's layout has a memory space,
recorded on the entry function's argument or result as this attribute: its HLO
shape with layout, printed as a string attribute (`"f32[8]{0:S(5)}"`).

The conversion drops the header's device counts too (`num_partitions=8`,
`replica_count=2`): they are recorded on the model as the module attributes JAX's
own lowering carries (`mhlo.num_partitions`), so a partitioned dump is compiled and
reported on as many devices as it was made for.
"""

from __future__ import annotations

import dataclasses
import re

from hloscope.ir import model
from hloscope.ir.attributes import split_top_level

ENTRY_SHAPE_ATTRIBUTE = model.ENTRY_SHAPE_ATTRIBUTE

_MEMORY_SPACE = re.compile(r"S\((\d+)\)")


def entry_computation_layout(hlo_text: str) -> str | None:
    """The `entry_computation_layout={...}` value of XLA's printed module header (its
    first line), or None."""
    header = hlo_text.split("\n", 1)[0]
    start = header.find("entry_computation_layout={")
    if start < 0:
        return None
    start += len("entry_computation_layout={")
    depth = 0
    for i in range(start, len(header)):
        ch = header[i]
        if ch in "({[":
            depth += 1
        elif ch in ")}]":
            if depth == 0:
                return header[start:i]
            depth -= 1
    return None


# XLA's header keys of the device counts, and the module attributes JAX's lowering
# gives them.
_COUNT_ATTRIBUTES = {"num_partitions": "mhlo.num_partitions", "replica_count": "mhlo.num_replicas"}


def module_counts(hlo_text: str) -> dict[str, str]:
    """The device counts of XLA's printed module header (its first line), as module
    attributes (`{"mhlo.num_partitions": "8 : i32", "mhlo.num_replicas": "1 : i32"}`);
    none where it gives neither (a module for one device)."""
    header = hlo_text.split("\n", 1)[0]
    counts: dict[str, str] = {}
    for part in split_top_level(header, brackets="([{"):
        key, _, value = part.partition("=")
        attribute = _COUNT_ATTRIBUTES.get(key.strip())
        if attribute is not None and value.strip().isdigit():
            counts[attribute] = f"{int(value)} : i32"
    if counts:
        # XLA prints a count only where it is not 1: the other one is 1.
        for attribute in _COUNT_ATTRIBUTES.values():
            counts.setdefault(attribute, "1 : i32")
    return counts


def record_module_counts(built: model.Module, counts: dict[str, str] | None) -> None:
    """Record the header's device counts on the model where the conversion lost them."""
    missing = {k: v for k, v in (counts or {}).items() if k not in built.attributes}
    if missing:
        built.attributes = {**built.attributes, **missing}


def _shape_leaves(shape: str) -> list[str]:
    """Array shapes of an HLO shape, tuples flattened: `(f32[2]{0}, s32[])` -> both."""
    shape = re.sub(r"/\*[^*]*\*/", "", shape).strip()
    if shape.startswith("(") and shape.endswith(")"):
        # `<` is not a bracket here (`f32[<=4]`).
        parts = split_top_level(shape[1:-1], brackets="([{")
        return [leaf for part in parts for leaf in _shape_leaves(part)]
    return [shape] if shape else []


def entry_layout_shapes(layout: str) -> tuple[list[str], list[str]]:
    """Parameter and result shapes (tuples flattened) of an entry computation layout
    `(p0, p1)->result`."""
    layout = layout.strip()
    if not layout.startswith("("):
        return [], []
    depth = 0
    for i, ch in enumerate(layout):
        if ch in "({[":
            depth += 1
        elif ch in ")}]":
            depth -= 1
            if depth == 0:
                params = _shape_leaves(layout[: i + 1])
                rest = layout[i + 1 :].strip()
                results = _shape_leaves(rest[2:]) if rest.startswith("->") else []
                return params, results
    return [], []


def _has_memory_space(shape: str) -> bool:
    layout = shape[shape.find("{") :] if "{" in shape else ""
    return any(match.group(1) != "0" for match in _MEMORY_SPACE.finditer(layout))


def record_entry_memory_spaces(built: model.Module, layout: str | None) -> None:
    """Record the entry layout's memory spaces on the entry function's arguments and
    results (as `ENTRY_SHAPE_ATTRIBUTE`), where the flattened layout matches them."""
    entry = built.entry
    if not layout or "S(" not in layout or entry is None:
        return
    params, results = entry_layout_shapes(layout)
    arguments = entry.arguments
    outputs = entry.results
    changed = False
    if len(params) == len(arguments) and any(_has_memory_space(p) for p in params):
        arguments = tuple(
            dataclasses.replace(
                argument,
                attributes={**argument.attributes, ENTRY_SHAPE_ATTRIBUTE: f'"{shape}"'},
            )
            if _has_memory_space(shape)
            else argument
            for argument, shape in zip(arguments, params, strict=True)
        )
        changed = True
    if len(results) == len(outputs) and any(_has_memory_space(r) for r in results):
        outputs = tuple(
            dataclasses.replace(
                result, attributes={**result.attributes, ENTRY_SHAPE_ATTRIBUTE: f'"{shape}"'}
            )
            if _has_memory_space(shape)
            else result
            for result, shape in zip(outputs, results, strict=True)
        )
        changed = True
    if changed:
        functions = dict(built.functions)
        functions[entry.name] = dataclasses.replace(entry, arguments=arguments, results=outputs)
        built.functions = functions

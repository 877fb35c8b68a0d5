"""XLA's `ShapeProto`, read from the wire (an instruction's `shape`, field 3 of
`HloInstructionProto`): the MLIR type XLA's converter gives it, and the memory spaces
of its layout, which that type does not carry.

ShapeProto (xla/xla_data.proto): `element_type` 2 (a `PrimitiveType`), `dimensions`
3, `tuple_shapes` 4, `layout` 5, `is_dynamic_dimension` 6; LayoutProto:
`memory_space` 8 (`S(1)`: the TPU's on-chip memory, `S(5)`: the host's).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence

from hloscope.ir.context import native, xla_hlo
from hloscope.ir.proto import proto_message, proto_varints

_ELEMENT_TYPE = 2
_DIMENSIONS = 3
_TUPLE_SHAPES = 4
_LAYOUT = 5
_DYNAMIC = 6
_MEMORY_SPACE = 8
_TUPLE = 13  # PrimitiveType TUPLE

_MLIR_ELEMENTS = {
    "PRED": "i1",
    "BF16": "bf16",
    "F16": "f16",
    "F32": "f32",
    "F64": "f64",
    "C64": "complex<f32>",
    "C128": "complex<f64>",
}


def mlir_element(name: str) -> str | None:
    """XLA's `PrimitiveType` name as MLIR spells the element type: `S32` -> `i32`,
    `U8` -> `ui8`, `F8E4M3FN` -> `f8E4M3FN`; None where MLIR has no spelling here."""
    if name in _MLIR_ELEMENTS:
        return _MLIR_ELEMENTS[name]
    if re.fullmatch(r"S\d+", name):
        return "i" + name[1:]
    if re.fullmatch(r"U\d+", name):
        return "ui" + name[1:]
    if re.fullmatch(r"F\d+E\d+M\d+\w*", name):
        return "f" + name[1:]
    return None


@functools.cache
def _primitive_names() -> dict[int, str]:
    """XLA's `PrimitiveType` numbers by name, from jaxlib's own enum."""
    with native():
        enum = xla_hlo().PrimitiveType
        return {int(value): str(name) for name, value in enum.__members__.items()}


def shape_as_mlir(shape: bytes) -> str | None:
    """A `ShapeProto` as the MLIR type XLA's converter gives it: `tensor<16x256xf32>`,
    `tuple<tensor<2xf32>, tensor<ui32>>`, `tensor<?x3xf32, #stablehlo.bounds<4, ?>>`
    for a dynamic dimension, `!stablehlo.token`; None for what MLIR has no type for
    here, or a malformed message."""
    try:
        fields = proto_message(shape)
    except ValueError:
        return None
    element = 0
    dims: list[int] = []
    dynamic: list[int] = []
    parts: list[bytes] = []
    for number, value in fields:
        if number == _ELEMENT_TYPE and isinstance(value, int):
            element = value
        elif number == _DIMENSIONS:
            dims += proto_varints(value)
        elif number == _TUPLE_SHAPES and isinstance(value, bytes):
            parts.append(value)
        elif number == _DYNAMIC:
            dynamic += proto_varints(value)
    name = _primitive_names().get(element, "")
    if name == "TUPLE":
        types = [shape_as_mlir(part) for part in parts]
        if any(t is None for t in types):
            return None
        return "tuple<" + ", ".join(types) + ">"  # type: ignore[arg-type]
    if name == "TOKEN":
        return "!stablehlo.token"
    mlir = mlir_element(name)
    if mlir is None:
        return None
    flags = ([bool(d) for d in dynamic] + [False] * len(dims))[: len(dims)]
    return tensor_type(dims, flags, mlir)


def tensor_type(dims: Sequence[int], dynamic: Sequence[bool], element: str) -> str:
    """An array's MLIR type as XLA's converter writes it, from XLA's dimensions, which
    are dynamic, and its element type's MLIR spelling."""
    body = "".join(("?" if dyn else str(d)) + "x" for d, dyn in zip(dims, dynamic, strict=True))
    body += element
    if any(dynamic):
        # XLA's dimension is the bound of a dynamic one (`f32[<=4]`).
        bounds = ", ".join(str(d) if dyn else "?" for d, dyn in zip(dims, dynamic, strict=True))
        body += f", #stablehlo.bounds<{bounds}>"
    return f"tensor<{body}>"


def shape_memory_spaces(shape: bytes) -> tuple[int, ...] | int:
    """The memory spaces of a `ShapeProto`'s layout: an array's (0 where its layout
    names none), or a tuple's, one per element (a nested tuple's 0). Raises
    ValueError where the message is malformed."""
    parts: list[bytes] = []
    space = 0
    element = 0
    for number, value in proto_message(shape):
        if number == _ELEMENT_TYPE and isinstance(value, int):
            element = value
        elif number == _TUPLE_SHAPES and isinstance(value, bytes):
            parts.append(value)
        elif number == _LAYOUT and isinstance(value, bytes):
            for field, item in proto_message(value):
                if field == _MEMORY_SPACE and isinstance(item, int):
                    space = item
    if element == _TUPLE:
        return tuple(
            inner if isinstance(inner := shape_memory_spaces(part), int) else 0 for part in parts
        )
    return space

"""Array types in HLO terms, decoded once per distinct MLIR type: `tensor<8x128xf32>`
is `f32[8,128]`.

The model keeps each value's type as MLIR prints it (the uniqued key analyses
compare); `Module.arrays`, `Argument.arrays` and `Result.arrays` hand out these
decoded forms.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import re

from hloscope.ir.attributes import split_top_level

# MLIR element type -> HLO primitive type spelling.
_ELEMENT_TYPES = {
    "i1": "pred",
    "f16": "f16",
    "bf16": "bf16",
    "f32": "f32",
    "f64": "f64",
    "tf32": "tf32",
    "index": "index",
    "complex<f32>": "c64",
    "complex<f64>": "c128",
}
_ELEMENT_BITS = {"pred": 8, "bf16": 16, "c64": 64, "c128": 128, "index": 64, "tf32": 32}


@dataclasses.dataclass(frozen=True, slots=True)
class TensorType:
    """An array type in HLO terms: `f32[8,128]`."""

    dtype: str
    """HLO element type: `f32`, `bf16`, `s32`, `u8`, `pred`, `c64`, `f8e4m3fn`, `token`."""
    shape: tuple[int | None, ...] | None
    """Dimensions (None for a dynamic one); None for an unranked tensor or a token."""
    bounds: tuple[int | None, ...] | None = None
    """The bound of each dimension (`#stablehlo.bounds<4, ?>`, XLA's `f32[<=4,3]`):
    the most a dynamic dimension holds, which XLA allocates; None when not stated."""

    @property
    def hlo(self) -> str:
        """HLO shape syntax: `f32[8,128]`, `s32[]`, `f32[?,4]`, `f32[<=8,4]` (bounded)."""
        if self.shape is None:
            return self.dtype if self.dtype == "token" else f"{self.dtype}[*]"
        dims = ",".join(
            str(d) if d is not None else f"<={b}" if b is not None else "?"
            for d, b in zip(self.shape, self._bounds, strict=True)
        )
        return f"{self.dtype}[{dims}]"

    @property
    def _bounds(self) -> tuple[int | None, ...]:
        shape = self.shape or ()
        if self.bounds is not None and len(self.bounds) == len(shape):
            return self.bounds
        return (None,) * len(shape)

    @property
    def elements(self) -> int | None:
        if self.shape is None or any(d is None for d in self.shape):
            return None
        count = 1
        for dim in self.shape:
            count *= dim  # type: ignore[operator]
        return count

    @property
    def nbytes(self) -> int | None:
        """Size in bytes, or None for unbounded dynamic shapes, tokens and unknown
        dtypes. A bounded dynamic dimension counts at its bound, as XLA allocates it
        (XLA's `ShapeUtil::ByteSizeOf` of `f32[<=4]` is 16)."""
        elements: int | None = None
        if self.shape is not None:
            dims = [
                d if d is not None else b for d, b in zip(self.shape, self._bounds, strict=True)
            ]
            if all(d is not None for d in dims):
                elements = math.prod(dims)  # type: ignore[arg-type]
        bits = element_bits(self.dtype)
        if elements is None or bits is None:
            return None
        return (elements * bits + 7) // 8

    def __str__(self) -> str:
        return self.hlo


def element_bits(dtype: str) -> int | None:
    """Bits per element of an HLO element type, None if unknown."""
    if dtype in _ELEMENT_BITS:
        return _ELEMENT_BITS[dtype]
    match = re.match(r"^[fsu](\d+)", dtype)
    return int(match.group(1)) if match else None


def _element_type(mlir: str) -> str:
    known = _ELEMENT_TYPES.get(mlir)
    if known is not None:
        return known
    match = re.fullmatch(r"(u?)i(\d+)", mlir)
    if match:
        return f"{'u' if match.group(1) else 's'}{match.group(2)}"
    match = re.fullmatch(r"si(\d+)", mlir)
    if match:
        return f"s{match.group(1)}"
    if mlir.startswith("f") and mlir[1:2].isdigit():
        return mlir.lower()  # f8E4M3FN -> f8e4m3fn, as XLA spells it
    if mlir.startswith("!quant.uniform<"):
        storage = mlir[len("!quant.uniform<") :].split(":", 1)[0]
        return _element_type(storage)
    if mlir.startswith("complex<"):
        return "c" + str(2 * (element_bits(_element_type(mlir[8:-1])) or 0))
    return mlir


@functools.lru_cache(maxsize=8192)
def parse_type(mlir_type: str) -> tuple[TensorType, ...]:
    """The array types inside an MLIR type: one for a tensor, several for a tuple,
    none for a type that is not an array (`!stablehlo.token` gives a token)."""
    text = mlir_type.strip()
    if text.startswith("tensor<") and text.endswith(">"):
        body = text[len("tensor<") : -1]
        # An encoding (`, #stablehlo.bounds<...>`, `, #mhlo.type_extensions<...>`) may
        # bound dynamic dimensions.
        pieces = split_top_level(body)
        body = pieces[0] if pieces else body
        bounds = _bounds(pieces[1]) if len(pieces) > 1 else None
        if body.startswith("*x"):
            return (TensorType(_element_type(body[2:]), None),)
        dims: list[int | None] = []
        rest = body
        while True:
            match = re.match(r"(\?|\d+)x", rest)
            if not match:
                break
            dims.append(None if match.group(1) == "?" else int(match.group(1)))
            rest = rest[match.end() :]
        if bounds is not None and len(bounds) != len(dims):
            bounds = None
        return (TensorType(_element_type(rest), tuple(dims), bounds),)
    if text.startswith("tuple<") and text.endswith(">"):
        out: list[TensorType] = []
        for part in split_top_level(text[len("tuple<") : -1]):
            out.extend(parse_type(part))
        return tuple(out)
    if text in ("!stablehlo.token", "!mhlo.token", "!hlo.token"):
        return (TensorType("token", None),)
    match = re.fullmatch(r"(?:memref|vector)<((?:\d+x)*)([\w<>:.!-]+)>", text)
    if match:
        shape = tuple(int(d) for d in match.group(1).split("x") if d)
        return (TensorType(_element_type(match.group(2)), shape),)
    if re.fullmatch(r"u?i\d+|f\d+|bf16|index|f8\w+", text):
        return (TensorType(_element_type(text), ()),)
    return ()


_BOUNDS = re.compile(
    r"#stablehlo\.bounds<(?P<stablehlo>[^>]*)>"
    r"|#mhlo\.type_extensions<\s*bounds\s*=\s*\[(?P<mhlo>[^\]]*)\]\s*>"
)


def _bounds(encoding: str) -> tuple[int | None, ...] | None:
    """The dimension bounds a tensor's encoding states: `#stablehlo.bounds<4, ?>`
    (what XLA's converter writes for `f32[<=4,3]`) or `#mhlo.type_extensions<bounds =
    [4, ?]>`; None for any other encoding."""
    match = _BOUNDS.fullmatch(encoding.strip())
    if match is None:
        return None
    text = match.group("stablehlo") if match.group("stablehlo") is not None else match.group("mhlo")
    out: list[int | None] = []
    for part in text.split(","):
        part = part.strip()
        if part.isdigit():
            out.append(int(part))
        elif part in ("?", "-9223372036854775808"):  # MLIR's kDynamic, printed
            out.append(None)
        else:
            return None
    return tuple(out)


def tuple_elements(mlir_type: str) -> tuple[str, ...]:
    """The element types of a tuple type (`tuple<tensor<2xf32>, tensor<i32>>`: a
    multi-output fusion's result in XLA's own form); the type alone otherwise."""
    text = mlir_type.strip()
    if text.startswith("tuple<") and text.endswith(">"):
        return tuple(part.strip() for part in split_top_level(text[len("tuple<") : -1]))
    return (mlir_type,)


def hlo_shape(mlir_type: str) -> str:
    """HLO spelling of an MLIR type: `f32[8,128]`, `(f32[2], s32[])` for tuples."""
    types = parse_type(mlir_type)
    if not types:
        return mlir_type
    if len(types) == 1 and not mlir_type.startswith("tuple<"):
        return types[0].hlo
    return "(" + ", ".join(t.hlo for t in types) + ")"


def type_bytes(mlir_type: str) -> int | None:
    """Bytes of all arrays in a type; None when any size is unknown."""
    total = 0
    for tensor in parse_type(mlir_type):
        if tensor.dtype == "token":
            continue
        size = tensor.nbytes
        if size is None:
            return None
        total += size
    return total


@functools.lru_cache(maxsize=1024)
def memory_spaces(text: str) -> tuple[int, ...] | int:
    """`model.MEMORY_SPACES_ATTRIBUTE`'s value: `1` -> 1, `(1, 0, 2)` -> (1, 0, 2)."""
    text = text.strip()
    if text.startswith("("):
        return tuple(int(part) for part in text.strip("()").split(",") if part.strip())
    return int(text)


def memory_spaces_text(spaces: tuple[int, ...] | int) -> str:
    """`memory_spaces`' inverse: what `model.MEMORY_SPACES_ATTRIBUTE` holds."""
    if isinstance(spaces, int):
        return str(spaces)
    return "(" + ", ".join(str(space) for space in spaces) + ")"

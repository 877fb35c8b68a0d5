"""The parsed module as plain Python objects: what every analysis reads.

`hloscope.ir.build` builds a `Module` in one walk of the MLIR module that
jaxlib parsed. Analyses read only this model, so they need neither jaxlib nor an
MLIR context and can be tested on any module.

Values are plain integers (indices into `Module.value_types`), ops are kept in
one pre-order list (`Module.ops`), and an op's descendants are the contiguous
slice `ops[op.id + 1 : op.end]`, so a function's ops are one slice, not a walk.
Attribute values are the MLIR printed form of the attribute (large constants are
summarised, see `hloscope.ir.build`).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from types import MappingProxyType

from hloscope.ir.locations import Location, parse_location, unescape

EMPTY_ATTRIBUTES: Mapping[str, str] = MappingProxyType({})


# --------------------------------------------------------------------------- types

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


_CLOSING = {"<": ">", "(": ")", "[": "]", "{": "}"}


def split_top_level(text: str, sep: str = ",", brackets: str = "<([{") -> list[str]:
    """`text` split at each `sep` outside `brackets` and outside double-quoted strings,
    each piece stripped. HLO text passes `brackets="([{"`: its `<=[8]` is not a bracket."""
    closing = "".join(_CLOSING[b] for b in brackets)
    parts: list[str] = []
    depth = 0
    start = 0
    in_string = False
    for i, ch in enumerate(text):
        if ch == '"' and (i == 0 or text[i - 1] != "\\"):
            in_string = not in_string
        elif in_string:
            continue
        elif ch in brackets:
            depth += 1
        elif ch in closing:
            depth -= 1
        elif ch == sep and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    tail = text[start:].strip()
    if tail:
        parts.append(tail)
    return parts


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


# --------------------------------------------------------------------------- attributes

# Not an MLIR attribute: recorded by `hloscope.ir.layout` on the entry function's
# arguments and results of a module converted from HLO, where the entry layout gives
# them a memory space that XLA's conversion drops. Its value is the HLO shape with
# layout, as a printed string attribute: `"f32[8]{0:S(5)}"`.
ENTRY_SHAPE_ATTRIBUTE = "hloscope.xla_shape"

_DICT_ENTRY = re.compile(r'\s*("(?:[^"\\]|\\.)*"|[\w.$-]+)\s*(?:=\s*)?')


def parse_dict_attribute(text: str) -> dict[str, str]:
    """Entries of a printed dictionary attribute `{a = "x", b = 1 : i32}`.

    String values are unquoted; other values keep their printed form.
    """
    text = text.strip()
    if not (text.startswith("{") and text.endswith("}")):
        return {}
    out: dict[str, str] = {}
    for entry in split_top_level(text[1:-1]):
        if not entry:
            continue
        key, sep, value = entry.partition("=")
        key = key.strip()
        if key.startswith('"'):
            key = unescape(key)
        value = value.strip() if sep else "unit"
        out[key] = string_attribute(value)
    return out


def string_attribute(text: str) -> str:
    """The value of a printed string attribute, or `text` unchanged if not one."""
    text = text.strip()
    if len(text) >= 2 and text[0] == '"' and text[-1] == '"':
        return unescape(text)
    return text


def int_attribute(text: str | None) -> int | None:
    """The value of a printed integer attribute (`4 : i64`, `4`); None when there is
    none or it is not a non-negative integer."""
    match = re.match(r"\s*(\d+)", text or "")
    return int(match.group(1)) if match else None


def symbol_references(text: str) -> list[str]:
    """Function names referenced by a printed attribute: `@f`, `[@a, @b]`, `@"x.y"`."""
    return [
        unescape(quoted) if quoted else plain
        for quoted, plain in re.findall(r'@(?:("(?:[^"\\]|\\.)*")|([\w.$-]+))', text)
    ]


# --------------------------------------------------------------------------- ops


class Block:
    """A block: its argument values and its ops."""

    __slots__ = ("arguments", "ops")

    def __init__(self, arguments: tuple[int, ...], ops: tuple[Op, ...]) -> None:
        self.arguments = arguments
        self.ops = ops


class Region:
    """A region: its blocks."""

    __slots__ = ("blocks",)

    def __init__(self, blocks: tuple[Block, ...]) -> None:
        self.blocks = blocks


class Op:
    """One operation. Treat as immutable; built only by `hloscope.ir.build`."""

    __slots__ = (
        "attributes",
        "end",
        "function",
        "hlo_name",
        "id",
        "location_text",
        "name",
        "operands",
        "parent",
        "regions",
        "results",
    )

    id: int
    """Pre-order index in `Module.ops`."""
    end: int
    """One past the pre-order index of the last op nested inside this one."""
    name: str
    """Full op name: `stablehlo.add`, `func.call`, `mhlo.fusion`."""
    operands: tuple[int, ...]
    results: tuple[int, ...]
    attributes: Mapping[str, str]
    location_text: str
    """MLIR's printed location (`loc(...)`); parsed on demand by `location`."""
    regions: tuple[Region, ...]
    parent: Op | None
    """The op whose region holds this one (the `func.func` for a function's body)."""
    function: str | None
    """Name of the top-level function this op is in, None outside functions."""
    hlo_name: str | None
    """For modules read from HLO: the name of the HLO instruction the op was converted
    from (`broadcast_add_fusion`, `add.3`, `copy.1`), which the MLIR conversion keeps
    as the location only when the instruction has no metadata. None for modules that
    were not HLO, for ops the conversion made up (terminators), or when the names
    could not be recovered."""

    def __init__(
        self,
        id: int,
        name: str,
        operands: tuple[int, ...],
        results: tuple[int, ...],
        attributes: Mapping[str, str],
        location_text: str,
        parent: Op | None,
        function: str | None,
        hlo_name: str | None = None,
    ) -> None:
        self.id = id
        self.end = id + 1
        self.name = name
        self.operands = operands
        self.results = results
        self.attributes = attributes
        self.location_text = location_text
        self.regions = ()
        self.parent = parent
        self.function = function
        self.hlo_name = hlo_name

    @property
    def location(self) -> Location:
        """Where the op came from (parsed from `location_text`, cached per text)."""
        return parse_location(self.location_text)

    @property
    def dialect(self) -> str:
        return self.name.partition(".")[0]

    @property
    def short_name(self) -> str:
        """The name without its dialect: `add` for `stablehlo.add`."""
        name = self.name
        short = _SHORT_NAMES.get(name)
        if short is None:
            short = _SHORT_NAMES[name] = name.partition(".")[2] or name
        return short

    @property
    def is_terminator(self) -> bool:
        """Region terminators (`return`, `yield`): structure, not computation."""
        return _name_kind(self.name) == _TERMINATOR

    def __repr__(self) -> str:
        return f"<Op #{self.id} {self.name}>"


TERMINATOR_NAMES = frozenset(
    {"func.return", "stablehlo.return", "mhlo.return", "sdy.return", "chlo.return"}
)


def is_computation(op: Op) -> bool:
    """True for ops that compute, as counted in reports: not terminators, not
    function definitions."""
    return _name_kind(op.name) == _COMPUTES


# What an op name is, worked out once per distinct name: every analysis asks for
# each of the module's ops (several hundred thousand calls at 100k ops).
_SHORT_NAMES: dict[str, str] = {}
_COMPUTES, _TERMINATOR, _FUNCTION = 0, 1, 2
_NAME_KINDS: dict[str, int] = {}


def _name_kind(name: str) -> int:
    kind = _NAME_KINDS.get(name)
    if kind is None:
        short = name.partition(".")[2] or name
        if short in ("return", "yield") or name == "func.return":
            kind = _TERMINATOR
        elif name == "func.func":
            kind = _FUNCTION
        else:
            kind = _COMPUTES
        _NAME_KINDS[name] = kind
    return kind


# --------------------------------------------------------------------------- functions


@dataclasses.dataclass(frozen=True, slots=True)
class Argument:
    """A function argument (an HLO parameter of the entry function)."""

    index: int
    value: int
    type: str
    """MLIR type: `tensor<8x128xf32>`."""
    location_text: str
    attributes: Mapping[str, str]
    """Argument attributes: `mhlo.sharding`, `sdy.sharding`, `mhlo.memory_kind`,
    `jax.buffer_donor`, `tf.aliasing_output`, ..."""

    @property
    def location(self) -> Location:
        return parse_location(self.location_text)

    @property
    def name(self) -> str:
        """Its name from its location (`params['w']`, `x`), else `%argN`."""
        return self.location.name or f"%arg{self.index}"

    @property
    def shape(self) -> str:
        return hlo_shape(self.type)


@dataclasses.dataclass(frozen=True, slots=True)
class Result:
    """A function result."""

    index: int
    type: str
    attributes: Mapping[str, str]

    @property
    def shape(self) -> str:
        return hlo_shape(self.type)


@dataclasses.dataclass(frozen=True, slots=True, eq=False)
class Function:
    """A `func.func` at the top level of the module."""

    name: str
    visibility: str
    """`public` or `private`."""
    op: Op
    arguments: tuple[Argument, ...]
    results: tuple[Result, ...]

    @property
    def is_declaration(self) -> bool:
        return not self.op.regions or not self.op.regions[0].blocks


# --------------------------------------------------------------------------- module


class Module:
    """A parsed module. Treat as immutable; built only by `hloscope.ir.build`."""

    __slots__ = (
        "_names",
        "_users",
        "attributes",
        "backend_configs",
        "body",
        "derived",
        "functions",
        "name",
        "ops",
        "value_owner",
        "value_types",
    )

    name: str | None
    """The module's symbol name (`jit_f`), if it has one."""
    attributes: Mapping[str, str]
    ops: Sequence[Op]
    """Every op below the module, in pre-order."""
    body: tuple[Op, ...]
    """The ops directly in the module (functions, `sdy.mesh`, ...)."""
    functions: Mapping[str, Function]
    """Top-level functions by name, in module order."""
    value_types: Sequence[str]
    """MLIR type of each value, by value id."""
    value_owner: Sequence[int]
    """Id of the op that defines each value: its result, or a block argument of one of
    its regions (the `func.func` for function arguments)."""
    backend_configs: Mapping[str, str]
    """For modules read from HLO: the `backend_config` of each fusion and while
    instruction that has one, by HLO instruction name (`Op.hlo_name`), as XLA prints
    it (`{"fusion_backend_config":{"kind":"__triton_gemm",...}}`,
    `{"known_trip_count":{"n":"6"},...}`). The MLIR conversion drops it."""

    def __init__(
        self,
        name: str | None,
        attributes: Mapping[str, str],
        ops: Sequence[Op],
        body: tuple[Op, ...],
        functions: Mapping[str, Function],
        value_types: Sequence[str],
        value_owner: Sequence[int],
        backend_configs: Mapping[str, str] = EMPTY_ATTRIBUTES,
    ) -> None:
        self.name = name
        self.attributes = attributes
        self.ops = ops
        self.body = body
        self.functions = functions
        self.value_types = value_types
        self.value_owner = value_owner
        self.backend_configs = backend_configs
        self._users: list[tuple[int, ...]] | None = None
        self._names: dict[int, str] | None = None
        self.derived: dict[str, object] = {}
        """What analyses work out once per module and share (the scan of op names and
        attributes that structure, params and placement read), by name."""

    # -- navigation -----------------------------------------------------------------

    @property
    def entry(self) -> Function | None:
        """The entry function: public `main`, else the first public function, else the
        first function."""
        main = self.functions.get("main")
        if main is not None and main.visibility == "public":
            return main
        for function in self.functions.values():
            if function.visibility == "public" and not function.is_declaration:
                return function
        if main is not None:
            return main
        return next(iter(self.functions.values()), None)

    def descendants(self, op: Op) -> Sequence[Op]:
        """Every op nested inside `op`, in pre-order."""
        return self.ops[op.id + 1 : op.end]

    def function_ops(self, function: Function) -> Sequence[Op]:
        return self.descendants(function.op)

    def defining_op(self, value: int) -> Op | None:
        """The op whose result `value` is; None for block arguments."""
        owner = self.ops[self.value_owner[value]] if self.value_owner[value] >= 0 else None
        if owner is not None and value in owner.results:
            return owner
        return None

    def users(self, value: int) -> tuple[int, ...]:
        """Ids of the ops that use `value` as an operand (computed once, lazily)."""
        if self._users is None:
            users: list[list[int]] = [[] for _ in range(len(self.value_types))]
            for op in self.ops:
                for operand in op.operands:
                    if operand >= 0:
                        users[operand].append(op.id)
            self._users = [tuple(u) for u in users]
        return self._users[value]

    def value_name(self, value: int) -> str:
        """MLIR-style name: `%arg0` for block arguments, `%3` or `%3#1` for results,
        numbered per function as MLIR's printer numbers them (approximately: ops
        with custom result names print differently)."""
        if self._names is None:
            self._names = self._number_values()
        return self._names.get(value, f"%v{value}")

    def _number_values(self) -> dict[int, str]:
        names: dict[int, str] = {}

        def number(scope: Sequence[Op], args: Sequence[int]) -> None:
            next_arg = 0
            next_result = 0
            for value in args:
                names[value] = f"%arg{next_arg}"
                next_arg += 1
            stack: list[Op] = list(reversed(scope))
            while stack:
                op = stack.pop()
                if op.name == "func.func":
                    continue
                if len(op.results) == 1:
                    names[op.results[0]] = f"%{next_result}"
                    next_result += 1
                elif op.results:
                    for i, value in enumerate(op.results):
                        names[value] = f"%{next_result}#{i}"
                    next_result += 1
                for region in op.regions:
                    for block in region.blocks:
                        for value in block.arguments:
                            names[value] = f"%arg{next_arg}"
                            next_arg += 1
                for region in reversed(op.regions):
                    for block in reversed(region.blocks):
                        stack.extend(reversed(block.ops))

        for function in self.functions.values():
            if function.is_declaration:
                continue
            entry_block = function.op.regions[0].blocks[0]
            ops: list[Op] = []
            for block in function.op.regions[0].blocks:
                ops.extend(block.ops)
            number(ops, entry_block.arguments)
        return names

    def __iter__(self) -> Iterator[Op]:
        return iter(self.ops)

    def __len__(self) -> int:
        return len(self.ops)

    def __repr__(self) -> str:
        return f"<Module {self.name or '(unnamed)'}: {len(self.ops)} ops>"

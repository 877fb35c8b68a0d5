"""What the model's attributes say, decoded once: shardings, meshes, aliases, frontend
attributes and memory kinds as small frozen dataclasses.

The model keeps each attribute as MLIR prints it (`hloscope.ir.model`); the
properties of `Op`, `Argument`, `Result` and `Module` hand out these decoded forms,
each decoded once per distinct printed text (MLIR uniques attributes, so a module
has few distinct ones). Every decoded form keeps the text it was read from, for
display. XLA's `HloSharding` text is read by jaxlib's own parser
(`HloSharding.from_string`); Shardy's and MLIR's syntax, which jaxlib exposes only
on attribute objects of a live context, is read here. Describing a sharding or a
mesh in words lives here too, so that every view says it the same way.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import Any, Literal

from hloscope.ir.locations import unescape

# --------------------------------------------------------------------------- syntax

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


def signed_int_attribute(text: str | None) -> int | None:
    """The value of a printed integer attribute that may be negative (`-1 : i32`)."""
    match = re.match(r"\s*(-?\d+)", text or "")
    return int(match.group(1)) if match else None


@functools.lru_cache(maxsize=4096)
def parse_dict_attribute(text: str) -> Mapping[str, str]:
    """Entries of a printed dictionary attribute `{a = "x", b = 1 : i32}` (read-only,
    shared by every caller of the same text).

    String values are unquoted; other values keep their printed form.
    """
    text = text.strip()
    if not (text.startswith("{") and text.endswith("}")):
        return EMPTY
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
    return MappingProxyType(out)


EMPTY: Mapping[str, str] = MappingProxyType({})


def _quoted_names(text: str) -> list[str]:
    """The double-quoted names in `text`, as written (escapes kept)."""
    return re.findall(r'"((?:[^"\\]|\\.)*)"', text)


# --------------------------------------------------------------------------- meshes

_MESH_AXIS = re.compile(r'"((?:[^"\\]|\\.)*)"\s*=\s*(\d+)')
_MESH_DEVICES = re.compile(r"device_ids\s*=\s*\[([^\]]*)\]")


@dataclasses.dataclass(frozen=True, slots=True)
class Mesh:
    """A Shardy mesh: an `sdy.mesh` op, a mesh of XLA's frontend attributes
    (`xla.sdy.meshes`), or one written inline in a sharding."""

    name: str
    """Its symbol name (`mesh`); empty for an inline mesh."""
    axes: tuple[tuple[str, int], ...]
    """(axis name, size), in order."""
    device_ids: tuple[int, ...] | None
    """Explicit device ids (`device_ids=[0]` of a maximal mesh), None when not given."""
    text: str
    """As written: `#sdy.mesh<["data"=4, "model"=2]>` or `<["data"=4]>`."""

    @property
    def devices(self) -> int:
        """Devices the mesh spans: the product of its axis sizes."""
        count = 1
        for _, size in self.axes:
            count *= size
        return count

    @property
    def xla_axes(self) -> bool:
        """Whether every axis has a name XLA gave it (`axis_0`, ...): a mesh of an
        optimized module, not one a program declared."""
        return bool(self.axes) and all(_XLA_AXIS.fullmatch(name) for name, _ in self.axes)

    @property
    def body(self) -> str:
        """The text without its `#sdy.mesh` prefix: `<["data"=4]>`."""
        return self.text.removeprefix("#sdy.mesh")

    @property
    def words(self) -> str:
        """`mesh(data=4, model=2)`; a maximal mesh (`<[], device_ids=[0]>`) `device 0`."""
        if not self.axes and self.device_ids is not None:
            ids = ", ".join(map(str, self.device_ids))
            return f"device {ids}" if len(self.device_ids) <= 1 else f"devices [{ids}]"
        return "mesh(" + ", ".join(f"{name}={size}" for name, size in self.axes) + ")"


_XLA_AXIS = re.compile(r"axis_\d+")


def with_declared_axes(meshes: Sequence[Mesh], declared: Sequence[Mesh]) -> tuple[Mesh, ...]:
    """`meshes` (an optimized module's) as the program declared them (the `declared`
    meshes of the module it was compiled from). XLA names the meshes its collectives
    span itself, `axis_0`, `axis_1`, ..., and factors the devices its own way (a
    `data=2, tensor=4` program may compile to `axis_0=2, axis_1=1, axis_2=4` or
    `axis_0=1, axis_1=4, axis_2=2`): such a mesh is the declared mesh over the same
    devices (names and sizes; under the module's symbol). Where several declared
    meshes span those devices, the one whose sizes other than 1 are XLA's, in order;
    where none or several remain, the mesh is kept as XLA wrote it
    (`Mesh.xla_axes` says so). Several of XLA's meshes that become the same declared
    mesh are one, under the first's symbol."""
    out: list[Mesh] = []
    for mesh in meshes:
        match = None
        if mesh.xla_axes:
            # One per distinct mesh: meshes declared twice under two names are one.
            same_devices = list(
                {
                    (d.axes, d.device_ids): d
                    for d in declared
                    if not d.xla_axes
                    and d.devices == mesh.devices
                    and d.device_ids == mesh.device_ids
                }.values()
            )
            if len(same_devices) > 1:
                sizes = [size for _, size in mesh.axes if size != 1]
                same_devices = [
                    d for d in same_devices if [s for _, s in d.axes if s != 1] == sizes
                ]
            match = same_devices[0] if len(same_devices) == 1 else None
        if match is not None and any(
            (kept.axes, kept.device_ids) == (match.axes, match.device_ids) for kept in out
        ):
            # XLA's meshes of two collectives that factor the same devices otherwise
            # (`axis_0=2, axis_1=1, axis_2=2` and `axis_0=1, ..., axis_3=2`) are both
            # the declared mesh: one mesh, so that shardings read on it.
            continue
        mesh = mesh if match is None else dataclasses.replace(match, name=mesh.name)
        if mesh not in out:
            out.append(mesh)
    return tuple(out)


@functools.lru_cache(maxsize=1024)
def parse_mesh(name: str, text: str) -> Mesh:
    """A mesh from its printed attribute."""
    axes = tuple((axis, int(size)) for axis, size in _MESH_AXIS.findall(text))
    devices = _MESH_DEVICES.search(text)
    device_ids = None
    if devices is not None:
        device_ids = tuple(int(d) for d in devices.group(1).replace(" ", "").split(",") if d)
    return Mesh(name=name, axes=axes, device_ids=device_ids, text=text)


_FRONTEND_MESH = re.compile(r"([\w.$-]+)\s*=\s*#sdy\.mesh<")


def frontend_meshes(text: str) -> tuple[Mesh, ...]:
    """The meshes of XLA's `xla.sdy.meshes` frontend attribute:
    `{mesh = #sdy.mesh<["a"=2]>, other = #sdy.mesh<...>}`."""
    meshes: list[Mesh] = []
    for match in _FRONTEND_MESH.finditer(text):
        start = match.end() - len("<")
        meshes.append(parse_mesh(match.group(1), "#sdy.mesh" + _balanced(text, start)))
    return tuple(meshes)


def _balanced(text: str, start: int) -> str:
    """The `<...>` group of `text` that opens at `start`."""
    depth = 0
    for i in range(start, len(text)):
        if text[i] == "<":
            depth += 1
        elif text[i] == ">":
            depth -= 1
            if depth == 0:
                return text[start : i + 1]
    return text[start:]


# --------------------------------------------------------------------------- sdy


@dataclasses.dataclass(frozen=True, slots=True)
class SdyDimension:
    """How one dimension of a Shardy sharding is split: `{"a", "b":(1)2}`, `{?}`."""

    axes: tuple[str, ...]
    """Axis names, in order; a sub-axis as `b:(1)2`."""
    is_open: bool
    """`?`: propagation may shard it further."""


@dataclasses.dataclass(frozen=True, slots=True)
class SdySharding:
    """A Shardy tensor sharding: `#sdy.sharding<@mesh, [{"data"}, {}], replicated={"x"}>`."""

    text: str
    """As written."""
    parsed: bool
    """False when the text is not a sharding this reads (then only `text` is known)."""
    mesh_name: str | None
    """The mesh it names (`@mesh`); None for an inline mesh."""
    mesh: Mesh | None
    """The inline mesh, when it names none."""
    mesh_text: str
    """The mesh as written: `@mesh` or an inline `<["a"=2]>`."""
    dimensions: tuple[SdyDimension, ...]
    dimensions_text: str
    """The dimension shardings as written: `[{"data"}, {}]`."""
    extras: tuple[tuple[str, tuple[str, ...]], ...]
    """What follows the dimensions: (`replicated`, axes), (`unreduced`, axes)."""

    def words(self, meshes: Mapping[str, Mesh]) -> str:
        """`P('data', None) over mesh(data=4, model=2)`, as JAX prints a
        `NamedSharding`'s spec; `meshes` are the module's, by name."""
        if not self.parsed:
            return self.text
        if self.mesh_name is not None:
            known = meshes.get(self.mesh_name)
            mesh = known.words if known is not None else self.mesh_text
        else:
            mesh = self.mesh.words if self.mesh is not None else self.mesh_text
        dims = [_dimension_words(d) for d in self.dimensions]
        if all(d == "None" for d in dims):
            spec = "P()"  # replicated, as JAX prints `PartitionSpec()`
        else:
            spec = "P(" + ", ".join(dims) + ("," if len(dims) == 1 else "") + ")"
        for key, axes in self.extras:
            spec += f" {key}({', '.join(axes)})"
        if any(d.is_open for d in self.dimensions):
            spec += " (? open)"
        if mesh.startswith("device"):
            return f"{spec} on {mesh}"
        return f"{spec} over {mesh}"

    @property
    def brief(self) -> str:
        """`@mesh [{"x"}, {}]`: the sharding without its `#sdy.sharding<...>`."""
        body = self.text[len("#sdy.sharding<") : -1]
        mesh, _, dims = body.partition(", ")
        return f"{mesh} {dims}" if dims else body


def _dimension_words(dimension: SdyDimension) -> str:
    """`'a'`, `('a', 'b')`, or `None` for a dimension split by no axis."""
    if not dimension.axes:
        return "None"
    if len(dimension.axes) == 1:
        return f"'{dimension.axes[0]}'"
    return "(" + ", ".join(f"'{n}'" for n in dimension.axes) + ")"


_SDY_AXIS = re.compile(r'"((?:[^"\\]|\\.)*)"(?::\((\d+)\)(\d+))?')


@functools.lru_cache(maxsize=4096)
def parse_sdy_sharding(text: str) -> SdySharding:
    """A Shardy sharding from its printed attribute."""
    body = text.strip()
    unread = SdySharding(text, False, None, None, "", (), "", ())
    if not (body.startswith("#sdy.sharding<") and body.endswith(">")):
        return unread
    parts = split_top_level(body[len("#sdy.sharding<") : -1])
    if len(parts) < 2:
        return unread
    mesh_text, dims_text = parts[0], parts[1]
    mesh_name: str | None = None
    mesh: Mesh | None = None
    if mesh_text.startswith("@"):
        names = symbol_references(mesh_text)
        mesh_name = names[0] if names else mesh_text
    else:
        mesh = parse_mesh("", mesh_text)
    dims: list[SdyDimension] = []
    if dims_text.startswith("[") and dims_text.endswith("]"):
        for dim in split_top_level(dims_text[1:-1]):
            axes = tuple(
                f"{name}:({pre}){size}" if pre else name
                for name, pre, size in _SDY_AXIS.findall(dim.strip())
            )
            dims.append(SdyDimension(axes=axes, is_open="?" in dim.partition("}")[0]))
    extras = []
    for extra in parts[2:]:
        key, _, value = extra.partition("=")
        extras.append((key.strip(), tuple(_quoted_names(value))))
    return SdySharding(
        text, True, mesh_name, mesh, mesh_text, tuple(dims), dims_text, tuple(extras)
    )


def sdy_shardings_brief(text: str) -> str:
    """`#sdy.sharding_per_value<[<@mesh, [{"x"}]>, ...]>` as `@mesh [{"x"}]; ...`."""
    found = re.findall(r"<(@[\w.$-]+), (\[[^\[\]]*\])", text)
    return "; ".join(f"{mesh} {dims}" for mesh, dims in found) if found else text


@functools.lru_cache(maxsize=1024)
def manual_axes(text: str) -> tuple[str, ...]:
    """The axes of an `sdy.manual_computation`'s `manual_axes = #sdy<manual_axes{"a"}>`."""
    return tuple(_quoted_names(text))


@functools.lru_cache(maxsize=8192)
def symbol_reference_tuple(text: str) -> tuple[str, ...]:
    """`symbol_references`, once per distinct text."""
    return tuple(symbol_references(text))


@functools.lru_cache(maxsize=1024)
def hlo_computation_names(text: str) -> tuple[str, ...]:
    """The computations an HLO instruction's `calls=` names (`%fused_computation.1`)."""
    return tuple(re.findall(r"%?([\w.-]+)", text))


@functools.lru_cache(maxsize=1024)
def mentioned_names(text: str) -> tuple[str, ...]:
    """Every name an attribute mentions, in MLIR's `@f` or XLA's `%f` spelling (a
    while's `condition`), and the other words of its text."""
    return tuple(re.findall(r"@?%?([\w.-]+)", text))


_FUSION_KIND = re.compile(r"\bk[A-Z]\w*")


@functools.lru_cache(maxsize=256)
def fusion_kind(text: str) -> str | None:
    """`kLoop` from `#mhlo<fusion_kind kLoop>` or HLO's `kLoop`; None when none."""
    match = _FUSION_KIND.search(text)
    return match.group(0) if match else None


_INTEGER_CONSTANT = re.compile(r"^dense<(-?\d+)>")


def integer_constant(text: str) -> int | None:
    """The integer of a scalar dense constant, `dense<6>`; None for anything else."""
    match = _INTEGER_CONSTANT.match(text)
    return int(match.group(1)) if match else None


_I64_ARRAY = re.compile(r"array<i64(?::\s*([\d,\s]*))?>")


@functools.lru_cache(maxsize=1024)
def i64_array(text: str) -> tuple[int, ...] | None:
    """The integers of a dense array attribute, `array<i64: 0, 2>`; None for any other
    attribute."""
    match = _I64_ARRAY.fullmatch(text)
    if match is None:
        return None
    return tuple(int(d) for d in (match.group(1) or "").replace(" ", "").split(",") if d)


_DEFAULT_PRECISION = re.compile(r"\[(?:#(?:stablehlo|mhlo)<precision DEFAULT>(?:, )?)*\]")


def is_default_precision(text: str) -> bool:
    """Whether a `precision_config` says only DEFAULT (or nothing), as printers that
    leave it out mean."""
    return _DEFAULT_PRECISION.fullmatch(text) is not None


_BACKEND_KIND = re.compile(r'"kind"\s*:\s*"([^"]+)"')


def backend_kind(config: str) -> str | None:
    """The first `"kind"` a backend config names (`{"fusion_backend_config":{"kind":
    "__triton_gemm"}}`), None when it names none."""
    match = _BACKEND_KIND.search(config)
    return match.group(1) if match else None


# ------------------------------------------------------------ compiler annotations

ANNOTATION_KEYS = ("estimated_cycles", "collective_algorithm_config", "continuation_config")
"""What a TPU compiler writes in an instruction's backend config that the views read:
its own estimate of the instruction's cycles, the algorithm of a collective it fused
with compute (`emitter`: `SingleInputAllReduceScatterFusion`), and the continuation of
an async collective a compute fusion moves on."""

_KEPT_TOP_KEYS = ("fusion_backend_config", "known_trip_count", *ANNOTATION_KEYS[1:])


def annotated(config: str) -> bool:
    """Whether a backend config holds one of the compiler's annotations."""
    return any(f'"{key}"' in config for key in ANNOTATION_KEYS)


def kept_backend_config(config: str, limit: int) -> str:
    """The part of an instruction's backend config the model keeps: all of it up to
    `limit` characters; past it (the TPU's collective algorithms carry pages of debug
    text), the keys the views read, with `estimated_cycles` wherever it was, as JSON;
    else its first 200 characters and a digest of the rest (two long configs told
    apart)."""
    if len(config) <= limit:
        return config
    try:
        parsed = json.loads(config)
    except ValueError:
        parsed = None
    if isinstance(parsed, dict):
        kept: dict[str, Any] = {k: parsed[k] for k in _KEPT_TOP_KEYS if k in parsed}
        algorithm = kept.get("collective_algorithm_config")
        if isinstance(algorithm, dict):
            kept["collective_algorithm_config"] = {
                k: v for k, v in algorithm.items() if k != "debug"
            }
        cycles = _first_key(parsed, "estimated_cycles")
        if cycles is not None:
            kept["estimated_cycles"] = cycles
        text = json.dumps(kept, separators=(",", ":"))
        if len(text) <= limit:
            return text
    import hashlib  # here, as in hloscope.ir.build: rarely needed

    digest = hashlib.blake2b(config.encode(), digest_size=8).hexdigest()
    return f"{config[:200]}...({len(config)} chars, {digest})"


def _first_key(node: Any, key: str) -> Any:
    if isinstance(node, dict):
        if key in node:
            return node[key]
        values: Iterable[Any] = node.values()
    elif isinstance(node, list):
        values = node
    else:
        return None
    for value in values:
        found = _first_key(value, key)
        if found is not None:
            return found
    return None


@dataclasses.dataclass(frozen=True)
class CompilerAnnotations:
    """What the compiler wrote of one instruction in its backend config."""

    estimated_cycles: int | None
    """The TPU compiler's own estimate of the instruction's cycles."""
    collective_emitter: str | None
    """The emitter of a collective fused with its compute
    (`collective_algorithm_config.emitter`: `SingleInputAllReduceScatterFusion`)."""
    continues_collective: bool
    """It is a compute fusion that moves an async collective on (`continuation_config`)."""


NO_ANNOTATIONS = CompilerAnnotations(None, None, False)


def compiler_annotations(config: str | None) -> CompilerAnnotations:
    """The compiler's annotations in a backend config (`ANNOTATION_KEYS`)."""
    if not config or not annotated(config):
        return NO_ANNOTATIONS
    try:
        parsed = json.loads(config)
    except ValueError:
        return NO_ANNOTATIONS
    if not isinstance(parsed, dict):
        return NO_ANNOTATIONS
    cycles = _first_key(parsed, "estimated_cycles")
    try:
        estimated = int(cycles) if cycles is not None else None
    except (TypeError, ValueError):
        estimated = None
    algorithm = parsed.get("collective_algorithm_config")
    emitter = algorithm.get("emitter") if isinstance(algorithm, dict) else None
    return CompilerAnnotations(
        estimated,
        emitter if isinstance(emitter, str) and emitter else None,
        isinstance(parsed.get("continuation_config"), dict),
    )


def symbol_references(text: str) -> list[str]:
    """Function names referenced by a printed attribute: `@f`, `[@a, @b]`, `@"x.y"`."""
    return [
        unescape(quoted) if quoted else plain
        for quoted, plain in re.findall(r'@(?:("(?:[^"\\]|\\.)*")|([\w.$-]+))', text)
    ]


# --------------------------------------------------------------------------- aliases

_ALIAS_ENTRY = re.compile(
    r'kind\s*=\s*"(?P<kind>[\w-]+)".*?parameter_number\s*=\s*(?P<parameter>\d+)'
    r".*?output_index\s*=\s*array<i64(?::\s*(?P<output>[\d,\s]*))?>",
    re.DOTALL,
)


def input_output_aliases(text: str) -> Mapping[int, int]:
    """Parameter number -> result index, from `mhlo.input_output_alias` (each entry's
    first output index: the entry's tuple result is flattened into results, so `{i}`
    is result i)."""
    out: dict[int, int] = {}
    if "parameter_number" not in text:
        return MappingProxyType(out)
    for match in _ALIAS_ENTRY.finditer(text):
        output = [int(x) for x in (match.group("output") or "").replace(" ", "").split(",") if x]
        out.setdefault(int(match.group("parameter")), output[0] if output else 0)
    return MappingProxyType(out)


# --------------------------------------------------------------------------- layouts

_MEMORY_SPACE = re.compile(r"S\((\d+)\)")


@functools.lru_cache(maxsize=4096)
def memory_space(xla_shape: str | None) -> int | None:
    """The memory space of an HLO shape's layout (`f32[4]{0:S(5)}` -> 5); 0 when the
    layout names none; None without a layout or for tuples."""
    if not xla_shape:
        return None
    shape = string_attribute(xla_shape)
    if shape.startswith("(") or "{" not in shape:
        return None
    match = _MEMORY_SPACE.search(shape[shape.index("{") :])
    return int(match.group(1)) if match else 0


@functools.lru_cache(maxsize=1024)
def tuple_memory_spaces(xla_shape: str) -> tuple[int | None, ...]:
    """The memory space of each element of a tuple shape (`(f32[4]{0:S(5)}, ...)`); of
    the one shape when it is not a tuple."""
    shape = string_attribute(xla_shape).strip()
    if not (shape.startswith("(") and shape.endswith(")")):
        return (memory_space(shape),)
    # `<` is not a bracket in HLO shapes (`f32[<=4]`).
    return tuple(memory_space(p) for p in split_top_level(shape[1:-1], brackets="([{"))


# --------------------------------------------------------------------------- XLA

HloShardingKind = Literal[
    "replicated", "manual", "maximal", "tiled", "tuple", "unknown", "unreduced", "named", "unread"
]
"""`named`: XLA's named sharding over a mesh (`{mesh['x'=2] [{'x'}]}`, HloSharding V3),
kept as written; `unread`: text XLA's parser rejects."""


@dataclasses.dataclass(frozen=True, slots=True)
class HloSharding:
    """An XLA (GSPMD) sharding, `{devices=[4,1,2]<=[8] last_tile_dim_replicate}`, as
    jaxlib's `HloSharding.from_string` reads it (which normalises: a tiling over one
    tile is `replicated`)."""

    text: str
    """As written (metadata included)."""
    kind: HloShardingKind
    """`unread` when XLA's parser rejected the text."""
    tiles: tuple[int, ...] = ()
    """Tile assignment dimensions, subgroup dimensions included (`[4,1,2]`)."""
    replicate_on_last_tile_dim: bool = False
    subgroups: tuple[str, ...] = ()
    """What the trailing tile dimensions are (`last_tile_dims={manual, replicated}`)."""
    devices: tuple[int, ...] = ()
    """The devices, in tile order (a maximal sharding's one device)."""
    iota_reshape: tuple[int, ...] | None = None
    """For devices given as an iota (`<=[4,2]T(1,0)`): its reshape dimensions; None when
    they are listed."""
    iota_transpose: tuple[int, ...] | None = None
    """The iota's transpose (identity when none is written)."""
    elements: tuple[HloSharding, ...] = ()
    """A tuple sharding's, one per element."""

    @property
    def words(self) -> str:
        """Readable: `replicated`, `tiled [4,1], replicated ×2`, `device 0`, a tuple's
        `(...; ...)`; anything else as written."""
        if self.kind == "tuple":
            return "(" + "; ".join(e.words for e in self.elements) + ")"
        if self.kind in ("replicated", "manual"):
            return self.kind
        if self.kind == "maximal" and len(self.devices) == 1:
            return f"device {self.devices[0]}"
        if self.kind != "tiled":
            return self.text
        tiles = list(self.tiles)
        suffix = ""
        if self.replicate_on_last_tile_dim and len(tiles) > 1:
            suffix = f", replicated ×{tiles[-1]}"
            tiles = tiles[:-1]
        elif self.subgroups:
            trailing = tiles[len(tiles) - len(self.subgroups) :]
            tiles = tiles[: len(tiles) - len(self.subgroups)]
            suffix = "".join(
                f", {kind} ×{n}" for kind, n in zip(self.subgroups, trailing, strict=False)
            )
        return "tiled [" + ",".join(str(t) for t in tiles) + "]" + suffix

    def on_mesh(self, meshes: Sequence[Mesh]) -> str | None:
        """The sharding in the words of the module's one mesh: which mesh axes split
        each dimension (`@mesh [{"data"}, {}]`), the replicated axes left out as
        Shardy leaves them. None where the module has no single mesh, the sharding is
        not a tiling (or has subgroups other than replication), the devices are
        listed rather than an iota, or their order is not the mesh's."""
        if len(meshes) != 1 or self.kind != "tiled" or self.iota_reshape is None:
            return None
        if self.subgroups:
            return None  # manual or unreduced subgroups: no Shardy spelling here
        mesh = meshes[0]
        reshape = list(self.iota_reshape)
        perm = list(self.iota_transpose or range(len(reshape)))
        reshaped = _axis_groups(reshape, mesh.axes)
        if reshaped is None or sorted(perm) != list(range(len(reshape))):
            return None
        order = [name for index in perm for name in reshaped[index]]
        sizes = dict(mesh.axes)
        tiled = _axis_groups(list(self.tiles), [(name, sizes[name]) for name in order])
        if tiled is None:
            return None
        if self.replicate_on_last_tile_dim:
            tiled = tiled[:-1]
        dims = ", ".join("{" + ", ".join(f'"{name}"' for name in group) + "}" for group in tiled)
        return f"@{mesh.name} [{dims}]"


def _axis_groups(sizes: Sequence[int], axes: Sequence[tuple[str, int]]) -> list[list[str]] | None:
    """`axes` (in order) split into consecutive groups whose sizes multiply to each of
    `sizes`; None when they do not line up (an axis of size 1 joins no group)."""
    groups: list[list[str]] = []
    queue = [axis for axis in axes if axis[1] > 1]
    for size in sizes:
        group: list[str] = []
        product = 1
        while product < size and queue:
            name, axis_size = queue.pop(0)
            group.append(name)
            product *= axis_size
        if product != size:
            return None
        groups.append(group)
    return groups if not queue else None


@functools.lru_cache(maxsize=4096)  # one text per distinct sharding: most values share a few
def parse_hlo_sharding(text: str) -> HloSharding:
    """An XLA sharding from its text (`{replicated}`), through jaxlib's parser."""
    body = text.strip()
    if body in ("", "{}") or not body.startswith("{"):
        return HloSharding(text, "unread")  # `{}` reads as manual to XLA; not to us
    from hloscope.ir.context import xla_hlo

    try:
        sharding = xla_hlo().HloSharding.from_string(body)
    except Exception:  # XLA's parser raises RuntimeError (INVALID_ARGUMENT) on bad text
        return HloSharding(text, "unread")
    return _decoded(text, sharding)


def _decoded(text: str, sharding: Any) -> HloSharding:
    # The accessors abort the process where they do not apply (a tuple's or a named
    # sharding's tile assignment, an iota's axis sizes), so ask in this order and no more.
    elements = sharding.tuple_elements()
    if elements:
        # Each element as XLA prints it alone: the tuple's text is not cut up (XLA
        # writes `/*index=5*/` before every fifth element, metadata nests braces).
        return HloSharding(text, "tuple", elements=tuple(_decoded(str(e), e) for e in elements))
    if str(sharding).startswith("{mesh"):
        return HloSharding(text, "named")
    if sharding.is_manual():
        return HloSharding(text, "manual")
    # Older jaxlibs (0.8, 0.9) may lack the newest predicates.
    if getattr(sharding, "is_unknown", bool)():
        return HloSharding(text, "unknown")
    if getattr(sharding, "is_unreduced", bool)():
        return HloSharding(text, "unreduced")
    if sharding.is_replicated():
        return HloSharding(text, "replicated")
    devices = tuple(sharding.tile_assignment_devices())
    if sharding.is_maximal():
        return HloSharding(text, "maximal", devices=devices)
    reshape: tuple[int, ...] | None = None
    transpose: tuple[int, ...] | None = None
    if sharding.is_tile_assignment_iota():
        proto = sharding.to_proto()
        reshape = tuple(proto.iota_reshape_dims)
        transpose = tuple(proto.iota_transpose_perm)
    return HloSharding(
        text,
        "tiled",
        tiles=tuple(sharding.tile_assignment_dimensions()),
        replicate_on_last_tile_dim=sharding.replicate_on_last_tile_dim(),
        subgroups=tuple(kind.name.lower() for kind in sharding.subgroup_types()),
        devices=devices,
        iota_reshape=reshape,
        iota_transpose=transpose,
    )


Sharding = SdySharding | HloSharding


def sharding_words(sharding: Sharding, meshes: Mapping[str, Mesh]) -> str:
    """A sharding in words, as the parameter map says it: a Shardy sharding as a
    `PartitionSpec` over its mesh, an XLA sharding as its tiling."""
    if isinstance(sharding, SdySharding):
        return sharding.words(meshes)
    return sharding.words


def sharding_brief(sharding: Sharding) -> str:
    """A sharding for a table cell: a Shardy one as `@mesh [{"x"}, {}]`, an XLA one as
    its tiling (`tiled [4,1], replicated ×2`)."""
    text = sharding.text
    if isinstance(sharding, SdySharding):
        return sharding.brief if text.startswith("#sdy.sharding<") and text.endswith(">") else text
    if sharding.text.startswith("{") and sharding.text.endswith("}"):
        return sharding.words
    return sharding.text


def read_sharding(text: str) -> Sharding:
    """A sharding attribute's value (unquoted): Shardy's or XLA's, by its syntax."""
    if text.startswith("#sdy."):
        return parse_sdy_sharding(text)
    return parse_hlo_sharding(text)


_GROUP_AXIS = re.compile(r'axis_ref<name\s*=\s*"((?:[^"\\]|\\.)*)"')
_GROUP_MESH = re.compile(r"mesh\s*=\s*@([\w.$-]+)")
_DENSE_GROUPS = re.compile(r"dense<(\[.*\])>\s*:\s*tensor<(\d+)x(\d+)x")


@dataclasses.dataclass(frozen=True, slots=True)
class ReplicaGroups:
    """Which devices a collective communicates among: XLA's mesh-axes form
    (`#stablehlo.replica_group_mesh_axes<mesh = @mesh, axes = [...]>`, on a mesh of
    XLA's own axes `axis_0`, ...) or explicit groups of device ids."""

    mesh: str | None
    """The mesh of the mesh-axes form; None for explicit groups."""
    axes: tuple[str, ...]
    """The mesh axes of the mesh-axes form (XLA's names)."""
    groups: tuple[tuple[int, ...], ...]
    """Explicit groups of device ids; empty for the mesh-axes form."""


_CHANNEL_HANDLE = re.compile(r"handle\s*=\s*(\d+)")


def channel_id(text: str | None) -> int | None:
    """`62`, or MLIR's `#stablehlo.channel_handle<handle = 62, type = 1>`, as 62; None
    for none (or 0, which XLA writes for no channel)."""
    if not text:
        return None
    found = _CHANNEL_HANDLE.search(text) if "handle" in text else None
    digits = found[1] if found else text.strip()
    return int(digits) or None if digits.isdigit() else None


def mesh_axes_groups(mesh: Mesh, axes: Sequence[str]) -> tuple[tuple[int, ...], ...] | None:
    """The device groups of the mesh-axes form (`replica_group_mesh_axes`) on `mesh`:
    devices that differ only along `axes` are one group, ordered along them (in the
    order `axes` lists them), the groups by the other axes' positions; None where an
    axis is not the mesh's."""
    names = [name for name, _ in mesh.axes]
    if any(axis not in names for axis in axes):
        return None
    sizes = [size for _, size in mesh.axes]
    ids = list(mesh.device_ids) if mesh.device_ids else list(range(mesh.devices))
    if len(ids) != mesh.devices:
        return None
    varying = [names.index(axis) for axis in axes]
    groups: dict[tuple[int, ...], list[tuple[tuple[int, ...], int]]] = {}
    for flat, device in enumerate(ids):
        position, rest = [], flat
        for size in reversed(sizes):  # row-major: the last axis varies fastest
            rest, coordinate = divmod(rest, size)
            position.append(coordinate)
        position.reverse()
        key = tuple(c for i, c in enumerate(position) if i not in varying)
        groups.setdefault(key, []).append((tuple(position[i] for i in varying), device))
    return tuple(
        tuple(device for _, device in sorted(members)) for _, members in sorted(groups.items())
    )


@functools.lru_cache(maxsize=256)
def parse_replica_groups(text: str) -> ReplicaGroups | None:
    """A collective's `replica_groups` attribute; None when it is neither form."""
    if "replica_group_mesh_axes" in text:
        mesh = _GROUP_MESH.search(text)
        return ReplicaGroups(
            mesh=mesh.group(1) if mesh else None,
            axes=tuple(_GROUP_AXIS.findall(text)),
            groups=(),
        )
    dense = _DENSE_GROUPS.search(text)
    if dense is None:
        return None
    ids = [int(n) for n in re.findall(r"-?\d+", dense.group(1))]
    width = int(dense.group(3))
    if width == 0 or len(ids) % width:
        return None
    groups = tuple(tuple(ids[i : i + width]) for i in range(0, len(ids), width))
    return ReplicaGroups(mesh=None, axes=(), groups=groups)


def backend_config_text(text: str) -> str | None:
    """The `backend_config={...}` of an instruction as XLA prints it (braces nest)."""
    start = text.find("backend_config={")
    if start < 0:
        return None
    start += len("backend_config=")
    depth = 0
    in_string = escaped = False
    for i in range(start, len(text)):
        ch = text[i]
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return text[start : i + 1]
    return None

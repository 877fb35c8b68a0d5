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
import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from types import MappingProxyType

from hloscope.ir import attributes as decoded
from hloscope.ir import types as ir_types
from hloscope.ir.attributes import (
    EMPTY,
    HloSharding,
    Mesh,
    Sharding,
    int_attribute,
    parse_dict_attribute,
    parse_hlo_sharding,
    read_sharding,
    signed_int_attribute,
    split_top_level,
    string_attribute,
)
from hloscope.ir.locations import Location, parse_location
from hloscope.ir.types import TensorType, hlo_shape, parse_type, tuple_elements, type_bytes

EMPTY_ATTRIBUTES: Mapping[str, str] = MappingProxyType({})


# --------------------------------------------------------------------------- attributes

# Not an MLIR attribute: recorded by `hloscope.ir.layout` on the entry function's
# arguments and results of a module converted from HLO, where the entry layout gives
# them a memory space that XLA's conversion drops. Its value is the HLO shape with
# layout, as a printed string attribute: `"f32[8]{0:S(5)}"`.
ENTRY_SHAPE_ATTRIBUTE = "hloscope.xla_shape"

# Not an MLIR attribute: in XLA's own form (`hloscope.ir.hlo_native`), the memory
# spaces of an instruction's result layout, read from its proto's shape, where one is
# not the default: `1` for an array in `S(1)`, `(1, 0, 2)` for a tuple's elements (an
# async copy-start's destination, source, context). What the converted form reads
# from its `xla_shape` attribute.
MEMORY_SPACES_ATTRIBUTE = "hloscope.memory_spaces"

# --------------------------------------------------------------------------- ops

# The conversion's ops of XLA's async instructions (`all-reduce-start`, `copy-done`).
ASYNC_WRAPPERS = frozenset({"async_start", "async_update", "async_done"})


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

    @property
    def frontend_attributes(self) -> Mapping[str, str]:
        """`mhlo.frontend_attributes` (HLO's `frontend_attributes`), string values
        unquoted: `_xla_compute_type`, `_xla_stream_annotation`, `xla.sdy.*`."""
        return frontend_attributes(self.attributes)

    @property
    def symbol_name(self) -> str:
        """Its `sym_name` (a function's, an `sdy.mesh`'s), empty when it has none."""
        return string_attribute(self.attributes.get("sym_name", '""'))

    @property
    def has_sharding(self) -> bool:
        """Whether a sharding is written on it (`sdy.sharding`, `mhlo.sharding`,
        `sharding`)."""
        attributes = self.attributes
        return any(key in attributes for key in SHARDING_ATTRIBUTES)

    @property
    def sharding(self) -> Sharding | None:
        """The sharding written on it: `sdy.sharding`, `mhlo.sharding` or `sharding`
        (an `sdy.sharding_constraint`'s), decoded."""
        return written_sharding(self.attributes)

    @property
    def custom_call_target(self) -> str | None:
        """The target of a custom call (`MoveToHost`, `Sharding`); None for other ops."""
        if "custom" in self.name and self.short_name in ("custom_call", "custom-call"):
            text = self.attributes.get("call_target_name") or self.attributes.get(
                "custom_call_target"
            )
            return string_attribute(text) if text is not None else None
        return None

    @property
    def tuple_index(self) -> int | None:
        """A `get_tuple_element`'s `index`; None when it has none."""
        return int_attribute(self.attributes.get("index"))

    @property
    def manual_axes(self) -> tuple[str, ...]:
        """An `sdy.manual_computation`'s manual axes."""
        return decoded.manual_axes(self.attributes.get("manual_axes", ""))

    @property
    def memory_space(self) -> int | None:
        """The memory space of its result's layout, for a module read from HLO
        (`xla_shape = "f32[4]{0:S(5)}"` -> 5 converted, `MEMORY_SPACES_ATTRIBUTE` in
        XLA's own form; 0 when the layout names none); None without a layout or for
        a tuple."""
        attributes = self.attributes
        if MEMORY_SPACES_ATTRIBUTE in attributes:
            spaces = ir_types.memory_spaces(attributes[MEMORY_SPACES_ATTRIBUTE])
            return spaces if isinstance(spaces, int) else None
        return decoded.memory_space(attributes.get("xla_shape"))

    @property
    def tuple_memory_spaces(self) -> tuple[int | None, ...]:
        """The memory space of each element of its result's tuple (a copy-start's)."""
        attributes = self.attributes
        if MEMORY_SPACES_ATTRIBUTE in attributes:
            spaces = ir_types.memory_spaces(attributes[MEMORY_SPACES_ATTRIBUTE])
            return (spaces,) if isinstance(spaces, int) else spaces
        return decoded.tuple_memory_spaces(attributes.get("xla_shape", ""))

    @property
    def has_layout(self) -> bool:
        """Whether its result's HLO layout is known: in XLA's own form always, converted
        where the conversion kept it (`xla_shape`, a layout not the default)."""
        return self.name[:4] == "hlo." or "xla_shape" in self.attributes

    @property
    def replica_groups(self) -> decoded.ReplicaGroups | None:
        """A collective's device groups (`replica_groups`); None when it has none."""
        text = self.attributes.get("replica_groups")
        return decoded.parse_replica_groups(text) if text else None

    @property
    def source_target_pairs(self) -> tuple[tuple[int, ...], ...]:
        """A collective-permute's (source, target) devices; empty where it names none."""
        pairs = decoded.parse_replica_groups(self.attributes.get("source_target_pairs", ""))
        return pairs.groups if pairs is not None else ()

    @property
    def channel_id(self) -> int | None:
        """A collective's channel: `channel_id` in XLA's own form, the handle of
        `channel_handle` in MLIR's; None where it has none."""
        return decoded.channel_id(
            self.attributes.get("channel_id") or self.attributes.get("channel_handle")
        )

    def references(self, key: str) -> tuple[str, ...]:
        """The functions an attribute names (`callee = @f`, `calls = [@a, @b]`)."""
        text = self.attributes.get(key)
        return decoded.symbol_reference_tuple(text) if text else ()

    @property
    def hlo_calls(self) -> tuple[str, ...]:
        """The computations XLA's own form of an op names (`calls=%fused_computation`)."""
        return decoded.hlo_computation_names(self.attributes.get("calls", ""))

    def mentioned_names(self, key: str) -> tuple[str, ...]:
        """The names an attribute mentions (`@cond`, XLA's `%cond.1`)."""
        return decoded.mentioned_names(self.attributes.get(key, ""))

    @property
    def fusion_kind(self) -> str | None:
        """`kLoop`, ... from `fusion_kind = #mhlo<fusion_kind kLoop>`, or XLA's own form's
        `kind`; None when neither names one."""
        text = self.attributes.get("fusion_kind") or self.attributes.get("kind") or ""
        return decoded.fusion_kind(text)

    @property
    def integer_constant(self) -> int | None:
        """The integer a scalar integer `constant` holds (`dense<6>`), None otherwise."""
        return decoded.integer_constant(self.attributes.get("value", ""))

    def i64_array(self, key: str) -> tuple[int, ...] | None:
        """The integers of a dense array attribute (`broadcast_dimensions =
        array<i64: 0, 2>`); None when it is absent or not one."""
        return decoded.i64_array(self.attributes.get(key, ""))

    @property
    def default_precision(self) -> bool:
        """Whether its `precision_config` is there and says only DEFAULT."""
        text = self.attributes.get("precision_config")
        return text is not None and decoded.is_default_precision(text)

    def shardings_brief(self, key: str) -> str:
        """A per-value sharding attribute (an `sdy.manual_computation`'s `in_shardings`)
        for reading: `@mesh [{"x"}]; @mesh [{}]`."""
        return decoded.sdy_shardings_brief(self.attributes.get(key, ""))

    def __repr__(self) -> str:
        return f"<Op #{self.id} {self.name}>"


TERMINATOR_NAMES = frozenset(
    {"func.return", "stablehlo.return", "mhlo.return", "sdy.return", "chlo.return"}
)


def is_computation(op: Op) -> bool:
    """True for ops that compute, as counted in reports: not terminators, not
    function definitions, not XLA's parameter instructions."""
    return _name_kind(op.name) == _COMPUTES


def counts_as_op(name: str) -> bool:
    """Whether an op named `name` (`stablehlo.sine`) counts as an op: `is_computation`'s
    rule, for code that walks jaxlib's MLIR objects (`hloscope compiles`)."""
    return _name_kind(name) == _COMPUTES


# What an op name is, worked out once per distinct name: every analysis asks for
# each of the module's ops (several hundred thousand calls at 100k ops).
_SHORT_NAMES: dict[str, str] = {}
_COMPUTES, _TERMINATOR, _FUNCTION, _ARGUMENT = 0, 1, 2, 3
_NAME_KINDS: dict[str, int] = {}

_XLA_PLUMBING = frozenset({"hlo.parameter", "hlo.tuple", "hlo.get-tuple-element"})
"""XLA's own form's instructions that compute nothing: a computation's parameter is its
function's argument, and tuples and their elements are how XLA passes several values
(the converted form has block arguments and several results, no op for either)."""


def _name_kind(name: str) -> int:
    kind = _NAME_KINDS.get(name)
    if kind is None:
        short = name.partition(".")[2] or name
        if short in ("return", "yield") or name == "func.return":
            kind = _TERMINATOR
        elif name == "func.func":
            kind = _FUNCTION
        elif name in _XLA_PLUMBING:
            kind = _ARGUMENT
        else:
            kind = _COMPUTES
        _NAME_KINDS[name] = kind
    return kind


# --------------------------------------------------------------------------- decoded

SHARDING_ATTRIBUTES = ("sdy.sharding", "mhlo.sharding", "sharding")


def frontend_attributes(attributes: Mapping[str, str]) -> Mapping[str, str]:
    """The frontend attributes among an op's or a value's attributes."""
    text = attributes.get("mhlo.frontend_attributes") or attributes.get("frontend_attributes")
    return parse_dict_attribute(text) if text else EMPTY


def written_sharding(attributes: Mapping[str, str]) -> Sharding | None:
    """The sharding among an op's or a value's attributes, decoded."""
    for key in SHARDING_ATTRIBUTES:
        text = attributes.get(key)
        if text is not None:
            return read_sharding(string_attribute(text))
    return None


def _shardy_sharding(attributes: Mapping[str, str]) -> Sharding | None:
    text = attributes.get("sdy.sharding")
    if text is None and "mhlo.frontend_attributes" in attributes:
        # XLA keeps a Shardy sharding in frontend attributes through HLO.
        text = frontend_attributes(attributes).get("xla.sdy.sharding")
    return decoded.parse_sdy_sharding(text) if text is not None else None


def _xla_sharding(attributes: Mapping[str, str]) -> HloSharding | None:
    text = attributes.get("mhlo.sharding")
    return parse_hlo_sharding(string_attribute(text)) if text is not None else None


def _string(attributes: Mapping[str, str], key: str) -> str | None:
    text = attributes.get(key)
    return string_attribute(text) if text is not None else None


class _ValueAttributes:
    """What an argument's and a result's attributes say, decoded (a mixin of both)."""

    __slots__ = ()
    attributes: Mapping[str, str]
    type: str

    @property
    def arrays(self) -> tuple[TensorType, ...]:
        """The array types of its type (several for a tuple, none for no array)."""
        return parse_type(self.type)

    @property
    def nbytes(self) -> int | None:
        """Bytes of its arrays; None when any size is unknown."""
        return type_bytes(self.type)

    @property
    def sharding(self) -> Sharding | None:
        """The sharding written on it: `sdy.sharding`, else `mhlo.sharding`."""
        return written_sharding(self.attributes)

    @property
    def shardy_sharding(self) -> Sharding | None:
        """Its Shardy sharding: `sdy.sharding`, or the `xla.sdy.sharding` XLA keeps in
        frontend attributes through HLO."""
        return _shardy_sharding(self.attributes)

    @property
    def xla_sharding(self) -> HloSharding | None:
        """Its XLA sharding, `mhlo.sharding`."""
        return _xla_sharding(self.attributes)

    @property
    def memory_kind(self) -> str | None:
        """`mhlo.memory_kind`: `device`, `pinned_host`, `unpinned_host`."""
        return _string(self.attributes, "mhlo.memory_kind")

    @property
    def frontend_attributes(self) -> Mapping[str, str]:
        return frontend_attributes(self.attributes)

    @property
    def memory_space(self) -> int | None:
        """The memory space the entry layout gives it (`S(5)`: host), for the entry of
        a module converted from HLO (see `ENTRY_SHAPE_ATTRIBUTE`)."""
        return decoded.memory_space(self.attributes.get(ENTRY_SHAPE_ATTRIBUTE))


# --------------------------------------------------------------------------- functions


@dataclasses.dataclass(frozen=True, slots=True)
class Argument(_ValueAttributes):
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

    @property
    def aliased_output(self) -> int | None:
        """The result it is aliased to (`tf.aliasing_output`, a donation JAX made)."""
        return signed_int_attribute(self.attributes.get("tf.aliasing_output"))

    @property
    def buffer_donor(self) -> bool:
        """`jax.buffer_donor`: donated, with no result aliased to it yet."""
        return self.attributes.get("jax.buffer_donor") == "true"

    @property
    def arg_info(self) -> str | None:
        """`jax.arg_info`: the argument's path, as older JAX exports record it."""
        return _string(self.attributes, "jax.arg_info")

    @property
    def global_constant(self) -> str | None:
        """`jax.global_constant`: the dimension variable (or `_platform_index`) JAX
        passes as this argument."""
        return _string(self.attributes, "jax.global_constant")

    @property
    def layout_shape(self) -> str | None:
        """The HLO shape with layout the entry layout gives (`f32[8]{0:S(5)}`), for the
        entry of a module converted from HLO (see `ENTRY_SHAPE_ATTRIBUTE`)."""
        return _string(self.attributes, ENTRY_SHAPE_ATTRIBUTE)


@dataclasses.dataclass(frozen=True, slots=True)
class Result(_ValueAttributes):
    """A function result."""

    index: int
    type: str
    attributes: Mapping[str, str]

    @property
    def shape(self) -> str:
        return hlo_shape(self.type)

    @property
    def info(self) -> str | None:
        """`jax.result_info`: the result's path in the output pytree."""
        return _string(self.attributes, "jax.result_info")

    @property
    def layout_shape(self) -> str | None:
        """As `Argument.layout_shape`."""
        return _string(self.attributes, ENTRY_SHAPE_ATTRIBUTE)


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

    @property
    def execution_thread(self) -> str | None:
        """Its `execution_thread` (`main`, `host`), None when not given."""
        return _string(self.op.attributes, "execution_thread")


# --------------------------------------------------------------------------- module


class Module:
    """A parsed module. Treat as immutable; built only by `hloscope.ir.build`."""

    __slots__ = (
        "_names",
        "_users",
        "attributes",
        "backend_configs",
        "body",
        "conversion_artefacts",
        "derived",
        "functions",
        "hlo_opcodes",
        "name",
        "ops",
        "schedule",
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
    """For modules read from HLO: each instruction's `backend_config`, by HLO name
    (`Op.hlo_name`), as XLA prints it (`{"known_trip_count":{"n":"6"},...}`)."""
    hlo_opcodes: Mapping[str, str]
    """For a module converted from HLO: each instruction's opcode as XLA spells it
    (`fusion`, `all-gather-start`), by HLO instruction name (`Op.hlo_name`), which the
    converted op's name does not tell (`stablehlo.async_start`). Empty in XLA's own
    form, whose op names are the opcodes (`hlo.fusion`); read through `hlo_opcode`."""
    schedule: Mapping[str, int]
    """For a module converted from a scheduled HLO module: each instruction's place in
    its computation's schedule, by HLO instruction name. The conversion orders a
    computation's ops by their dependencies, not by the schedule; XLA's own form
    orders them by the schedule already, and leaves this empty."""
    conversion_artefacts: frozenset[int]
    """Converted from HLO: ids of the ops the conversion made that are no instruction of
    XLA's module (`hlo_names.conversion_artefacts`); no count of ops holds them."""

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
        hlo_opcodes: Mapping[str, str] = EMPTY_ATTRIBUTES,
        schedule: Mapping[str, int] = MappingProxyType({}),
        conversion_artefacts: frozenset[int] = frozenset(),
    ) -> None:
        self.name = name
        self.attributes = attributes
        self.ops = ops
        self.body = body
        self.functions = functions
        self.value_types = value_types
        self.value_owner = value_owner
        self.backend_configs = backend_configs
        self.hlo_opcodes = hlo_opcodes
        self.schedule = schedule
        self.conversion_artefacts = conversion_artefacts
        self._users: list[tuple[int, ...]] | None = None
        self._names: dict[int, str] | None = None
        self.derived: dict[str, object] = {}
        """What analyses work out once per module and share (the scan of ops), by name."""

    # -- attributes -----------------------------------------------------------------

    @property
    def frontend_attributes(self) -> Mapping[str, str]:
        """The module's `mhlo.frontend_attributes` (`xla.sdy.meshes`, ...)."""
        return frontend_attributes(self.attributes)

    @property
    def meshes(self) -> tuple[Mesh, ...]:
        """Its Shardy meshes: the `sdy.mesh` ops, else the `xla.sdy.meshes` XLA keeps in
        frontend attributes through HLO."""
        meshes = self.derived.get("ir.meshes")
        if meshes is None:
            found = [
                decoded.parse_mesh(op.symbol_name, op.attributes.get("mesh", ""))
                for op in self.body
                if op.name == "sdy.mesh"
            ]
            if not found:
                text = self.frontend_attributes.get("xla.sdy.meshes")
                if text:
                    found = list(decoded.frontend_meshes(text))
            meshes = self.derived["ir.meshes"] = tuple(found)
        return meshes  # type: ignore[return-value]

    def device_groups(self, op: Op) -> tuple[tuple[int, ...], ...] | None:
        """The devices each group of a collective's `replica_groups` holds, whichever
        form the attribute takes (explicit groups, or mesh axes on one of the module's
        meshes); None where it has none or they cannot be told."""
        groups = op.replica_groups
        if groups is None:
            return None
        if groups.mesh is None:
            return groups.groups
        mesh = next((m for m in self.meshes if m.name == groups.mesh), None)
        return decoded.mesh_axes_groups(mesh, groups.axes) if mesh is not None else None

    @property
    def input_output_aliases(self) -> Mapping[int, int]:
        """Parameter number -> result index, from a module converted from HLO
        (`mhlo.input_output_alias`: XLA's `input_output_alias={ {0}: (0, {}, may-alias) }`)."""
        aliases = self.derived.get("ir.aliases")
        if aliases is None:
            text = self.attributes.get("mhlo.input_output_alias", "")
            aliases = self.derived["ir.aliases"] = decoded.input_output_aliases(text)
        return aliases  # type: ignore[return-value]

    @property
    def num_partitions(self) -> int | None:
        return int_attribute(self.attributes.get("mhlo.num_partitions"))

    @property
    def num_replicas(self) -> int | None:
        return int_attribute(self.attributes.get("mhlo.num_replicas"))

    @property
    def spmd_parameter_shardings(self) -> tuple[HloSharding, ...]:
        """The parameter shardings a partitioned (compiled) module records."""
        text = self.attributes.get("mhlo.spmd_parameters_shardings")
        if not text or not text.startswith("["):
            return ()
        return tuple(
            parse_hlo_sharding(string_attribute(p))
            for p in split_top_level(text[1:-1], brackets="([{")
        )

    @property
    def spmd_output_shardings(self) -> tuple[HloSharding, ...]:
        """The output sharding a partitioned module records, one per result: a tuple
        sharding's elements, as XLA's parser reads them."""
        text = self.attributes.get("mhlo.spmd_output_sharding")
        if not text:
            return ()
        sharding = parse_hlo_sharding(string_attribute(text))
        return sharding.elements if sharding.kind == "tuple" else (sharding,)

    def arrays(self, value: int) -> tuple[TensorType, ...]:
        """The array types of a value's type (several for a tuple, none for no array),
        decoded once per distinct type."""
        return parse_type(self.value_types[value])

    def type_arrays(self, mlir_type: str) -> tuple[TensorType, ...]:
        """The array types of one of the module's value types (an entry of
        `value_types`, which analyses keep as the uniqued key of a type)."""
        return parse_type(mlir_type)

    def backend_kind(self, hlo_name: str) -> str | None:
        """The backend's kind a fusion's backend config names (`__triton_gemm`), by HLO
        instruction name; None when it has no config or names none."""
        config = self.backend_configs.get(hlo_name)
        return decoded.backend_kind(config) if config else None

    def annotations(self, op: Op) -> decoded.CompilerAnnotations:
        """What the compiler wrote of an instruction in its backend config (its
        estimated cycles, a fused collective's emitter, an async collective's
        continuation); nothing for an op without an HLO name or config."""
        config = self.backend_configs.get(op.hlo_name) if op.hlo_name else None
        return decoded.compiler_annotations(config)

    def hlo_opcode(self, op: Op) -> str | None:
        """The opcode of the HLO instruction `op` is, as XLA spells it (`fusion`,
        `all-reduce-start`, `get-tuple-element`), in either form; None for an op that
        is no instruction of an HLO module (a lowered module's, one the conversion
        made up)."""
        if op.name.startswith("hlo."):
            return op.short_name
        return self.hlo_opcodes.get(op.hlo_name) if op.hlo_name else None

    def shown_name(self, op: Op) -> str:
        """The op's name as the views show it: its own, but for an async wrapper of a
        module converted from HLO (`stablehlo.async_start`, `mhlo.async_done`, which
        say nothing of what runs), the instruction it is, as XLA's own form names it
        (`hlo.all-reduce-start`, `hlo.copy-done`)."""
        if op.short_name in ASYNC_WRAPPERS and op.hlo_name:
            opcode = self.hlo_opcodes.get(op.hlo_name)
            if opcode:
                return f"hlo.{opcode}"
        return op.name

    def hlo_shape(self, value: int) -> str:
        """HLO spelling of a value's type: `f32[8,128]`, `(f32[2], s32[])` for a tuple."""
        return hlo_shape(self.value_types[value])

    def element_shapes(self, value: int) -> tuple[tuple[str, int | None], ...]:
        """The HLO shape and bytes of each element of a tuple value (a multi-output
        fusion's result in XLA's own form); of the value alone otherwise."""
        return tuple((hlo_shape(t), type_bytes(t)) for t in tuple_elements(self.value_types[value]))

    def tuple_types(self, value: int) -> tuple[str, ...] | None:
        """A tuple value's element types (XLA's own form's); None for no tuple."""
        return tuple_elements(t) if (t := self.value_types[value]).startswith("tuple<") else None

    def nbytes(self, value: int) -> int | None:
        """Bytes of a value's arrays; None when any size is unknown."""
        return type_bytes(self.value_types[value])

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

    # -- program order --------------------------------------------------------------

    def program_order(self, ops: Iterable[Op]) -> list[Op]:
        """`ops` in the order the program runs them, for every list a report gives in
        program order: each block's ops in the schedule of a module converted from a
        scheduled HLO module (`schedule`), what an op holds right after it; else as
        given (XLA's own form is in schedule order already)."""
        listed = list(ops)
        if not self.schedule:
            return listed
        ranks = self._program_ranks()
        listed.sort(key=lambda op: ranks[op.id])
        return listed

    def _program_ranks(self) -> list[int]:
        """Each op's place (by op id) in a pre-order walk of the module whose blocks
        are each in `_block_order`, worked out once."""
        ranks = self.derived.get("ir.program_ranks")
        if ranks is None:
            ranks = [0] * len(self.ops)
            rank = 0
            stack = list(reversed(self.body))
            while stack:
                op = stack.pop()
                ranks[op.id] = rank
                rank += 1
                blocks = [block for region in op.regions for block in region.blocks]
                held = [child for block in blocks for child in self._block_order(block.ops)]
                stack.extend(reversed(held))
            self.derived["ir.program_ranks"] = ranks
        return ranks  # type: ignore[return-value]

    def _block_order(self, ops: Sequence[Op]) -> list[Op]:
        """One block's ops by their places in the schedule: an op the schedule does not
        name (one the conversion made up, an op of an unscheduled computation) stays
        right after the op before it, a terminator last."""
        schedule = self.schedule
        keys: list[tuple[float, int]] = []
        last: float = -1
        for index, op in enumerate(ops):
            place = schedule.get(op.hlo_name) if op.hlo_name else None
            if op.is_terminator:
                last = math.inf
            elif place is not None:
                last = place
            keys.append((last, index))
        return [ops[i] for i in sorted(range(len(ops)), key=keys.__getitem__)]

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
            if not function.is_declaration:
                blocks = function.op.regions[0].blocks
                number([op for block in blocks for op in block.ops], blocks[0].arguments)
        return names

    def __iter__(self) -> Iterator[Op]:
        return iter(self.ops)

    def __len__(self) -> int:
        return len(self.ops)

    def __repr__(self) -> str:
        return f"<Module {self.name or '(unnamed)'}: {len(self.ops)} ops>"

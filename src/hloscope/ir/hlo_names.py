"""HLO instruction names, recovered for the ops of an HLO module's MLIR conversion.

The conversion uses an instruction's metadata (`op_name`, source frames) as the
op's location, and its name only when there is no metadata, so the names users
know an optimized module by (`broadcast_add_fusion`, `copy.3`) are usually lost.
"""

from __future__ import annotations

import dataclasses
from types import MappingProxyType
from typing import Any

from hloscope.ir import model
from hloscope.ir.attributes import annotated, kept_backend_config
from hloscope.ir.build import MAX_ATTRIBUTE_CHARS
from hloscope.ir.context import mlir_context, native, walk_operations
from hloscope.ir.locations import parse_location
from hloscope.ir.proto import proto_message, proto_rewrite, proto_varints
from hloscope.ir.shape_proto import shape_as_mlir


@dataclasses.dataclass(frozen=True)
class HloNames:
    """What the MLIR conversion of an HLO module drops, recovered from the module."""

    ops: list[tuple[str, str | None]]
    """For each op of the converted module, in pre-order: its MLIR name and the HLO
    instruction it came from (None for ops the conversion made up)."""
    backend_configs: dict[str, str]
    """`backend_config` of the fusion and while instructions that have one, by name."""
    opcodes: dict[str, str] = dataclasses.field(default_factory=dict)
    """Every instruction's opcode, by name (`model.Module.hlo_opcodes`)."""
    schedule: dict[str, int] = dataclasses.field(default_factory=dict)
    """Each instruction's place in its computation's schedule, by name
    (`model.Module.schedule`)."""
    async_types: dict[str, str] = dataclasses.field(default_factory=dict)
    """Each async start's shape (`all-reduce-start`, `copy-start`), as the MLIR type
    XLA's converter gives such a shape, by name: what the conversion's
    `!stablehlo.future` or `!mhlo.async_bundle` of the op stands for."""


def wants_names(hlo_proto: bytes, printed: str) -> bool:
    """Whether to recover HLO instruction names: for modules after XLA's
    optimizations (scheduled, or holding a fusion instruction: opcode, field 2 of an
    instruction, is the string `fusion`), whose ops users know by those names.
    Recovering them costs a second conversion of the module."""
    header = printed[: printed.find("\n")]
    return "is_scheduled=true" in header or b"\x12\x06fusion" in hlo_proto


def hlo_instruction_names(hlo_proto: bytes) -> HloNames | None:
    """The HLO instruction name of every op of `hlo_to_stablehlo(hlo_proto)`.

    The conversion uses an instruction's metadata (`op_name`, source frames) as the
    op's location and the instruction's name only when there is no metadata, so the
    names of fusions (`broadcast_add_fusion`) and copies are usually lost. Converting
    a copy of the module with the metadata removed gives ops in the same order whose
    locations are the names; the two are paired by position. None when the proto
    cannot be rewritten or converted.
    """
    import jaxlib._jax as jax_ext
    from jaxlib.mlir import ir

    rewritten = without_metadata(hlo_proto)
    if rewritten is None:
        return None
    stripped, configs, opcodes, async_types = rewritten
    names: list[tuple[str, str | None]] = []
    with native():
        try:
            bytecode = jax_ext.mlir.hlo_to_stablehlo(stripped)
            with mlir_context():
                module = ir.Module.parse(bytecode)
        except Exception:
            return None
        locations: dict[Any, str | None] = {}

        def visit(operation: Any) -> None:
            # In the model's order (pre-order); the module op itself is dropped below.
            loc = operation.location
            name = locations.get(loc, "")
            if name == "":
                parsed = parse_location(str(loc))
                name = parsed.names[0] if len(parsed.names) == 1 and not parsed.frames else None
                locations[loc] = name
            names.append((operation.name, name))

        walk_operations(module.operation, visit)
        del names[0]
    return HloNames(names, configs, opcodes, schedule_positions(hlo_proto), async_types)


def attach_hlo_names(built: model.Module, names: HloNames | None) -> None:
    """Record the HLO names in the model when both conversions have the same ops."""
    if names is None or len(names.ops) != len(built.ops):
        return
    if any(op.name != name for op, (name, _) in zip(built.ops, names.ops, strict=True)):
        return
    for op, (_, hlo_name) in zip(built.ops, names.ops, strict=True):
        op.hlo_name = hlo_name
    built.backend_configs = MappingProxyType(names.backend_configs)
    # An async pair of one instruction as XLA prints it, as XLA's own form reads it.
    printed = _async_as_printed(built, names.opcodes)
    built.hlo_opcodes = MappingProxyType({**names.opcodes, **printed})
    built.schedule = MappingProxyType(names.schedule)
    built.conversion_artefacts = conversion_artefacts(built)
    _async_types(built, names.async_types)


def conversion_artefacts(built: model.Module) -> frozenset[int]:
    """The ops of a converted module (its instructions named and their opcodes known)
    that the conversion made and XLA's module has no instruction for, by id:

    - what an async wrapper (`async_start`, `async_done`) of an instruction XLA runs as
      one (`copy-start`, `all-reduce-start`: no `async-start` of a computation of its
      own) wraps: the collective in its region (what that holds, the reducer XLA's
      instruction holds too, stays), or the function it calls (`copy_`, with its ops).
      The wrapper is the instruction (`Module.shown_name`);
    - where one block holds several ops of one instruction's name, those not of its
      opcode: the `convert` put before a convolution of mixed element types (XLA's
      convolves bf16 by f32), the `get_tuple_element`s taken of a custom call's tuple;
    - XLA's own tuples and get-tuple-elements, where the conversion keeps them as ops
      (a tuple of tuples returned): they compute nothing, and XLA's form counts none.
    """
    opcodes = built.hlo_opcodes
    ops = built.ops
    made: set[int] = set()
    named: dict[tuple[int, str], list[model.Op]] = {}
    for op in ops:
        name = op.hlo_name
        if name is None or op.parent is None or not model.is_computation(op):
            continue
        opcode = opcodes.get(name)
        if opcode in _PLUMBING and op.short_name.replace("_", "-") == opcode:
            made.add(op.id)
        if op.short_name in model.ASYNC_WRAPPERS and opcode and opcode not in _ASYNC_OPCODES:
            for region in op.regions:
                for block in region.blocks:
                    made.update(inner.id for inner in block.ops if not inner.is_terminator)
            for callee in op.references("called_computation"):
                function = built.functions.get(callee)
                if function is not None:
                    made.update(range(function.op.id, function.op.end))
        named.setdefault((op.parent.id, name), []).append(op)
    for (_, name), group in named.items():
        if len(group) > 1:
            kind = opcodes.get(name, "")
            instruction = [op for op in group if _of_opcode(op.short_name, kind)]
            if len(instruction) == 1:
                made.update(op.id for op in group if op is not instruction[0])
    return frozenset(made)


def _async_as_printed(built: model.Module, opcodes: dict[str, str]) -> dict[str, str]:
    """The opcodes XLA prints of its async-start, -update and -done whose wrapped
    computation is one instruction (`HloComputation::CanExpandIntoSingleInstruction`:
    its parameters and root): that instruction's, started (`all-to-all-start`,
    `all-to-all-done`), as XLA's own form reads them, by instruction name. Read
    from the converted form's `async_start`, whose region holds that instruction."""
    printed: dict[str, str] = {}
    for op in built.ops:
        name = op.hlo_name
        if name is None or op.short_name not in model.ASYNC_WRAPPERS:
            continue
        opcode = opcodes.get(name)
        if opcode == "async-start" and len(op.regions) == 1:
            held = [o for b in op.regions[0].blocks for o in b.ops if not o.is_terminator]
            wrapped = opcodes.get(held[0].hlo_name or "") if len(held) == 1 else None
            if wrapped is not None:
                printed[name] = f"{wrapped}-start"
        elif opcode in ("async-update", "async-done") and op.operands:
            started = built.defining_op(op.operands[0])
            begun = printed.get(started.hlo_name or "") if started is not None else None
            if begun is not None:
                printed[name] = begun.removesuffix("-start") + opcode.removeprefix("async")
    return printed


_ASYNC_OPCODES = frozenset({"async-start", "async-update", "async-done"})
_PLUMBING = frozenset({"tuple", "get-tuple-element"})
_SPELLED_APART = {"broadcast_in_dim": "broadcast", "dot_general": "dot"}
"""MLIR ops whose names spell XLA's opcode another way."""


def _of_opcode(short_name: str, opcode: str) -> bool:
    """Whether an op named `short_name` (`get_tuple_element`) is an instruction of
    `opcode` (`get-tuple-element`)."""
    return _SPELLED_APART.get(short_name, short_name).replace("_", "-") == opcode


def _async_types(built: model.Module, async_types: dict[str, str]) -> None:
    """Give each async start's result (a `!stablehlo.future<...>`, an
    `!mhlo.async_bundle<...>`: no bytes) the type of the instruction's shape, as XLA's
    own form has it: a value of its bytes."""
    if not async_types:
        return
    types = list(built.value_types)
    changed = False
    for op in built.ops:
        if op.short_name != "async_start" or op.hlo_name not in async_types:
            continue
        for result in op.results:
            if types[result].startswith("!"):
                types[result] = async_types[op.hlo_name]
                changed = True
    if changed:
        built.value_types = types


def _dropped(_payload: bytes) -> None:
    return None


# An instruction's name, opcode, shape and backend_config (fields 1, 2, 3 and 43).
_INSTRUCTION_READ = frozenset({1, 2, 3, 43})


# Instructions whose backend_config the analyses read, beside any the compiler
# annotated (`attributes.annotated`).
CONFIGS_KEPT = frozenset({"fusion", "while"})


def without_metadata(
    hlo_proto: bytes,
) -> tuple[bytes, dict[str, str], dict[str, str], dict[str, str]] | None:
    """An `HloModuleProto` with the `metadata` of every instruction removed, every
    instruction's opcode by name, the
    backend configs of its fusion and while instructions (what fusions are made of,
    loops' trip counts) and of any the compiler annotated (`attributes.ANNOTATION_KEYS`),
    long ones cut to what the views read (`attributes.kept_backend_config`), and each
    async start's shape as an MLIR type (`HloNames.async_types`); None if it is not one.

    Only the wire format is read: computations (field 3 of HloModuleProto) hold
    instructions (field 2 of HloComputationProto), whose `name` is field 1, `opcode`
    field 2, `shape` field 3, `metadata` field 7 and `backend_config` field 43
    (xla/service/hlo.proto). Everything else is copied as it is.
    """
    configs: dict[str, str] = {}
    opcodes: dict[str, str] = {}
    async_types: dict[str, str] = {}

    def instruction(data: bytes) -> bytes:
        kept, found = proto_rewrite(data, 7, _dropped, _INSTRUCTION_READ)
        opcode = found.get(2, b"").decode("utf-8", "replace")
        name = found.get(1, b"").decode("utf-8", "replace")
        opcodes[name] = opcode
        if opcode.endswith("-start"):
            # What the conversion wraps in a future: an async collective, copy,
            # computation.
            mlir = shape_as_mlir(found.get(3, b""))
            if mlir is not None:
                async_types[name] = mlir
        config = found.get(43, b"")
        if config:
            text = config.decode("utf-8", "replace")
            if opcode in CONFIGS_KEPT or annotated(text):
                configs[name] = kept_backend_config(text, MAX_ATTRIBUTE_CHARS)
        return kept

    def computation(data: bytes) -> bytes:
        return proto_rewrite(data, 2, instruction)[0]

    try:
        stripped = proto_rewrite(hlo_proto, 3, computation)[0]
    except (ValueError, IndexError):
        return None
    return stripped, configs, opcodes, async_types


def schedule_sequences(message: bytes) -> dict[int, list[int]]:
    """An `HloScheduleProto`: computation id -> its instruction ids in order (proto3
    leaves a zero id out). Raises ValueError where it is malformed."""
    out: dict[int, list[int]] = {}
    for number, entry in proto_message(message):
        if number != 1 or not isinstance(entry, bytes):  # sequences (a map)
            continue
        key = 0
        ids: list[int] = []
        for field, value in proto_message(entry):
            if field == 1 and isinstance(value, int):
                key = value
            elif field == 2 and isinstance(value, bytes):
                for inner, listed in proto_message(value):
                    if inner == 1:  # instruction_ids
                        ids += proto_varints(listed)
        out[key] = ids
    return out


def schedule_positions(hlo_proto: bytes) -> dict[str, int]:
    """Each instruction's place in its computation's schedule, by name, from an
    `HloModuleProto`'s `schedule` (field 7: computation id -> instruction ids) and its
    computations' instructions (`id` 35, `name` 1; a computation's `id` 5); empty for
    a module without a schedule or a malformed proto. proto3 leaves a zero id out."""
    try:
        sequences: list[bytes] = []
        computations: list[bytes] = []
        for number, value in proto_message(hlo_proto):
            if number == 7 and isinstance(value, bytes):
                sequences.append(value)
            elif number == 3 and isinstance(value, bytes):
                computations.append(value)
        if not sequences:
            return {}
        order: dict[int, list[int]] = {}
        for message in sequences:
            order.update(schedule_sequences(message))
        positions: dict[str, int] = {}
        for message in computations:
            identifier = 0
            names: dict[int, str] = {}
            for number, value in proto_message(message):
                if number == 5 and isinstance(value, int):
                    identifier = value
                elif number == 2 and isinstance(value, bytes):
                    fields = proto_message(value)
                    name = next((v for n, v in fields if n == 1 and isinstance(v, bytes)), b"")
                    instruction = next((v for n, v in fields if n == 35 and isinstance(v, int)), 0)
                    names[instruction] = name.decode("utf-8", "replace")
            for place, instruction in enumerate(order.get(identifier, ())):
                if instruction in names:
                    positions[names[instruction]] = place
        return positions
    except ValueError:
        return {}

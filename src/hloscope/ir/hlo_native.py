"""A model of XLA's HLO module itself, for modules whose MLIR conversion fails.

Each computation becomes a function and each instruction an op named
`hlo.<opcode>`, with the attributes analyses read taken from XLA's own printing of
the instruction. A function's ops are its instructions in XLA's order (the
module's schedule, else the proto's dependency order) with the ROOT last: the
function returns its last op's result (there is no return op). What the Python
objects do not tell is read from XLA's `HloModuleProto` (`module_facts`): each
computation's ROOT, a `get-tuple-element`'s `index`, a custom call's
`has_side_effect`, and each instruction's location as XLA's converter writes it
from the metadata (the JAX op name around its source frames). Shapes, which
become bytes, are read by XLA's own parser (long tuples carry `/*index=5*/`
comments, layouts carry tiles and memory spaces, dynamic dimensions their bounds)
and written as the MLIR types XLA's converter would give them.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any

from hloscope.ir import model
from hloscope.ir.attributes import (
    annotated,
    backend_config_text,
    kept_backend_config,
    string_attribute,
)
from hloscope.ir.build import MAX_ATTRIBUTE_CHARS
from hloscope.ir.context import hlo_computations, native, xla_hlo
from hloscope.ir.hlo_names import CONFIGS_KEPT, schedule_sequences
from hloscope.ir.hlo_partitioning import (
    MeshAxes,
    ReplicaGroupFacts,
    frontend_attributes_attribute,
    frontend_attributes_map,
    groups_attribute,
    mesh_attribute,
    module_attributes,
    quoted,
    replica_groups,
    sharding_text,
    tuple_sharding_elements,
)
from hloscope.ir.layout import (
    entry_computation_layout,
    module_counts,
    record_entry_memory_spaces,
)
from hloscope.ir.proto import proto_message, proto_varints
from hloscope.ir.shape_proto import (
    mlir_element,
    shape_memory_spaces,
    tensor_type,
)
from hloscope.ir.types import memory_spaces_text, tuple_elements

_HLO_INSTRUCTION = re.compile(
    r"^\s*(?:ROOT\s+)?%?(?P<name>[\w.-]+)\s*=\s*(?P<shape>.+?)\s+"
    r"(?P<opcode>[a-z][\w-]*)\((?P<operands>.*)$",
    # Backend configs can span lines.
    re.DOTALL,
)


def build_hlo_native_model(
    hlo_module: Any, counts: Mapping[str, str] | None = None
) -> model.Module:
    """A model of XLA's HLO module itself, used when its MLIR conversion fails.

    Each computation becomes a function, each instruction an op named
    `hlo.<opcode>`; shapes come from XLA's own printing of the instruction. How it is
    partitioned (device counts, shardings, device groups and their meshes) is written
    as XLA's converter writes it (`hloscope.ir.hlo_partitioning`); `counts`: the
    device counts of XLA's printed header of the module (`layout.module_counts`),
    which a module read back from its proto no longer prints.
    """
    ops: list[model.Op] = []
    value_types: list[str] = []
    value_owner: list[int] = []
    functions: dict[str, model.Function] = {}
    body: list[model.Op] = []
    backend_configs: dict[str, str] = {}
    meshes: dict[tuple[tuple[str, int], ...], str] = {}
    with native():
        computations = hlo_computations(hlo_module)
        printed = str(hlo_module.to_string())
        proto = hlo_module.as_serialized_hlo_module_proto()
        facts = module_facts(proto)
        # Each computation's instructions in XLA's order (its schedule, else the
        # proto's dependency order), the ROOT last: an analysis reads the function's
        # result as its last op (there is no return op).
        ordered = [
            _ordered(list(computation.instructions()), facts.computations.get(computation.name))
            for computation in computations
        ]
        texts = [[str(instruction.to_string()) for instruction in each] for each in ordered]
        types = xla_shapes_as_mlir(
            _instruction_shape(text) for instructions in texts for text in instructions
        )
        aliases = input_output_alias(proto)
        try:
            proto_fields = proto_message(proto)
        except ValueError:
            proto_fields = []
        partitioning = module_attributes(hlo_module, proto_fields)
        entry_name = facts.entry
        if entry_name is None:
            entry = re.search(r"^ENTRY\s+%?([\w.-]+)", printed, re.MULTILINE)
            last = computations[-1].name if computations else None
            entry_name = entry.group(1) if entry else last
        for computation, instructions, instruction_texts in zip(
            computations, ordered, texts, strict=True
        ):
            is_entry = computation.name == entry_name
            func_name = "main" if is_entry else computation.name
            computation_facts = facts.computations.get(computation.name)
            func_op = model.Op(
                len(ops),
                "func.func",
                (),
                (),
                {
                    "sym_name": f'"{func_name}"',
                    "sym_visibility": '"public"' if is_entry else '"private"',
                },
                _name_loc(computation.name),
                None,
                None,
            )
            ops.append(func_op)
            body.append(func_op)
            # Every instruction's value first: an operand may come later in the order.
            ids: dict[str, int] = {}
            for offset, instruction in enumerate(instructions):
                ids[str(instruction.name)] = len(value_types) + offset
            children: list[model.Op] = []
            arguments: list[model.Argument] = []
            parameters: list[tuple[int, model.Op]] = []
            for instruction, text in zip(instructions, instruction_texts, strict=True):
                match = _HLO_INSTRUCTION.match(text)
                shape = _instruction_shape(text)
                # HloOpcode.kGetTupleElement -> get-tuple-element, as XLA prints it.
                enum_name = str(instruction.opcode).rsplit(".", 1)[-1].removeprefix("k")
                opcode = re.sub(r"(?<!^)(?=[A-Z])", "-", enum_name).lower()
                if match:
                    opcode = match.group("opcode")
                name = str(instruction.name)
                value = len(value_types)
                value_types.append(types.get(shape, shape))
                operands = tuple(ids.get(str(o.name), -1) for o in instruction.operands())
                attributes = _hlo_attributes(text)
                attributes.update(loop_bound_attributes(opcode, text, types.get(shape, shape)))
                known = computation_facts.instructions.get(name) if computation_facts else None
                if known is not None:
                    # The proto's sharding, read by jaxlib, and frontend attributes
                    # over the printed text's.
                    attributes.pop("sharding", None)
                    attributes.pop("frontend_attributes", None)
                    if known.frontend_attributes:
                        attributes["mhlo.frontend_attributes"] = frontend_attributes_attribute(
                            known.frontend_attributes
                        )
                    if known.sharding is not None:
                        attributes["mhlo.sharding"] = quoted(known.sharding)
                    if known.replica_groups is not None:
                        groups = known.replica_groups
                        if isinstance(groups, MeshAxes) and groups.mesh not in meshes:
                            meshes[groups.mesh] = f"mesh_{len(meshes)}" if meshes else "mesh"
                        attributes["replica_groups"] = groups_attribute(groups, meshes)
                    if known.source_target_pairs:
                        pairs = known.source_target_pairs
                        attributes["source_target_pairs"] = groups_attribute(pairs, meshes)
                    if known.tuple_index is not None:
                        attributes["index"] = str(known.tuple_index)
                    if known.side_effect:
                        attributes["has_side_effect"] = "true"
                    if known.channel_id is not None:
                        attributes["channel_id"] = str(known.channel_id)
                    if _laid_out_elsewhere(known.memory_spaces):
                        spaces = memory_spaces_text(known.memory_spaces)
                        attributes[model.MEMORY_SPACES_ATTRIBUTE] = spaces
                op = model.Op(
                    len(ops),
                    f"hlo.{opcode}",
                    operands,
                    (value,),
                    attributes,
                    known.location if known is not None else _name_loc(name),
                    func_op,
                    func_name,
                    hlo_name=name,
                )
                config = known.backend_config if known is not None else backend_config_text(text)
                if config and (opcode in CONFIGS_KEPT or annotated(config)):
                    backend_configs[name] = kept_backend_config(config, MAX_ATTRIBUTE_CHARS)
                value_owner.append(op.id)
                ops.append(op)
                children.append(op)
                if opcode == "parameter":
                    number = re.search(r"parameter\((\d+)\)", text)
                    parameters.append((int(number.group(1)) if number else len(parameters), op))
            func_op.regions = (model.Region((model.Block((), tuple(children)),)),)
            func_op.end = len(ops)
            for _, op in sorted(parameters, key=lambda item: item[0]):
                sharding = op.attributes.get("mhlo.sharding")
                # A tuple parameter is one argument per array, as the converter makes
                # it (a loop's body and condition take the loop's carried tuple).
                leaves = _flattened(value_types[op.results[0]])
                for leaf in leaves:
                    arguments.append(
                        model.Argument(
                            len(arguments),
                            op.results[0],
                            leaf,
                            op.location_text,
                            # The entry's parameters' shardings, as the converter writes
                            # them on the entry function's arguments.
                            {"mhlo.sharding": sharding}
                            if is_entry and sharding is not None and len(leaves) == 1
                            else model.EMPTY_ATTRIBUTES,
                        )
                    )
            root = children[-1] if children else None
            root_type = value_types[root.results[0]] if root is not None else ""
            # A tuple ROOT returns its elements, one result each, as the converter
            # makes them (a multi-output fusion's computation).
            returned = tuple_elements(root_type) if root and root.name == "hlo.tuple" else ()
            results: tuple[model.Result, ...] = tuple(
                model.Result(i, t, model.EMPTY_ATTRIBUTES)
                for i, t in enumerate(returned or ((root_type,) if root else ()))
            )
            if is_entry and children:
                results = _entry_results(hlo_module, children[-1]) or results
            functions[func_name] = model.Function(
                func_name,
                "public" if is_entry else "private",
                func_op,
                tuple(arguments),
                results,
            )
        # The meshes the collectives' device groups name, as `sdy.mesh` ops before the
        # functions, the last made first, as the converter puts them.
        for axes, mesh_name in meshes.items():
            mesh_op = model.Op(
                len(ops),
                "sdy.mesh",
                (),
                (),
                {"sym_name": quoted(mesh_name), "mesh": mesh_attribute(axes)},
                _name_loc(mesh_name),
                None,
                None,
            )
            ops.append(mesh_op)
            body.insert(0, mesh_op)
    module_attributes_: dict[str, str] = {**partitioning}
    if aliases:
        module_attributes_["mhlo.input_output_alias"] = aliases
    built = model.Module(
        name=str(hlo_module.name),
        attributes=module_attributes_,
        ops=ops,
        body=tuple(body),
        functions=functions,
        value_types=value_types,
        value_owner=value_owner,
        backend_configs=MappingProxyType(backend_configs),
    )
    record_entry_memory_spaces(built, entry_computation_layout(printed))
    # The printed header's counts, as on the converted form, over the device
    # assignment's.
    header = {**(counts or {}), **module_counts(printed)} or None
    if header:
        built.attributes = {**built.attributes, **header}
    return built


def _entry_results(hlo_module: Any, root: model.Op) -> tuple[model.Result, ...] | None:
    """The entry's results as the converter makes them: a tuple-shaped ROOT is one
    result per element (each element's MLIR type from XLA's program shape, its
    sharding the ROOT's tuple sharding's element); None for an array ROOT."""
    hlo = xla_hlo()
    with native():
        try:
            computation = hlo.XlaComputation(hlo_module.as_serialized_hlo_module_proto())
            shape = computation.program_shape().result_shape()
        except Exception:
            return None
        if not shape.is_tuple():
            return None
        types = [_mlir_type(element) for element in _leaves(shape)]
    if any(t is None for t in types):
        return None
    sharding = root.attributes.get("mhlo.sharding")
    elements = tuple_sharding_elements(string_attribute(sharding)) if sharding else None
    return tuple(
        model.Result(
            index,
            mlir,  # type: ignore[arg-type]
            {"mhlo.sharding": quoted(elements[index])}
            if elements and len(elements) == len(types)
            else model.EMPTY_ATTRIBUTES,
        )
        for index, mlir in enumerate(types)
    )


def _flattened(mlir_type: str) -> tuple[str, ...]:
    """A tuple type's arrays, nested tuples' too, in order; the type alone otherwise."""
    elements = tuple_elements(mlir_type)
    if elements == (mlir_type,):
        return elements
    return tuple(leaf for element in elements for leaf in _flattened(element))


def _leaves(shape: Any) -> list[Any]:
    """A tuple shape's arrays, nested tuples' too, in order: the converter's results of
    an entry returning a tuple of tuples (a custom call's `(result, scratch)`)."""
    if not shape.is_tuple():
        return [shape]
    return [leaf for element in shape.tuple_shapes() for leaf in _leaves(element)]


@dataclasses.dataclass(frozen=True)
class InstructionFacts:
    """What XLA's `HloInstructionProto` says of an instruction that its printing in
    the model does not."""

    position: int
    """Its place in the computation's proto (a dependency order: operands first)."""
    location: str
    """Its location, as XLA's converter writes it from the metadata: the JAX op name
    around the source frames (`loc("jit(f)/mul"(callsite("f"("f.py":3:9) at ...)))`),
    the op name alone, or the instruction's name where it has no op name."""
    tuple_index: int | None
    """A `get-tuple-element`'s index (proto field `tuple_index`)."""
    side_effect: bool
    """A custom call's `custom_call_has_side_effect`."""
    sharding: str | None = None
    """Its sharding (proto `sharding`), as XLA prints it; None where it has none."""
    replica_groups: ReplicaGroupFacts | None = None
    """A collective's device groups (`hlo_partitioning.replica_groups`)."""
    channel_id: int | None = None
    """A collective's channel (proto `channel_id`): the TPU's copies of one async
    collective, in the fusions that move it on, share it."""
    frontend_attributes: Mapping[str, str] = dataclasses.field(
        default_factory=lambda: MappingProxyType({})
    )
    """Its frontend attributes (proto `frontend_attributes`): libtpu's megascale
    transfer types, `_xla_compute_type`, scheduling groups."""
    backend_config: str | None = None
    """Its backend config (proto `backend_config`), as the backend wrote it."""
    memory_spaces: tuple[int, ...] | int = 0
    """The memory spaces of its shape's layout (proto `shape`:
    `shape_proto.shape_memory_spaces`): `S(1)`, the TPU's on-chip memory, is 1."""
    source_target_pairs: tuple[tuple[int, int], ...] = ()
    """A collective-permute's (source, target) devices (proto `source_target_pairs`
    52, each a SourceTarget of `source` 1 and `target` 2)."""


@dataclasses.dataclass(frozen=True)
class ComputationFacts:
    """What XLA's `HloComputationProto` says of a computation."""

    root: str | None
    """The name of its ROOT instruction (proto `root_id`)."""
    schedule: tuple[str, ...]
    """Its instructions in the module's schedule, empty where it has none."""
    instructions: Mapping[str, InstructionFacts]
    """Per instruction name."""


@dataclasses.dataclass(frozen=True)
class ModuleFacts:
    """What XLA's `HloModuleProto` says of a module that its Python objects do not."""

    entry: str | None
    """The entry computation's name."""
    computations: Mapping[str, ComputationFacts]
    """Per computation name."""


def module_facts(proto: bytes) -> ModuleFacts:
    """Each computation's ROOT, schedule and instruction facts (location from the
    metadata and the module's stack frame index, tuple index, side effect), read
    from XLA's `HloModuleProto`; what a malformed proto does not say is left out."""
    try:
        fields = proto_message(proto)
    except ValueError:
        return ModuleFacts(None, MappingProxyType({}))
    entry: str | None = None
    entry_id: int | None = None
    frames = _StackFrames(b"")
    computation_messages: list[bytes] = []
    sequences: dict[int, list[int]] = {}
    for number, value in fields:
        if number == 2 and isinstance(value, bytes):  # entry_computation_name
            entry = value.decode("utf-8", "replace") or None
        elif number == 6 and isinstance(value, int):  # entry_computation_id
            entry_id = value
        elif number == 3 and isinstance(value, bytes):  # computations
            computation_messages.append(value)
        elif number == 17 and isinstance(value, bytes):  # stack_frame_index
            frames = _StackFrames(value)
        elif number == 7 and isinstance(value, bytes):  # schedule
            sequences = _sequences(value)
    computations: dict[str, ComputationFacts] = {}
    for message in computation_messages:
        try:
            name, identifier, facts = _computation_facts(message, frames, sequences)
        except ValueError:
            continue
        computations[name] = facts
        if entry is None and entry_id is not None and identifier == entry_id:
            entry = name
    return ModuleFacts(entry, MappingProxyType(computations))


def _text(value: int | bytes) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else ""


def _sequences(message: bytes) -> dict[int, list[int]]:
    try:
        return schedule_sequences(message)
    except ValueError:
        return {}


def _computation_facts(
    message: bytes, frames: _StackFrames, sequences: Mapping[int, list[int]]
) -> tuple[str, int | None, ComputationFacts]:
    name = ""
    identifier = 0  # proto3 leaves a zero id out
    root_id = 0
    by_id: dict[int, str] = {}
    instructions: dict[str, InstructionFacts] = {}
    for number, value in proto_message(message):
        if number == 1:
            name = _text(value)
        elif number == 5 and isinstance(value, int):
            identifier = value
        elif number == 6 and isinstance(value, int):
            root_id = value
        elif number == 2 and isinstance(value, bytes):
            instruction, instruction_id, facts = _instruction_facts(
                value, frames, len(instructions)
            )
            instructions[instruction] = facts
            if instruction_id is not None:
                by_id[instruction_id] = instruction
    schedule = sequences.get(identifier, []) if identifier is not None else []
    return (
        name,
        identifier,
        ComputationFacts(
            root=by_id.get(root_id) if root_id is not None else None,
            schedule=tuple(by_id[i] for i in schedule if i in by_id),
            instructions=MappingProxyType(instructions),
        ),
    )


def _instruction_facts(
    message: bytes, frames: _StackFrames, position: int
) -> tuple[str, int | None, InstructionFacts]:
    name = ""
    identifier = 0  # proto3 leaves a zero id out
    tuple_index: int | None = None
    side_effect = False
    opcode = ""
    metadata = b""
    sharding: str | None = None
    channel_id: int | None = None
    frontend: dict[str, str] = {}
    config: str | None = None
    spaces: tuple[int, ...] | int = 0
    groups: dict[int, list[int | bytes]] = {}
    pairs: list[tuple[int, int]] = []
    for number, value in proto_message(message):
        if number == 52 and isinstance(value, bytes):  # source_target_pairs
            pair = dict(proto_message(value))
            pairs.append((int(pair.get(1, 0)), int(pair.get(2, 0))))  # zeros left out
        elif number in _GROUP_FIELDS:
            groups.setdefault(number, []).append(value)
        elif number == 40 and isinstance(value, bytes):  # sharding (an OpSharding)
            sharding = sharding_text(value)
        elif number == 1:
            name = _text(value)
        elif number == 2:
            opcode = _text(value)
        elif number == 7 and isinstance(value, bytes):
            metadata = value
        elif number == 13 and isinstance(value, int):
            tuple_index = value
        elif number == 35 and isinstance(value, int):
            identifier = value
        elif number == 65 and isinstance(value, int):
            side_effect = bool(value)
        elif number == 26 and isinstance(value, int):
            channel_id = value
        elif number == 68 and isinstance(value, bytes):  # frontend_attributes
            frontend = frontend_attributes_map(value)
        elif number == 43 and isinstance(value, bytes):  # backend_config
            config = value.decode("utf-8", "replace") or None
        elif number == 3 and isinstance(value, bytes):  # shape
            spaces = _memory_spaces(value)
    if opcode == "get-tuple-element" and tuple_index is None:
        tuple_index = 0  # proto3 leaves a zero out
    return (
        name,
        identifier,
        InstructionFacts(
            position,
            _location(name, metadata, frames),
            tuple_index,
            side_effect,
            sharding,
            replica_groups(groups) if groups else None,
            channel_id or None,
            MappingProxyType(frontend),
            config,
            spaces,
            tuple(pairs),
        ),
    )


def _laid_out_elsewhere(spaces: tuple[int, ...] | int) -> bool:
    """Whether a layout names a memory space other than the default one."""
    return any(spaces) if isinstance(spaces, tuple) else spaces != 0


def _memory_spaces(shape: bytes) -> tuple[int, ...] | int:
    try:
        return shape_memory_spaces(shape)
    except ValueError:
        return 0


_GROUP_FIELDS = frozenset((49, 87, 92, 93))
"""HloInstructionProto's device groups: replica_groups, collective_device_list, and
the latter's iota and mesh-axes forms."""


def _location(name: str, metadata: bytes, frames: _StackFrames) -> str:
    """An instruction's location as XLA's converter writes it (OpMetadata: op_name 2,
    source_file 3, source_line 4, stack_frame_id 15, source_column 18)."""
    op_name = source_file = ""
    source_line = source_column = stack_frame = 0
    for number, value in proto_message(metadata) if metadata else ():
        if number == 2:
            op_name = _text(value)
        elif number == 3:
            source_file = _text(value)
        elif number == 4 and isinstance(value, int):
            source_line = value
        elif number == 15 and isinstance(value, int):
            stack_frame = value
        elif number == 18 and isinstance(value, int):
            source_column = value
    if not op_name:
        return _name_loc(name)
    where = frames.location(stack_frame) if stack_frame else None
    if where is None and source_file:
        where = f"{_quoted(source_file)}:{source_line}:{source_column}"
    return f"loc({_quoted(op_name)}({where}))" if where else f"loc({_quoted(op_name)})"


class _StackFrames:
    """The module's StackFrameIndexProto: 1-based file names (1), function names
    (2), file locations (3: file 1, function 2, line 3, column 4) and frames (4: file
    location 1, parent frame 2)."""

    def __init__(self, message: bytes) -> None:
        self.files: list[str] = []
        self.functions: list[str] = []
        self.locations: list[tuple[int, int, int, int]] = []
        self.frames: list[tuple[int, int]] = []
        self._cache: dict[int, str | None] = {}
        try:
            for number, value in proto_message(message):
                if number == 1:
                    self.files.append(_text(value))
                elif number == 2:
                    self.functions.append(_text(value))
                elif number == 3 and isinstance(value, bytes):
                    fields = dict(proto_message(value))
                    self.locations.append(
                        tuple(_int(fields.get(k)) for k in (1, 2, 3, 4))  # type: ignore[arg-type]
                    )
                elif number == 4 and isinstance(value, bytes):
                    fields = dict(proto_message(value))
                    self.frames.append((_int(fields.get(1)), _int(fields.get(2))))
        except ValueError:
            self.frames = []

    def location(self, frame_id: int) -> str | None:
        """The frame's call stack as MLIR writes it: `"f"("f.py":3:9)`, innermost
        first in `callsite(inner at outer)`; None for an unknown frame."""
        if frame_id in self._cache:
            return self._cache[frame_id]
        chain: list[str] = []
        seen: set[int] = set()
        current = frame_id
        while 0 < current <= len(self.frames) and current not in seen:
            seen.add(current)
            location_id, parent = self.frames[current - 1]
            if 0 < location_id <= len(self.locations):
                file_id, function_id, line, column = self.locations[location_id - 1]
                file = self.files[file_id - 1] if 0 < file_id <= len(self.files) else ""
                frame = f"{_quoted(file)}:{line}:{column}"
                if 0 < function_id <= len(self.functions):
                    frame = f"{_quoted(self.functions[function_id - 1])}({frame})"
                chain.append(frame)
            current = parent
        text: str | None = None
        for frame in reversed(chain):
            text = frame if text is None else f"callsite({frame} at {text})"
        self._cache[frame_id] = text
        return text


def _int(value: int | bytes | None) -> int:
    return value if isinstance(value, int) else 0


def _ordered(instructions: list[Any], facts: ComputationFacts | None) -> list[Any]:
    """A computation's instructions in XLA's order: its schedule where the module
    has one, else its proto's dependency order; the ROOT last."""
    if facts is None:
        return instructions
    rank = {name: i for i, name in enumerate(facts.schedule)}
    known = facts.instructions
    ordered = sorted(
        instructions,
        key=lambda instruction: (
            rank.get(str(instruction.name), len(rank)),
            known[str(instruction.name)].position if str(instruction.name) in known else 0,
        ),
    )
    if facts.root is not None:
        roots = [i for i in ordered if str(i.name) == facts.root]
        ordered = [i for i in ordered if str(i.name) != facts.root] + roots
    return ordered


_ALIAS_KINDS = {1: "may_alias", 2: "must_alias"}


def input_output_alias(proto: bytes) -> str | None:
    """The module's `input_output_alias` (which parameters' buffers become which
    results: what XLA does with donated arguments), read from XLA's `HloModuleProto`
    and written as XLA's converter writes the `mhlo.input_output_alias` attribute;
    None when there is none."""
    try:
        module = proto_message(proto)
        entries = []
        for number, message in module:
            if number != 8 or not isinstance(message, bytes):  # input_output_alias
                continue
            for entry_number, entry in proto_message(message):
                if entry_number != 1 or not isinstance(entry, bytes):  # entries
                    continue
                output: list[int] = []
                parameter = 0
                parameter_index: list[int] = []
                kind = 0
                for field, value in proto_message(entry):
                    if field == 1:
                        output += proto_varints(value)
                    elif field == 2 and isinstance(value, int):
                        parameter = value
                    elif field == 3:
                        parameter_index += proto_varints(value)
                    elif field == 4 and isinstance(value, int):
                        kind = value
                entries.append(
                    f'{{alias = {{kind = "{_ALIAS_KINDS.get(kind, "undefined_alias")}", '
                    f"parameter_index = {_i64_array(parameter_index)}, "
                    f"parameter_number = {parameter} : i64}}, "
                    f"output_index = {_i64_array(output)}}}"
                )
    except ValueError:
        return None
    return "[" + ", ".join(entries) + "]" if entries else None


def _i64_array(values: list[int]) -> str:
    return f"array<i64: {', '.join(str(v) for v in values)}>" if values else "array<i64>"


def _quoted(text: str) -> str:
    """A string as MLIR's location syntax quotes it."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _name_loc(name: str) -> str:
    return f"loc({_quoted(name)})"


def _instruction_shape(text: str) -> str:
    """The shape of an instruction as XLA prints it (`%x = SHAPE opcode(...)`)."""
    match = _HLO_INSTRUCTION.match(text)
    return match.group("shape").strip() if match else ""


def xla_shapes_as_mlir(shapes: Iterable[str]) -> dict[str, str]:
    """Each HLO shape, as XLA prints it, read by XLA's own parser and written as an
    MLIR type: `(f32[2]{0}, /*index=5*/f32[2]{0})` -> `tuple<tensor<2xf32>, ...>`,
    `f32[8]{0:S(5)}` -> `tensor<8xf32>`, `f32[<=4,3]` -> `tensor<?x3xf32,
    #stablehlo.bounds<4, ?>>`. A shape XLA cannot read is left out.

    XLA's parser reads shapes as part of a module, so they are read as the
    parameters of one module (its program shape gives XLA's `Shape` objects back);
    where that fails, each alone."""
    hlo = xla_hlo()

    distinct = [shape for shape in dict.fromkeys(shapes) if shape]
    out: dict[str, str] = {}

    def read(batch: list[str]) -> list[Any] | None:
        text = "HloModule shapes\n\nENTRY shapes {\n"
        text += "".join(f"  p{i} = {shape} parameter({i})\n" for i, shape in enumerate(batch))
        text += "  ROOT r = () tuple()\n}\n"
        try:
            module = hlo.hlo_module_from_text(text)
            program = hlo.XlaComputation(module.as_serialized_hlo_module_proto()).program_shape()
        except Exception:
            return None
        parsed = list(program.parameter_shapes())
        return parsed if len(parsed) == len(batch) else None

    with native():
        parsed = read(distinct)
        if parsed is not None:
            pairs = list(zip(distinct, parsed, strict=True))
        else:
            pairs = [(shape, one[0]) for shape in distinct if (one := read([shape])) is not None]
        for shape, xla in pairs:
            mlir = _mlir_type(xla)
            if mlir is not None:
                out[shape] = mlir
    return out


def _mlir_type(shape: Any) -> str | None:
    """An XLA `Shape` as the MLIR type XLA's converter gives it; None for element
    types MLIR has no spelling for here."""
    if shape.is_tuple():
        parts = [_mlir_type(part) for part in shape.tuple_shapes()]
        if any(part is None for part in parts):
            return None
        return "tuple<" + ", ".join(parts) + ">"  # type: ignore[arg-type]
    if shape.is_token():
        return "!stablehlo.token"
    element = mlir_element(str(shape.xla_element_type().name))
    if element is None:
        return None
    dims = [int(d) for d in shape.dimensions()]
    dynamic = [bool(shape.is_dynamic_dimension(i)) for i in range(len(dims))]
    return tensor_type(dims, dynamic, element)


_SCALAR_INTEGER_CONSTANT = re.compile(r"\bconstant\((-?\d+)\)")
_COMPARE_DIRECTION = re.compile(r"\bdirection=([A-Z]+)\b")


def loop_bound_attributes(opcode: str, text: str, mlir_type: str) -> dict[str, str]:
    """What a loop's trip count is read from, as MLIR writes it: a scalar integer
    constant's `value` (`dense<2> : tensor<i32>`) and a compare's
    `comparison_direction` (the TPU's optimized whiles carry no `known_trip_count`,
    so their count is read from their condition's bound); empty for other ops."""
    if opcode == "constant" and re.fullmatch(r"tensor<u?i\d+>", mlir_type):
        match = _SCALAR_INTEGER_CONSTANT.search(text)
        if match:
            return {"value": f"dense<{match.group(1)}> : {mlir_type}"}
    elif opcode == "compare":
        match = _COMPARE_DIRECTION.search(text)
        if match:
            return {"comparison_direction": f"#stablehlo<comparison_direction {match.group(1)}>"}
    return {}


def _hlo_attributes(text: str) -> dict[str, str]:
    attributes: dict[str, str] = {}
    # While and conditional bodies too, so that the functions that run are reachable.
    keys = ("frontend_attributes", "sharding", "custom_call_target", "kind", "calls")
    calls = ("calls", "body", "condition", "branch_computations", "to_apply")
    branches = ("true_computation", "false_computation")
    for key in (*keys, *calls[1:], *branches):
        match = re.search(rf"\b{key}=(\{{[^}}]*\}}|\"[^\"]*\"|[\w.%-]+)", text)
        if match:
            value = match.group(1)
            # Computations as MLIR names functions (`@body`), for the call graph.
            named = key in calls or key in branches
            attributes[key] = re.sub(r"%([\w.-]+)", r"@\1", value) if named else value
    if branches[0] in attributes:
        # XLA prints a conditional on a predicate with its two branches apart: its
        # branch_computations, true first, as XLA's proto holds them.
        pair = [attributes.pop(key) for key in branches if key in attributes]
        attributes["branch_computations"] = "{" + ", ".join(pair) + "}"
    return attributes

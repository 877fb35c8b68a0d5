"""A model of XLA's HLO module itself, for modules whose MLIR conversion fails.

Each computation becomes a function and each instruction an op named
`hlo.<opcode>`, with the attributes analyses read taken from XLA's own printing of
the instruction. Shapes, which become bytes, are read by XLA's own parser (long
tuples carry `/*index=5*/` comments, layouts carry tiles and memory spaces,
dynamic dimensions their bounds) and written as the MLIR types XLA's converter
would give them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from types import MappingProxyType
from typing import Any

from hloscope.ir import model
from hloscope.ir.context import native
from hloscope.ir.hlo_names import CONFIGS_KEPT
from hloscope.ir.layout import entry_computation_layout, record_entry_memory_spaces
from hloscope.ir.proto import proto_message, proto_varints

_HLO_INSTRUCTION = re.compile(
    r"^\s*(?:ROOT\s+)?%?(?P<name>[\w.-]+)\s*=\s*(?P<shape>.+?)\s+"
    r"(?P<opcode>[a-z][\w-]*)\((?P<operands>.*)$",
    # Backend configs can span lines.
    re.DOTALL,
)


def build_hlo_native_model(hlo_module: Any) -> model.Module:
    """A model of XLA's HLO module itself, used when its MLIR conversion fails.

    Each computation becomes a function, each instruction an op named
    `hlo.<opcode>`; shapes come from XLA's own printing of the instruction.
    """
    ops: list[model.Op] = []
    value_types: list[str] = []
    value_owner: list[int] = []
    functions: dict[str, model.Function] = {}
    body: list[model.Op] = []
    backend_configs: dict[str, str] = {}
    with native():
        computations = list(hlo_module.computations())
        printed = str(hlo_module.to_string())
        texts = [
            [str(instruction.to_string()) for instruction in computation.instructions()]
            for computation in computations
        ]
        types = xla_shapes_as_mlir(
            _instruction_shape(text) for instructions in texts for text in instructions
        )
        aliases = input_output_alias(hlo_module.as_serialized_hlo_module_proto())
        entry = re.search(r"^ENTRY\s+%?([\w.-]+)", printed, re.MULTILINE)
        entry_name = entry.group(1) if entry else (computations[-1].name if computations else None)
        for computation, instruction_texts in zip(computations, texts, strict=True):
            is_entry = computation.name == entry_name
            func_name = "main" if is_entry else computation.name
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
            ids: dict[str, int] = {}
            children: list[model.Op] = []
            arguments: list[model.Argument] = []
            parameters: list[tuple[int, model.Op]] = []
            for instruction, text in zip(
                computation.instructions(), instruction_texts, strict=True
            ):
                match = _HLO_INSTRUCTION.match(text)
                shape = _instruction_shape(text)
                # HloOpcode.kGetTupleElement -> get-tuple-element, as XLA prints it.
                enum_name = str(instruction.opcode).rsplit(".", 1)[-1].removeprefix("k")
                opcode = re.sub(r"(?<!^)(?=[A-Z])", "-", enum_name).lower()
                if match:
                    opcode = match.group("opcode")
                value = len(value_types)
                value_types.append(types.get(shape, shape))
                operands = tuple(ids.get(o.name, -1) for o in instruction.operands())
                op = model.Op(
                    len(ops),
                    f"hlo.{opcode}",
                    operands,
                    (value,),
                    _hlo_attributes(text),
                    _name_loc(instruction.name),
                    func_op,
                    func_name,
                    hlo_name=str(instruction.name),
                )
                if opcode in CONFIGS_KEPT:
                    config = _hlo_backend_config(text)
                    if config:
                        backend_configs[str(instruction.name)] = config
                value_owner.append(op.id)
                ids[instruction.name] = value
                ops.append(op)
                children.append(op)
                if opcode == "parameter":
                    number = re.search(r"parameter\((\d+)\)", text)
                    parameters.append((int(number.group(1)) if number else len(parameters), op))
            func_op.regions = (model.Region((model.Block((), tuple(children)),)),)
            func_op.end = len(ops)
            for index, op in sorted(parameters, key=lambda item: item[0]):
                arguments.append(
                    model.Argument(
                        index,
                        op.results[0],
                        value_types[op.results[0]],
                        op.location_text,
                        model.EMPTY_ATTRIBUTES,
                    )
                )
            root_type = value_types[children[-1].results[0]] if children else ""
            functions[func_name] = model.Function(
                func_name,
                "public" if is_entry else "private",
                func_op,
                tuple(arguments),
                (model.Result(0, root_type, model.EMPTY_ATTRIBUTES),) if children else (),
            )
    built = model.Module(
        name=str(hlo_module.name),
        attributes={"mhlo.input_output_alias": aliases} if aliases else {},
        ops=ops,
        body=tuple(body),
        functions=functions,
        value_types=value_types,
        value_owner=value_owner,
        backend_configs=MappingProxyType(backend_configs),
    )
    record_entry_memory_spaces(built, entry_computation_layout(printed))
    return built


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


def _hlo_backend_config(text: str) -> str | None:
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


def _name_loc(name: str) -> str:
    escaped = name.replace("\\", "\\\\").replace('"', '\\"')
    return f'loc("{escaped}")'


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
    import jaxlib._hlo as hlo

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
    element = _mlir_element(str(shape.xla_element_type().name))
    if element is None:
        return None
    dims = [int(d) for d in shape.dimensions()]
    dynamic = [bool(shape.is_dynamic_dimension(i)) for i in range(len(dims))]
    body = "".join(("?" if dyn else str(d)) + "x" for d, dyn in zip(dims, dynamic, strict=True))
    body += element
    if any(dynamic):
        # XLA's dimension is the bound of a dynamic one (`f32[<=4]`).
        bounds = ", ".join(str(d) if dyn else "?" for d, dyn in zip(dims, dynamic, strict=True))
        body += f", #stablehlo.bounds<{bounds}>"
    return f"tensor<{body}>"


_MLIR_ELEMENTS = {
    "PRED": "i1",
    "BF16": "bf16",
    "F16": "f16",
    "F32": "f32",
    "F64": "f64",
    "C64": "complex<f32>",
    "C128": "complex<f64>",
}


def _mlir_element(name: str) -> str | None:
    """XLA's `PrimitiveType` name as MLIR spells the element type: `S32` -> `i32`,
    `U8` -> `ui8`, `F8E4M3FN` -> `f8E4M3FN`."""
    if name in _MLIR_ELEMENTS:
        return _MLIR_ELEMENTS[name]
    if re.fullmatch(r"S\d+", name):
        return "i" + name[1:]
    if re.fullmatch(r"U\d+", name):
        return "ui" + name[1:]
    if re.fullmatch(r"F\d+E\d+M\d+\w*", name):
        return "f" + name[1:]
    return None


def _hlo_attributes(text: str) -> dict[str, str]:
    attributes: dict[str, str] = {}
    # While and conditional bodies too, so that the functions that run are reachable.
    keys = ("frontend_attributes", "sharding", "custom_call_target", "kind", "calls")
    calls = ("calls", "body", "condition", "branch_computations")
    for key in (*keys, *calls[1:]):
        match = re.search(rf"\b{key}=(\{{[^}}]*\}}|\"[^\"]*\"|[\w.%-]+)", text)
        if match:
            value = match.group(1)
            # Computations as MLIR names functions (`@body`), for the call graph.
            attributes[key] = re.sub(r"%([\w.-]+)", r"@\1", value) if key in calls else value
    return attributes

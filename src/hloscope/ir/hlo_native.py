"""A model of XLA's HLO module itself, for modules whose MLIR conversion fails.

Each computation becomes a function and each instruction an op named
`hlo.<opcode>`, with shapes and the attributes analyses read taken from XLA's own
printing of the instruction.
"""

from __future__ import annotations

import re
from types import MappingProxyType
from typing import Any

from hloscope.ir import model
from hloscope.ir.context import native
from hloscope.ir.hlo_names import CONFIGS_KEPT
from hloscope.ir.layout import entry_computation_layout, record_entry_memory_spaces

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
        entry = re.search(r"^ENTRY\s+%?([\w.-]+)", printed, re.MULTILINE)
        entry_name = entry.group(1) if entry else (computations[-1].name if computations else None)
        for computation in computations:
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
            for instruction in computation.instructions():
                text = str(instruction.to_string())
                match = _HLO_INSTRUCTION.match(text)
                shape = match.group("shape") if match else ""
                # HloOpcode.kGetTupleElement -> get-tuple-element, as XLA prints it.
                enum_name = str(instruction.opcode).rsplit(".", 1)[-1].removeprefix("k")
                opcode = re.sub(r"(?<!^)(?=[A-Z])", "-", enum_name).lower()
                if match:
                    opcode = match.group("opcode")
                value = len(value_types)
                value_types.append(_hlo_shape_to_mlir(shape))
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
        attributes={},
        ops=ops,
        body=tuple(body),
        functions=functions,
        value_types=value_types,
        value_owner=value_owner,
        backend_configs=MappingProxyType(backend_configs),
    )
    record_entry_memory_spaces(built, entry_computation_layout(printed))
    return built


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


_HLO_DTYPES = {
    "pred": "i1",
    "s8": "i8",
    "s16": "i16",
    "s32": "i32",
    "s64": "i64",
    "u8": "ui8",
    "u16": "ui16",
    "u32": "ui32",
    "u64": "ui64",
    "c64": "complex<f32>",
    "c128": "complex<f64>",
}


def _hlo_shape_to_mlir(shape: str) -> str:
    """`f32[4,8]{1,0}` -> `tensor<4x8xf32>`; tuples become `tuple<...>`."""
    shape = re.sub(r"\{[^{}]*\}", "", shape).strip()
    if shape.startswith("("):
        inner = model.split_top_level(shape[1:-1])
        return "tuple<" + ", ".join(_hlo_shape_to_mlir(s) for s in inner) + ">"
    match = re.match(r"^(\w+)\[([^\]]*)\]", shape)
    if not match:
        return "!stablehlo.token" if shape.startswith("token") else shape
    dtype = _HLO_DTYPES.get(match.group(1), match.group(1))
    dims = [d.strip().lstrip("<=") or "?" for d in match.group(2).split(",") if d.strip()]
    return "tensor<" + "".join(f"{d}x" for d in dims) + dtype + ">"


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

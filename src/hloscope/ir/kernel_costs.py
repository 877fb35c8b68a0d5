"""XLA's own cost analysis of each kernel of a compiled module, alone: jaxlib's
`hlo_module_cost_analysis` of a module holding the kernel, its operands made
parameters, built from the compiled module's `HloModuleProto` (`kernel_module`), the
called computations' protos copied as they are. Here, in `ir`, since it runs XLA.

Only the wire format is read and written (xla/service/hlo.proto): HloModuleProto's
`name` 1, `entry_computation_name` 2, `computations` 3, `host_program_shape` 4,
`entry_computation_id` 6 and `stack_frame_index` 17; HloComputationProto's `name` 1,
`instructions` 2, `program_shape` 4, `id` 5 and `root_id` 6; HloInstructionProto's
`name` 1, `opcode` 2, `shape` 3, `parameter_number` 9, `id` 35, `operand_ids` 36,
`control_predecessor_ids` 37 and `called_computation_ids` 38; ProgramShapeProto's
`parameters` 1, `result` 2 and `parameter_names` 3.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any

from hloscope.ir.proto import (
    proto_bytes,
    proto_int,
    proto_message,
    proto_rewrite,
    proto_varints,
)


@dataclasses.dataclass(frozen=True)
class _Instruction:
    message: bytes
    name: str
    identifier: int
    shape: bytes
    operands: tuple[int, ...]
    called: tuple[int, ...]


@dataclasses.dataclass(frozen=True)
class _Computation:
    message: bytes
    identifier: int
    instructions: dict[int, _Instruction]


class KernelModules:
    """A compiled module's `HloModuleProto`, indexed to make a module of any one of
    its instructions alone (`kernel_module`)."""

    def __init__(self, hlo_proto: bytes) -> None:
        """Raises ValueError if `hlo_proto` is malformed."""
        self.computations: dict[int, _Computation] = {}
        self.order: list[int] = []
        self.where: dict[str, tuple[int, int]] = {}
        """Each instruction's (computation id, instruction id), by name."""
        self.frames = b""
        for number, value in proto_message(hlo_proto):
            if number == 3 and isinstance(value, bytes):
                computation = _read_computation(value)
                self.computations[computation.identifier] = computation
                self.order.append(computation.identifier)
                for instruction in computation.instructions.values():
                    self.where[instruction.name] = (computation.identifier, instruction.identifier)
            elif number == 17 and isinstance(value, bytes):
                self.frames = value

    def kernel_module(self, name: str) -> bytes | None:
        """An `HloModuleProto` holding instruction `name` alone: an entry computation
        of a parameter for each of its operands (their names, shapes and ids) and the
        instruction, its control predecessors dropped, with the computations it calls
        (and those they call) as they are; None for a name the module lacks."""
        found = self.where.get(name)
        if found is None:
            return None
        computation = self.computations[found[0]]
        kernel = computation.instructions[found[1]]
        parameters: list[bytes] = []
        shapes: list[bytes] = []
        names: list[bytes] = []
        for number, operand_id in enumerate(dict.fromkeys(kernel.operands)):
            operand = computation.instructions.get(operand_id)
            if operand is None:
                return None
            parameters.append(
                proto_bytes(1, operand.name.encode())
                + proto_bytes(2, b"parameter")
                + proto_bytes(3, operand.shape)
                + proto_int(9, number)
                + proto_int(35, operand.identifier)
            )
            shapes.append(proto_bytes(1, operand.shape))
            names.append(proto_bytes(3, operand.name.encode()))
        instruction, _ = proto_rewrite(kernel.message, 37, _dropped)
        program = b"".join(shapes) + proto_bytes(2, kernel.shape) + b"".join(names)
        entry_id = max(self.computations, default=0) + 1
        entry = (
            proto_bytes(1, b"kernel_entry")
            + b"".join(proto_bytes(2, p) for p in parameters)
            + proto_bytes(2, instruction)
            + proto_bytes(4, program)
            + proto_int(5, entry_id)
            + proto_int(6, kernel.identifier)
        )
        called = self._called(kernel.called)
        out = [proto_bytes(1, b"kernel"), proto_bytes(2, b"kernel_entry")]
        out += [proto_bytes(3, self.computations[c].message) for c in self.order if c in called]
        out += [proto_bytes(3, entry), proto_bytes(4, program), proto_int(6, entry_id)]
        if self.frames:
            out.append(proto_bytes(17, self.frames))
        return b"".join(out)

    def _called(self, roots: Iterable[int]) -> set[int]:
        found: set[int] = set()
        pending = list(roots)
        while pending:
            identifier = pending.pop()
            if identifier in found or identifier not in self.computations:
                continue
            found.add(identifier)
            for instruction in self.computations[identifier].instructions.values():
                pending.extend(instruction.called)
        return found


def _dropped(_payload: bytes) -> None:
    return None


def _read_computation(message: bytes) -> _Computation:
    identifier = 0  # proto3 leaves a zero out
    instructions: dict[int, _Instruction] = {}
    for number, value in proto_message(message):
        if number == 5 and isinstance(value, int):
            identifier = value
        elif number == 2 and isinstance(value, bytes):
            instruction = _read_instruction(value)
            instructions[instruction.identifier] = instruction
    return _Computation(message, identifier, instructions)


def _read_instruction(message: bytes) -> _Instruction:
    name = ""
    identifier = 0
    shape = b""
    operands: list[int] = []
    called: list[int] = []
    for number, value in proto_message(message):
        if number == 1 and isinstance(value, bytes):
            name = value.decode("utf-8", "replace")
        elif number == 3 and isinstance(value, bytes):
            shape = value
        elif number == 35 and isinstance(value, int):
            identifier = value
        elif number == 36:
            operands += proto_varints(value)
        elif number == 38:
            called += proto_varints(value)
    return _Instruction(message, name, identifier, shape, tuple(operands), tuple(called))


def kernel_costs(hlo_proto: bytes, names: Iterable[str], client: Any) -> dict[str, Any]:
    """XLA's cost analysis (`hlo_module_cost_analysis`: flops, bytes accessed) of each
    instruction `names` lists, alone in a module of its own (`KernelModules`), by
    name; one XLA cannot read alone is left out."""
    from hloscope.ir.context import native, xla_hlo

    try:
        from jaxlib import _jax as bindings
    except ImportError:  # pragma: no cover - jaxlib before 0.8
        return {}
    try:
        modules = KernelModules(hlo_proto)
    except ValueError:
        return {}
    hlo = xla_hlo()
    costs: dict[str, Any] = {}
    with native():
        for name in names:
            proto = modules.kernel_module(name)
            if proto is None:
                continue
            try:
                parsed = hlo.HloModule.from_serialized_hlo_module_proto(proto)
                costs[name] = dict(bindings.hlo_module_cost_analysis(client, parsed))
            except Exception:  # XLA refusing one kernel alone
                continue
    return costs

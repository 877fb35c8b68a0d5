"""XLA's computations and their instructions where jaxlib binds no instructions.

jaxlib 0.10 hands out an `HloComputation`'s instructions (`instructions()`, each with
`name`, `opcode`, `operands()` and `to_string()`); jaxlib 0.8 and 0.9 bind only the
computations' names. There the same is read from the module itself: each
instruction's name, opcode and operands from XLA's `HloModuleProto`, and its text
from XLA's printing of the module (the line `to_string()` gives, without the
indentation and the `ROOT` mark). `hloscope.ir.context.hlo_computations` picks one
or the other by what the bindings have.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from hloscope.ir.proto import proto_message, proto_varints

_INSTRUCTION_LINE = re.compile(r"^\s+(?:ROOT\s+)?(?P<text>%?(?P<name>[\w.-]+)\s*=\s.*)$")


@dataclasses.dataclass(frozen=True)
class ListedOperand:
    name: str


@dataclasses.dataclass(frozen=True)
class ListedInstruction:
    """An instruction as jaxlib 0.10's `HloInstruction` shows it."""

    name: str
    opcode: str
    """As XLA prints it: `add`, `get-tuple-element`."""
    operand_names: tuple[str, ...]
    text: str

    def operands(self) -> list[ListedOperand]:
        return [ListedOperand(name) for name in self.operand_names]

    def to_string(self) -> str:
        return self.text


@dataclasses.dataclass(frozen=True)
class ListedComputation:
    """A computation as jaxlib 0.10's `HloComputation` shows it."""

    name: str
    listed: tuple[ListedInstruction, ...]

    def instructions(self) -> list[ListedInstruction]:
        return list(self.listed)


def listed_computations(hlo_module: Any) -> list[ListedComputation]:
    """The computations of XLA's `HloModule` in its own order, with their
    instructions in the proto's order."""
    texts = instruction_texts(str(hlo_module.to_string()))
    by_name = _proto_instructions(hlo_module.as_serialized_hlo_module_proto())
    out = []
    for computation in hlo_module.computations():
        name = str(computation.name)
        rows = by_name.get(name, [])
        ids = {identifier: instruction for identifier, instruction, _, _ in rows}
        listed = tuple(
            ListedInstruction(
                instruction,
                opcode,
                tuple(ids[o] for o in operands if o in ids),
                texts.get(instruction, ""),
            )
            for _, instruction, opcode, operands in rows
        )
        out.append(ListedComputation(name, listed))
    return out


def instruction_texts(printed: str) -> dict[str, str]:
    """Each instruction's text in XLA's printing of a module, by name (names are
    unique in a module); a backend config printed over several lines stays whole."""
    texts: dict[str, str] = {}
    current: str | None = None
    for line in printed.splitlines():
        match = _INSTRUCTION_LINE.match(line)
        if match:
            current = match["name"]
            texts[current] = match["text"]
        elif line.startswith(("}", "ENTRY ", "%")) or not line.startswith(" "):
            current = None
        elif current is not None:
            texts[current] += "\n" + line
    return texts


def _proto_instructions(proto: bytes) -> dict[str, list[tuple[int, str, str, list[int]]]]:
    """Per computation name, its instructions' (id, name, opcode, operand ids) from
    the `HloModuleProto` (computations 3; name 1, instructions 2; an instruction's
    name 1, opcode 2, id 35, operand_ids 36)."""
    out: dict[str, list[tuple[int, str, str, list[int]]]] = {}
    for number, computation in proto_message(proto):
        if number != 3 or not isinstance(computation, bytes):
            continue
        name = ""
        rows: list[tuple[int, str, str, list[int]]] = []
        for field, value in proto_message(computation):
            if field == 1 and isinstance(value, bytes):
                name = value.decode("utf-8", "replace")
            elif field == 2 and isinstance(value, bytes):
                rows.append(_instruction(value))
        out[name] = rows
    return out


def _instruction(message: bytes) -> tuple[int, str, str, list[int]]:
    name = opcode = ""
    identifier = 0
    operands: list[int] = []
    for field, value in proto_message(message):
        if field == 1 and isinstance(value, bytes):
            name = value.decode("utf-8", "replace")
        elif field == 2 and isinstance(value, bytes):
            opcode = value.decode("utf-8", "replace")
        elif field == 35 and isinstance(value, int):
            identifier = value
        elif field == 36:
            operands += proto_varints(value)
    return identifier, name, opcode, operands

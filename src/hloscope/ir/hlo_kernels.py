"""The kernels of an optimized module, as `profile --for` estimates them: read from
XLA's own text of the compiled module (`Compilation.hlo_text`), each computation's
instructions in its schedule, with what the estimate needs of each: the bytes of its
result and operands, the compiler's own estimate where the TPU's backend wrote one
(`"estimated_cycles"` in its `backend_config`), the matmul it is built around, the
collective it carries out (XLA's `-start`/`-done` pairs and the TPU's async collective
fusions) and over how many devices, and the module XLA's cost analysis reads for it
(`kernel_costs`): the kernel alone, its operands made parameters.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Final

from hloscope.ir.attributes import backend_config_text

_HEADER = re.compile(r"^(?P<entry>ENTRY )?%?(?P<name>[\w.\-]+) \(.*\{\s*$")
_INSTRUCTION = re.compile(
    r"^\s+(?P<root>ROOT )?%?(?P<name>[\w.\-]+) = (?P<shape>.+?) (?P<opcode>[a-z][\w\-]*)\("
)
_ARRAY = re.compile(r"\b(?P<type>[a-z]+[0-9]*[a-z0-9]*)\[(?P<dims>[\d,]*)\]")
_CALLEE = re.compile(
    r"\b(?:calls|to_apply|body|condition|true_computation|false_computation)=%?([\w.\-]+)"
)
_BRANCHES = re.compile(r"\bbranch_computations=\{([^}]*)\}")
_OPERAND = re.compile(r"%([\w.\-]+)")
_TARGET = re.compile(r'custom_call_target="([^"]+)"')
_EXPLICIT_GROUPS = re.compile(r"replica_groups=\{\{([\d,]*)\}")
_IOTA_GROUPS = re.compile(r"replica_groups=\[(\d+),(\d+)\]<=")
_MESH_GROUPS = re.compile(r"replica_groups=mesh\[([^\]]*)\]\s*\{([^}]*)\}")
_MESH_AXIS = re.compile(r"'([^']+)'=(\d+)")
_SCATTER_EMITTER = "AllReduceScatter"
"""In the `emitter` of a TPU fusion's `collective_algorithm_config`: an all-reduce
fused with the slice each device keeps, a reduce-scatter."""
_MEGASCALE = re.compile(r'_xla_megascale_transfer_type="([A-Z_]+)"')

_BITS: Final = {
    "pred": 8, "s2": 2, "u2": 2, "s4": 4, "u4": 4, "s8": 8, "u8": 8, "s16": 16, "u16": 16,
    "f16": 16, "bf16": 16, "s32": 32, "u32": 32, "f32": 32, "s64": 64, "u64": 64,
    "f64": 64, "c64": 64, "c128": 128,
}  # fmt: skip

COLLECTIVE_OPCODES: Final = (
    "all-reduce",
    "all-gather",
    "reduce-scatter",
    "all-to-all",
    "collective-permute",
    "collective-broadcast",
    "ragged-all-to-all",
)
ASYNC_START: Final = "AsyncCollectiveStart"
ASYNC_DONE: Final = "AsyncCollectiveDone"

# Instructions that run no kernel: they name, forward or order values.
NO_KERNEL: Final = frozenset(
    {
        "parameter", "constant", "get-tuple-element", "tuple", "bitcast", "after-all",
        "partition-id", "replica-id", "opt-barrier", "add-dependency", "domain",
        "while", "call", "conditional", "copy-start", "copy-done", "iota",
    }
)  # fmt: skip


def _type_bits(name: str) -> int | None:
    if name in _BITS:
        return _BITS[name]
    if name.startswith("f8") or name.startswith("f4"):
        return int(name[1]) if name[1].isdigit() else 8
    return None


def shape_bytes(shape: str) -> int:
    """Bytes of the arrays an XLA shape holds (`(bf16[8,128]{1,0}, u32[])`: both)."""
    total = 0
    for match in _ARRAY.finditer(shape):
        bits = _type_bits(match["type"])
        if bits is None:
            continue
        count = 1
        for dim in filter(None, match["dims"].split(",")):
            count *= int(dim)
        total += count * bits
    return total // 8


@dataclasses.dataclass(frozen=True)
class Kernel:
    """One instruction of a computation, as the estimate reads it."""

    name: str
    """As XLA's text names it (`fusion.401`)."""
    computation: str
    """The computation it is in (`main.26_spmd`, a loop body's)."""
    opcode: str
    """As XLA prints it: `fusion`, `all-reduce-start`, `custom-call`."""
    operands: tuple[str, ...]
    """Its operands' names, in order."""
    result_bytes: int
    """Its result's bytes (a tuple's arrays together)."""
    operand_bytes: int
    """Its operands' bytes (each operand once)."""
    cycles: int | None
    """The TPU compiler's `estimated_cycles` from its `backend_config`."""
    callees: tuple[str, ...]
    """The computations it calls (fused, reduction, loop body and condition)."""
    matmul_type: str | None
    """The operand type (`bf16`, `f32`) of a dot or convolution it is or holds."""
    collective: str | None
    """The collective it carries out (`all-gather`): itself, XLA's `-start` of one, or
    the TPU's async collective start fusion; None otherwise."""
    collective_bytes: int | None
    """The collective's result bytes (per device): the gathered, reduced or scattered
    array, not the start's tuple."""
    collective_operand_bytes: int | None
    group_size: int | None
    """Devices in each of its replica groups, where they are written out."""
    starts: bool
    """It starts an asynchronous collective (`-start`, the TPU's start fusion, a send
    across slices)."""
    done: bool
    """It finishes one (`-done`, the TPU's done fusion)."""
    custom_call_target: str | None
    """A custom call's target, where it is one."""
    text: str
    """Its line of XLA's text."""
    across_slices: bool = False
    """A send (or receive) libtpu made of a collective between slices, over the
    data-centre network: tagged `_xla_megascale_transfer_type` with the collective."""

    @property
    def runs_kernel(self) -> bool:
        """Whether it is a kernel of its own (no name, tuple or loop op, nor the
        receiving half of a transfer between slices)."""
        if self.across_slices and self.opcode == "recv":
            return False
        return self.opcode not in NO_KERNEL and not self.opcode.endswith("-done")


@dataclasses.dataclass(frozen=True)
class KernelModule:
    """XLA's text of a compiled module, split into computations of kernels."""

    entry: str
    computations: Mapping[str, tuple[Kernel, ...]]
    """Each computation's instructions, in its schedule."""
    control: tuple[str, ...]
    """The entry and the computations it runs through loops, calls and conditionals
    (not fused, reduction or async computations): where kernels are launched."""
    texts: Mapping[str, str]
    """Each computation's text."""
    preamble: str
    """What XLA prints before its computations (the stack frames metadata names)."""

    def kernel_module(self, kernel: Kernel) -> str:
        """A module holding `kernel` alone, its operands parameters, for XLA's cost
        analysis."""
        needed: dict[str, None] = {}
        pending = list(kernel.callees)
        while pending:
            name = pending.pop()
            if name in needed or name not in self.texts:
                continue
            needed[name] = None
            for line in self.texts[name].splitlines():
                pending.extend(_callees(line))
        shapes = {k.name: _shape_text(k.text) for k in self.computations[kernel.computation]}
        params = []
        for index, operand in enumerate(dict.fromkeys(kernel.operands)):
            params.append(f"  %{operand} = {shapes.get(operand, 'f32[]')} parameter({index})")
        line = kernel.text.strip().removeprefix("ROOT ")
        line = re.sub(r",\s*control-predecessors=\{[^}]*\}", "", line)
        ordered = [name for name in self.texts if name in needed]
        body = "\n".join([*params, f"  ROOT {line}"])
        return "\n".join(
            [
                "HloModule kernel",
                self.preamble,
                *(self.texts[name] for name in ordered),
                f"ENTRY %kernel_entry {{\n{body}\n}}",
            ]
        )


def _shape_text(line: str) -> str:
    match = _INSTRUCTION.match(line)
    return match["shape"] if match else "f32[]"


def _callees(line: str) -> list[str]:
    found = _CALLEE.findall(line)
    for branches in _BRANCHES.findall(line):
        found.extend(_OPERAND.findall(branches))
    return found


def _arguments(line: str, start: int) -> str:
    """The text between the opcode's parentheses, from `start` (just after `(`)."""
    depth = 1
    for index in range(start, len(line)):
        char = line[index]
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth == 0:
                return line[start:index]
    return line[start:]


def _cycles(config: str | None) -> int | None:
    if not config or "estimated_cycles" not in config:
        return None
    try:
        parsed = json.loads(config)
    except ValueError:
        return None
    for value in _walk(parsed, "estimated_cycles"):
        try:
            return int(value)
        except (TypeError, ValueError):
            continue
    return None


def _walk(node: Any, key: str) -> Iterator[Any]:
    if isinstance(node, dict):
        for name, value in node.items():
            if name == key:
                yield value
            else:
                yield from _walk(value, key)
    elif isinstance(node, list):
        for value in node:
            yield from _walk(value, key)


def group_size(line: str) -> int | None:
    """Devices in each replica group of a collective's line of XLA's text, in each
    form XLA prints them (`{{0,2},{1,3}}`, `[2,2]<=[4]`, `mesh[...] {'axis_1'}`); None
    when it writes none (`{}`: every device)."""
    explicit = _EXPLICIT_GROUPS.search(line)
    if explicit:
        return len([n for n in explicit.group(1).split(",") if n])
    iota = _IOTA_GROUPS.search(line)
    if iota:
        return int(iota.group(2))
    mesh = _MESH_GROUPS.search(line)
    if mesh:
        sizes = {name: int(size) for name, size in _MESH_AXIS.findall(mesh.group(1))}
        size = 1
        for axis in re.findall(r"'([^']+)'", mesh.group(2)):
            size *= sizes.get(axis, 1)
        return size
    return None


def _matmul_type(line: str, shapes: Mapping[str, str]) -> str | None:
    """The operand type of a dot or convolution line (its first operand's)."""
    match = _INSTRUCTION.match(line)
    if match is None or match["opcode"] not in ("dot", "convolution"):
        return None
    operands = _OPERAND.findall(_arguments(line, match.end()))
    shape = shapes.get(operands[0], "") if operands else ""
    array = _ARRAY.search(shape)
    return array["type"] if array else None


def read_kernels(text: str) -> KernelModule:
    """Split XLA's text of a compiled module into computations of kernels."""
    lines = text.splitlines()
    texts: dict[str, str] = {}
    raw: dict[str, list[str]] = {}
    entry = ""
    preamble: list[str] = []
    current: str | None = None
    block: list[str] = []
    seen_header = False
    for line in lines:
        header = _HEADER.match(line) if current is None else None
        if header:
            current, block, seen_header = header["name"], [line], True
            if header["entry"]:
                entry = current
            continue
        if current is None:
            if not seen_header and not line.startswith("HloModule"):
                preamble.append(line)
            continue
        block.append(line)
        if line.startswith("}"):
            texts[current] = "\n".join(block)
            raw[current] = block[1:-1]
            current = None
    # What each computation holds, for the kernels' matmul types and collectives.
    shapes_of: dict[str, dict[str, str]] = {}
    roots: dict[str, str] = {}
    for name, body in raw.items():
        shapes: dict[str, str] = {}
        for line in body:
            match = _INSTRUCTION.match(line)
            if match:
                shapes[match["name"]] = match["shape"]
                if match["root"]:
                    roots[name] = line
        shapes_of[name] = shapes
    computations: dict[str, tuple[Kernel, ...]] = {}
    for name, body in raw.items():
        computations[name] = tuple(_kernels(name, body, raw, shapes_of, roots))
    return KernelModule(
        entry=entry,
        computations=computations,
        control=_control(entry, computations),
        texts=texts,
        preamble="\n".join(preamble).strip(),
    )


def _inside(names: Sequence[str], raw: Mapping[str, list[str]], depth: int = 0) -> Iterator[str]:
    """Every line of the computations `names` and of those they call."""
    for name in names:
        for line in raw.get(name, ()):
            yield line
            if depth < 4:
                yield from _inside(_callees(line), raw, depth + 1)


def _kernels(
    computation: str,
    body: Sequence[str],
    raw: Mapping[str, list[str]],
    shapes_of: Mapping[str, Mapping[str, str]],
    roots: Mapping[str, str],
) -> Iterator[Kernel]:
    shapes = shapes_of[computation]
    sizes = {name: shape_bytes(shape) for name, shape in shapes.items()}
    for line in body:
        match = _INSTRUCTION.match(line)
        if match is None:
            continue
        opcode = match["opcode"]
        operands = tuple(_OPERAND.findall(_arguments(line, match.end())))
        callees = tuple(_callees(line))
        target = _TARGET.search(line)
        collective = collective_line = None
        starts = done = False
        base = opcode.removesuffix("-start").removesuffix("-done")
        if base in COLLECTIVE_OPCODES:
            collective, collective_line = base, line
            starts, done = opcode.endswith("-start"), opcode.endswith("-done")
        elif opcode in ("async-start", "async-done", "fusion"):
            root = next((roots[c] for c in callees if c in roots), "")
            root_target = _TARGET.search(root)
            wrapped = _INSTRUCTION.match(root)
            if opcode == "fusion" and root_target and root_target[1] in (ASYNC_START, ASYNC_DONE):
                starts, done = root_target[1] == ASYNC_START, root_target[1] == ASYNC_DONE
                collective_line = next(
                    (
                        inner
                        for inner in _inside(callees, raw)
                        if (m := _INSTRUCTION.match(inner)) and m["opcode"] in COLLECTIVE_OPCODES
                    ),
                    None,
                )
            elif opcode != "fusion" and wrapped and wrapped["opcode"] in COLLECTIVE_OPCODES:
                starts, done = opcode == "async-start", opcode == "async-done"
                collective_line = root
            elif opcode == "fusion" and "continuation_config" not in line:
                # A collective the TPU fused with its compute (`all-reduce-scatter`: an
                # all-reduce and the slice each device keeps), run synchronously. The
                # fusions that move an async collective on (`continuation_config`)
                # hold a copy of it, not one of their own.
                collective_line = next(
                    (
                        inner
                        for inner in _inside(callees, raw)
                        if (m := _INSTRUCTION.match(inner)) and m["opcode"] in COLLECTIVE_OPCODES
                    ),
                    None,
                )
            if collective_line is not None:
                inner = _INSTRUCTION.match(collective_line)
                collective = inner["opcode"] if inner else None
        across = _MEGASCALE.search(line) if opcode in ("send", "recv") else None
        if across is not None:
            # The send carries the collective out (its operand, what each device sends);
            # the receive is its other half.
            collective = across[1].lower().replace("_", "-") if opcode == "send" else None
            starts = opcode == "send"
        collective_bytes = collective_operand_bytes = None
        if across is not None and opcode == "send":
            collective_bytes = collective_operand_bytes = sum(
                sizes.get(o, 0) for o in dict.fromkeys(operands[:1])
            )
        elif collective is not None and collective_line is not None:
            inner = _INSTRUCTION.match(collective_line)
            if inner is not None:
                collective_bytes = shape_bytes(inner["shape"])
                owner = next((c for c, b in raw.items() if collective_line in b), computation)
                inner_operands = _OPERAND.findall(_arguments(collective_line, inner.end()))
                owner_shapes = shapes_of.get(owner, {})
                collective_operand_bytes = sum(
                    shape_bytes(owner_shapes.get(o, "")) for o in dict.fromkeys(inner_operands)
                )
                if starts and opcode.endswith("-start") and inner.group("shape").startswith("("):
                    # `all-gather-start = (inputs, results)`: its done has the results.
                    collective_bytes = max(collective_bytes - collective_operand_bytes, 0)
                if opcode == "fusion" and _SCATTER_EMITTER in line:
                    # The fusion keeps each device's part of the reduced array: a
                    # reduce-scatter of the all-reduce's array to its result.
                    collective = "reduce-scatter"
                    collective_operand_bytes = collective_bytes
                    collective_bytes = sizes.get(match["name"], 0)
        matmul = _matmul_type(line, shapes)
        if matmul is None and callees:
            for inner_line in _inside(callees, raw):
                inner = _INSTRUCTION.match(inner_line)
                if inner and inner["opcode"] in ("dot", "convolution"):
                    owner = next((c for c, b in raw.items() if inner_line in b), computation)
                    matmul = _matmul_type(inner_line, shapes_of.get(owner, {}))
                    break
        yield Kernel(
            name=match["name"],
            computation=computation,
            opcode=opcode,
            operands=operands,
            result_bytes=sizes.get(match["name"], 0),
            operand_bytes=sum(sizes.get(o, 0) for o in dict.fromkeys(operands)),
            cycles=_cycles(backend_config_text(line)),
            callees=callees,
            matmul_type=matmul,
            collective=collective,
            collective_bytes=collective_bytes,
            collective_operand_bytes=collective_operand_bytes,
            group_size=group_size(collective_line) if collective_line else None,
            starts=starts,
            done=done,
            custom_call_target=target[1] if target else None,
            text=line,
            across_slices=across is not None,
        )


def _control(entry: str, computations: Mapping[str, tuple[Kernel, ...]]) -> tuple[str, ...]:
    found: dict[str, None] = {}
    pending = [entry]
    while pending:
        name = pending.pop(0)
        if name in found or name not in computations:
            continue
        found[name] = None
        for kernel in computations[name]:
            if kernel.opcode in ("while", "call", "conditional"):
                pending.extend(kernel.callees)
    return tuple(found)

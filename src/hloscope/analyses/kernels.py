"""The kernels of an optimized module, as `profile --for` estimates them, read from the
model in either form (XLA's own, or converted to MLIR): the instructions of each
control computation (the entry and what it runs through loops, calls and
conditionals; not fused, reduction or async computations) in the module's schedule,
with what the estimate needs of each: its result's and operands' bytes
(`Module.nbytes`), the compiler's own estimate of its cycles
(`Module.annotations`), the matmul it is or holds, and the collectives it launches,
as `placement.collectives.program_collectives` decides them (never derived here).

The two forms spell an instruction differently (`hlo.fusion` calling a fused
computation; `mhlo.fusion` holding it in a region, `stablehlo.while` holding its body),
so an instruction is known by XLA's name of it (`Op.hlo_name`) and opcode
(`Module.hlo_opcode`), and ordered by the schedule (XLA's own form orders each
computation's ops by it; the converted form by their dependencies, so
`Module.program_order` orders them by `Module.schedule`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from typing import Final

from hloscope.analyses.placement.collectives import (
    ASYNC_COLLECTIVE_DONE,
    MEGASCALE_TRANSFER,
    RunningCollective,
    program_collectives,
)
from hloscope.analyses.placement.loops import RunsPerCall
from hloscope.analyses.structure import op_callees
from hloscope.ir.model import Block, Module, Op

NO_KERNEL: Final = frozenset(
    {
        "parameter", "constant", "get-tuple-element", "tuple", "bitcast", "after-all",
        "partition-id", "replica-id", "opt-barrier", "add-dependency", "domain",
        "while", "call", "conditional", "copy-start", "copy-done", "iota",
    }
)  # fmt: skip
"""Instructions that run no kernel: they name, forward or order values."""

NO_WORK_CUSTOM_CALLS: Final = frozenset({"AllocateBuffer", "ConcatBitcast"})
"""The TPU's custom calls that move and compute nothing: `AllocateBuffer` hands out an
uninitialized buffer, `ConcatBitcast` reads its operands, laid out one after another,
as one array. XLA's cost analysis knows no cost of them (-1, unknown)."""

_CONTROL: Final = frozenset({"while", "call", "conditional"})
_MATMULS: Final = frozenset({"dot", "convolution"})


@dataclasses.dataclass(frozen=True)
class Kernel:
    """One instruction of a control computation, as the estimate reads it."""

    op_id: int
    name: str
    """XLA's name of it (`fusion.401`)."""
    opcode: str
    """As XLA spells it: `fusion`, `all-reduce-start`, `custom-call`."""
    function: str | None
    """The model's function it is in (`main`, a loop body's in XLA's own form)."""
    result_bytes: int
    """Its results' bytes (a tuple's arrays together)."""
    operand_bytes: int
    """Its operands' bytes (each operand once)."""
    cycles: int | None
    """The TPU compiler's `estimated_cycles` of one run."""
    matmul_type: str | None
    """The operand type (`bf16`, `f32`) of a dot or convolution it is or holds."""
    collectives: tuple[RunningCollective, ...]
    """The collectives it launches (`RunningCollective.kernel_id`)."""
    finishes: bool
    """It finishes an asynchronous op (a `-done`, the TPU's async collective done
    fusion): no kernel of its own."""
    runs_kernel: bool
    """It is a kernel of its own: not a name, tuple, loop or copy op, nor a done, nor
    the receiving half of a transfer between slices, nor a custom call that does no
    work (`NO_WORK_CUSTOM_CALLS`)."""


@dataclasses.dataclass(frozen=True)
class ControlComputation:
    """A computation kernels are launched from, its instructions in schedule order."""

    kernels: tuple[Kernel, ...]
    by_op: dict[int, int]
    """Each kernel's place in `kernels`, by op id."""


def program_kernels(
    module: Module, runs: RunsPerCall | None = None
) -> tuple[ControlComputation, ...]:
    """The control computations of the module (module doc), the entry first, each
    with its instructions in the schedule."""
    collectives: dict[int, list[RunningCollective]] = {}
    for collective in program_collectives(module, runs):
        collectives.setdefault(collective.kernel_id, []).append(collective)
    out: list[ControlComputation] = []
    for ops in _control_blocks(module):
        kernels = tuple(
            _kernel(module, op, opcode, tuple(collectives.get(op.id, ())))
            for op, opcode in _scheduled(module, ops)
        )
        out.append(ControlComputation(kernels, {k.op_id: i for i, k in enumerate(kernels)}))
    return tuple(out)


def _control_blocks(module: Module) -> Iterator[Sequence[Op]]:
    """The top-level ops of each control computation: a function's body in XLA's own
    form, a function's or a loop's or conditional's region in the converted one."""
    entry = module.entry
    if entry is None or entry.is_declaration:
        return
    functions = module.functions
    pending: list[Block] = [entry.op.regions[0].blocks[0]]
    seen: set[int] = set()
    while pending:
        block = pending.pop(0)
        if id(block) in seen:
            continue
        seen.add(id(block))
        yield block.ops
        for op in block.ops:
            if module.hlo_opcode(op) not in _CONTROL:
                continue
            for region in op.regions:
                pending.extend(region.blocks)
            for name in op_callees(op, functions, fused=True):
                function = functions[name]
                if not function.is_declaration:
                    pending.extend(function.op.regions[0].blocks[:1])


def _scheduled(module: Module, ops: Sequence[Op]) -> list[tuple[Op, str]]:
    """The instructions among `ops` (one op each: the first of its name), with their
    opcodes, in the module's schedule."""
    found: dict[str, tuple[Op, str]] = {}
    for op in module.program_order(ops):
        name = op.hlo_name
        if name is None or name in found or op.is_terminator:
            continue
        opcode = module.hlo_opcode(op)
        if opcode is not None:
            found[name] = (op, opcode)
    return list(found.values())


def _kernel(
    module: Module, op: Op, opcode: str, collectives: tuple[RunningCollective, ...]
) -> Kernel:
    finishes = opcode.endswith("-done") or (
        opcode == "fusion" and _ends_async_collective(module, op)
    )
    receives_across = opcode == "recv" and MEGASCALE_TRANSFER in op.frontend_attributes
    return Kernel(
        op_id=op.id,
        name=op.hlo_name or op.name,
        opcode=opcode,
        function=op.function,
        result_bytes=_bytes(module, op.results),
        operand_bytes=_bytes(module, dict.fromkeys(op.operands)),
        cycles=module.annotations(op).estimated_cycles,
        matmul_type=_matmul_type(module, op),
        collectives=collectives,
        finishes=finishes,
        runs_kernel=not (
            opcode in NO_KERNEL
            or finishes
            or receives_across
            or op.custom_call_target in NO_WORK_CUSTOM_CALLS
        ),
    )


def _bytes(module: Module, values: Sequence[int] | dict[int, None]) -> int:
    return sum(module.nbytes(value) or 0 for value in values if value >= 0)


def _held(module: Module, op: Op, depth: int = 0) -> Iterator[Op]:
    """`op`, then what it holds: the ops of its regions (the converted form's fusion)
    and of the computations it calls (XLA's own form's fused computation), in order."""
    yield op
    for inner in module.descendants(op):
        yield inner
    if depth < 4 and op.attributes:
        for name in op_callees(op, module.functions, fused=True):
            for inner in module.function_ops(module.functions[name]):
                yield from _held(module, inner, depth + 1)


def _matmul_type(module: Module, op: Op) -> str | None:
    """The operand type of the first dot or convolution `op` is or holds, as XLA
    spells it (`bf16`)."""
    for inner in _held(module, op):
        if inner.operands and module.hlo_opcode(inner) in _MATMULS:
            return module.hlo_shape(inner.operands[0]).partition("[")[0] or None
    return None


def _ends_async_collective(module: Module, op: Op) -> bool:
    """Whether a fusion is the TPU's async collective done fusion: what it holds ends
    in the custom call `AsyncCollectiveDone`."""
    return any(inner.custom_call_target == ASYNC_COLLECTIVE_DONE for inner in _held(module, op))


def done_of(module: Module, computation: ControlComputation, start: int) -> int | None:
    """The place in `computation` of the instruction that finishes the asynchronous
    one at `start` (its `-done`, the TPU's done fusion): the first reached from it
    through its users, in the model."""
    kernels = computation.kernels
    pending = list(module.ops[kernels[start].op_id].results)
    seen: set[int] = set()
    while pending:
        value = pending.pop(0)
        for user_id in module.users(value):
            if user_id in seen:
                continue
            seen.add(user_id)
            place = computation.by_op.get(user_id)
            if place is None:
                continue
            if kernels[place].finishes:
                return place
            if place > start:
                pending.extend(module.ops[user_id].results)
    return None

"""Which values of a module can contribute to a result: backward liveness.

A parameter that JAX kept (`keep_unused=True`, a `custom_jvp`, a value carried
through a loop) may still feed nothing the computation returns; the HLO has it,
the computation ignores it. This module finds such values for every function.

The analysis walks backward from the roots: the results of the public functions
(or, for `intrinsic` liveness, of every function) and the ops with side effects
(custom calls with `has_side_effect`, infeed/outfeed, send/recv, ops without
results, and calls to functions that contain any of those). A value is live when
a live op reads it. Ops are handled by what they are, precisely where it is cheap
and conservatively otherwise, so that a value that can feed a result is never
reported dead:

- `func.call`: interprocedural, per parameter and per result, to a fixed point
  (a callee's result is needed only when some live call site needs it; a call
  site's operand is needed only when the callee needs that parameter);
- `while`: per loop-carried value (a carried value is needed when the loop's
  result is needed or when the condition or a needed carried value reads it), and
  the condition is always needed once the loop runs;
- `case`/`if`: per result, through every branch, and the selector;
- `sdy.manual_computation`/`sdy.named_computation` and `optimization_barrier`:
  per operand/result;
- `tuple`/`get_tuple_element`: the element that is extracted, when the tuple is
  built in the same function;
- any other op: all its operands and the terminators of all its regions when
  any of its results is needed (or an op inside it has side effects).

Each value and op is visited a bounded number of times, so the analysis is linear
in the size of the module.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from types import MappingProxyType

from hloscope.ir.model import Module, Op, symbol_references

# Ops whose execution matters even when their results are unused.
SIDE_EFFECT_OPS = frozenset(
    {
        "infeed",
        "outfeed",
        "send",
        "recv",
        "rng",  # XLA's kRng is stateful
        "rng_get_and_update_state",
        "send_done",
        "recv_done",
        "cf.br",
        "cf.cond_br",
    }
)
# Ops without results that only annotate other values.
ANNOTATION_OPS = frozenset({"sdy.sharding_group"})
WHILE_OPS = frozenset({"stablehlo.while", "mhlo.while"})
BRANCH_OPS = frozenset({"stablehlo.case", "stablehlo.if", "mhlo.case", "mhlo.if"})
# Ops whose region's block argument j is operand j and whose result i is the region
# terminator's operand i.
PASS_THROUGH_REGION_OPS = frozenset({"sdy.manual_computation", "sdy.named_computation"})
# Ops whose result i is operand i.
IDENTITY_OPS = frozenset({"stablehlo.optimization_barrier", "mhlo.optimization_barrier"})
TUPLE_OPS = frozenset({"stablehlo.tuple", "mhlo.tuple"})
GET_TUPLE_ELEMENT_OPS = frozenset({"stablehlo.get_tuple_element", "mhlo.get_tuple_element"})


def has_side_effect(op: Op) -> bool:
    """Whether running `op` matters even when nothing reads its results."""
    if op.name in ("func.func", "func.call") or op.is_terminator:
        return False
    if op.short_name in SIDE_EFFECT_OPS or op.name in SIDE_EFFECT_OPS:
        return True
    if op.attributes.get("has_side_effect") == "true":
        return True
    # An op without results exists for its effect (cf branches, debug prints).
    return not op.results and op.parent is not None and op.name not in ANNOTATION_OPS


@dataclasses.dataclass(frozen=True)
class Liveness:
    """Which values can contribute to a root (a result or a side effect)."""

    live: bytes
    """One byte per value id: 1 when the value can contribute to a root."""
    effectful_functions: frozenset[str]
    """Functions that have side effects (directly or through the functions they call)."""
    live_parameters: Mapping[str, frozenset[int]]
    """Per function, the indices of its parameters that are live."""
    intrinsic: bool
    """True when every function's results were roots (each function judged on its
    own); False when only the public functions' results were (the program as run)."""

    def is_live(self, value: int) -> bool:
        return value >= 0 and bool(self.live[value])


@dataclasses.dataclass
class _Index:
    """What the worklist needs about the module, built in one pass."""

    slot: list[int]
    """Per value: its index among its op's results or its block's arguments."""
    region: list[int]
    """Per value: -1 for a result, else the index of the region of its block."""
    callee: dict[int, str]
    """func.call op id -> callee name."""
    call_sites: dict[str, list[Op]]
    returns: dict[str, list[Op]]
    """Function name -> its return ops."""
    function_of_op: dict[int, str]
    """func.func op id -> function name."""
    effect_ops: list[Op]


def _terminators(op: Op) -> Iterable[Op]:
    for region in op.regions:
        for block in region.blocks:
            if block.ops and block.ops[-1].is_terminator:
                yield block.ops[-1]


def _index(module: Module) -> _Index:
    count = len(module.value_types)
    slot = [0] * count
    region = [-1] * count
    callee: dict[int, str] = {}
    call_sites: dict[str, list[Op]] = {}
    effect_ops: list[Op] = []
    for op in module.ops:
        for i, value in enumerate(op.results):
            slot[value] = i
        for r, op_region in enumerate(op.regions):
            for block in op_region.blocks:
                for j, value in enumerate(block.arguments):
                    slot[value] = j
                    region[value] = r
        if op.name == "func.call":
            names = symbol_references(op.attributes.get("callee", ""))
            if names:
                callee[op.id] = names[0]
                call_sites.setdefault(names[0], []).append(op)
        elif op.function is not None and has_side_effect(op):
            effect_ops.append(op)
    returns: dict[str, list[Op]] = {}
    function_of_op: dict[int, str] = {}
    for name, function in module.functions.items():
        function_of_op[function.op.id] = name
        returns[name] = list(_terminators(function.op))
    return _Index(slot, region, callee, call_sites, returns, function_of_op, effect_ops)


def _effectful_functions(module: Module, index: _Index) -> set[str]:
    effectful: set[str] = set()
    stack = [op.function for op in index.effect_ops if op.function is not None]
    while stack:
        name = stack.pop()
        if name in effectful:
            continue
        effectful.add(name)
        for call in index.call_sites.get(name, ()):
            if call.function is not None and call.function not in effectful:
                stack.append(call.function)
    return effectful


def analyze_liveness(
    module: Module, *, intrinsic: bool = False, roots: Sequence[str] | None = None
) -> Liveness:
    """Backward liveness of every value of `module`.

    With `intrinsic`, every function's results are roots, so each function's
    parameters are judged by whether they reach that function's own results (what a
    caller passing all arguments sees). Otherwise the roots are the results of
    `roots` (default: the public functions, or the entry when none is public).
    """
    index = _index(module)
    effectful = _effectful_functions(module, index)
    ops = module.ops
    value_owner = module.value_owner
    slot = index.slot
    region_of = index.region
    live = bytearray(len(module.value_types))
    executed = bytearray(len(ops))
    live_results: dict[str, set[int]] = {}
    live_params: dict[str, set[int]] = {}
    pending: list[int] = []

    def mark(value: int) -> None:
        if value >= 0 and not live[value]:
            live[value] = 1
            pending.append(value)

    def mark_all(values: Iterable[int]) -> None:
        for value in values:
            if value >= 0 and not live[value]:
                live[value] = 1
                pending.append(value)

    def need_result(function: str, i: int) -> None:
        seen = live_results.setdefault(function, set())
        if i in seen:
            return
        seen.add(i)
        for ret in index.returns.get(function, ()):
            if i < len(ret.operands):
                mark(ret.operands[i])

    def run(op: Op) -> None:
        """`op` runs and something it does is needed: what that requires beyond
        its needed results."""
        if executed[op.id]:
            return
        executed[op.id] = 1
        name = op.name
        if name in WHILE_OPS:
            if op.regions and op.regions[0].blocks:
                for term in _terminators_of_region(op, 0):
                    mark_all(term.operands)
        elif name in BRANCH_OPS:
            mark_all(op.operands)
        elif name == "func.call":
            target = index.callee.get(op.id)
            if target is None or target not in module.functions or not index.returns.get(target):
                mark_all(op.operands)  # a declaration: assume it reads everything
                return
            for k in live_params.get(target, ()):
                if k < len(op.operands):
                    mark(op.operands[k])
        elif name in PASS_THROUGH_REGION_OPS or name in IDENTITY_OPS:
            pass
        else:
            mark_all(op.operands)
            for term in _terminators(op):
                mark_all(term.operands)
            # Functions an op names (custom_call called_computations, async starts):
            # all their results are needed.
            for key in ("called_computations", "called_computation", "to_apply"):
                text = op.attributes.get(key)
                if text and "@" in text:
                    for target in symbol_references(text):
                        for ret in index.returns.get(target, ()):
                            for i in range(len(ret.operands)):
                                need_result(target, i)

    def run_with_ancestors(op: Op) -> None:
        run(op)
        parent = op.parent
        while parent is not None and parent.name != "func.func" and not executed[parent.id]:
            run(parent)
            parent = parent.parent

    def result_needed(op: Op, i: int) -> None:
        name = op.name
        if name in WHILE_OPS:
            run(op)
            if i < len(op.operands):
                mark(op.operands[i])
            if len(op.regions) > 1:
                for term in _terminators_of_region(op, 1):
                    if i < len(term.operands):
                        mark(term.operands[i])
        elif name in BRANCH_OPS:
            run(op)
            for term in _terminators(op):
                if i < len(term.operands):
                    mark(term.operands[i])
        elif name == "func.call":
            run(op)
            target = index.callee.get(op.id)
            if target is not None and index.returns.get(target):
                need_result(target, i)
        elif name in PASS_THROUGH_REGION_OPS:
            for term in _terminators(op):
                if i < len(term.operands):
                    mark(term.operands[i])
        elif name in IDENTITY_OPS and len(op.operands) == len(op.results):
            mark(op.operands[i])
        elif name in GET_TUPLE_ELEMENT_OPS and len(op.operands) == 1:
            source = module.defining_op(op.operands[0])
            element = _int_attribute(op.attributes.get("index"))
            if (
                source is not None
                and source.name in TUPLE_OPS
                and element is not None
                and element < len(source.operands)
            ):
                mark(source.operands[element])
            else:
                mark(op.operands[0])
        else:
            run(op)

    def argument_needed(op: Op, region: int, j: int) -> None:
        name = op.name
        if name == "func.func":
            function = index.function_of_op.get(op.id)
            if function is None:
                return
            params = live_params.setdefault(function, set())
            if j in params:
                return
            params.add(j)
            for call in index.call_sites.get(function, ()):
                if executed[call.id] and j < len(call.operands):
                    mark(call.operands[j])
        elif name in WHILE_OPS:
            if j < len(op.results):
                mark(op.results[j])  # the loop-carried value j is needed
        elif name in PASS_THROUGH_REGION_OPS:
            if j < len(op.operands):
                mark(op.operands[j])
        else:
            run(op)

    # Roots: results of the public (or all) functions, and side effects.
    if intrinsic:
        root_names = list(module.functions)
    elif roots is not None:
        root_names = list(roots)
    else:
        root_names = [name for name, f in module.functions.items() if f.visibility == "public"] or (
            [module.entry.name] if module.entry is not None else []
        )
    for name in root_names:
        function = module.functions.get(name)
        if function is None or function.is_declaration:
            continue
        if index.returns.get(name):
            for i in range(len(function.results)):
                need_result(name, i)
        else:
            # XLA's own HLO form: no return op; the root is the last instruction.
            body = function.op.regions[0].blocks[0].ops if function.op.regions else ()
            if body:
                mark_all(body[-1].results)
    for op in index.effect_ops:
        run_with_ancestors(op)
    for name in effectful:
        for call in index.call_sites.get(name, ()):
            run_with_ancestors(call)

    while pending:
        value = pending.pop()
        owner = value_owner[value]
        if owner < 0:
            continue
        op = ops[owner]
        if region_of[value] < 0:
            result_needed(op, slot[value])
        else:
            argument_needed(op, region_of[value], slot[value])

    return Liveness(
        live=bytes(live),
        effectful_functions=frozenset(effectful),
        live_parameters=MappingProxyType(
            {name: frozenset(params) for name, params in live_params.items()}
        ),
        intrinsic=intrinsic,
    )


def _terminators_of_region(op: Op, region: int) -> Iterable[Op]:
    if region < len(op.regions):
        for block in op.regions[region].blocks:
            if block.ops and block.ops[-1].is_terminator:
                yield block.ops[-1]


def _int_attribute(text: str | None) -> int | None:
    if not text:
        return None
    head = text.strip().split(":", 1)[0].strip()
    return int(head) if head.isdigit() else None

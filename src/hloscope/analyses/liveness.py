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

XLA's own HLO form (`hloscope.ir.hlo_native`, for optimized modules that do not
convert to MLIR) has no return ops: a function returns its ROOT, its last op
(`Root`). Its ops name the computations they run by attribute (a fusion's `calls`,
a while's `body` and `condition`, a reduce's `to_apply`): those ops are ordinary
ones that read all their operands, and they run the computations they name, so a
side effect inside a loop body keeps the loop, and what it reads, live.

Each value and op is visited a bounded number of times, so the analysis is linear
in the size of the module.

Most questions are about a few functions' arguments (which parameters of the entry
are used), and most modules hold no dead code: `argument_liveness` walks back from
those functions' results alone, by the same rules, and settles their arguments
where every argument some op reads is reached, at the cost of one step per operand
it reaches and without the index of the whole module. Where it does not, the
worklist over the whole module (with side effects) decides.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from itertools import chain, compress
from operator import attrgetter
from types import MappingProxyType

from hloscope.ir.model import (
    Function,
    Module,
    Op,
)

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
        # XLA's own HLO form spells opcodes with hyphens.
        "send-done",
        "recv-done",
        "rng-get-and-update-state",
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
TUPLE_OPS = frozenset({"stablehlo.tuple", "mhlo.tuple", "hlo.tuple"})
GET_TUPLE_ELEMENT_OPS = frozenset(
    {"stablehlo.get_tuple_element", "mhlo.get_tuple_element", "hlo.get-tuple-element"}
)


# How the worklist treats an op, by name (anything else is GENERIC).
GENERIC, WHILE, BRANCH, CALL, PASS_THROUGH, IDENTITY, GET_TUPLE_ELEMENT = range(7)
_KINDS: dict[str, int] = {
    **dict.fromkeys(WHILE_OPS, WHILE),
    **dict.fromkeys(BRANCH_OPS, BRANCH),
    "func.call": CALL,
    **dict.fromkeys(PASS_THROUGH_REGION_OPS, PASS_THROUGH),
    **dict.fromkeys(IDENTITY_OPS, IDENTITY),
    **dict.fromkeys(GET_TUPLE_ELEMENT_OPS, GET_TUPLE_ELEMENT),
}
# Attributes through which an op names functions whose results it needs (in XLA's own
# HLO form: a fusion's `calls`, a while's `body` and `condition`, a conditional's
# `branch_computations`, a reduce's `to_apply`).
FUNCTION_ATTRIBUTES = (
    "called_computations",
    "called_computation",
    "to_apply",
    "calls",
    "body",
    "condition",
    "branch_computations",
)

# Per op name: True (always has side effects), False (never), None (depends on the op).
_NAME_EFFECTS: dict[str, bool | None] = {}


def _name_effect(name: str) -> bool | None:
    if name in _NAME_EFFECTS:
        return _NAME_EFFECTS[name]
    short = name.partition(".")[2] or name
    effect: bool | None
    if name in ("func.func", "func.call") or short in ("return", "yield"):
        effect = False
    elif short in SIDE_EFFECT_OPS or name in SIDE_EFFECT_OPS:
        effect = True
    else:
        effect = None
    _NAME_EFFECTS[name] = effect
    return effect


def has_side_effect(op: Op) -> bool:
    """Whether running `op` matters even when nothing reads its results."""
    effect = _name_effect(op.name)
    if effect is not None:
        return effect
    if op.attributes and op.attributes.get("has_side_effect") == "true":
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


class LivenessIndex:
    """What the worklist needs about a module, built in one pass; reuse it for several
    analyses of the same module."""

    def __init__(self, module: Module) -> None:
        count = len(module.value_types)
        slot = [0] * count
        region = [-1] * count
        kinds = [GENERIC] * len(module.ops)
        callee: dict[int, str] = {}
        call_sites: dict[str, list[Op]] = {}
        named_functions: dict[int, list[str]] = {}
        effect_ops: list[Op] = []
        kind_of = _KINDS.get
        for op in module.ops:
            for i, value in enumerate(op.results):
                slot[value] = i
            if op.regions:
                for r, op_region in enumerate(op.regions):
                    for block in op_region.blocks:
                        for j, value in enumerate(block.arguments):
                            slot[value] = j
                            region[value] = r
            kind = kind_of(op.name, GENERIC)
            kinds[op.id] = kind
            attributes = op.attributes
            if kind == CALL:
                names = op.references("callee")
                if names:
                    callee[op.id] = names[0]
                    call_sites.setdefault(names[0], []).append(op)
                continue
            if attributes:
                for key in FUNCTION_ATTRIBUTES:
                    text = attributes.get(key)
                    if text and "@" in text:
                        named_functions.setdefault(op.id, []).extend(op.references(key))
            if op.function is not None and has_side_effect(op):
                effect_ops.append(op)
        self.slot = slot
        """Per value: its index among its op's results or its block's arguments."""
        self.region = region
        """Per value: -1 for a result, else the index of the region of its block."""
        self.kinds = kinds
        """Per op id: how the worklist treats it."""
        self.callee = callee
        """func.call op id -> callee name."""
        self.call_sites = call_sites
        self.named_functions = named_functions
        """Op id -> functions it names through `called_computations` and the like."""
        named_sites: dict[str, list[Op]] = {}
        for op_id, named in named_functions.items():
            for name in dict.fromkeys(named):
                named_sites.setdefault(name, []).append(module.ops[op_id])
        self.named_sites = named_sites
        """Function name -> the ops that name it (the inverse of `named_functions`)."""
        self.effect_ops = effect_ops
        self.returns: dict[str, list[Returned]] = {}
        """Function name -> its return ops (in XLA's own HLO form, its ROOT)."""
        self.function_of_op: dict[int, str] = {}
        """func.func op id -> function name."""
        for name, function in module.functions.items():
            self.function_of_op[function.op.id] = name
            self.returns[name] = _returns(function.op)
        self.effectful = self._effectful_functions()
        """Functions with side effects, directly or through the functions they call."""

    def _effectful_functions(self) -> set[str]:
        effectful: set[str] = set()
        stack = [op.function for op in self.effect_ops if op.function is not None]
        while stack:
            name = stack.pop()
            if name in effectful:
                continue
            effectful.add(name)
            for call in self.callers(name):
                if call.function is not None and call.function not in effectful:
                    stack.append(call.function)
        return effectful

    def callers(self, name: str) -> list[Op]:
        """The ops that run function `name`: its `func.call`s and the ops that name
        it (a custom call's `called_computations`, XLA's fusion, while, reduce ...)."""
        return [*self.call_sites.get(name, ()), *self.named_sites.get(name, ())]


def call_sites(module: Module) -> dict[str, list[Op]]:
    """Callee name -> the `func.call` ops that call it, in module order (what
    `LivenessIndex.call_sites` holds, without the rest of the index)."""
    sites: dict[str, list[Op]] = {}
    ops = module.ops
    # Op names are interned: one C-level pass compares them all.
    for op in compress(ops, map("func.call".__eq__, map(attrgetter("name"), ops))):
        names = op.references("callee")
        if names:
            sites.setdefault(names[0], []).append(op)
    return sites


@dataclasses.dataclass(frozen=True)
class Root:
    """The ROOT of a computation in XLA's own HLO form, which has no return op: its
    function's last op (`hloscope.ir.hlo_native` puts the ROOT there), whose result
    the function returns."""

    operands: tuple[int, ...]
    """The values the function returns: the ROOT instruction's result."""


Returned = Op | Root


def _returns(function_op: Op) -> list[Returned]:
    """A function's return ops; for XLA's own HLO form, which has none, its ROOT."""
    found: list[Returned] = list(_terminators(function_op))
    if not found and function_op.regions and function_op.regions[0].blocks:
        body = function_op.regions[0].blocks[0].ops
        if body:
            found.append(Root(body[-1].results))
    return found


def _terminators(op: Op) -> Iterable[Op]:
    for region in op.regions:
        for block in region.blocks:
            if block.ops and block.ops[-1].is_terminator:
                yield block.ops[-1]


def analyze_liveness(
    module: Module,
    *,
    intrinsic: bool = False,
    roots: Sequence[str] | None = None,
    index: LivenessIndex | None = None,
) -> Liveness:
    """Backward liveness of every value of `module`.

    With `intrinsic`, every function's results are roots, so each function's
    parameters are judged by whether they reach that function's own results (what a
    caller passing all arguments sees). Otherwise the roots are the results of
    `roots` (default: the public functions, or the entry when none is public).
    """
    if index is None:
        index = LivenessIndex(module)
    ops = module.ops
    functions = module.functions
    value_owner = module.value_owner
    slot = index.slot
    region_of = index.region
    kinds = index.kinds
    returns = index.returns
    live = bytearray(len(module.value_types))
    executed = bytearray(len(ops))
    live_results: dict[str, set[int]] = {}
    live_params: dict[str, set[int]] = {}
    pending: list[int] = []
    push = pending.append

    def mark(value: int) -> None:
        if value >= 0 and not live[value]:
            live[value] = 1
            push(value)

    def mark_all(values: Iterable[int]) -> None:
        for value in values:
            if value >= 0 and not live[value]:
                live[value] = 1
                push(value)

    def need_result(function: str, i: int) -> None:
        seen = live_results.get(function)
        if seen is None:
            seen = live_results[function] = set()
        elif i in seen:
            return
        seen.add(i)
        for ret in returns.get(function, ()):
            if i < len(ret.operands):
                mark(ret.operands[i])

    def run(op: Op) -> None:
        """`op` runs and something it does is needed: what that requires beyond
        its needed results."""
        if executed[op.id]:
            return
        executed[op.id] = 1
        kind = kinds[op.id]
        if kind in (GENERIC, IDENTITY, GET_TUPLE_ELEMENT):
            mark_all(op.operands)
            if op.regions:
                for term in _terminators(op):
                    mark_all(term.operands)
            # Functions an op names (custom_call called_computations, async starts):
            # all their results are needed.
            for target in index.named_functions.get(op.id, ()):
                for ret in returns.get(target, ()):
                    for i in range(len(ret.operands)):
                        need_result(target, i)
        elif kind == WHILE:
            for term in _terminators_of_region(op, 0):
                mark_all(term.operands)
        elif kind == BRANCH:
            mark_all(op.operands)
        elif kind == CALL:
            callee = index.callee.get(op.id)
            if callee is None or callee not in functions or not returns.get(callee):
                mark_all(op.operands)  # a declaration: assume it reads everything
                return
            for k in live_params.get(callee, ()):
                if k < len(op.operands):
                    mark(op.operands[k])
        # PASS_THROUGH and IDENTITY: what runs inside is needed only through results.

    def run_with_ancestors(op: Op) -> None:
        run(op)
        parent = op.parent
        while parent is not None and parent.name != "func.func" and not executed[parent.id]:
            run(parent)
            parent = parent.parent

    def result_needed(op: Op, i: int) -> None:
        kind = kinds[op.id]
        if kind == GENERIC:
            run(op)
        elif kind == WHILE:
            run(op)
            if i < len(op.operands):
                mark(op.operands[i])
            for term in _terminators_of_region(op, 1):
                if i < len(term.operands):
                    mark(term.operands[i])
        elif kind == BRANCH:
            run(op)
            for term in _terminators(op):
                if i < len(term.operands):
                    mark(term.operands[i])
        elif kind == CALL:
            run(op)
            target = index.callee.get(op.id)
            if target is not None and returns.get(target):
                need_result(target, i)
        elif kind == PASS_THROUGH:
            for term in _terminators(op):
                if i < len(term.operands):
                    mark(term.operands[i])
        elif kind == IDENTITY and len(op.operands) == len(op.results):
            mark(op.operands[i])
        elif kind == GET_TUPLE_ELEMENT and len(op.operands) == 1:
            source = module.defining_op(op.operands[0])
            element = op.tuple_index
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

    def argument_needed(op: Op, j: int) -> None:
        kind = kinds[op.id]
        if op.name == "func.func":
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
        elif kind == WHILE:
            if j < len(op.results):
                mark(op.results[j])  # the loop-carried value j is needed
        elif kind == PASS_THROUGH:
            if j < len(op.operands):
                mark(op.operands[j])
        else:
            run(op)

    # Roots: results of the public (or all) functions, and side effects.
    if intrinsic:
        root_names = list(functions)
    elif roots is not None:
        root_names = list(roots)
    else:
        root_names = [name for name, f in functions.items() if f.visibility == "public"] or (
            [module.entry.name] if module.entry is not None else []
        )
    for name in root_names:
        function = functions.get(name)
        if function is None or function.is_declaration:
            continue
        for i in range(len(function.results)):
            need_result(name, i)
    for op in index.effect_ops:
        run_with_ancestors(op)
    for name in index.effectful:
        for call in index.callers(name):
            run_with_ancestors(call)

    while pending:
        value = pending.pop()
        owner = value_owner[value]
        if owner < 0:
            continue
        if region_of[value] < 0:
            result_needed(ops[owner], slot[value])
        else:
            argument_needed(ops[owner], slot[value])

    return Liveness(
        live=bytes(live),
        effectful_functions=frozenset(index.effectful),
        live_parameters=MappingProxyType(
            {name: frozenset(params) for name, params in live_params.items()}
        ),
        intrinsic=intrinsic,
    )


_FOLLOWED_KINDS: dict[str, int] = {**_KINDS, "func.func": GENERIC}


@dataclasses.dataclass(frozen=True)
class ArgumentLiveness:
    """How a function's arguments are read, as `analyze_liveness` judges them, found
    without it (`argument_liveness`)."""

    uses: Mapping[int, int]
    """Argument value -> operands of the function's ops that are that argument."""
    live: frozenset[int]
    """The argument values that can contribute to the function's results."""


def entry_arguments(module: Module) -> ArgumentLiveness | None:
    """`argument_liveness` of the entry, where the entry is a root of the program
    (what `analyze_liveness(module)` judges); None where the walk does not settle it."""
    entry = module.entry
    if entry is None or entry.is_declaration:
        return None
    if entry.visibility != "public" and any(
        f.visibility == "public" for f in module.functions.values()
    ):
        return None  # not a root: only what public functions call is live
    return argument_liveness(module, [entry])


def argument_liveness(
    module: Module,
    roots: Sequence[Function],
    sites: Mapping[str, Sequence[Op]] | None = None,
) -> ArgumentLiveness | None:
    """Uses and liveness of the arguments of the functions `roots`, their results
    taken as roots, from one backward walk from those results; None where the walk
    does not settle them (ask `analyze_liveness`).

    The walk follows the worklist's rules from those results alone (an op is run
    once, a value of a loop, a call, a branch, a tuple ... is followed by its own
    rule, into the functions called), so every value it reaches is live whatever
    else the module holds: other roots and side effects only add to what is live.
    When it reaches every argument that some op reads, it has settled them all (an
    argument no op reads is never live). When every op it reaches is an ordinary one
    and it reaches every op of the functions, it has seen each operand once, which
    counts the uses; otherwise one pass over the functions' operands counts them.
    Its cost is one step per operand it reaches. `sites` are the module's
    `call_sites`, where the caller has them."""
    ops = module.ops
    functions = module.functions
    owner = module.value_owner
    # Per op: 1 run (an ordinary op) or reached (a terminator), 2 holds arguments
    # (a function op; in XLA's own HLO form each `parameter` instruction), 3 an op
    # with a rule of its own, followed per value.
    state = bytearray(len(ops))
    counts: dict[int, int] = {}
    stack: list[int] = []
    live_results: dict[str, set[int]] = {}
    for function in roots:
        if function.is_declaration:
            return None
        function_op = function.op
        first, end = function_op.id, function_op.end
        for argument in function.arguments:
            value = argument.value
            if value < 0:
                continue
            counts[value] = 0
            holder = owner[value]
            if not first <= holder < end:
                return None
            if holder != first and (ops[holder].operands or ops[holder].regions):
                return None
            state[holder] = 2
        returns = list(_terminators(function_op))
        if returns:
            live_results[function.name] = set(range(len(function.results)))
            for ret in returns:
                # Only the operands the function declares results for are roots.
                if len(ret.operands) > len(function.results):
                    return None
                state[ret.id] = 1
                stack.extend(ret.operands)
        else:
            # XLA's own HLO form: no return op; the root is the last instruction.
            instructions = function_op.regions[0].blocks[0].ops
            if instructions:
                if any(value in counts for value in instructions[-1].results):
                    return None  # an argument returned as it is: a root no op reads
                stack.extend(instructions[-1].results)

    live = bytearray(len(module.value_types))  # values of ops with rules of their own
    executed = bytearray(len(ops))  # those ops run (as the worklist's `executed`)
    live_params: dict[str, set[int]] = {}
    returns_of: dict[str, list[Op]] = {}
    function_of_op: dict[int, str] = {}
    # A root's argument, once needed, needs what the root's executed call sites pass
    # it: with several roots, one may call another.
    follow_arguments = len(roots) > 1
    pop = stack.pop
    push = stack.extend
    mark = stack.append
    # Op names with a rule of their own (`func.func`: its block arguments are
    # parameters); any other op is an ordinary one.
    kind_of = _FOLLOWED_KINDS.get

    def terminators(name: str) -> list[Op]:
        found = returns_of.get(name)
        if found is None:
            target = functions.get(name)
            found = returns_of[name] = list(_terminators(target.op)) if target else []
        return found

    def callee(op: Op) -> str | None:
        names = op.references("callee")
        return names[0] if names else None

    def need_result(name: str, i: int) -> None:
        needed = live_results.setdefault(name, set())
        if i not in needed:
            needed.add(i)
            for ret in terminators(name):
                if i < len(ret.operands):
                    mark(ret.operands[i])

    def run(op: Op, kind: int) -> None:
        if executed[op.id]:
            return
        executed[op.id] = 1
        if kind in (IDENTITY, GET_TUPLE_ELEMENT):
            push(op.operands)
            for term in _terminators(op):
                push(term.operands)
        elif kind == WHILE:
            for term in _terminators_of_region(op, 0):
                push(term.operands)
        elif kind == BRANCH:
            push(op.operands)
        elif kind == CALL:
            target = callee(op)
            if target is None or target not in functions or not terminators(target):
                push(op.operands)  # a declaration: assume it reads everything
                return
            for k in live_params.get(target, ()):
                if k < len(op.operands):
                    mark(op.operands[k])

    def result_needed(op: Op, i: int, kind: int) -> None:
        if kind == WHILE:
            run(op, kind)
            if i < len(op.operands):
                mark(op.operands[i])
            for term in _terminators_of_region(op, 1):
                if i < len(term.operands):
                    mark(term.operands[i])
        elif kind == BRANCH:
            run(op, kind)
            for term in _terminators(op):
                if i < len(term.operands):
                    mark(term.operands[i])
        elif kind == CALL:
            run(op, kind)
            target = callee(op)
            if target is not None and terminators(target):
                need_result(target, i)
        elif kind == PASS_THROUGH:
            for term in _terminators(op):
                if i < len(term.operands):
                    mark(term.operands[i])
        elif kind == IDENTITY and len(op.operands) == len(op.results):
            mark(op.operands[i])
        elif kind == GET_TUPLE_ELEMENT and len(op.operands) == 1:
            source = module.defining_op(op.operands[0])
            element = op.tuple_index
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
            run(op, kind)

    def argument_needed(op: Op, j: int, kind: int) -> None:
        if op.name == "func.func":
            nonlocal sites
            if not function_of_op:
                function_of_op.update((f.op.id, name) for name, f in functions.items())
                if sites is None:
                    sites = call_sites(module)
            name = function_of_op.get(op.id)
            if name is None:
                return
            params = live_params.setdefault(name, set())
            if j in params:
                return
            params.add(j)
            for call in sites.get(name, ()) if sites is not None else ():
                if executed[call.id] and j < len(call.operands):
                    mark(call.operands[j])
        elif kind == WHILE:
            if j < len(op.results):
                mark(op.results[j])
        elif kind == PASS_THROUGH:
            if j < len(op.operands):
                mark(op.operands[j])
        else:
            run(op, kind)

    ordinary = True  # every op reached so far is an ordinary one
    try:
        while stack:
            value = pop()
            if value < 0:
                continue
            index = owner[value]
            if index < 0:
                continue
            held = state[index]
            if held:
                if held == 1:
                    continue
                if held == 2:
                    count = counts.get(value)
                    if count is not None:
                        counts[value] = count + 1
                    if not follow_arguments or live[value] or ops[index].name != "func.func":
                        continue
            op = ops[index]
            kind = kind_of(op.name)
            if kind is None:
                # An ordinary op: run it once, everything it reads is needed.
                state[index] = 1
                push(op.operands)
                if op.regions:
                    for region in op.regions:
                        for block in region.blocks:
                            if block.ops:
                                last = block.ops[-1]
                                if last.is_terminator and not state[last.id]:
                                    state[last.id] = 1
                                    push(last.operands)
                continue
            ordinary = False
            if live[value]:
                continue
            live[value] = 1
            if not held:
                state[index] = 3
            if value in op.results:
                result_needed(op, op.results.index(value), kind)
                continue
            for region in op.regions:
                for block in region.blocks:
                    if value in block.arguments:
                        argument_needed(op, block.arguments.index(value), kind)
    except IndexError:
        return None  # a value or an op out of place: malformed, left to the worklist

    if ordinary and all(state.find(0, f.op.id + 1, f.op.end) < 0 for f in roots):
        uses = counts  # every operand of every op of the functions, seen once
    else:
        read = Counter(
            chain.from_iterable(
                map(
                    attrgetter("operands"),
                    chain.from_iterable(module.function_ops(f) for f in roots),
                )
            )
        )
        uses = {value: read[value] for value in counts}
        if any(uses[value] and not counts[value] for value in counts):
            return None  # read, but not reached from the results: the worklist decides
    return ArgumentLiveness(
        uses=MappingProxyType(uses),
        live=frozenset(value for value, count in uses.items() if count),
    )


def _terminators_of_region(op: Op, region: int) -> Iterable[Op]:
    if region < len(op.regions):
        for block in op.regions[region].blocks:
            if block.ops and block.ops[-1].is_terminator:
                yield block.ops[-1]

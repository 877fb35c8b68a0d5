"""The shape of a module: its functions, who calls whom, and which ops it holds.

Nested `jax.jit`s lower to private functions reached by `func.call`; XLA's
computations reach each other through `called_computations`, `to_apply` and the
like. The call graph is read from those references. Ops are counted per function
(nested regions included, callees not) and per op kind over the functions
reachable from the module's roots (its public functions), so that the
`fused_computation` copies that XLA's HLO-to-MLIR conversion leaves beside the
`mhlo.fusion` regions are not counted twice.

One rule for both forms of an optimized module: a computation an instruction holds
is part of that instruction, not a function it calls. Converted to MLIR, a fusion's
fused computation, a reduction's `to_apply` (reduce, all-reduce, reduce-scatter,
reduce-window, scatter, select-and-scatter, sort, map), a while's body and condition
and a conditional's branches are regions of the op (the converter also leaves a
private copy of each as a function, called by no one). XLA's own form names them
(`calls`, `to_apply`, `body`, `condition`, `branch_computations`: `held_computations`),
and they are read as the converted form holds them: their ops are counted in the
function holding the instruction, they are no calls (`op_callees` leaves them out
but with `fused`), and a report that names where an op is names that function
(`holding_function`). Only a `call`'s `to_apply` and an async start's `calls` are
calls, as `func.call` and `called_computation` are once converted.

What XLA's converter adds of its own (`Module.conversion_artefacts`: a copy-start's
`copy_` function, the collective an `async_start` wraps, a convert it puts before a
convolution) is no op and no function of the program (`program_functions`), and the
converted form's async wrapper counts as the instruction it is (`Module.shown_name`:
`hlo.copy-start`), so that both forms give one count.

Ops are counted by name, and only the ops whose attributes can name a function are
read one by one: one pass over the op names and one over their attribute names
(`scan_ops`, in C) find them. The scan also serves placement, which reads the ops
whose attributes place, shard or lay them out; it is kept with the module
(`Module.derived`), so that the analyses of one module make it once.

XLA clones a computation per call site (`remainder_1.9915`, `remainder_1.9533`, ...):
functions whose names differ only by those numeric suffixes and whose bodies are the
same form a `FunctionGroup`, so a listing can show one row with its count.
"""

from __future__ import annotations

import dataclasses
import re
from bisect import bisect_left
from collections import Counter
from collections.abc import Mapping, Sequence
from itertools import compress
from operator import attrgetter, not_
from types import MappingProxyType

from hloscope.ir.model import (
    ASYNC_WRAPPERS,
    MEMORY_SPACES_ATTRIBUTE,
    Function,
    Module,
    Op,
    is_computation,
)

# Attributes whose value names other functions.
CALL_ATTRIBUTES = (
    "callee",
    "called_computations",
    "called_computation",
    "decomposition",
    "to_apply",
    "body",
    "condition",
    "branch_computations",
)


@dataclasses.dataclass(frozen=True)
class Call:
    """Calls from one function to another."""

    callee: str
    count: int
    """Number of call sites."""


@dataclasses.dataclass(frozen=True)
class FunctionInfo:
    """One function of the module."""

    name: str
    visibility: str
    """`public` or `private`."""
    ops: int
    """Ops in its body, nested regions included, calls not followed; terminators
    (`return`) are not counted."""
    parameters: int
    results: int
    calls: tuple[Call, ...]
    """Functions it calls, with the number of call sites, in order of first call."""
    called_by: tuple[str, ...]
    reachable: bool
    """Whether a public function reaches it through calls."""
    inlined_ops: int
    """Ops once every call is inlined, as XLA sees the function (nested jits are
    inlined into the outer one)."""
    op_counts: Mapping[str, int]
    """Op kinds in its body, most frequent first."""


@dataclasses.dataclass(frozen=True)
class FunctionGroup:
    """Functions XLA cloned from one: the same name but for numeric suffixes, and the
    same signature and body."""

    name: str
    """The name without XLA's suffixes (`remainder_1`); its first member's
    (`fused_computation.2`) where that names another function or group."""
    functions: tuple[str, ...]
    """Its members, in module order (two or more)."""


@dataclasses.dataclass(frozen=True)
class Structure:
    """Functions, call graph and op counts of a module."""

    module: str | None
    """The module's name (`jit_f`)."""
    entry: str | None
    """The entry function (`main`)."""
    functions: tuple[FunctionInfo, ...]
    """In module order."""
    op_counts: Mapping[str, int]
    """Op kinds over the reachable functions, most frequent first."""
    total_ops: int
    """Ops in the reachable functions."""
    all_ops: int
    """Every op in the module, unreachable functions and terminators included."""
    dialects: Mapping[str, int]
    """Ops per dialect over the reachable functions."""
    call_depth: int
    """Longest chain of calls from a public function (0: no calls)."""
    groups: tuple[FunctionGroup, ...] = ()
    """Functions XLA cloned per call site, in module order of their first member."""

    def function(self, name: str) -> FunctionInfo | None:
        return next((f for f in self.functions if f.name == name), None)

    def group_of(self, name: str) -> FunctionGroup | None:
        """The clone group `name` belongs to, or None when it stands alone."""
        return next((g for g in self.groups if name in g.functions), None)


def _sorted_counts(counter: Counter[str]) -> Mapping[str, int]:
    return MappingProxyType(dict(sorted(counter.items(), key=lambda kv: (-kv[1], kv[0]))))


_CALL_KEYS = frozenset(CALL_ATTRIBUTES)


def op_callees(op: Op, functions: Mapping[str, Function], *, fused: bool = False) -> list[str]:
    """The functions of `functions` an op calls: a call's callee, a custom call's
    called computations, a composite's decomposition, and in XLA's own form (a module
    whose MLIR conversion failed) a `call`'s `to_apply` and an async-start's `calls`.
    With `fused`, also the computations an instruction holds there
    (`held_computations`: the converted form's regions), which run where it runs."""
    attributes = op.attributes
    if not attributes:
        return []
    found: list[str] = []
    skip_held = not fused and op.name.startswith("hlo.") and op.name != "hlo.call"
    if not _CALL_KEYS.isdisjoint(attributes):
        for key in CALL_ATTRIBUTES:
            if skip_held and key in _HELD_KEYS:
                continue
            text = attributes.get(key)
            if text is not None and "@" in text:
                found.extend(name for name in op.references(key) if name in functions)
    if "calls" in attributes and op.name.startswith("hlo.") and (fused or op.name not in _FUSIONS):
        # XLA's own form: an async-start's `calls` is a call, as the converted form's
        # `called_computation` is; a fusion's only with `fused`.
        found.extend(n for n in op.hlo_calls if n in functions)
    return found


def held_computations(op: Op, functions: Mapping[str, Function]) -> list[str]:
    """The computations of `functions` an instruction of XLA's own form holds, which
    the converted form makes regions of the op (module doc): a fusion's `calls`, a
    reduction's `to_apply` (any instruction's but a `call`'s), a while's `body` and
    `condition`, a conditional's `branch_computations`. Empty for any other op."""
    attributes = op.attributes
    if not attributes or not op.name.startswith("hlo.") or op.name == "hlo.call":
        return []
    found: list[str] = []
    if op.name in _FUSIONS and "calls" in attributes:
        found.extend(n for n in op.hlo_calls if n in functions)
    for key in _HELD_ATTRIBUTES:
        text = attributes.get(key)
        if text is not None and "@" in text:
            found.extend(name for name in op.references(key) if name in functions)
    return found


_HELD_ATTRIBUTES = ("to_apply", "condition", "body", "branch_computations")
_HELD_KEYS = frozenset(_HELD_ATTRIBUTES)
"""The attributes by which XLA's own form names a computation its op holds (a
region of the op once converted), in the order of those regions (a while's condition
first)."""

_FUSIONS = frozenset(("hlo.fusion", "hlo.fusion-start"))
"""XLA's own form's fusions: a fusion, and one started asynchronously."""


def counted_ops(module: Module, functions: Sequence[str]) -> int:
    """The ops that compute in `functions` (names, each once), with a computation an
    instruction of XLA's own form holds counted once per instruction holding it among
    them, as the converted form's regions hold a copy each (a reducer two reduces
    apply): the total either form gives."""
    scan = scan_ops(module)
    table = module.functions
    ranges = sorted((table[name].op.id + 1, table[name].op.end) for name in functions)
    total = scan.computing(ranges)
    holders: dict[str, list[str]] = {}
    for name in functions:
        function = table[name]
        for op in scan.keyed_within(function.op.id + 1, function.op.end):
            for held in held_computations(op, table):
                holders.setdefault(held, []).append(name)
    runs: dict[str, int] = {}

    def copies(name: str, active: frozenset[str]) -> int:
        """How many copies of `name` the converted form has: 1, or for a held
        computation, one per copy of each instruction holding it."""
        if name not in holders:
            return 1
        if name not in runs:
            runs[name] = sum(copies(h, active | {name}) for h in holders[name] if h not in active)
        return runs[name]

    counted = frozenset(functions)
    for name in holders:
        extra = copies(name, frozenset()) - 1
        if extra > 0 and name in counted:
            total += extra * ops_inside(module, table[name].op)
    return total


def holding_function(module: Module, name: str) -> str:
    """The function whose ops hold computation `name` (module doc): in XLA's own form,
    the function of the instruction that holds it (`held_computations`), through every
    holder to one that is not held; `name` itself for any other function, and in the
    converted form, whose held computations are regions."""
    held = module.derived.get(_HOLDERS)
    if not isinstance(held, dict):
        held = module.derived[_HOLDERS] = _holders(module)
    seen: set[str] = set()
    while name in held and name not in seen:
        seen.add(name)
        name = held[name]
    return name


_HOLDERS = "structure.holders"


def _holders(module: Module) -> dict[str, str]:
    """Computation -> the function of the first instruction holding it."""
    functions = module.functions
    holders: dict[str, str] = {}
    for op in scan_ops(module).keyed:
        if op.function is None:
            continue
        for name in held_computations(op, functions):
            if name != op.function:
                holders.setdefault(name, op.function)
    return holders


def program_functions(module: Module) -> Mapping[str, Function]:
    """The module's functions but those the conversion made of an async instruction
    (`Module.conversion_artefacts`: a copy-start's `copy_`), which XLA's module has no
    computation for: the functions every listing and call graph reads."""
    made = module.conversion_artefacts
    if not made:
        return module.functions
    functions = module.derived.get(_PROGRAM_FUNCTIONS)
    if functions is None:
        functions = module.derived[_PROGRAM_FUNCTIONS] = MappingProxyType(
            {name: f for name, f in module.functions.items() if f.op.id not in made}
        )
    return functions  # type: ignore[return-value]


_PROGRAM_FUNCTIONS = "structure.program_functions"


def function_calls(module: Module, function: Function) -> list[tuple[str, int]]:
    """(callee, call sites) for every function `function` references, in order of
    first call in program order (`Module.program_order`). Only the ops whose
    attributes can name a function are read (`scan_ops`)."""
    counts: dict[str, int] = {}
    names = program_functions(module)
    keyed = scan_ops(module).keyed_within(function.op.id + 1, function.op.end)
    for op in module.program_order(keyed):
        for callee in op_callees(op, names):
            counts[callee] = counts.get(callee, 0) + 1
    return list(counts.items())


# XLA's suffixes: a unique id (`.9915`), repeated when a clone is cloned again, and
# `.clone` (`compare_greater_than.6.1251.clone`).
_SUFFIXES = r"(?:\.(?:\d+|clone))+"
CLONE_SUFFIX = re.compile(_SUFFIXES + "$")


# The same suffixes on the functions an op names (`@region_0.3.clone`).
CALLED_SUFFIX = re.compile(_SUFFIXES + r"\b")


def clone_base(name: str) -> str:
    """`remainder_1.9915` → `remainder_1`, `compare.6.1251.clone` → `compare`: the
    name without XLA's suffixes."""
    return CLONE_SUFFIX.sub("", name) or name


def _body_key(module: Module, function: Function) -> tuple[object, ...]:
    """What two clones share: argument and result types, and every op with its
    attributes, the functions it names read without their suffixes. XLA's own form's
    parameters are the arguments, by type: the memory space an argument arrives in is
    the caller's, and the converted form's arguments have none."""
    ops = []
    for op in module.function_ops(function):
        if op.name == "hlo.parameter":
            continue
        attributes = tuple(
            sorted(
                (key, CALLED_SUFFIX.sub("", text) if key in _CALL_KEYS else text)
                for key, text in op.attributes.items()
            )
        )
        ops.append((op.name, len(op.operands), len(op.results), attributes))
    return (
        tuple(a.type for a in function.arguments),
        tuple(r.type for r in function.results),
        tuple(ops),
    )


def function_groups(module: Module) -> tuple[FunctionGroup, ...]:
    """The functions XLA cloned per call site: same base name, same body."""
    functions = program_functions(module)
    candidates: dict[str, list[Function]] = {}
    for name, function in functions.items():
        candidates.setdefault(clone_base(name), []).append(function)
    groups: list[FunctionGroup] = []
    for base, members in candidates.items():
        if len(members) < 2:
            continue
        by_body: dict[tuple[object, ...], list[str]] = {}
        for function in members:
            by_body.setdefault(_body_key(module, function), []).append(function.name)
        named = False
        for names in by_body.values():
            if len(names) < 2:
                continue
            # The base name where it names no other function and no other group.
            taken = named or (base in functions and base not in names)
            groups.append(FunctionGroup(names[0] if taken else base, tuple(names)))
            named = named or not taken
    order = {name: index for index, name in enumerate(functions)}
    return tuple(sorted(groups, key=lambda g: min(order[n] for n in g.functions)))


# Attributes the shared scan of ops looks for: those through which an op names
# functions (`calls`: a fusion in XLA's own form), and those placement reads
# (frontend attributes, where compute-type marks live; shardings; HLO layouts and, in
# XLA's own form, memory spaces).
SCANNED_ATTRIBUTES = frozenset(
    {
        *CALL_ATTRIBUTES,
        "calls",
        "mhlo.frontend_attributes",
        "frontend_attributes",
        "sdy.sharding",
        "mhlo.sharding",
        "sharding",
        "xla_shape",
        MEMORY_SPACES_ATTRIBUTE,
    }
)


class OpScan:
    """What one pass over a module's op names and one over their attribute names (in
    C) find (`scan_ops`): enough to count ops by name, and to read one by one only
    the ops whose attributes can name a function, place it, shard it or lay it out.
    Whether an op computes depends on its name alone, so it is asked once per name."""

    def __init__(self, module: Module) -> None:
        ops = module.ops
        names = list(map(attrgetter("name"), ops))
        self.names: Sequence[str] = names
        """Op name by op id."""
        self.counts: Mapping[str, int] = Counter(names)
        """Ops per name."""
        self.not_computing = frozenset(
            name for name in self.counts if not is_computation(ops[names.index(name)])
        )
        """Names of the ops that do not compute (terminators, functions)."""
        keyed = compress(
            ops, map(not_, map(SCANNED_ATTRIBUTES.isdisjoint, map(attrgetter("attributes"), ops)))
        )
        self.keyed: Sequence[Op] = list(keyed)
        """The ops with one of `SCANNED_ATTRIBUTES`, in module order."""
        self._keyed_ids = [op.id for op in self.keyed]
        self._made = [
            i for i in sorted(module.conversion_artefacts) if names[i] not in self.not_computing
        ]
        """Ids of the ops that would compute but that the conversion made (the model's
        `conversion_artefacts`): no ops of the program, counted nowhere."""
        wrappers = [name for name in self.counts if name.partition(".")[2] in ASYNC_WRAPPERS]
        shown = (
            (op.id, op.name, module.shown_name(op))
            for op in compress(ops, map(frozenset(wrappers).__contains__, names))
        )
        self._shown = [entry for entry in shown if entry[1] != entry[2]] if wrappers else []
        """(id, name, shown name) of the converted form's async wrappers, counted as the
        instruction each is (`Module.shown_name`: `hlo.copy-start`), as XLA's form has it."""

    def keyed_within(self, first: int, end: int) -> Sequence[Op]:
        """The ops of `keyed` among ids `first` to `end` (excluded)."""
        ids = self._keyed_ids
        return self.keyed[bisect_left(ids, first) : bisect_left(ids, end)]

    def computing_counts(self, first: int, end: int) -> Counter[str]:
        """The ops that compute among ids `first` to `end` (excluded), by name."""
        names = self.names
        if 2 * (end - first) > len(names):
            # Most of the module: all of it, less what lies outside.
            counter = Counter(self.counts)
            counter.subtract(names[:first])
            counter.subtract(names[end:])
            counter = +counter
        else:
            counter = Counter(names[first:end])
        for name in self.not_computing:
            counter.pop(name, None)
        for index in self._made[bisect_left(self._made, first) : bisect_left(self._made, end)]:
            counter[names[index]] -= 1
        for op_id, name, shown in self._shown:
            if first <= op_id < end:
                counter[name] -= 1
                counter[shown] += 1
        return +counter if self._made or self._shown else counter

    def computing(self, ranges: Sequence[tuple[int, int]]) -> int:
        """Ops that compute among the ids of `ranges` (`first`, `end`; sorted, apart)."""
        total = sum(end - first for first, end in ranges)
        made = self._made
        if made:
            total -= sum(bisect_left(made, end) - bisect_left(made, first) for first, end in ranges)
        not_computing = self.not_computing
        if not not_computing:
            return total
        # Those that do not compute, less the ones outside the ranges (few: the
        # function ops themselves, unreached functions, ops outside functions).
        inside = sum(self.counts[name] for name in not_computing)
        names = self.names
        outside_first = 0
        for first, end in [*ranges, (len(names), len(names))]:
            if first - outside_first == 1:
                inside -= names[outside_first] in not_computing
            elif first > outside_first:
                outside = names[outside_first:first]
                inside -= sum(outside.count(name) for name in not_computing)
            outside_first = end
        return total - inside


def scan_ops(module: Module) -> OpScan:
    """The `OpScan` of `module`, made once for the analyses that ask in turn (`inspect`
    runs structure, params and placement): kept with the module."""
    scan = made_scan(module)
    if scan is None:
        scan = OpScan(module)
        module.derived[_SCAN] = scan
    return scan


def ops_inside(module: Module, op: Op) -> int:
    """The ops inside `op` (a function, or an op with regions) as written, terminators
    left out; a function's count in every view is `function_ops`, which adds, in XLA's
    own form, the computations its instructions hold."""
    return sum(scan_ops(module).computing_counts(op.id + 1, op.end).values())


def function_ops(module: Module, name: str) -> int:
    """The ops of function `name` as `FunctionInfo.ops` counts them: `ops_inside` its
    body and, in XLA's own form, the ops of the computations its instructions hold
    (fused computations, reducers, loop bodies), which the converted form holds in the
    op's regions. One count of a function for every view (the tree, the details pane,
    the Overview)."""
    counted = _calls_and_counts(module)[1].get(name)
    return sum(counted.values()) if counted is not None else 0


def module_op_count(module: Module) -> int:
    """The ops of every function as written, reachable or not: the count shown for a
    whole module (the Overview's `total_ops` counts the reachable functions only, and
    says so)."""
    return sum(ops_inside(module, f.op) for f in module.functions.values())


def made_scan(module: Module) -> OpScan | None:
    """The `OpScan` of `module` where another analysis made it already, else None."""
    scan = module.derived.get(_SCAN)
    return scan if isinstance(scan, OpScan) else None


_SCAN = "structure.op_scan"


def _calls_and_counts(
    module: Module,
) -> tuple[dict[str, list[tuple[str, int]]], dict[str, Counter[str]]]:
    """Per function: `function_calls`, and its ops that compute counted by name; only
    the ops whose attributes can name a function are read one by one. Made once per
    module (`analyze_structure` and `function_ops` read it; neither changes it)."""
    cached = module.derived.get(_CALLS_AND_COUNTS)
    if isinstance(cached, tuple):
        return cached
    found = _count_calls_and_ops(module)
    module.derived[_CALLS_AND_COUNTS] = found
    return found


_CALLS_AND_COUNTS = "structure.calls_and_counts"


def _count_calls_and_ops(
    module: Module,
) -> tuple[dict[str, list[tuple[str, int]]], dict[str, Counter[str]]]:
    scan = scan_ops(module)
    calls: dict[str, list[tuple[str, int]]] = {}
    counts: dict[str, Counter[str]] = {}
    fused: dict[str, list[str]] = {}
    functions = program_functions(module)
    for name, function in functions.items():
        calls[name] = function_calls(module, function)
        counts[name] = scan.computing_counts(function.op.id + 1, function.op.end)
        for op in scan.keyed_within(function.op.id + 1, function.op.end):
            held = held_computations(op, functions)
            if held:
                fused.setdefault(name, []).extend(held)
    if fused:
        # XLA's own form: the ops of a computation an instruction holds (a fused
        # computation, a reducer, a loop's body and condition, a conditional's
        # branches), which the converted form holds in the op's regions, are counted
        # in the function holding the instruction, as nested ops are; the
        # computation is not called.
        own = {name: Counter(counter) for name, counter in counts.items()}
        done: dict[str, Counter[str]] = {}

        def with_fused(name: str, active: frozenset[str]) -> Counter[str]:
            if name in done:
                return done[name]
            total = Counter(own[name])
            for callee in fused.get(name, ()):
                if callee not in active:  # a cycle cannot be: counted once if it were
                    total.update(with_fused(callee, active | {name}))
            done[name] = total
            return total

        for name in fused:
            counts[name] = with_fused(name, frozenset())
    return calls, counts


def analyze_structure(module: Module) -> Structure:
    """Functions, call graph and op counts of `module`."""
    calls, counts = _calls_and_counts(module)

    callers: dict[str, list[str]] = {name: [] for name in program_functions(module)}
    for caller, edges in calls.items():
        for callee, _count in edges:
            if caller not in callers[callee]:
                callers[callee].append(caller)

    roots = [f.name for f in program_functions(module).values() if f.visibility == "public"]
    entry = module.entry
    if not roots and entry is not None:
        roots = [entry.name]
    reachable: set[str] = set()
    stack = list(roots)
    while stack:
        name = stack.pop()
        if name in reachable:
            continue
        reachable.add(name)
        stack.extend(callee for callee, _ in calls.get(name, ()))

    inlined: dict[str, int] = {}
    depth: dict[str, int] = {}

    def inline(name: str, active: frozenset[str]) -> tuple[int, int]:
        if name in inlined:
            return inlined[name], depth[name]
        total = sum(counts[name].values())
        deepest = 0
        for callee, count in calls[name]:
            if callee in active:  # recursion cannot be inlined; count it once
                continue
            callee_ops, callee_depth = inline(callee, active | {name})
            total += count * callee_ops
            deepest = max(deepest, callee_depth + 1)
        inlined[name], depth[name] = total, deepest
        return total, deepest

    for name in program_functions(module):
        inline(name, frozenset())

    reachable_counts: Counter[str] = Counter()
    for name in reachable:
        reachable_counts.update(counts[name])
    dialects: Counter[str] = Counter()
    for op_name, count in reachable_counts.items():
        dialects[op_name.partition(".")[0]] += count

    infos = tuple(
        FunctionInfo(
            name=name,
            visibility=function.visibility,
            ops=sum(counts[name].values()),
            parameters=len(function.arguments),
            results=len(function.results),
            calls=tuple(Call(callee, count) for callee, count in calls[name]),
            called_by=tuple(callers[name]),
            reachable=name in reachable,
            inlined_ops=inlined[name],
            op_counts=_sorted_counts(counts[name]),
        )
        for name, function in program_functions(module).items()
    )
    return Structure(
        module=module.name,
        entry=entry.name if entry is not None else None,
        functions=infos,
        op_counts=_sorted_counts(reachable_counts),
        total_ops=sum(reachable_counts.values()),
        all_ops=len(module.ops),
        dialects=_sorted_counts(dialects),
        call_depth=max((depth[name] for name in roots if name in depth), default=0),
        groups=function_groups(module),
    )

"""How many times an op runs per call of the module: the trip counts of the loops
around it, through the functions that call it.

A loop's trip count is read, never guessed: XLA writes `known_trip_count` in the
`backend_config` of a while instruction of an optimized module on the CPU and GPU
(`Module.backend_configs`); a lowered `stablehlo.while` from `jax.lax.scan` or
`fori_loop`, and the TPU's optimized `while` (whose backend config has no count),
count a carried integer from a constant up to a constant bound by a constant step,
which gives it (`LOOP_CONDITION`: read from the loop's condition, its start and its
step). Any other loop's count is unknown, and so is how often anything inside it runs.

Functions a loop body reaches through fusions (XLA's own form of a module names a
fused computation by `calls`, and the TPU's async collective fusions are such
computations) run as often as the fusion does.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Literal

from hloscope.analyses.structure import op_callees
from hloscope.ir.model import Module, Op

WHILE_OPS = frozenset({"stablehlo.while", "mhlo.while", "hlo.while"})

TripCountSource = Literal["known_trip_count", "loop_condition"]
"""Where a loop's trip count was read: XLA's `known_trip_count` in the while's
backend config, or the loop's own condition (`i < N`), start and step."""
KNOWN_TRIP_COUNT: TripCountSource = "known_trip_count"
LOOP_CONDITION: TripCountSource = "loop_condition"


def known_trip_count(module: Module, op: Op) -> int | None:
    """How many times the while loop `op` runs its body, where XLA or the loop's own
    constants say; None otherwise."""
    found = trip_count(module, op)
    return found[0] if found is not None else None


def trip_count(module: Module, op: Op) -> tuple[int, TripCountSource] | None:
    """How many times the while loop `op` runs its body, and where that was read:
    XLA's `known_trip_count`, else the loop's condition, start and step; None where
    neither says."""
    config = None
    if op.hlo_name is not None and op.hlo_name in module.backend_configs:
        config = module.backend_configs[op.hlo_name]
    elif op.name == "hlo.while":
        config = op.attributes.get("backend_config")
    if config is not None:
        count = _backend_trip_count(config)
        if count is not None:
            return count, KNOWN_TRIP_COUNT
    if op.name == "hlo.while":
        count = _hlo_counted_loop_trips(module, op)
    else:
        count = _counted_loop_trips(module, op)
    return (count, LOOP_CONDITION) if count is not None else None


def _backend_trip_count(config: str) -> int | None:
    """`known_trip_count.n` of a while's backend config (`{"known_trip_count":{"n":"6"}}`)."""
    text = config.strip()
    if text.startswith('"'):
        text = text[1:-1].encode().decode("unicode_escape")
    try:
        parsed = json.loads(text)
    except ValueError:
        return None
    count = parsed.get("known_trip_count", {}) if isinstance(parsed, dict) else {}
    value = count.get("n") if isinstance(count, dict) else None
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


_PASS_THROUGH = frozenset({"copy", "bitcast"})
"""Ops that carry a loop counter unchanged in XLA's optimized form (the TPU copies
it between memory spaces)."""


def _origin(module: Module, value: int) -> int:
    """`value`, or what the copies and bitcasts that define it copy."""
    for _ in range(16):
        op = module.defining_op(value)
        if op is None or op.short_name not in _PASS_THROUGH or len(op.operands) != 1:
            return value
        value = op.operands[0]
    return value


def _through_copies(module: Module, value: int) -> Op | None:
    """The op that defines `value`, looking through copies and bitcasts."""
    return module.defining_op(_origin(module, value))


def _constant(module: Module, value: int) -> int | None:
    op = _through_copies(module, value)
    return op.integer_constant if op is not None and op.short_name == "constant" else None


def _tuple_index_of_parameter(module: Module, value: int) -> int | None:
    """`k` where `value` is element `k` of its computation's tuple parameter (through
    copies); None otherwise."""
    op = _through_copies(module, value)
    if op is None or op.short_name != "get-tuple-element" or len(op.operands) != 1:
        return None
    source = module.defining_op(op.operands[0])
    if source is None or source.short_name != "parameter":
        return None
    return op.tuple_index


def _counted_loop_trips(module: Module, op: Op) -> int | None:
    """The trip count of a `while` whose condition is `i < LIMIT` on a carried value
    `i` that starts at a constant and grows by a constant each iteration (what
    `scan` and `fori_loop` lower to); None for any other loop."""
    if op.name not in WHILE_OPS or len(op.regions) != 2:
        return None
    cond, body = op.regions
    if len(cond.blocks) != 1 or len(body.blocks) != 1:
        return None
    cond_block, body_block = cond.blocks[0], body.blocks[0]
    compares = [o for o in cond_block.ops if o.short_name == "compare"]
    if len(compares) != 1 or len(compares[0].operands) != 2:
        return None
    compare = compares[0]
    if "LT" not in compare.attributes.get("comparison_direction", ""):
        return None
    counter, bound = (_origin(module, value) for value in compare.operands)
    if counter not in cond_block.arguments:
        return None
    index = cond_block.arguments.index(counter)
    limit = _constant(module, bound)
    start = _constant(module, op.operands[index]) if index < len(op.operands) else None
    terminator = body_block.ops[-1] if body_block.ops else None
    if limit is None or start is None or terminator is None:
        return None
    if index >= len(terminator.operands) or index >= len(body_block.arguments):
        return None
    step_op = _through_copies(module, terminator.operands[index])
    if step_op is None or step_op.short_name != "add" or len(step_op.operands) != 2:
        return None
    carried = body_block.arguments[index]
    first, second = (_origin(module, value) for value in step_op.operands)
    if carried not in (first, second):
        return None
    step = _constant(module, second if first == carried else first)
    if step is None or step <= 0:
        return None
    return max(0, math.ceil((limit - start) / step))


def _hlo_counted_loop_trips(module: Module, op: Op) -> int | None:
    """The trip count of a while of XLA's own form whose condition computation is
    `element k of the carried tuple < LIMIT`, where element `k` of the initial tuple
    is a constant and the body adds a constant to it (what `scan` and `fori_loop`
    become); None for any other loop."""
    functions = module.functions
    conditions = [n for n in op.mentioned_names("condition") if n in functions]
    bodies = [n for n in op.mentioned_names("body") if n in functions]
    if len(conditions) != 1 or len(bodies) != 1 or len(op.operands) != 1:
        return None
    condition_ops = module.function_ops(functions[conditions[0]])
    body_ops = module.function_ops(functions[bodies[0]])
    if not condition_ops or not body_ops:
        return None
    compare = condition_ops[-1]
    if compare.short_name != "compare" or len(compare.operands) != 2:
        return None
    direction = compare.attributes.get("comparison_direction", "")
    counter, bound = compare.operands
    if "GT" in direction:  # `LIMIT > i`
        counter, bound = bound, counter
    elif "LT" not in direction:
        return None
    index = _tuple_index_of_parameter(module, counter)
    limit = _constant(module, bound)
    initial = module.defining_op(op.operands[0])
    root = body_ops[-1]
    if index is None or limit is None or initial is None or initial.short_name != "tuple":
        return None
    if root.short_name != "tuple" or index >= len(root.operands) or index >= len(initial.operands):
        return None
    start = _constant(module, initial.operands[index])
    step_op = _through_copies(module, root.operands[index])
    if start is None or step_op is None or step_op.short_name != "add":
        return None
    if len(step_op.operands) != 2:
        return None
    first, second = step_op.operands
    if _tuple_index_of_parameter(module, first) == index:
        step = _constant(module, second)
    elif _tuple_index_of_parameter(module, second) == index:
        step = _constant(module, first)
    else:
        return None
    if step is None or step <= 0:
        return None
    return max(0, math.ceil((limit - start) / step))


class RunsPerCall:
    """How many times each op runs per call of the module's entry function: the trip
    counts of the loops around it, times the runs of the call sites of its function.
    None where a loop's trip count is unknown or the function is not reached from the
    entry."""

    def __init__(self, module: Module, sites: Sequence[Op] | None = None) -> None:
        """`sites`, when given, holds every op of the module that names a function
        (and maybe others), in module order: the only ops read for calls."""
        self.module = module
        self._sites = sites
        self._functions: dict[str, int | None] = {}
        self._loops: dict[int, int | None] = {}
        self._sources: dict[int, TripCountSource | None] = {}
        self._around: dict[str, list[Op]] = {}
        self._callers: dict[str, list[Op]] | None = None

    def of(self, op: Op) -> int | None:
        """Runs of `op` per call of the module."""
        runs = self.function_runs(op.function or "")
        parent = op.parent
        while runs is not None and parent is not None and parent.name != "func.func":
            if parent.name in WHILE_OPS:
                trips = self.trips(parent)
                runs = None if trips is None else runs * trips
            parent = parent.parent
        return runs

    def in_loop(self, op: Op) -> bool:
        """Whether `op` sits inside a loop, directly or through the calls to its function."""
        return self._in_loop(op, frozenset())

    def trips(self, op: Op) -> int | None:
        if op.id not in self._loops:
            found = trip_count(self.module, op)
            self._loops[op.id] = found[0] if found is not None else None
            self._sources[op.id] = found[1] if found is not None else None
        return self._loops[op.id]

    def trip_sources(self, op: Op) -> tuple[TripCountSource, ...]:
        """Where the trip counts of the loops around `op` (through the calls to its
        function) were read, each once; empty where it is in no loop or no count is
        known."""
        loops = [*self._enclosing_loops(op), *self._function_loops(op.function or "")]
        sources: dict[TripCountSource, None] = {}
        for loop in loops:
            self.trips(loop)
            source = self._sources.get(loop.id)
            if source is not None:
                sources[source] = None
        return tuple(sources)

    @staticmethod
    def _enclosing_loops(op: Op) -> list[Op]:
        loops: list[Op] = []
        parent = op.parent
        while parent is not None and parent.name != "func.func":
            if parent.name in WHILE_OPS:
                loops.append(parent)
            parent = parent.parent
        return loops

    def _function_loops(self, name: str, active: frozenset[str] = frozenset()) -> list[Op]:
        """The loops around the call sites of function `name`, through their callers."""
        if name in self._around:
            return self._around[name]
        if name in active:
            return []
        loops: dict[int, Op] = {}
        for site in self.callers().get(name, []):
            if site.name in WHILE_OPS:
                loops[site.id] = site
            for loop in self._enclosing_loops(site):
                loops[loop.id] = loop
            for loop in self._function_loops(site.function or "", active | {name}):
                loops[loop.id] = loop
        self._around[name] = list(loops.values())
        return self._around[name]

    def function_runs(self, name: str, active: frozenset[str] = frozenset()) -> int | None:
        """Runs of function `name` per call of the module: 1 for the entry, else the sum
        over its call sites (a loop's body and condition are called by the loop)."""
        if name in self._functions:
            return self._functions[name]
        entry = self.module.entry
        if entry is not None and name == entry.name:
            return 1
        if name in active:
            return None  # recursion: no count
        total: int | None = 0
        sites = self.callers().get(name, [])
        for site in sites:
            runs = self._site_runs(site, name, active | {name})
            total = None if total is None or runs is None else total + runs
        result = total if sites else None
        self._functions[name] = result
        return result

    def _site_runs(self, site: Op, callee: str, active: frozenset[str]) -> int | None:
        runs = self.function_runs(site.function or "", active)
        parent: Op | None = site
        while runs is not None and parent is not None and parent.name != "func.func":
            # A while names its body (runs each trip) and condition (once more) by
            # attribute, in XLA's own form.
            if parent.name in WHILE_OPS and parent is not site:
                trips = self.trips(parent)
                runs = None if trips is None else runs * trips
            parent = parent.parent
        if runs is not None and site.name in WHILE_OPS:
            trips = self.trips(site)
            if trips is None:
                return None
            runs *= trips + 1 if f"{callee}" in site.mentioned_names("condition") else trips
        return runs

    def _in_loop(self, op: Op, active: frozenset[str]) -> bool:
        parent = op.parent
        while parent is not None and parent.name != "func.func":
            if parent.name in WHILE_OPS:
                return True
            parent = parent.parent
        name = op.function or ""
        if name in active:
            return False
        return any(
            site.name in WHILE_OPS or self._in_loop(site, active | {name})
            for site in self.callers().get(name, [])
        )

    def reached(self) -> frozenset[str]:
        """The functions the entry reaches (itself, what it calls, fused computations
        in XLA's own form): those whose ops the program runs, not the copies a
        conversion left aside."""
        entry = self.module.entry
        return frozenset(self.callers()) | ({entry.name} if entry is not None else set())

    def callers(self) -> dict[str, list[Op]]:
        """The ops naming each function (calls, loops' bodies, reductions' appliers,
        XLA's own form's fusions), in the functions the entry reaches (not in copies
        the conversion left aside)."""
        if self._callers is None:
            names = self.module.functions
            sites: dict[str, list[Op]] = {}
            for op in self.module.ops if self._sites is None else self._sites:
                if op_callees(op, names, fused=True):
                    sites.setdefault(op.function or "", []).append(op)
            callers: dict[str, list[Op]] = {}
            entry = self.module.entry
            seen: set[str] = set()
            stack = [entry.name] if entry is not None else []
            while stack:
                name = stack.pop()
                if name in seen:
                    continue
                seen.add(name)
                for site in sites.get(name, []):
                    for callee in dict.fromkeys(op_callees(site, names, fused=True)):
                        callers.setdefault(callee, []).append(site)
                        stack.append(callee)
            self._callers = callers
        return self._callers

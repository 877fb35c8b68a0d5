"""How many times an op runs per call of the module: the trip counts of the loops
around it, through the functions that call it.

A loop's trip count is read, never guessed: XLA writes `known_trip_count` in the
`backend_config` of a while instruction of an optimized module
(`Module.backend_configs`); a lowered `stablehlo.while` from `jax.lax.scan` or
`fori_loop` counts a carried integer from a constant up to a constant bound by a
constant step, which gives it. Any other loop's count is unknown, and so is how
often anything inside it runs.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence

from hloscope.analyses.structure import op_callees
from hloscope.ir.model import Module, Op

WHILE_OPS = frozenset({"stablehlo.while", "mhlo.while", "hlo.while"})


def known_trip_count(module: Module, op: Op) -> int | None:
    """How many times the while loop `op` runs its body, where XLA or the loop's own
    constants say; None otherwise."""
    if op.hlo_name is not None and op.hlo_name in module.backend_configs:
        return _backend_trip_count(module.backend_configs[op.hlo_name])
    if op.name == "hlo.while":
        return _backend_trip_count(op.attributes.get("backend_config", ""))
    return _counted_loop_trips(module, op)


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


def _constant(module: Module, value: int) -> int | None:
    """The integer a scalar `stablehlo.constant` defines, or None."""
    op = module.defining_op(value)
    if op is None or op.short_name != "constant" or value not in op.results:
        return None
    return op.integer_constant


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
    counter, bound = compare.operands
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
    step_op = module.defining_op(terminator.operands[index])
    if step_op is None or step_op.short_name != "add" or len(step_op.operands) != 2:
        return None
    carried = body_block.arguments[index]
    if carried not in step_op.operands:
        return None
    other = step_op.operands[1] if step_op.operands[0] == carried else step_op.operands[0]
    step = _constant(module, other)
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
            self._loops[op.id] = known_trip_count(self.module, op)
        return self._loops[op.id]

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

    def callers(self) -> dict[str, list[Op]]:
        """The ops naming each function (calls, loops' bodies, reductions' appliers),
        in the functions the entry reaches (not in copies the conversion left aside)."""
        if self._callers is None:
            names = self.module.functions
            sites: dict[str, list[Op]] = {}
            for op in self.module.ops if self._sites is None else self._sites:
                if op_callees(op, names):
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
                    for callee in dict.fromkeys(op_callees(site, names)):
                        callers.setdefault(callee, []).append(site)
                        stack.append(callee)
            self._callers = callers
        return self._callers

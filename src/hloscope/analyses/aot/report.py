"""What aot-check reports: the programs compared, each check and difference, the
results leaf by leaf, and the verdict; with the kinds of checks and how their
sentences are worded."""

from __future__ import annotations

import dataclasses
import functools
from collections import Counter
from collections.abc import Iterable
from typing import Final, Literal

from hloscope.analyses.placement import DEVICE, Placement, analyze_placement
from hloscope.analyses.structure import analyze_structure
from hloscope.ir.model import Module
from hloscope.runs import AotEntry

Verdict = Literal["same", "different"]
SAME: Final = "same"
DIFFERENT: Final = "different"

Kind = Literal["placement", "parameters", "ops", "results", "text"]
"""What a check compares, and so what a difference is in."""
PLACEMENT: Final = "placement"
PARAMETERS: Final = "parameters"
OPS: Final = "ops"
RESULTS: Final = "results"
TEXT: Final = "text"
# Module-level kinds first: the cause of a results difference refers to them.
KINDS: tuple[Kind, ...] = (PLACEMENT, PARAMETERS, OPS, TEXT, RESULTS)

# Ops that only say where other ops are; a jit nested in another module is called.
CALL_OPS = frozenset({"func.call"})
# Ops that compute nothing anywhere: their placement is not compared (JAX marks the
# constants of a function called under compute_on, not those of a jit traced in it).
UNPLACED_OPS = frozenset({"func.call", "stablehlo.constant", "mhlo.constant"})

MAX_LISTED = 6


@dataclasses.dataclass(frozen=True)
class Program:
    """One module a path compiled, as the comparison reads it."""

    name: str
    """The module's name: `jit_f`."""
    module: Module
    text: str
    """The module printed without locations."""

    # Computed once per program: the comparison reads them several times.
    @functools.cached_property
    def op_counts(self) -> Counter[str]:
        """Op kinds of the functions the module runs, each function counted once,
        calls left out."""
        counts = analyze_structure(self.module).op_counts
        return Counter({name: n for name, n in counts.items() if name not in CALL_OPS})

    @functools.cached_property
    def calls(self) -> int:
        """The calls `op_counts` leaves out: with them, the count of the Overview
        (`Structure.total_ops`)."""
        counts = analyze_structure(self.module).op_counts
        return sum(n for name, n in counts.items() if name in CALL_OPS)

    @functools.cached_property
    def placement(self) -> Placement:
        return analyze_placement(self.module)

    @functools.cached_property
    def placed_op_counts(self) -> Counter[tuple[str, str]]:
        """(compute type, op kind) -> ops, for the ops placed elsewhere than the
        device, as the two paths' placements are compared: calls and constants left
        out, which inlining or constant folding moves without moving any work (the
        count shown is `placement`'s, `ProgramSummary.off_device_ops`)."""
        return Counter(
            (p.compute_type, p.op)
            for p in self.placement.placed_ops
            if p.op not in UNPLACED_OPS and p.compute_type != DEVICE
        )


@dataclasses.dataclass(frozen=True)
class Difference:
    """One way the call and the AOT path differ."""

    kind: Kind
    """`results`, `placement`, `parameters`, `ops` or `text`."""
    detail: str
    """What differs, with the numbers."""
    cause: str
    """One sentence on its likely cause."""


@dataclasses.dataclass(frozen=True)
class ResultComparison:
    """One output leaf of the call against the AOT path's."""

    path: str
    """Pytree path in the output: `result`, `result['w']`."""
    call_shape: str | None
    """`f32[8,128]`; None when the call has no such leaf."""
    aot_shape: str | None
    dtype: str | None
    """The NumPy dtype name the tolerance is for (None for non-array leaves)."""
    max_abs_diff: float | None
    """Largest |call - AOT| over the elements; None when not comparable (shapes or
    dtypes differ, non-numeric leaves). NaN in both at the same place counts as 0."""
    rtol: float
    atol: float
    """Elements agree when |call - AOT| <= atol + rtol * max(|call|, |AOT|); both 0
    for integers and booleans (exact)."""
    mismatched: int
    """Elements outside the tolerance (all of them when not comparable)."""
    elements: int
    same: bool


@dataclasses.dataclass(frozen=True)
class ProgramSummary:
    """A module a path compiled, in a few numbers."""

    name: str
    ops: int
    """Ops of its reachable functions, each function once, calls left out."""
    calls: int
    """The calls left out of `ops` (`ops + calls` is the Overview's count)."""
    off_device_ops: int
    """Of `ops + calls`, those placed elsewhere than the device (`host`, GPU streams),
    as `placement` counts them: every op that computes there, constants and the calls
    into a host function included."""
    parameters: int
    """Parameters of its entry function."""


@dataclasses.dataclass(frozen=True)
class Check:
    """One comparison and its outcome."""

    kind: Kind
    compared: bool
    same: bool | None
    """None when not compared."""
    note: str
    """What was compared, or why not."""


@dataclasses.dataclass(frozen=True)
class AotComparison:
    """The direct call against the AOT path."""

    verdict: Verdict
    """`same` or `different`."""
    entry: AotEntry
    """What the AOT path lowered, and why."""
    differences: tuple[Difference, ...]
    checks: tuple[Check, ...]
    """One per kind, in `KINDS` order."""
    results: tuple[ResultComparison, ...]
    call_programs: tuple[ProgramSummary, ...]
    """Every module compiled during the call, in order."""
    counterpart: int | None
    """Index in `call_programs` of the one compared with the AOT module."""
    aot_program: ProgramSummary | None
    aot_run_programs: tuple[ProgramSummary, ...]
    """Modules compiled while the AOT-compiled executable ran."""
    aot_pruned: tuple[str, ...]
    """Arguments the AOT path's jit pruned (no HLO parameter)."""


def changed_kinds(differences: Iterable[Difference]) -> tuple[str, ...]:
    """The kinds that differ, in `KINDS` order."""
    kinds = {d.kind for d in differences}
    return tuple(kind for kind in KINDS if kind in kinds)


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"

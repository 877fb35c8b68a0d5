"""The direct call against the ahead-of-time path: do they compute the same thing?

The same function can compute different things called directly and through
`.lower(...).compile()`: a `compute_on` context entered outside `jax.jit` (the
decorator order) is part of the call but not of what `.lower()` traces, and a
`functools.wraps` wrapper around a jitted function (swapping its arguments, say)
is bypassed when the AOT path takes the inner function's `.lower`. This analysis
compares what the two paths compiled and what they returned, given the modules
each compiled (parsed) and what `hloscope.sources.jax.aot.aot_runs` recorded:

- which program of the call to compare: every module JAX compiled during the call
  is recorded. Modules that the AOT path also compiled while its executable ran
  (host callbacks running JAX code) are paired off first. Of the rest, the one
  named like the AOT module (`jit_f` both: the same jitted function) is the
  call's counterpart; failing that, the only one. The other programs of the call
  are what the AOT path does not run (a wrapper's own ops, run eagerly). When the
  call compiled several programs and none is named like the AOT module (a plain
  function calling two jits, or running op by op), there is no counterpart: the
  call is several XLA programs where the AOT path is one, and placement and op
  counts are compared over all of them together;
- ops: op kinds per module, each function counted once (as it is compiled), calls
  left out, so that a jit nested in the AOT module as a private function compares
  equal to the same jit compiled on its own by the call;
- placement: ops per compute type and op kind (`analyses.placement`), calls left
  out for the same reason;
- parameters: the entry parameters of the counterpart and of the AOT module in
  order (`analyses.params`): count, shapes, used or unused, donation, sharding,
  memory kind; with the AOT lowering, the arguments it pruned;
- text: both modules printed without locations, the module's name and SSA value
  names renumbered in order of appearance; compared only when the counterpart is
  the same jitted function (same module name), since a jit nested in another
  module prints differently;
- results: the output trees, then each leaf's shape, dtype and values, with a
  tolerance by dtype (exact for integers and booleans).

Each difference carries one sentence on its likely cause.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import Any, Final, Literal

import numpy as np

from hloscope.analyses.params import Parameter, ParameterUsage, analyze_params
from hloscope.analyses.placement import DEVICE, Placement, analyze_placement
from hloscope.analyses.structure import analyze_structure
from hloscope.ir.model import Module
from hloscope.sources.stages import AotEntry, AotRuns, ResultLeaf

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
_CALL_OPS = frozenset({"func.call"})
# Ops that compute nothing anywhere: their placement is not compared (JAX marks the
# constants of a function called under compute_on, not those of a jit traced in it).
_UNPLACED_OPS = frozenset({"func.call", "stablehlo.constant", "mhlo.constant"})

# (rtol, atol) by dtype name: a few units in the last place of each format, enough
# for XLA fusing (or not) the same ops; integers and booleans compare exactly.
_TOLERANCES: Mapping[str, tuple[float, float]] = MappingProxyType(
    {
        "float64": (1e-10, 1e-12),
        "complex128": (1e-10, 1e-12),
        "float32": (1e-5, 1e-6),
        "complex64": (1e-5, 1e-6),
        "float16": (2e-3, 1e-3),
        "bfloat16": (1.6e-2, 1e-2),
    }
)
_LOW_PRECISION = (1.25e-1, 6.25e-2)  # float8_*, float6_*, float4_*

MAX_LISTED = 6


# --------------------------------------------------------------------------- reports


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
        return Counter({name: n for name, n in counts.items() if name not in _CALL_OPS})

    @functools.cached_property
    def placement(self) -> Placement:
        return analyze_placement(self.module)

    @functools.cached_property
    def placed_op_counts(self) -> Counter[tuple[str, str]]:
        """(compute type, op kind) -> ops, for the ops placed elsewhere than the
        device; calls and constants left out."""
        return Counter(
            (p.compute_type, p.op)
            for p in self.placement.placed_ops
            if p.op not in _UNPLACED_OPS and p.compute_type != DEVICE
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
    off_device_ops: int
    """Of those, ops placed elsewhere than the device (`host`, GPU streams)."""
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


# --------------------------------------------------------------------------- analysis


def compare_paths(
    runs: AotRuns,
    call: Sequence[Program],
    aot: Program | None,
    aot_run: Sequence[Program] = (),
) -> AotComparison:
    """Compare the call's compiled modules and results (`call`, `runs.call`) with the
    AOT path's (`aot`, `runs.aot`)."""
    entry = runs.entry
    differences: list[Difference] = []
    checks: dict[str, Check] = {}

    call_summaries = tuple(_summary(p) for p in call)
    run_summaries = tuple(_summary(p) for p in aot_run)
    # Modules both paths compiled at run time (host callbacks) pair off first.
    unpaired = list(range(len(call)))
    run_missing: list[int] = []
    for j, program in enumerate(aot_run):
        match = next((i for i in unpaired if call[i].name == program.name), None)
        if match is None:
            run_missing.append(j)
        else:
            unpaired.remove(match)
    counterpart = _counterpart(call, unpaired, aot)
    extras = [i for i in unpaired if i != counterpart]

    aot_usage = analyze_params(aot.module, runs.aot_lowering) if aot is not None else None
    aot_pruned = tuple(p.path for p in aot_usage.with_status("pruned")) if aot_usage else ()

    extra: Difference | None = None
    if aot is None:
        for kind in (PLACEMENT, PARAMETERS, OPS, TEXT):
            checks[kind] = Check(
                kind, False, None, "no lowered module on the AOT path (a Compiled was given)"
            )
    else:
        pair = (call[counterpart], aot) if counterpart is not None else None
        extra = _compare_ops(call, unpaired, counterpart, extras, aot, entry, differences, checks)
        if run_missing:
            missing = [aot_run[j] for j in run_missing]
            differences.append(
                Difference(
                    OPS,
                    f"the AOT-compiled executable compiled {_programs(missing)} while it "
                    "ran, and the call did not",
                    "host callbacks of the AOT program run JAX code that the call's "
                    "program does not reach",
                )
            )
        sides = [call[counterpart]] if counterpart is not None else [call[i] for i in unpaired]
        _compare_placement(sides, aot, differences, checks)
        if pair is not None:
            _compare_parameters(pair[0], pair[1], aot_pruned, differences, checks)
            _compare_text(pair[0], pair[1], differences, checks, extra)
        else:
            reason = (
                "the call compiled no program"
                if not unpaired
                else f"the call ran {len(unpaired)} programs, none of them {aot.name}"
            )
            checks[PARAMETERS] = Check(PARAMETERS, False, None, f"not compared: {reason}")
            checks[TEXT] = Check(TEXT, False, None, f"not compared: {reason}")

    results = _compare_results(runs, differences, checks, entry, extra)
    order = {kind: i for i, kind in enumerate(KINDS)}
    return AotComparison(
        verdict=DIFFERENT if differences else SAME,
        entry=entry,
        differences=tuple(sorted(differences, key=lambda d: order.get(d.kind, len(order)))),
        checks=tuple(checks[kind] for kind in KINDS if kind in checks),
        results=results,
        call_programs=call_summaries,
        counterpart=counterpart,
        aot_program=_summary(aot) if aot is not None else None,
        aot_run_programs=run_summaries,
        aot_pruned=aot_pruned,
    )


def _counterpart(call: Sequence[Program], candidates: list[int], aot: Program | None) -> int | None:
    """The call's module to compare with the AOT module: the same jitted function
    (same module name, preferring the same entry types), else the only one."""
    if aot is None or not candidates:
        return None
    named = [i for i in candidates if call[i].name == aot.name]
    if named:
        types = _entry_types(aot.module)
        return next((i for i in named if _entry_types(call[i].module) == types), named[0])
    return candidates[0] if len(candidates) == 1 else None


def _entry_types(module: Module) -> tuple[str, ...]:
    entry = module.entry
    return tuple(a.type for a in entry.arguments) if entry is not None else ()


# --------------------------------------------------------------------------- ops


def _summary(program: Program) -> ProgramSummary:
    entry = program.module.entry
    return ProgramSummary(
        name=program.name,
        ops=sum(program.op_counts.values()),
        off_device_ops=sum(program.placed_op_counts.values()),
        parameters=len(entry.arguments) if entry is not None else 0,
    )


def _programs(programs: Sequence[Program]) -> str:
    parts = [f"{p.name} ({_plural(sum(p.op_counts.values()), 'op')})" for p in programs]
    listed = ", ".join(parts[:MAX_LISTED])
    more = f" and {len(parts) - MAX_LISTED} more" if len(parts) > MAX_LISTED else ""
    return f"{_plural(len(programs), 'program')}: {listed}{more}"


def _compare_ops(
    call: Sequence[Program],
    unpaired: Sequence[int],
    counterpart: int | None,
    extras: Sequence[int],
    aot: Program,
    entry: AotEntry,
    differences: list[Difference],
    checks: dict[str, Check],
) -> Difference | None:
    """Compare op counts; returns the difference naming the call's programs besides
    the counterpart, if any."""
    aot_counts = aot.op_counts
    extra = None
    if counterpart is not None:
        call_counts = call[counterpart].op_counts
        same = call_counts == aot_counts
        if not same:
            differences.append(
                Difference(
                    OPS,
                    f"op counts differ between the call's {call[counterpart].name} and the "
                    f"AOT module {aot.name}: {_count_changes(call_counts, aot_counts)}",
                    "the call's jit traced other code or other arguments than the AOT path "
                    "lowered (a wrapper changes shapes or static arguments, or calls "
                    "something else)",
                )
            )
        if extras:
            same = False
            extra = Difference(
                OPS,
                f"besides {call[counterpart].name}, the call compiled "
                f"{_programs([call[i] for i in extras])}, which the AOT path does not run",
                "code around the AOT entry runs JAX ops of its own when the target is "
                "called (eagerly, as separate programs), and .lower() of the entry does "
                "not trace it",
            )
            differences.append(extra)
        note = f"{call[counterpart].name} against {aot.name}"
        if extras:
            note += f", and {_plural(len(extras), 'other program')} of the call"
        checks[OPS] = Check(OPS, True, same, note)
        return extra
    if not unpaired:
        differences.append(
            Difference(
                OPS,
                f"the call compiled no XLA program; the AOT path compiles {aot.name} "
                f"({_plural(sum(aot_counts.values()), 'op')})",
                "the target computed its result without running JAX (NumPy or plain "
                "Python), or JAX reused a compilation hloscope could not clear",
            )
        )
        checks[OPS] = Check(OPS, True, False, "the call compiled nothing")
        return None
    programs = [call[i] for i in unpaired]
    total: Counter[str] = Counter()
    for program in programs:
        total.update(program.op_counts)
    detail = (
        f"the call ran {_programs(programs)}, where the AOT path compiles one, {aot.name} "
        f"({_plural(sum(aot_counts.values()), 'op')})"
    )
    if total != aot_counts:
        detail += f"; op counts over them all differ: {_count_changes(total, aot_counts)}"
    if entry.via == "jax.jit":
        cause = (
            "the target is not jitted: called directly, its jits and the ops between them "
            "run as separate programs (ops outside a jit run one by one), while jax.jit "
            "around it compiles one program that XLA optimizes as a whole"
        )
    else:
        cause = (
            "the call runs more than the AOT entry: code around it compiles and runs "
            "programs of its own, outside what .lower() traces"
        )
    differences.append(Difference(OPS, detail, cause))
    checks[OPS] = Check(
        OPS, True, False, f"{_plural(len(programs), 'program')} of the call together"
    )
    return None


def _count_changes(call: Counter[str], aot: Counter[str]) -> str:
    changes = []
    for name in sorted(set(call) | set(aot), key=lambda n: (-abs(call[n] - aot[n]), n)):
        if call[name] != aot[name]:
            changes.append(f"{name} {call[name]} in the call, {aot[name]} in the AOT module")
    listed = "; ".join(changes[:MAX_LISTED])
    return listed + (f"; and {len(changes) - MAX_LISTED} more" if len(changes) > MAX_LISTED else "")


# --------------------------------------------------------------------------- placement


def _describe_placed(counts: Counter[tuple[str, str]], regions: int) -> str:
    if not counts:
        return "runs everything on the device"
    by_type: dict[str, Counter[str]] = {}
    for (compute_type, op), n in counts.items():
        by_type.setdefault(compute_type, Counter())[op] += n
    parts = []
    for compute_type, ops in sorted(by_type.items()):
        kinds = ", ".join(
            f"{op.rpartition('.')[2]}{f' ×{n}' if n > 1 else ''}"
            for op, n in sorted(ops.items(), key=lambda kv: (-kv[1], kv[0]))[:MAX_LISTED]
        )
        where = "on the host" if compute_type == "host" else f"on {compute_type}"
        parts.append(f"{_plural(sum(ops.values()), 'op')} {where} ({kinds})")
    text = " and ".join(parts)
    if regions:
        text += f" in {_plural(regions, 'region')}"
    return f"runs {text}"


def _compare_placement(
    call: Sequence[Program],
    aot: Program,
    differences: list[Difference],
    checks: dict[str, Check],
) -> None:
    if not call:
        checks[PLACEMENT] = Check(PLACEMENT, False, None, "not compared: the call compiled nothing")
        return
    call_counts: Counter[tuple[str, str]] = Counter()
    call_regions = 0
    for program in call:
        call_counts.update(program.placed_op_counts)
        call_regions += len(program.placement.regions)
    aot_counts = aot.placed_op_counts
    aot_regions = len(aot.placement.regions)
    what = call[0].name if len(call) == 1 else f"{len(call)} programs"
    same = call_counts == aot_counts
    checks[PLACEMENT] = Check(PLACEMENT, True, same, f"{what} against {aot.name}")
    if same:
        return
    subject = f"the call's {call[0].name}" if len(call) == 1 else "the call's programs"
    detail = (
        f"{subject} {_describe_placed(call_counts, call_regions)}; the AOT module "
        f"{aot.name} {_describe_placed(aot_counts, aot_regions)}"
    )
    if call_counts and not aot_counts:
        cause = (
            "the call runs the jitted code under a compute_on context that is not part of "
            "what .lower() traces (compute_on outside jax.jit: the decorator order, or a "
            "context around the call); put compute_on inside the jitted function"
        )
    elif aot_counts and not call_counts:
        cause = (
            "the AOT module places ops off the device that the call's program does not: "
            "the call does not run the code the AOT path lowers (a wrapper calls something "
            "else, or a compute_on context around the call overrides it)"
        )
    else:
        cause = (
            "the two programs were traced under different compute_on contexts, or from "
            "different code"
        )
    differences.append(Difference(PLACEMENT, detail, cause))


# --------------------------------------------------------------------------- parameters


def _parameter_text(p: Parameter) -> str:
    return f"{p.path} {p.shape}"


def _parameters_line(usage: ParameterUsage) -> str:
    shown = [_parameter_text(p) for p in usage.parameters[:MAX_LISTED]]
    if len(usage.parameters) > MAX_LISTED:
        shown.append(f"… {len(usage.parameters) - MAX_LISTED} more")
    return ", ".join(shown)


def _compare_parameters(
    call: Program,
    aot: Program,
    aot_pruned: tuple[str, ...],
    differences: list[Difference],
    checks: dict[str, Check],
) -> None:
    # Both read from the modules alone, so that each side is described the same way.
    mine = analyze_params(call.module)
    theirs = analyze_params(aot.module)
    checks[PARAMETERS] = Check(PARAMETERS, True, True, f"{call.name} against {aot.name}")
    found: list[Difference] = []
    implicit_call, implicit_aot = len(mine.implicit), len(theirs.implicit)
    if implicit_call != implicit_aot:
        found.append(
            Difference(
                PARAMETERS,
                f"the call's {call.name} has {_plural(implicit_call, 'implicit parameter')} "
                f"(tokens, platform index, constants) and the AOT module {implicit_aot}",
                "one path has ordered effects (io_callback, debug prints) or hoisted "
                "constants the other does not",
            )
        )
    a, b = mine.parameters, theirs.parameters
    if len(a) != len(b):
        pruned = f"; the AOT path pruned {', '.join(aot_pruned)}" if aot_pruned else ""
        found.append(
            Difference(
                PARAMETERS,
                f"the call's {call.name} takes {_plural(len(a), 'parameter')} "
                f"({_parameters_line(mine)}) and the AOT module "
                f"{len(b)} ({_parameters_line(theirs)}){pruned}",
                "the jit the call runs receives other arguments than the AOT path was "
                "lowered with (a wrapper adds, drops or restructures them), or prunes "
                "differently (keep_unused, static arguments)",
            )
        )
    else:
        shapes = [
            (i, p, q) for i, (p, q) in enumerate(zip(a, b, strict=True)) if p.shape != q.shape
        ]
        if shapes:
            listed = "; ".join(
                f"parameter {i} is {p.shape} in the call's {call.name} and {q.shape} in the "
                "AOT module"
                for i, p, q in shapes[:MAX_LISTED]
            )
            found.append(
                Difference(
                    PARAMETERS,
                    listed,
                    "the jit the call runs receives other arguments than the AOT path (a "
                    "wrapper reorders, reshapes or converts them before calling it)",
                )
            )
        facts = []
        for i, (p, q) in enumerate(zip(a, b, strict=True)):
            for label, mine_value, theirs_value in (
                ("used", p.status, q.status),
                ("donated", p.donated, q.donated),
                ("sharding", p.sharding_attribute, q.sharding_attribute),
                ("memory kind", p.memory_kind, q.memory_kind),
            ):
                if mine_value != theirs_value:
                    facts.append(
                        f"parameter {i} ({p.path}) {label}: {_fact(mine_value)} in the call, "
                        f"{_fact(theirs_value)} in the AOT module"
                    )
        if facts:
            found.append(
                Difference(
                    PARAMETERS,
                    "; ".join(facts[:MAX_LISTED])
                    + (f"; and {len(facts) - MAX_LISTED} more" if len(facts) > MAX_LISTED else ""),
                    "the jit the call runs is configured differently (donate_argnums, "
                    "in_shardings, memory kinds) or is given differently placed arguments",
                )
            )
    if found:
        checks[PARAMETERS] = Check(PARAMETERS, True, False, f"{call.name} against {aot.name}")
        differences.extend(found)


def _fact(value: object) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


# --------------------------------------------------------------------------- text

_MODULE_NAME = re.compile(r'^(\s*module\s+@)(?:"(?:[^"\\]|\\.)*"|[\w.$-]+)')
_SSA_NAME = re.compile(r"%([A-Za-z0-9_$.\-]+)")


def normalized_text(text: str) -> list[str]:
    """The module's lines with its name and SSA value names normalised away: the
    module is `@module`, and values are `%0`, `%1`, ... in order of first
    appearance (`%arg0`, `%cst_2` and `%5` alike). Locations are expected printed
    off; blank lines and location aliases (`#loc...`) are dropped."""
    names: dict[str, str] = {}

    def rename(match: re.Match[str]) -> str:
        return "%" + names.setdefault(match.group(1), str(len(names)))

    lines = []
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#loc"):
            continue
        stripped = _MODULE_NAME.sub(r"\1module", stripped)
        lines.append(_SSA_NAME.sub(rename, stripped))
    return lines


def _compare_text(
    call: Program,
    aot: Program,
    differences: list[Difference],
    checks: dict[str, Check],
    extra: Difference | None,
) -> None:
    if call.name != aot.name:
        checks[TEXT] = Check(
            TEXT,
            False,
            None,
            f"not compared: the call compiled {call.name} and the AOT path {aot.name}, "
            "another function around it (a jit nested in a module prints differently)",
        )
        return
    mine, theirs = normalized_text(call.text), normalized_text(aot.text)
    if mine == theirs:
        checks[TEXT] = Check(TEXT, True, True, f"{_plural(len(mine), 'line')}, identical")
        return
    changed, first = _line_changes(mine, theirs)
    line, call_line, aot_line = first
    checks[TEXT] = Check(
        TEXT, True, False, f"{_plural(changed, 'line')} {'differs' if changed == 1 else 'differ'}"
    )
    module_level = any(
        d.kind in (PLACEMENT, PARAMETERS, OPS) and d is not extra for d in differences
    )
    cause = (
        "the differences above, as they show in the text"
        if module_level
        else "the same ops, placement and parameters, wired or configured differently "
        "(operand order, attributes, constants or types): the call's jit traced the "
        "function with other static arguments, constants or settings"
    )
    differences.append(
        Difference(
            TEXT,
            f"{_plural(changed, 'line')} of {max(len(mine), len(theirs))} "
            f"{'differs' if changed == 1 else 'differ'}; first at "
            f"line {line}: call `{_clip(call_line)}`, AOT `{_clip(aot_line)}`",
            cause,
        )
    )


# Beyond this many lines, lines are compared position by position: a line-matching
# diff of two large modules that differ throughout takes quadratic time.
MAX_DIFFED_LINES = 20_000


def _line_changes(mine: Sequence[str], theirs: Sequence[str]) -> tuple[int, tuple[int, str, str]]:
    """Lines that differ, and the first difference (line number, call's line, AOT's
    line); the texts must differ."""
    if max(len(mine), len(theirs)) > MAX_DIFFED_LINES:
        pairs = list(zip(mine, theirs, strict=False))
        differing = [i for i, (a, b) in enumerate(pairs) if a != b]
        changed = len(differing) + abs(len(mine) - len(theirs))
        index = differing[0] if differing else len(pairs)
        return changed, (
            index + 1,
            mine[index] if index < len(mine) else "(nothing)",
            theirs[index] if index < len(theirs) else "(nothing)",
        )
    changed = 0
    first: tuple[int, str, str] | None = None
    matcher = difflib.SequenceMatcher(None, mine, theirs, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        changed += max(i2 - i1, j2 - j1)
        if first is None:
            first = (
                i1 + 1,
                mine[i1] if i1 < i2 else "(nothing)",
                theirs[j1] if j1 < j2 else "(nothing)",
            )
    assert first is not None
    return changed, first


def _clip(text: str, limit: int = 160) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


# --------------------------------------------------------------------------- results


def tolerance(dtype: str | None) -> tuple[float, float]:
    """(rtol, atol) for values of a dtype: (0, 0), exact, for integers, booleans and
    non-array values."""
    if dtype is None:
        return 0.0, 0.0
    if dtype in _TOLERANCES:
        return _TOLERANCES[dtype]
    if dtype.startswith(("float8", "float6", "float4")):
        return _LOW_PRECISION
    return 0.0, 0.0


def compare_result(call: ResultLeaf | None, aot: ResultLeaf | None) -> ResultComparison:
    """One output leaf of each path, compared."""
    path = (call or aot).path if (call or aot) is not None else "?"  # type: ignore[union-attr]
    dtype = call.dtype if call is not None else None
    rtol, atol = tolerance(dtype)
    if call is None or aot is None:
        return ResultComparison(
            path,
            call.shape if call else None,
            aot.shape if aot else None,
            dtype,
            None,
            rtol,
            atol,
            0,
            0,
            False,
        )
    if call.dtype is None or aot.dtype is None:
        same = _plain_equal(call.value, aot.value)
        return ResultComparison(
            path, call.shape, aot.shape, None, None, 0.0, 0.0, 0 if same else 1, 1, same
        )
    mine, theirs = np.asarray(call.value), np.asarray(aot.value)
    elements = int(mine.size)
    if call.shape != aot.shape or call.dtype != aot.dtype or mine.shape != theirs.shape:
        return ResultComparison(
            path, call.shape, aot.shape, dtype, None, rtol, atol, elements, elements, False
        )
    if elements == 0:
        return ResultComparison(path, call.shape, aot.shape, dtype, 0.0, rtol, atol, 0, 0, True)
    if mine.dtype.kind in "biu":
        # Exact; the difference is shown in float64 (precise enough to read).
        diff = np.abs(mine.astype(np.float64) - theirs.astype(np.float64))
        mismatched = int(np.count_nonzero(mine != theirs))
        return ResultComparison(
            path,
            call.shape,
            aot.shape,
            dtype,
            float(diff.max()),
            0.0,
            0.0,
            mismatched,
            elements,
            mismatched == 0,
        )
    wide = np.complex128 if mine.dtype.kind == "c" else np.float64
    a, b = mine.astype(wide), theirs.astype(wide)
    both_nan = np.isnan(a) & np.isnan(b)
    same_inf = np.isinf(a) & np.isinf(b) & (a == b)
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.abs(a - b)
        diff = np.where(both_nan | same_inf, 0.0, diff)
        limit = atol + rtol * np.maximum(np.abs(a), np.abs(b))
        outside = ~((diff <= limit) | both_nan | same_inf)
    mismatched = int(np.count_nonzero(outside))
    # NaN where only one side is NaN: the largest difference is then unknown.
    largest = math.nan if np.any(np.isnan(diff)) else float(diff.max())
    return ResultComparison(
        path,
        call.shape,
        aot.shape,
        dtype,
        largest,
        rtol,
        atol,
        mismatched,
        elements,
        mismatched == 0,
    )


def _plain_equal(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except Exception:
        return repr(a) == repr(b)


def _compare_results(
    runs: AotRuns,
    differences: list[Difference],
    checks: dict[str, Check],
    entry: AotEntry,
    extra: Difference | None,
) -> tuple[ResultComparison, ...]:
    call, aot = runs.call, runs.aot
    bypassed = entry.via == "__wrapped__"
    if call.structure != aot.structure:
        differences.append(
            Difference(
                RESULTS,
                f"the call returns {call.structure} and the AOT path {aot.structure}",
                "a wrapper changes what the function returns, and the AOT path bypasses it"
                if bypassed
                else "the call and the AOT path run different code",
            )
        )
        checks[RESULTS] = Check(RESULTS, True, False, "the output trees differ")
        return ()
    compared = tuple(compare_result(a, b) for a, b in zip(call.results, aot.results, strict=False))
    wrong = [r for r in compared if not r.same]
    checks[RESULTS] = Check(
        RESULTS,
        True,
        not wrong,
        f"{_plural(len(compared), 'output')}"
        + (f", {len(wrong)} beyond tolerance" if wrong else ", within tolerance"),
    )
    if not wrong:
        return compared
    cause = _results_cause(checks, differences, extra)
    detail = "; ".join(_result_text(r) for r in wrong[:MAX_LISTED])
    if len(wrong) > MAX_LISTED:
        detail += f"; and {len(wrong) - MAX_LISTED} more outputs"
    if len(compared) > 1:
        detail = f"{len(wrong)} of {len(compared)} outputs differ: {detail}"
    differences.append(Difference(RESULTS, detail, cause))
    return compared


def _results_cause(
    checks: Mapping[str, Check], differences: Sequence[Difference], extra: Difference | None
) -> str:
    programs_differ = any(
        d.kind in (PLACEMENT, PARAMETERS, TEXT) or (d.kind == OPS and d is not extra)
        for d in differences
    )
    if programs_differ:
        return "the call and the AOT path run different programs (the differences above)"
    ops = checks.get(OPS)
    if ops is None or not ops.compared:
        return "the AOT object computes something else than the call"
    if extra is not None:
        return (
            "the AOT path compiles the module the call ran, but code around it (the other "
            "programs above) changes its arguments or results, and the AOT path bypasses it"
        )
    text = checks.get(TEXT)
    if text is not None and text.same:
        return (
            "the modules are identical but the results differ: a wrapper changes the "
            "arguments (or the results) and the AOT path bypasses it"
        )
    return (
        "the programs have the same ops, placement and parameters but the results differ: "
        "code around the compiled function changes its arguments or results, and the AOT "
        "path does not run it"
    )


def _result_text(r: ResultComparison) -> str:
    if r.call_shape != r.aot_shape:
        return f"{r.path} is {r.call_shape} from the call and {r.aot_shape} from the AOT path"
    if r.max_abs_diff is None:
        return f"{r.path} differs"
    bound = "differ" if r.rtol == 0 and r.atol == 0 else f"outside rtol {r.rtol:g}, atol {r.atol:g}"
    return (
        f"{r.path}: max |call − AOT| = {r.max_abs_diff:.6g} ({r.mismatched} of "
        f"{_plural(r.elements, 'element')} {bound})"
    )


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def changed_kinds(differences: Iterable[Difference]) -> tuple[str, ...]:
    """The kinds that differ, in `KINDS` order."""
    kinds = {d.kind for d in differences}
    return tuple(kind for kind in KINDS if kind in kinds)

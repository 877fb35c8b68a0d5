"""Every compilation of a run, grouped: which functions compiled, how often, for how
many distinct signatures, at what cost, and why (`hloscope compiles`).

The input is what `hloscope.sources.jax.capture` recorded: for each compilation,
JAX's own cache-miss explanation and the arguments it says changed. From those
facts alone, a likely cause is named where they support one:

- a leading dimension that takes many values (batches of varying size);
- a Python scalar whose weak type flips (`f(1.0)` after `f(jnp.float32(1))`);
- a static argument that changes at every call;
- a function defined again at every call (JAX says it saw another function defined
  on the same line).

Ops run eagerly (outside any jit) are grouped apart, per op: they are the sign of
code that is not jitted.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence

from hloscope.runs import ArgumentChange, RecordedCompile

__all__ = [
    "CompileSummary",
    "CompilesAnalysis",
    "EagerOp",
    "FunctionCompiles",
    "analyze_compiles",
    "likely_cause",
]

NEVER_SEEN = "never seen function"
REDEFINED_HINT = "seen another function defined on the same line"


@dataclasses.dataclass(frozen=True)
class FunctionCompiles:
    """The compilations of one jitted function."""

    function: str
    """Its qualified name."""
    source: str | None
    """`file.py:LINE` of its definition."""
    compiles: int
    signatures: int
    """Distinct signatures it was compiled for (argument types, pytree, static
    values); fewer than `compiles` when JAX compiled one signature again."""
    compile_seconds: float
    """XLA's compile time, summed."""
    total_seconds: float
    """Tracing, lowering and compiling, summed."""
    ops: int | None
    """Ops of the module of its latest compilation."""
    causes: tuple[str, ...]
    """JAX's explanations of its recompilations, distinct, in order."""
    likely_cause: str | None
    """One sentence naming the pattern the changes show, when they show one."""
    indices: tuple[int, ...]
    """Positions of its compilations in the run's timeline."""

    @property
    def recompiled(self) -> bool:
        return self.compiles > 1


@dataclasses.dataclass(frozen=True)
class EagerOp:
    """An op run outside any jit, and how often JAX compiled it alone."""

    op: str
    compiles: int
    compile_seconds: float
    """Tracing, lowering and compiling, summed."""
    call_sites: tuple[str, ...]
    """Where the user's code ran it, distinct, in order."""


@dataclasses.dataclass(frozen=True)
class CompileSummary:
    """The totals of a run."""

    compiles: int
    """Compilations of jitted functions (eager ops not counted)."""
    functions: int
    recompiled_functions: int
    """Functions compiled more than once."""
    eager_compiles: int
    compile_seconds: float
    """XLA's compile time of every compilation, eager ones included."""
    compiling_seconds: float
    """Tracing, lowering and compiling of every compilation."""
    wall_seconds: float
    """The run's wall time."""
    persistent_cache_hits: int
    """Compilations the persistent compilation cache served."""

    @property
    def compiling_share(self) -> float:
        """The share of the run's wall time spent tracing, lowering and compiling."""
        return self.compiling_seconds / self.wall_seconds if self.wall_seconds > 0 else 0.0


@dataclasses.dataclass(frozen=True)
class CompilesAnalysis:
    summary: CompileSummary
    functions: tuple[FunctionCompiles, ...]
    """Jitted functions, in order of first compilation."""
    eager: tuple[EagerOp, ...]
    """Ops run eagerly, most compiled first."""
    compiles: tuple[RecordedCompile, ...]
    """The timeline: every compilation in order."""


def analyze_compiles(compiles: Sequence[RecordedCompile], wall_seconds: float) -> CompilesAnalysis:
    """Group a run's compilations per function and per eager op, and total them."""
    groups: dict[tuple[str, str | None], list[int]] = {}
    eager_groups: dict[str, list[int]] = {}
    for index, compile_ in enumerate(compiles):
        if compile_.eager:
            eager_groups.setdefault(compile_.function, []).append(index)
        else:
            groups.setdefault((compile_.function, compile_.source), []).append(index)
    functions = tuple(
        _function(function, source, [compiles[i] for i in indices], indices)
        for (function, source), indices in groups.items()
    )
    eager = tuple(
        sorted(
            (_eager_op(op, [compiles[i] for i in indices]) for op, indices in eager_groups.items()),
            key=lambda e: -e.compiles,
        )
    )
    summary = CompileSummary(
        compiles=sum(f.compiles for f in functions),
        functions=len(functions),
        recompiled_functions=sum(1 for f in functions if f.recompiled),
        eager_compiles=sum(e.compiles for e in eager),
        compile_seconds=sum(c.compile_seconds or 0.0 for c in compiles),
        compiling_seconds=sum(_seconds(c) for c in compiles),
        wall_seconds=wall_seconds,
        persistent_cache_hits=sum(1 for c in compiles if c.persistent_cache_hit),
    )
    return CompilesAnalysis(
        summary=summary, functions=functions, eager=eager, compiles=tuple(compiles)
    )


def _seconds(compile_: RecordedCompile) -> float:
    return (
        (compile_.trace_seconds or 0.0)
        + (compile_.lower_seconds or 0.0)
        + (compile_.compile_seconds or 0.0)
    )


def _function(
    function: str, source: str | None, compiles: list[RecordedCompile], indices: list[int]
) -> FunctionCompiles:
    signatures = {
        c.signature if c.signature is not None else f"#{i}" for i, c in enumerate(compiles)
    }
    causes: list[str] = []
    for compile_ in compiles:
        if compile_.cause and compile_.cause != NEVER_SEEN and compile_.cause not in causes:
            causes.append(compile_.cause)
    return FunctionCompiles(
        function=function,
        source=source,
        compiles=len(compiles),
        signatures=len(signatures),
        compile_seconds=sum(c.compile_seconds or 0.0 for c in compiles),
        total_seconds=sum(_seconds(c) for c in compiles),
        ops=compiles[-1].ops,
        causes=tuple(causes),
        likely_cause=likely_cause(compiles),
        indices=tuple(indices),
    )


def _eager_op(op: str, compiles: list[RecordedCompile]) -> EagerOp:
    sites: list[str] = []
    for compile_ in compiles:
        if compile_.call_site and compile_.call_site not in sites:
            sites.append(compile_.call_site)
    return EagerOp(
        op=op,
        compiles=len(compiles),
        compile_seconds=sum(_seconds(c) for c in compiles),
        call_sites=tuple(sites),
    )


# --------------------------------------------------------------------------- likely causes

_SHAPE = re.compile(r"^(?P<dtype>[a-z]+[0-9]*)\[(?P<dims>[^\]]*)\](?P<rest>.*)$")
_WEAK = "{weak_type=True}"
MAX_VALUES_SHOWN = 5


def likely_cause(compiles: Sequence[RecordedCompile]) -> str | None:
    """One sentence naming the pattern in a function's recompilations, from the
    changes JAX reported; None when they show none."""
    changes = [change for c in compiles for change in c.changes]
    if any(c.cause and REDEFINED_HINT in c.cause for c in compiles):
        return (
            "the function is defined (and jitted) again at every call, so JAX never "
            "finds it in its cache: define and jit it once, outside the loop"
        )
    for sentence in (
        _leading_dimension(changes),
        _weak_type_flip(changes),
        _static_every_call(compiles),
    ):
        if sentence:
            return sentence
    return None


def _values(items: Sequence[str]) -> str:
    shown = ", ".join(items[:MAX_VALUES_SHOWN])
    return shown + (", …" if len(items) > MAX_VALUES_SHOWN else "")


def _leading_dimension(changes: Sequence[ArgumentChange]) -> str | None:
    by_path: dict[str, list[str]] = {}
    for change in changes:
        if change.kind != "type":
            continue
        before, after = _SHAPE.match(change.before), _SHAPE.match(change.after)
        if (
            not before
            or not after
            or before["dtype"] != after["dtype"]
            or before["rest"] != after["rest"]
            or not before["dims"]
            or not after["dims"]
        ):
            continue
        dims_before, dims_after = before["dims"].split(","), after["dims"].split(",")
        if (
            len(dims_before) == len(dims_after)
            and dims_before[1:] == dims_after[1:]
            and dims_before[0] != dims_after[0]
        ):
            values = by_path.setdefault(change.path, [])
            for value in (dims_before[0], dims_after[0]):
                if value not in values:
                    values.append(value)
    for path, values in by_path.items():
        if len(values) >= 3:
            return (
                f"the leading dimension of {path} took {len(values)} values "
                f"({_values(values)}), and each new one compiles again: pad to a few "
                "fixed sizes"
            )
    return None


def _weak_type_flip(changes: Sequence[ArgumentChange]) -> str | None:
    for change in changes:
        if change.kind == "type" and (_WEAK in change.before) != (_WEAK in change.after):
            return (
                f"{change.path} is a Python scalar (weak type) in some calls and an array "
                "in others: pass the same kind every time (jnp.asarray(x, dtype), or always "
                "a Python number)"
            )
    return None


def _static_every_call(compiles: Sequence[RecordedCompile]) -> str | None:
    by_path: dict[str, list[str]] = {}
    for compile_ in compiles:
        for change in compile_.changes:
            if change.kind == "static":
                values = by_path.setdefault(change.path, [])
                for value in (change.before, change.after):
                    if value not in values:
                        values.append(value)
    for path, values in by_path.items():
        # Every compilation after the first changed it, to a value never seen (and
        # often enough to be a pattern).
        if len(values) >= 3 and len(values) >= len(compiles):
            return (
                f"the static argument {path} took a new value at every call "
                f"({_values(values)}): pass it as a traced argument, or keep its values few"
            )
    return None

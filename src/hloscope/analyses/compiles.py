"""Every compilation of a run, grouped: which functions compiled, how often, for how
many distinct signatures, at what cost, and why (`hloscope compiles`).

The input is what `hloscope.sources.jax.capture` recorded: for each compilation,
JAX's own cache-miss explanation and the arguments it says changed. From those
facts alone, every distinct cause is named, the most frequent first, each with its
advice:

- a shape that changes, or a leading dimension that takes many values (batches of
  varying size);
- a dtype that changes;
- a Python scalar whose weak type flips (`f(1.0)` after `f(jnp.float32(1))`);
- a static argument that changes (at every call, or among a few values);
- a pytree structure or a sharding that changes;
- a function defined again at every call (JAX says it saw another function defined
  on the same line).

Ops run eagerly (outside any jit) are grouped apart, per op: they are the sign of
code that is not jitted.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Sequence

from hloscope.runs import ArgumentChange, RecordedCompile

__all__ = [
    "CompileSummary",
    "CompilesAnalysis",
    "EagerOp",
    "FunctionCompiles",
    "analyze_compiles",
    "call_site_shown",
    "likely_cause",
    "likely_causes",
]

NEVER_SEEN = "never seen function"
CALLED_BY_HLOSCOPE = "hloscope (--args)"
"""Where a compilation was called from when hloscope called the target itself."""
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
    """The first of `likely_causes` (the most frequent), when there is one."""
    indices: tuple[int, ...]
    """Positions of its compilations in the run's timeline."""
    likely_causes: tuple[str, ...] = ()
    """One sentence per distinct cause the changes show (a shape, a dtype, a weak type,
    a static value, ...), each with its advice, the most frequent first: fixing one
    leaves the others' recompilations."""
    ops_range: tuple[int, int] | None = None
    """The fewest and the most ops of its compilations' modules (they differ where its
    signatures lower differently); None when no count is known."""

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
    sentences = likely_causes(compiles)
    counts = [c.ops for c in compiles if c.ops is not None]
    return FunctionCompiles(
        function=function,
        source=source,
        compiles=len(compiles),
        signatures=len(signatures),
        compile_seconds=sum(c.compile_seconds or 0.0 for c in compiles),
        total_seconds=sum(_seconds(c) for c in compiles),
        ops=compiles[-1].ops,
        causes=tuple(causes),
        likely_cause=sentences[0] if sentences else None,
        indices=tuple(indices),
        likely_causes=sentences,
        ops_range=(min(counts), max(counts)) if counts else None,
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


def call_site_shown(compile_: RecordedCompile) -> str:
    """Where the user's code called it (`file.py:LINE`), `CALLED_BY_HLOSCOPE` where
    hloscope made the call, else empty."""
    if compile_.call_site:
        return compile_.call_site
    return CALLED_BY_HLOSCOPE if compile_.called_by_hloscope else ""


# --------------------------------------------------------------------------- likely causes

_SHAPE = re.compile(r"^(?P<dtype>[a-z]+[0-9]*)\[(?P<dims>[^\]]*)\](?P<rest>.*)$")
_WEAK = "{weak_type=True}"
_STRONG = "{weak_type=False}"
MAX_VALUES_SHOWN = 5


def likely_cause(compiles: Sequence[RecordedCompile]) -> str | None:
    """The most frequent of `likely_causes`, or None when the changes show none."""
    sentences = likely_causes(compiles)
    return sentences[0] if sentences else None


def likely_causes(compiles: Sequence[RecordedCompile]) -> tuple[str, ...]:
    """One sentence per distinct cause of a function's recompilations, from the changes
    JAX reported, each with its advice; the cause most compilations show first (ties in
    the order they first appear)."""
    seen: dict[tuple[str, str], list[int]] = {}
    values: dict[tuple[str, str], list[str]] = {}

    def note(key: tuple[str, str], index: int, *shown: str) -> None:
        seen.setdefault(key, [])
        if index not in seen[key]:
            seen[key].append(index)
        kept = values.setdefault(key, [])
        kept.extend(value for value in shown if value not in kept)

    for index, compile_ in enumerate(compiles):
        if compile_.cause and REDEFINED_HINT in compile_.cause:
            note(("redefined", ""), index)
        for change in compile_.changes:
            if change.kind == "static":
                note(("static", change.path), index, change.before, change.after)
            elif change.kind == "pytree":
                note(("pytree", change.path), index)
            else:
                _type_causes(change, index, note)
    ranked = sorted(seen, key=lambda key: -len(seen[key]))
    sentences = (_sentence(key, values[key], compiles) for key in ranked)
    return tuple(sentence for sentence in sentences if sentence)


def _type_causes(change: ArgumentChange, index: int, note: Callable[..., None]) -> None:
    """The causes one changed argument type shows: its weak type, its dtype, its shape,
    or else its sharding (what else an aval's text carries)."""
    path = change.path
    if (_WEAK in change.before) != (_WEAK in change.after):
        note(("weak", path), index)
    before, after = _SHAPE.match(change.before), _SHAPE.match(change.after)
    if not before or not after:
        note(("type", path), index, change.before, change.after)
        return
    if before["dtype"] != after["dtype"]:
        note(("dtype", path), index, before["dtype"], after["dtype"])
    if before["dims"] != after["dims"]:
        note(("shape", path), index, f"[{before['dims']}]", f"[{after['dims']}]")
    if (
        before["dtype"] == after["dtype"]
        and before["dims"] == after["dims"]
        and before["rest"].replace(_WEAK, "").replace(_STRONG, "")
        != after["rest"].replace(_WEAK, "").replace(_STRONG, "")
    ):
        note(("type", path), index, change.before, change.after)


def _sentence(
    key: tuple[str, str], values: list[str], compiles: Sequence[RecordedCompile]
) -> str | None:
    kind, path = key
    if kind == "redefined":
        return (
            "the function is defined (and jitted) again at every call, so JAX never "
            "finds it in its cache: define and jit it once, outside the loop"
        )
    if kind == "weak":
        return (
            f"{path} is a Python scalar (weak type) in some calls and an array in others: "
            "pass the same kind every time (jnp.asarray(x, dtype), or always a Python number)"
        )
    if kind == "dtype":
        return (
            f"{path} took {len(values)} dtypes ({_values(values)}), and each compiles again: "
            "cast it to one dtype before the call"
        )
    if kind == "shape":
        leading = _leading_dimension(values)
        if leading is not None and len(leading) >= 3:
            return (
                f"the leading dimension of {path} took {len(leading)} values "
                f"({_values(leading)}), and each new one compiles again: pad to a few "
                "fixed sizes"
            )
        return (
            f"{path} took {len(values)} shapes ({_values(values)}), and each new one "
            "compiles again: pad to a few fixed shapes"
        )
    if kind == "static":
        if len(values) >= 3 and len(values) >= len(compiles):
            return (
                f"the static argument {path} took a new value at every call "
                f"({_values(values)}): pass it as a traced argument, or keep its values few"
            )
        return (
            f"the static argument {path} took {len(values)} values ({_values(values)}), "
            "and each compiles again: pass it as a traced argument, or keep its values few"
        )
    if kind == "pytree":
        return (
            f"the pytree structure of {path} changed between calls: pass the same "
            "structure every time (the same keys, the same None leaves)"
        )
    return (
        f"the sharding or type of {path} changed ({' → '.join(values[:2])}): pass it "
        "placed the same way every time (one sharding)"
    )


def _values(items: Sequence[str]) -> str:
    shown = ", ".join(items[:MAX_VALUES_SHOWN])
    return shown + (", …" if len(items) > MAX_VALUES_SHOWN else "")


def _leading_dimension(shapes: Sequence[str]) -> list[str] | None:
    """The leading dimension's values when the shapes (`[8,4]`, `[16,4]`) differ in it
    alone; None otherwise."""
    split = [shape.strip("[]").split(",") for shape in shapes]
    if any(not dims or dims == [""] for dims in split):
        return None
    rank, rest = len(split[0]), split[0][1:]
    if any(len(dims) != rank or dims[1:] != rest for dims in split):
        return None
    leading: list[str] = []
    for dims in split:
        if dims[0] not in leading:
            leading.append(dims[0])
    return leading

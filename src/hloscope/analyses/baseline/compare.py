"""A program's facts against its baseline: what changed beyond tolerance, whether it
got worse, and where the change comes from.

A change is listed when an exact fact differs or a measured one moves past its
tolerance; within tolerance, nothing is listed, so checking an unchanged program
twice gives the same answer. Each change carries where it comes from: the lines of
the user's code whose ops were added or removed (from the measurements' `sites`),
and, for memory, the buffers at the peak that grew.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from hloscope.analyses.baseline.facts import (
    ESTIMATED_SECONDS,
    EXPOSED_SECONDS,
    RUNTIME_SECONDS,
    RUNTIME_SPREAD,
    FactValue,
    Measurement,
    PeakBuffer,
)
from hloscope.analyses.baseline.tolerance import (
    DONATION_BYTES,
    EXACT,
    NOISE_FLOORS,
    Tolerances,
    describe_amount,
    describe_move,
    describe_site_delta,
    runtime_tolerance,
    worse_direction,
)
from hloscope.ir.opcodes import converted_opcode
from hloscope.units import human_bytes

SOURCES_SHOWN = 6
"""Lines named per change, the largest first."""


@dataclasses.dataclass(frozen=True)
class Change:
    """One fact that moved."""

    fact: str
    before: FactValue | None
    """None: the baseline has no such fact (a new kind of op, a new alias)."""
    after: FactValue | None
    """None: the program no longer has it."""
    tolerance: str
    """`exact`, or the tolerance as written (`5% or 1 MiB`)."""
    regression: bool
    detail: str
    """What changed, in words: `2 -> 5 (+3): +3 at model.py:14`."""
    sources: tuple[str, ...]
    """The user's lines the change comes from (`file.py:LINE`), largest first."""
    site_deltas: tuple[tuple[str, int], ...] = ()
    """How much of the change each site makes (`file.py:LINE`, or `UNKNOWN_SITE` for
    ops with no line, and the count's change there; bytes at the peak for memory),
    largest first."""


@dataclasses.dataclass(frozen=True)
class GrownBuffers:
    """Bytes live at the memory peak from one site, before and after."""

    site: str
    """`file.py:LINE` of the user's code (else `UNKNOWN_SITE`)."""
    before: int
    after: int
    shapes: tuple[str, ...]
    """Shapes of the buffers after, largest first."""


@dataclasses.dataclass(frozen=True)
class Cause:
    """One change of how the program is called that moved facts: an argument's
    sharding, or its donation dropped. The facts it moved are listed under it, and
    pinned to its line."""

    kind: str
    """`sharding` or `donation`."""
    argument: str
    """The argument leaf's path (`params['w1']`)."""
    before: str
    """Its sharding (`P('data', 'model') over mesh(data=2, model=4)`), `replicated`
    where it had none, or `donated`."""
    after: str
    source: str | None
    """`file.py:LINE` of the user's code that built the argument's sharding now."""
    facts: tuple[str, ...]
    """The changes it moved (`Change.fact`), in the comparison's order."""

    @property
    def words(self) -> str:
        """`params['w1']'s sharding P('data', 'model') over ... → replicated`."""
        what = "sharding" if self.kind == "sharding" else "donation"
        return f"{self.argument}'s {what}: {self.before} → {self.after}"


@dataclasses.dataclass(frozen=True)
class Comparison:
    """Every change between a baseline and a program, regressions first."""

    changes: tuple[Change, ...]
    grown_at_peak: tuple[GrownBuffers, ...]
    """The sites whose buffers at the memory peak grew, most growth first."""
    compared: int = 0
    """How many facts were compared (held by the baseline, the program or both)."""
    not_compared: tuple[str, ...] = ()
    """Facts measured here that the baseline has no value to compare with, and so were
    not compared (the run time, against a baseline recorded without `--runtime`)."""
    causes: tuple[Cause, ...] = ()
    """The changes of the call (an argument's sharding, a dropped donation) and the
    facts each moved, the one that moved most regressions first."""

    @property
    def regressions(self) -> tuple[Change, ...]:
        return tuple(c for c in self.changes if c.regression)

    @property
    def improvements(self) -> tuple[Change, ...]:
        return tuple(c for c in self.changes if not c.regression)


def compare(before: Measurement, after: Measurement, tolerances: Tolerances) -> Comparison:
    """The changes from `before` (the baseline) to `after`."""
    before, after = in_one_form(before, after)
    grown = grown_at_peak(before.peak_buffers, after.peak_buffers)
    lost_donation = _lost_donation(before.facts, after.facts)
    changes: list[Change] = []
    compared = 0
    not_compared: list[str] = []
    for fact in sorted(set(before.facts) | set(after.facts)):
        old, new = before.facts.get(fact), after.facts.get(fact)
        if fact == RUNTIME_SPREAD:
            continue  # the run time's noise, not a fact
        if fact in ("compile.seconds", RUNTIME_SECONDS, ESTIMATED_SECONDS, EXPOSED_SECONDS) and (
            old is None or new is None
        ):
            # A time one side did not measure (--runtime on one side only).
            if old is None:
                not_compared.append(fact)
            continue
        compared += 1
        direction = worse_direction(fact)
        tolerance = tolerances.of(fact)
        if fact == RUNTIME_SECONDS and tolerance is EXACT:
            spreads = (before.facts.get(RUNTIME_SPREAD, 0), after.facts.get(RUNTIME_SPREAD, 0))
            tolerance = runtime_tolerance(tuple(float(s) for s in spreads))
        if direction == "any":
            if old == new:
                continue
            regression = new is None or old is not None
        else:
            old_value, new_value = old or 0, new or 0
            if tolerance.allows(old_value, new_value, NOISE_FLOORS.get(fact, 0.0)):
                continue
            regression = (new_value > old_value) == (direction == "up")
            if fact in DONATION_BYTES:
                regression = regression and lost_donation
        # A fact any change of which is worse: every line that moved explains it.
        grew_only = regression and direction != "any"
        deltas = _site_deltas(before.sites.get(fact, {}), after.sites.get(fact, {}), grew_only)
        where = _deltas_words(fact, deltas)
        if fact.startswith("memory.") and regression and not deltas:
            deltas = [(g.site, g.after - g.before) for g in grown]
            where = _grown_words(grown)
        sources = tuple(site for site, _ in deltas[:SOURCES_SHOWN] if ":" in site)
        changes.append(
            Change(
                fact=fact,
                before=old,
                after=new,
                tolerance=tolerance.text,
                regression=regression,
                detail=_detail(fact, old, new) + (f": {where}" if where else ""),
                sources=sources,
                site_deltas=tuple(deltas),
            )
        )
    changes.sort(key=lambda c: (not c.regression, _rank(c.fact)))
    causes = argument_causes(before, after, changes)
    changes = [_pinned(change, causes) for change in changes]
    return Comparison(
        changes=tuple(changes),
        grown_at_peak=grown,
        compared=compared,
        not_compared=tuple(not_compared),
        causes=causes,
    )


_MOVED_BY_SHARDING = ("memory.", "params.bytes_passed")
"""What an argument's sharding moves: each device's share of it, so the memory."""
_MOVED_BY_DONATION = ("params.donat", "params.aliases.", "memory.alias_bytes")
"""What a dropped donation moves (and, with no sharding change, the memory)."""


def argument_causes(
    before: Measurement, after: Measurement, changes: Sequence[Change]
) -> tuple[Cause, ...]:
    """The arguments whose sharding changed or whose donation was dropped between the
    measurements, each with the changes it moved: a donation the facts of donation,
    a sharding the memory (and, without a sharding change, a donation the memory)."""
    old = {a.path: a for a in before.arguments}
    sharded: list[tuple[str, str, str, str | None]] = []
    undonated: list[tuple[str, str | None]] = []
    for argument in after.arguments:
        was = old.get(argument.path)
        if was is None:
            continue
        if was.sharding != argument.sharding:
            sharded.append(
                (
                    argument.path,
                    was.sharding or "replicated",
                    argument.sharding or "replicated",
                    argument.source,
                )
            )
        if was.donated and not argument.donated:
            undonated.append((argument.path, argument.source))
    facts = [c.fact for c in changes]
    causes: list[Cause] = []
    # The donation facts count every argument together: each dropped donation moved them.
    moved = _MOVED_BY_DONATION if sharded else (*_MOVED_BY_DONATION, "memory.")
    for path, source in undonated:
        grouped = tuple(f for f in facts if f.startswith(moved))
        causes.append(Cause("donation", path, "donated", "not donated", source, grouped))
    taken = {f for cause in causes for f in cause.facts}
    for path, sharding_before, now, source in sharded:
        grouped = tuple(f for f in facts if f.startswith(_MOVED_BY_SHARDING) and f not in taken)
        taken.update(grouped)
        causes.append(Cause("sharding", path, sharding_before, now, source, grouped))
    regressed = {c.fact for c in changes if c.regression}
    causes.sort(key=lambda c: -len(regressed.intersection(c.facts)))
    return tuple(causes)


def _pinned(change: Change, causes: Sequence[Cause]) -> Change:
    """`change` with the line of the cause that moved it first among its sources."""
    cause = next((c for c in causes if change.fact in c.facts), None)
    if cause is None or cause.source is None:
        return change
    others = tuple(s for s in change.sources if s != cause.source)
    return dataclasses.replace(change, sources=(cause.source, *others)[:SOURCES_SHOWN])


OPTIMIZED_KINDS = "ops.optimized."
_XLA_FORM_KINDS = OPTIMIZED_KINDS + "hlo."
_TOTAL = OPTIMIZED_KINDS + "total"
_NAMES_NO_OP = frozenset({"tuple", "get-tuple-element"})
"""XLA's instructions that name values: ops of XLA's own form, none of the converted."""


def in_one_form(before: Measurement, after: Measurement) -> tuple[Measurement, Measurement]:
    """`before` and `after` with the optimized module's op counts by kind named one
    way where one side read it converted to MLIR (`ops.optimized.stablehlo.add`) and
    the other in XLA's own form (`ops.optimized.hlo.add`): the converted side's kinds
    by XLA's opcodes, XLA's `tuple` and `get-tuple-element` left out (the converted
    form has none), so that the form a module was read in (`HLOSCOPE_HLO_FORM`, or a
    module too large to convert) changes no fact. Two measurements read in one form
    are returned as they are (a baseline recorded before keeps its names)."""
    xla = [_read_in_xla_form(m) for m in (before, after)]
    if xla[0] is None or xla[1] is None or xla[0] == xla[1]:
        return before, after
    return (
        _kinds_by_opcode(before, xla[0]),
        _kinds_by_opcode(after, xla[1]),
    )


def _read_in_xla_form(measurement: Measurement) -> bool | None:
    """Whether the optimized module's op kinds are XLA's own form's; None where no
    kind is counted. Decided by the converted form's dialects, since the converted form
    names some ops by XLA's opcode too (an async wrapper is `hlo.copy-start`)."""
    kinds = [f for f in measurement.facts if f.startswith(OPTIMIZED_KINDS) and f != _TOTAL]
    if not kinds:
        return None
    return not any(
        converted_opcode(f[len(OPTIMIZED_KINDS) :]) is not None
        and not f.startswith(_XLA_FORM_KINDS)
        for f in kinds
    )


def _kind_by_opcode(fact: str, xla: bool) -> str | None:
    """The fact of an optimized op kind named by XLA's opcode; None for one of XLA's
    value-naming instructions (see `in_one_form`); other facts as they are."""
    if not fact.startswith(OPTIMIZED_KINDS) or fact == _TOTAL:
        return fact
    opcode = converted_opcode(fact[len(OPTIMIZED_KINDS) :])
    if opcode is None:
        return fact
    if xla and opcode in _NAMES_NO_OP:
        return None
    return f"{_XLA_FORM_KINDS}{opcode}"


def _kinds_by_opcode(measurement: Measurement, xla: bool) -> Measurement:
    facts: dict[str, FactValue] = {}
    sites: dict[str, dict[str, int]] = {}
    for fact, value in measurement.facts.items():
        name = _kind_by_opcode(fact, xla)
        if name is not None:
            # Two MLIR spellings of one opcode (`stablehlo.dot`, `stablehlo.dot_general`).
            facts[name] = facts[name] + value if name in facts else value
    for fact, counts in measurement.sites.items():
        name = _kind_by_opcode(fact, xla)
        if name is not None:
            merged = sites.setdefault(name, {})
            for site, count in counts.items():
                merged[site] = merged.get(site, 0) + count
    return dataclasses.replace(measurement, facts=facts, sites=sites)


_ORDER = (
    "memory.",
    "remat.",
    "params.",
    "collectives.",
    "copies.",
    "transfers.",
    "memory_kinds.",
    "programs.",
    "cost.",
    "compile.",
    "fusions.",
    "ops.",
)
"""The order changes are listed in: what costs users most first."""


def _rank(fact: str) -> int:
    return next((i for i, prefix in enumerate(_ORDER) if fact.startswith(prefix)), len(_ORDER))


def grown_at_peak(
    before: Sequence[PeakBuffer], after: Sequence[PeakBuffer]
) -> tuple[GrownBuffers, ...]:
    """The sites whose bytes live at the peak grew from `before` to `after`."""
    old = _bytes_by_site(before)
    new = _bytes_by_site(after)
    shapes: dict[str, list[str]] = {}
    for buffer in after:
        shapes.setdefault(buffer.site, []).append(buffer.shape)
    grown = [
        GrownBuffers(site, old.get(site, 0), size, tuple(dict.fromkeys(shapes[site])))
        for site, size in new.items()
        if size > old.get(site, 0)
    ]
    grown.sort(key=lambda g: (g.before - g.after, g.site))
    return tuple(grown)


def _bytes_by_site(buffers: Sequence[PeakBuffer]) -> dict[str, int]:
    sizes: dict[str, int] = {}
    for buffer in buffers:
        sizes[buffer.site] = sizes.get(buffer.site, 0) + buffer.bytes
    return sizes


def _lost_donation(before: Mapping[str, FactValue], after: Mapping[str, FactValue]) -> bool:
    """Whether an argument stopped being donated: fewer donated, or an alias gone."""
    if (after.get("params.donated") or 0) < (before.get("params.donated") or 0):
        return True
    return any(f.startswith("params.aliases.") and f not in after for f in before)


def _detail(fact: str, old: FactValue | None, new: FactValue | None) -> str:
    if old is None:
        return f"new: {describe_amount(fact, new or 0)}"
    if new is None:
        return f"gone (was {describe_amount(fact, old)})"
    amount, percent = describe_move(fact, old, new)
    moved = f"{amount}, {percent}" if percent else amount
    return f"{describe_amount(fact, old)} -> {describe_amount(fact, new)} ({moved})"


def _site_deltas(
    old: Mapping[str, int], new: Mapping[str, int], regression: bool
) -> list[tuple[str, int]]:
    """The sites whose count moved (only those that grew, for a regression), the
    largest move first."""
    moved = [(site, new.get(site, 0) - old.get(site, 0)) for site in {*old, *new}]
    moved = [(site, delta) for site, delta in moved if delta and (delta > 0 or not regression)]
    moved.sort(key=lambda item: (-abs(item[1]), item[0]))
    return moved


def _deltas_words(fact: str, deltas: Sequence[tuple[str, int]]) -> str:
    """`+2 at model.py:14, -1 at model.py:9`."""
    shown = deltas[:SOURCES_SHOWN]
    words = ", ".join(f"{describe_site_delta(fact, delta)} at {site}" for site, delta in shown)
    if len(deltas) > len(shown):
        words += f", and {len(deltas) - len(shown)} more"
    return words


def _grown_words(grown: Sequence[GrownBuffers]) -> str:
    if not grown:
        return ""
    shown = grown[:3]
    parts = [f"+{human_bytes(g.after - g.before)} live at the peak from {g.site}" for g in shown]
    if len(grown) > len(shown):
        parts.append(f"and {len(grown) - len(shown)} more")
    return ", ".join(parts)

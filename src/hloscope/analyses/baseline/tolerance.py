"""How far a fact may move before `hloscope check` calls it a regression, and which
way is worse.

Structural facts (op counts, fusions, collectives, copies, parameters) are exact: one
more all-gather is a change. Memory and cost are exact by default too (XLA computes
them the same way every time on one release), and take tolerances; compile time is
noisy and gets a generous default. A tolerance is written `5%`, `1 MiB`, `2s`, or two
of them joined by `or` (`5% or 1 MiB`: whichever allows more).
"""

from __future__ import annotations

import dataclasses
import fnmatch
from collections.abc import Mapping
from typing import Literal

from hloscope.errors import HloscopeError
from hloscope.units import human_bytes

Worse = Literal["up", "down", "any"]
"""Which way a fact gets worse: `up` (more ops, more bytes), `down` (fewer donated
buffers) or `any` (any change, as a parameter's aliasing)."""


@dataclasses.dataclass(frozen=True)
class Tolerance:
    """How far a fact may move: the larger of `relative` (of the baseline's value) and
    `absolute` (in the fact's unit)."""

    relative: float = 0.0
    absolute: float = 0.0
    text: str = "exact"
    """As written (`5% or 1 MiB`), or `exact`."""

    def allows(self, before: float, after: float, floor: float = 0.0) -> bool:
        """Whether moving from `before` to `after` is within this tolerance, or within
        `floor` (the fact's noise, `NOISE_FLOORS`), whichever allows more."""
        allowed = max(self.absolute, self.relative * abs(before), floor)
        return abs(after - before) <= allowed


EXACT = Tolerance()

DEFAULT_TOLERANCES: Mapping[str, str] = {
    "compile.seconds": "200% or 2s",
    "runtime.estimated_seconds": "10%",
    "runtime.exposed_communication_seconds": "10% or 0.000001s",
}
"""Compile time doubles on a loaded machine, and a small program's seconds are noise:
only a program that compiles three times as long, and two seconds longer, fails. An
estimate (`check --for --runtime`) is the compiler's and does not move by itself: a
tenth more time, or communication newly exposed (over a microsecond), fails."""

NOISE_FLOORS: Mapping[str, float] = {"compile.seconds": 1.0}
"""Moves no tolerance can call a regression: a compile time within a second of the
baseline's is the clock's noise (a small program's is recorded as 0.0 or 0.1 s, and a
loaded machine takes a few tenths more), whatever relative tolerance is written."""

_DOWN_IS_WORSE = ("params.donated", "compare.*.fits")
DONATION_BYTES = ("params.donated_bytes", "memory.alias_bytes")
"""Fewer of these bytes is worse only with an argument that stopped being donated
(`params.donated` fell, a `params.aliases.<path>` went): a step moved to bf16 donates
every argument still, in half the bytes."""
_ANY_IS_WORSE = (
    "params.aliases.*",
    "params.used",
    "memory_kinds.*",
    # Fewer residual bytes may be a policy that stopped matching (recomputing more).
    "remat.residuals",
    "remat.device_bytes",
    "remat.host_bytes",
)
_MEASURED = ("memory.*", "cost.*", "compile.*", "compare.*")
"""Facts a single number `tolerance=` applies to (structural facts stay exact)."""

_BYTE_UNITS = {"b": 1, "kib": 1024, "mib": 1024**2, "gib": 1024**3, "kb": 1000, "mb": 1000**2}


RUNTIME_TOLERANCE_BOUNDS = (2.0, 3.0)
"""The relative tolerance of a run time, whatever the spread: at least 200% (a loaded
machine, two test suites on two cores, makes a run two or three times as long), at
most 300% (a program four times slower fails)."""


def runtime_tolerance(spreads: tuple[float, ...]) -> Tolerance:
    """The tolerance of a run time, derived from the noise measured with it: four
    times the larger spread of the runs ((max - min) / median) of the baseline and of
    this measurement, within `RUNTIME_TOLERANCE_BOUNDS`."""
    low, high = RUNTIME_TOLERANCE_BOUNDS
    relative = min(max(4 * max(spreads, default=0.0), low), high)
    return Tolerance(relative=relative, text=f"{relative * 100:.0f}% (from the runs' spread)")


def worse_direction(fact: str) -> Worse:
    if fact in DONATION_BYTES or any(fnmatch.fnmatchcase(fact, p) for p in _DOWN_IS_WORSE):
        return "down"
    if any(fnmatch.fnmatchcase(fact, pattern) for pattern in _ANY_IS_WORSE):
        return "any"
    return "up"


def parse_tolerance(text: str, where: str | None = None) -> Tolerance:
    """`5%`, `1 MiB`, `4096`, `2s`, `5% or 1 MiB` as a `Tolerance`."""
    relative = absolute = 0.0
    for part in text.split(" or "):
        word = part.strip().lower().replace(" ", "")
        try:
            if word.endswith("%"):
                relative = max(relative, float(word[:-1]) / 100)
                continue
            unit = next(
                (u for u in sorted(_BYTE_UNITS, key=len, reverse=True) if word.endswith(u)), None
            )
            if unit is not None and word[: -len(unit)]:
                absolute = max(absolute, float(word[: -len(unit)]) * _BYTE_UNITS[unit])
            elif word.endswith("s"):
                absolute = max(absolute, float(word[:-1]))
            else:
                absolute = max(absolute, float(word))
        except ValueError:
            raise HloscopeError(
                f"cannot read the tolerance {text!r}: write 5%, 1 MiB, 2s, or two of them "
                "joined by 'or'",
                where=where,
            ) from None
        if relative < 0 or absolute < 0:
            raise HloscopeError(f"a tolerance cannot be negative: {text!r}", where=where)
    return Tolerance(relative, absolute, text.strip())


@dataclasses.dataclass(frozen=True)
class Tolerances:
    """Tolerances by fact pattern (`memory.*`, `cost.flops`): the last pattern that
    matches a fact wins, over `DEFAULT_TOLERANCES`; unmatched facts are exact."""

    patterns: tuple[tuple[str, Tolerance], ...] = ()

    @classmethod
    def from_specs(
        cls,
        specs: Mapping[str, str | float] | str | float | None,
        where: str | None = None,
        *,
        defaults: bool = True,
    ) -> Tolerances:
        """Tolerances as the configuration and the pytest fixture give them: a
        mapping of fact pattern to tolerance, or one tolerance for the measured facts
        (memory, cost, compile time; a bare number is relative: 0.05 is 5%), after
        `DEFAULT_TOLERANCES` unless `defaults` is False (a target's own, merged after
        the shared ones)."""
        patterns = (
            [(p, parse_tolerance(t, "hloscope defaults")) for p, t in DEFAULT_TOLERANCES.items()]
            if defaults
            else []
        )
        if specs is None:
            return cls(tuple(patterns))
        if not isinstance(specs, Mapping):
            specs = {pattern: specs for pattern in _MEASURED}
        for pattern, spec in specs.items():
            if isinstance(spec, bool) or not isinstance(spec, str | int | float):
                raise HloscopeError(
                    f"the tolerance of {pattern!r} is {spec!r}: write 5%, 1 MiB or 2s",
                    where=where,
                )
            text = f"{spec * 100:g}%" if not isinstance(spec, str) else spec
            patterns.append((pattern, parse_tolerance(text, where)))
        return cls(tuple(patterns))

    def of(self, fact: str) -> Tolerance:
        found = EXACT
        for pattern, tolerance in self.patterns:
            if fnmatch.fnmatchcase(fact, pattern):
                found = tolerance
        return found

    def merged(self, other: Tolerances) -> Tolerances:
        """These, then `other`'s (which win)."""
        return Tolerances(self.patterns + other.patterns)


def describe_amount(fact: str, value: float) -> str:
    """A fact's value for people: bytes as `1.5 MiB`, seconds as `0.42 s`, counts as
    they are."""
    if "bytes" in fact.rsplit(".", 1)[-1].split("_"):
        # memory.temp_bytes, params.bytes_passed, collectives.x.bytes_per_call
        return human_bytes(value)
    if fact.startswith(("runtime.", "compare.")) and fact.endswith(("seconds_per_run", "seconds")):
        return f"{value * 1000:.3g} ms"
    if fact.endswith("seconds"):
        return f"{value:.2f} s"
    if isinstance(value, float) and not value.is_integer():
        return f"{value:,.3f}"
    return f"{int(value):,}"


def describe_site_delta(fact: str, delta: int) -> str:
    """How much one line's share of a fact moved: `+2` ops; for the run time, whose
    sites hold microseconds, `+62.1 ms`."""
    if fact.startswith("runtime."):
        return f"{delta / 1000:+.3g} ms"
    return f"{delta:+d}"


def describe_move(fact: str, before: float, after: float) -> tuple[str, str | None]:
    """A fact's move for people: (`+176.8 MiB`, `+501%`); no percentage from zero."""
    delta = after - before
    amount = ("+" if delta > 0 else "-") + describe_amount(fact, abs(delta))
    return amount, (f"{delta / abs(before):+.0%}" if before else None)

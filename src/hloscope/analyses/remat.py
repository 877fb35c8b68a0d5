"""What the backward pass keeps from the forward: each residual with how it got
there, grouped by line and checkpoint name, the totals on the device and the host,
the checkpoint regions with their policies, the names a policy mentions that the
program never gives, and (after compiling) how much of the memory peak they are.

Pure: it reads `remat_facts.RematFacts` (JAX's residuals, read in
`sources.jax.residuals`) and, for the peak, the memory analysis's buffers.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

from hloscope.remat_facts import RegionFact, RematFacts, ResidualFact

if TYPE_CHECKING:
    from hloscope.analyses.memory import LiveBuffer

How = Literal[
    "argument",
    "saved by policy",
    "offloaded",
    "checkpoint output",
    "not checkpointed",
    "loop input",
    "literal",
    "constant",
]


@dataclasses.dataclass(frozen=True)
class Residual:
    """One value the backward pass reads from the forward."""

    type: str
    bytes: int
    memory: str
    """`device`, or `pinned_host` when offloaded."""
    how: How
    """An argument of the function; saved by a checkpoint policy; offloaded by one;
    the output of a checkpointed block; or made outside any checkpoint (saved, as
    without `jax.checkpoint`)."""
    name: str | None
    line: str | None
    function: str | None
    argument: str | None
    op: str | None
    stacked_by: str | None
    region: int | None
    primitive: str | None
    """What JAX's `print_saved_residuals` names: the primitive it saves the output of."""
    primitive_line: str | None


@dataclasses.dataclass(frozen=True)
class ResidualGroup:
    """The residuals of one line and name (and memory)."""

    line: str | None
    name: str | None
    memory: str
    how: tuple[str, ...]
    count: int
    bytes: int


@dataclasses.dataclass(frozen=True)
class Region:
    """One checkpoint region, its policy and what it saves and recomputes."""

    fact: RegionFact
    saved: int
    saved_bytes: int
    offloaded_bytes: int


@dataclasses.dataclass(frozen=True)
class UnmatchedName:
    """A name a policy mentions that no `checkpoint_name` in the program gives."""

    name: str
    regions: tuple[int, ...]
    closest: tuple[str, ...]
    """The names the program gives, closest first (`difflib`)."""


@dataclasses.dataclass(frozen=True)
class PeakLine:
    line: str | None
    bytes: int
    buffers: int
    memory: str = "device"
    """`device`, or `pinned_host` for buffers XLA placed in the host's memory space
    (`S(5)`: an offloaded residual on a TPU or GPU)."""


@dataclasses.dataclass(frozen=True)
class RematPeak:
    """Of the bytes live at the compiled program's memory peak, the residuals'."""

    peak_bytes: int
    residual_bytes: int
    by_line: tuple[PeakLine, ...]
    host_bytes: int = 0
    """Of `residual_bytes`, those in the host's memory space (`pinned_host`)."""


@dataclasses.dataclass(frozen=True)
class RematAnalysis:
    function: str | None
    differentiated: tuple[str, ...]
    residuals: tuple[Residual, ...]
    groups: tuple[ResidualGroup, ...]
    device_bytes: int
    host_bytes: int
    regions: tuple[Region, ...]
    names: tuple[str, ...]
    unmatched: tuple[UnmatchedName, ...]
    peak: RematPeak | None = None


def _how(fact: ResidualFact) -> How:
    if fact.made_by != "op":
        return fact.made_by
    if fact.offloaded:
        return "offloaded"
    if fact.op == "scan":
        return "loop input"  # what a loop's body starts each iteration from, kept per iteration
    if fact.region is None:
        return "not checkpointed"
    return "checkpoint output" if fact.region_output else "saved by policy"


def analyze_remat(facts: RematFacts) -> RematAnalysis:
    """The residuals of `facts`, grouped and totalled, with the regions' policies."""
    residuals = tuple(
        Residual(
            type=f.type,
            bytes=f.bytes,
            memory=f.memory,
            how=_how(f),
            name=f.name,
            line=f.line,
            function=f.function,
            argument=f.argument,
            op=f.op,
            stacked_by=f.stacked_by,
            region=f.region,
            primitive=f.primitive,
            primitive_line=f.primitive_line,
        )
        for f in facts.residuals
    )
    groups: dict[tuple[str | None, str | None, str], list[Residual]] = {}
    for r in residuals:
        groups.setdefault((r.line or r.argument, r.name, r.memory), []).append(r)
    grouped = tuple(
        sorted(
            (
                ResidualGroup(
                    line=line,
                    name=name,
                    memory=memory,
                    how=tuple(dict.fromkeys(r.how for r in members)),
                    count=len(members),
                    bytes=sum(r.bytes for r in members),
                )
                for (line, name, memory), members in groups.items()
            ),
            key=lambda g: (-g.bytes, g.line or "", g.name or ""),
        )
    )
    regions = tuple(
        Region(
            fact=fact,
            saved=sum(1 for r in residuals if r.region == fact.index),
            saved_bytes=sum(r.bytes for r in residuals if r.region == fact.index),
            offloaded_bytes=sum(
                r.bytes for r in residuals if r.region == fact.index and r.how == "offloaded"
            ),
        )
        for fact in facts.regions
    )
    return RematAnalysis(
        function=facts.function,
        differentiated=facts.differentiated,
        residuals=residuals,
        groups=grouped,
        device_bytes=sum(r.bytes for r in residuals if r.memory == "device"),
        host_bytes=sum(r.bytes for r in residuals if r.memory != "device"),
        regions=regions,
        names=facts.names,
        unmatched=unmatched_names(facts.regions, facts.names),
    )


def unmatched_names(
    regions: Sequence[RegionFact], names: Sequence[str]
) -> tuple[UnmatchedName, ...]:
    """The names the regions' policies mention that the program gives nowhere, each
    with the program's names closest to it first."""
    given = set(names)
    mentioned: dict[str, list[int]] = {}
    for region in regions:
        for name in region.policy_names:
            if name not in given:
                mentioned.setdefault(name, []).append(region.index)
    out = []
    for name, at in mentioned.items():
        close = difflib.get_close_matches(name, list(names), n=len(names), cutoff=0.0)
        out.append(UnmatchedName(name, tuple(at), tuple(close)))
    return tuple(out)


def residuals_at_peak(
    analysis: RematAnalysis, peak_bytes: int, buffers: Sequence[LiveBuffer], devices: int = 1
) -> RematPeak:
    """Of the buffers live at the peak, those holding residuals: made by a forward op
    (no `transpose(` in its op name) on a residual's line (or its loop's) with a
    residual's dimensions, or those of one device's shard of it where the program is
    partitioned over `devices`, on the device or in the host's memory space."""
    from hloscope.analyses.placement.memory import HOST_MEMORY_SPACE

    # By dimensions, not dtype: XLA may keep a residual in the precision the backward
    # reads it in (on a TPU, a dot's f32 operand saved as the bf16 it converts it to).
    kinds: dict[str | None, set[tuple[int, ...]]] = {}
    for r in analysis.residuals:
        if r.line is not None:
            kinds.setdefault(r.line, set()).add(_sizes(r.type))
        if r.stacked_by:
            # A loop's stacked residual is made by the loop, on the loop's line.
            kinds.setdefault(r.stacked_by, set()).add(_sizes(r.type))
    arguments = {r.argument for r in analysis.residuals if r.argument is not None}
    by_line: dict[tuple[str | None, str], list[LiveBuffer]] = {}
    for buffer in buffers:
        memory = "pinned_host" if buffer.memory_space == HOST_MEMORY_SPACE else "device"
        if buffer.kind in ("parameter", "alias") and buffer.path in arguments:
            # An argument the backward reads.
            by_line.setdefault((buffer.path, memory), []).append(buffer)
            continue
        if buffer.kind in ("parameter", "constant") or "transpose(" in (buffer.op_name or ""):
            continue
        line = buffer.user_source
        sizes = _sizes(buffer.shape)
        if any(_shard_of(sizes, whole, devices) for whole in kinds.get(line, ())):
            by_line.setdefault((line, memory), []).append(buffer)
    lines = tuple(
        sorted(
            (
                PeakLine(line, sum(b.bytes for b in bs), len(bs), memory)
                for (line, memory), bs in by_line.items()
            ),
            key=lambda p: -p.bytes,
        )
    )
    return RematPeak(
        peak_bytes,
        sum(p.bytes for p in lines),
        lines,
        sum(p.bytes for p in lines if p.memory != "device"),
    )


def _sizes(shape: str) -> tuple[int, ...]:
    """`f32[4,64,256]{2,1,0:T(8,128)}` -> (4, 64, 256); () for a scalar or a shape
    with an unknown size."""
    text = _dims(shape).strip("[]")
    try:
        return tuple(int(size) for size in text.split(",")) if text else ()
    except ValueError:
        return ()


def _shard_of(sizes: tuple[int, ...], whole: tuple[int, ...], devices: int) -> bool:
    """Whether a buffer of `sizes` can hold one device's shard of a value of `whole`
    split over at most `devices`: the same rank, each dimension a divisor of the
    whole's, the splits together a divisor of `devices`. A partitioned program's
    buffers are per device (bf16[2,8,256,256] of a bf16[2,8,256,512] residual split
    over `model`), its residuals whole."""
    if len(sizes) != len(whole):
        return False
    splits = 1
    for part, size in zip(sizes, whole, strict=True):
        if part <= 0 or size % part:
            return False
        splits *= size // part
    return devices % splits == 0


def _dims(shape: str) -> str:
    """`f32[4,64,256]{2,1,0:T(8,128)S(5)}` -> `[4,64,256]`: the dimensions, without
    the dtype or XLA's layout."""
    shape = shape.partition("{")[0]
    return shape[shape.find("[") :] if "[" in shape else shape

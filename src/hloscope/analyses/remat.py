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

ResidualKind = Literal["argument", "saved", "offloaded"]
"""What a residual is, in DESIGN's words: an argument, a value saved on the device, or
one offloaded to the host."""


@dataclasses.dataclass(frozen=True)
class Residual:
    """One value the backward pass reads from the forward."""

    type: str
    bytes: int
    """Of the whole array (`type`), over every device that holds a part of it."""
    kind: ResidualKind
    """`argument` (of the differentiated function), `offloaded` (to the host by a
    policy) or `saved` (every other residual: `detail` says how)."""
    memory_kind: str
    """`device`, or `pinned_host` when offloaded."""
    detail: How
    """How it got there: an argument of the function; saved by a checkpoint policy;
    offloaded by one; the output of a checkpointed block; a loop's input; or made
    outside any checkpoint (saved, as without `jax.checkpoint`)."""
    name: str | None
    source: str | None
    """`file.py:LINE`: the user's line that made it (None for an argument)."""
    sources: tuple[str, ...]
    """Every line it is known by: its own, its primitive's, its loop's."""
    function: str | None
    path: str | None
    """An argument's pytree path, as `params` names it."""
    op: str | None
    stacked_by: str | None
    region: int | None
    primitive: str | None
    """What JAX's `print_saved_residuals` names: the primitive it saves the output of."""
    primitive_source: str | None
    bytes_per_device: int | None = None
    """Of one device's shard: as its sharding says (an argument's; a value's on a mesh of
    explicit axes), `bytes` on one device; None where XLA chooses the sharding as it
    compiles (a value on `Auto` mesh axes)."""


@dataclasses.dataclass(frozen=True)
class ResidualGroup:
    """The residuals of one line and name (and memory)."""

    source: str | None
    """The residuals' line (None for an argument's: `path`)."""
    path: str | None
    """The argument's path, for an argument."""
    name: str | None
    memory_kind: str
    details: tuple[str, ...]
    """How they got there (`Residual.detail`), each once."""
    count: int
    bytes: int
    """Global: of the whole arrays."""
    bytes_per_device: int | None = None
    """Of one device's shards; None where one residual's sharding is XLA's choice."""


@dataclasses.dataclass(frozen=True)
class Region:
    """One checkpoint region, its policy and what it saves and recomputes."""

    fact: RegionFact
    saved: int
    saved_bytes: int
    """Global: of the whole arrays."""
    offloaded_bytes: int
    saved_bytes_per_device: int | None = None
    """Of one device's shards; None where one residual's sharding is XLA's choice."""


@dataclasses.dataclass(frozen=True)
class UnmatchedName:
    """A name a policy mentions that no `checkpoint_name` in the program gives."""

    name: str
    regions: tuple[int, ...]
    closest: tuple[str, ...]
    """The names the program gives, closest first (`difflib`)."""


@dataclasses.dataclass(frozen=True)
class PeakLine:
    source: str | None
    bytes: int
    buffers: int
    memory_kind: str = "device"
    """`device`, or `pinned_host` for buffers XLA placed in the host's memory space
    (`S(5)`: an offloaded residual on a TPU or GPU)."""
    path: str | None = None
    """For an argument the backward reads (`source` None): its path."""


@dataclasses.dataclass(frozen=True)
class RematPeak:
    """Of the bytes live at the compiled program's memory peak, the residuals': of one
    device (a partitioned program's buffers are each device's own)."""

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
    """Global: the whole arrays of the residuals on the device."""
    host_bytes: int
    """Global: the whole arrays of the residuals offloaded to the host."""
    regions: tuple[Region, ...]
    names: tuple[str, ...]
    unmatched: tuple[UnmatchedName, ...]
    peak: RematPeak | None = None
    devices: int = 1
    """The devices the program is partitioned over (its arguments' shardings, or the
    compiled program's partitions): above 1, global and per-device bytes differ."""
    device_bytes_per_device: int | None = None
    """One device's shards of the residuals on the device; None where one's sharding is
    XLA's choice (`known_bytes_per_device` has those known)."""
    host_bytes_per_device: int | None = None
    """One device's shards of the residuals on the host; None as above."""
    known_bytes_per_device: int = 0
    """One device's shards of the residuals whose sharding is known, wherever they are."""
    known_per_device: int = 0
    """How many residuals have a known per-device size."""


def _kind(fact: ResidualFact) -> ResidualKind:
    if fact.made_by == "argument":
        return "argument"
    return "offloaded" if fact.offloaded else "saved"


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


def analyze_remat(facts: RematFacts, devices: int = 1) -> RematAnalysis:
    """The residuals of `facts`, grouped and totalled, with the regions' policies;
    `devices`: the partitions of the compiled program, where it was compiled."""
    devices = max(devices, facts.devices)
    residuals = tuple(
        Residual(
            type=f.type,
            bytes=f.bytes,
            kind=_kind(f),
            memory_kind=f.memory,
            detail=_how(f),
            name=f.name,
            source=f.line,
            sources=tuple(dict.fromkeys(s for s in (f.line, f.primitive_line, f.stacked_by) if s)),
            function=f.function,
            path=f.argument,
            op=f.op,
            stacked_by=f.stacked_by,
            region=f.region,
            primitive=f.primitive,
            primitive_source=f.primitive_line,
            bytes_per_device=f.shard_bytes if f.shard_bytes is not None or devices > 1 else f.bytes,
        )
        for f in facts.residuals
    )
    groups: dict[tuple[str | None, str | None, str | None, str], list[Residual]] = {}
    for r in residuals:
        key = (r.source, None if r.source else r.path, r.name, r.memory_kind)
        groups.setdefault(key, []).append(r)
    grouped = tuple(
        sorted(
            (
                ResidualGroup(
                    source=source,
                    path=path,
                    name=name,
                    memory_kind=memory_kind,
                    details=tuple(dict.fromkeys(r.detail for r in members)),
                    count=len(members),
                    bytes=sum(r.bytes for r in members),
                    bytes_per_device=_per_device(members),
                )
                for (source, path, name, memory_kind), members in groups.items()
            ),
            key=lambda g: (-g.bytes, g.source or g.path or "", g.name or ""),
        )
    )
    regions = tuple(
        Region(
            fact=fact,
            saved=sum(1 for r in residuals if r.region == fact.index),
            saved_bytes=sum(r.bytes for r in residuals if r.region == fact.index),
            offloaded_bytes=sum(
                r.bytes for r in residuals if r.region == fact.index and r.kind == "offloaded"
            ),
            saved_bytes_per_device=_per_device([r for r in residuals if r.region == fact.index]),
        )
        for fact in facts.regions
    )
    return RematAnalysis(
        function=facts.function,
        differentiated=facts.differentiated,
        residuals=residuals,
        groups=grouped,
        device_bytes=sum(r.bytes for r in residuals if r.memory_kind == "device"),
        host_bytes=sum(r.bytes for r in residuals if r.memory_kind != "device"),
        regions=regions,
        names=facts.names,
        unmatched=unmatched_names(facts.regions, facts.names),
        devices=devices,
        device_bytes_per_device=_per_device([r for r in residuals if r.memory_kind == "device"]),
        host_bytes_per_device=_per_device([r for r in residuals if r.memory_kind != "device"]),
        known_bytes_per_device=sum(r.bytes_per_device or 0 for r in residuals),
        known_per_device=sum(1 for r in residuals if r.bytes_per_device is not None),
    )


def _per_device(residuals: Sequence[Residual]) -> int | None:
    """One device's bytes of `residuals`, None where one's is not known."""
    sizes = [r.bytes_per_device for r in residuals]
    return None if None in sizes else sum(s or 0 for s in sizes)


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
        if r.source is not None:
            kinds.setdefault(r.source, set()).add(_sizes(r.type))
        if r.stacked_by:
            # A loop's stacked residual is made by the loop, on the loop's line.
            kinds.setdefault(r.stacked_by, set()).add(_sizes(r.type))
    arguments = {r.path for r in analysis.residuals if r.path is not None}
    by_line: dict[tuple[str | None, str | None, str], list[LiveBuffer]] = {}
    for buffer in buffers:
        memory = "pinned_host" if buffer.memory_space == HOST_MEMORY_SPACE else "device"
        if buffer.kind in ("parameter", "alias") and buffer.path in arguments:
            # An argument the backward reads.
            by_line.setdefault((None, buffer.path, memory), []).append(buffer)
            continue
        if buffer.kind in ("parameter", "constant") or "transpose(" in (buffer.op_name or ""):
            continue
        line = buffer.user_source
        sizes = _sizes(buffer.shape)
        if any(_shard_of(sizes, whole, devices) for whole in kinds.get(line, ())):
            by_line.setdefault((line, None, memory), []).append(buffer)
    lines = tuple(
        sorted(
            (
                PeakLine(line, sum(b.bytes for b in bs), len(bs), memory, path)
                for (line, path, memory), bs in by_line.items()
            ),
            key=lambda p: -p.bytes,
        )
    )
    return RematPeak(
        peak_bytes,
        sum(p.bytes for p in lines),
        lines,
        sum(p.bytes for p in lines if p.memory_kind != "device"),
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

"""What the structural diff reports: the changes, their groups, the op counts, the
rows of the side-by-side alignment, the paired parameters, the fusions and functions,
and the whole `ModuleDiff`, as frozen dataclasses that renderers read."""

from __future__ import annotations

import dataclasses
from typing import Final, Literal

ChangeKind = Literal["added", "removed", "changed"]
"""What a change is: `added` (only in B), `removed` (only in A) or `changed`."""
RowStatus = Literal["same", "normalized", "added", "removed", "changed"]
"""What a node of the diff is: a change's kind, `same`, or `normalized` (on one side
only but no change)."""
ParameterStatus = Literal["same", "changed", "added", "removed"]
"""What an entry parameter is: the same on both sides, changed, added or removed."""
Verdict = Literal["same", "different"]
"""Whether the modules differ."""

ADDED: Final = "added"
REMOVED: Final = "removed"
CHANGED: Final = "changed"
SAME: Final = "same"
NORMALIZED: Final = "normalized"


@dataclasses.dataclass(frozen=True, slots=True)
class Change:
    """One change: an op (or parameter, result, module attribute) added, removed or
    changed."""

    kind: ChangeKind
    """`added` (only in B), `removed` (only in A) or `changed`."""
    function: str
    """The function the op is in (B's for added ops, A's otherwise)."""
    op: str
    """The op's name (`stablehlo.add`), or `parameter`, `result`, `module`."""
    detail: str
    """What changed, without value names, so that equal changes read equally."""
    aspects: tuple[str, ...]
    """What kind of change: `kind`, `shape`, `dtype`, `attributes`, `compute_type`,
    `sharding`, `memory_kind`, `operands`, `callee`, `fusion`, `parameter`, ..."""
    a: int | None
    """The op's node in A (an index into `ModuleDiff.a.ops`), None when added or
    not an op."""
    b: int | None
    """The node in B, None when removed."""
    a_where: str | None
    """Where in A: `function %value (file.py:LINE)`."""
    b_where: str | None
    """Where in B."""


@dataclasses.dataclass(frozen=True, slots=True)
class Place:
    """A function a grouped change occurs in, and how many times."""

    function: str
    """The function, as in `Change.function`."""
    count: int
    """How many of the group's changes are there."""


@dataclasses.dataclass(frozen=True, slots=True)
class ChangeGroup:
    """Changes with the same kind, op and detail, wherever they are (in every clone
    of a function, every layer, every call site), shown once."""

    kind: ChangeKind
    """`added`, `removed` or `changed`."""
    function: str
    """The function of the first change, or the functions (XLA's `.N` suffixes
    dropped) when there are several: `tril, triu`, `a, b, c and 4 more`."""
    op: str
    """The op's name, as in `Change.op`."""
    detail: str
    """What changed, as in `Change.detail`."""
    aspects: tuple[str, ...]
    """What kind of change, as in `Change.aspects`."""
    count: int
    """How many times this change occurs (40 for the same change in 40 layers)."""
    changes: tuple[Change, ...]
    """Each occurrence, in order."""
    places: tuple[Place, ...]
    """The functions the occurrences are in, each with its count, in order."""


@dataclasses.dataclass(frozen=True, slots=True)
class Rename:
    """A function of A and its counterpart in B, whose names differ: no change."""

    a: str
    """Its name in A (`tril.450`)."""
    b: str
    """Its name in B (`r_tril_450`)."""


@dataclasses.dataclass(frozen=True, slots=True)
class Summary:
    """Op counts: ops as XLA sees them, calls inlined (an op in a function called
    three times counts three times); terminators are not counted."""

    added: int
    """Ops only in B."""
    removed: int
    """Ops only in A."""
    changed: int
    """Matched ops that differ (each pair counts once)."""
    unchanged: int
    """Matched ops that are the same."""
    normalized: int
    """Ops on one side only that are no change: reshapes that add or drop unit
    dimensions (64 -> 1x64, the identity broadcasts the HLO round trip writes), and
    second copies of a subexpression (equal constants one printer merged)."""


@dataclasses.dataclass(frozen=True, slots=True)
class Row:
    """One line of the side-by-side view: a matched pair or an op of one side."""

    a: int
    """Node in A, or -1."""
    b: int
    """Node in B, or -1."""
    status: RowStatus
    """`same`, `changed`, `added`, `removed`, or `normalized` (on one side only but no
    change: a unit-dimension reshape, a second copy of a subexpression)."""


@dataclasses.dataclass(frozen=True, slots=True)
class Side:
    """One module as the diff saw it: its ops in order, calls inlined."""

    module: str | None
    """The module's name (`jit_f`)."""
    entry: str | None
    """Its entry function."""
    ops: tuple[int, ...]
    """The op (id in `Module.ops`) of each node."""
    calls: tuple[tuple[int, ...], ...]
    """The `func.call` ops (ids) each node was inlined through, outermost first."""
    counted: tuple[bool, ...]
    """Whether the node counts as an op (terminators of regions do not)."""
    fusions: int
    """Fusions: `mhlo.fusion` ops, or XLA's own form's `hlo.fusion`."""


@dataclasses.dataclass(frozen=True, slots=True)
class ParameterPair:
    """An entry parameter and its counterpart."""

    a: int | None
    """Index in A, None when added."""
    b: int | None
    """Index in B, None when removed."""
    a_name: str | None
    """Its name in A (the pytree path JAX gives it, `params['w']`), if any."""
    b_name: str | None
    """Its name in B, if any."""
    status: ParameterStatus
    """`same`, `changed`, `added` or `removed`."""
    detail: str
    """What changed (type, sharding, memory kind, donation), or its type when added
    or removed."""


@dataclasses.dataclass(frozen=True, slots=True)
class FusionChange:
    """A fusion whose fused op set changed, or that exists on one side only."""

    status: ChangeKind
    """`changed`, `added` or `removed`."""
    a: int | None
    """The fusion's node in A."""
    b: int | None
    """The fusion's node in B."""
    a_kind: str | None
    """`kLoop`, `kInput`, `kOutput`, `kCustom`, ..."""
    b_kind: str | None
    """The fusion kind in B."""
    a_ops: tuple[str, ...]
    """Op kinds fused in A."""
    b_ops: tuple[str, ...]
    """Op kinds fused in B."""
    moved_in: tuple[str, ...]
    """Ops fused here in B whose counterparts in A were elsewhere (unfused or in
    another fusion)."""
    moved_out: tuple[str, ...]
    """Ops fused here in A whose counterparts in B are elsewhere."""
    detail: str
    """The above in words, and the fused ops added or removed."""
    a_name: str | None
    """The fusion in A by XLA's name for it (`broadcast_add_fusion`), else by its value;
    None when added."""
    b_name: str | None
    """The fusion in B by name; None when removed."""


@dataclasses.dataclass(frozen=True, slots=True)
class FunctionPair:
    """A function and the function most of its ops matched into."""

    a: str | None
    """A's function, None for a function of B nothing matched into."""
    b: str | None
    """B's function, None when none of A's ops matched."""
    a_ops: int
    """Ops of A's function (calls inlined: once per call site)."""
    b_ops: int
    """Ops of B's function."""
    matched: int
    """Ops of A's function matched into B's."""


@dataclasses.dataclass(frozen=True)
class ModuleDiff:
    """The structural diff of modules A and B."""

    verdict: Verdict
    """`same` or `different`."""
    summary: Summary
    """Op counts."""
    groups: tuple[ChangeGroup, ...]
    """Changes grouped, in the order they first occur."""
    changes: tuple[Change, ...]
    """Every change, in order."""
    a: Side
    """Module A as diffed (the nodes that `Change.a` and `Row.a` index)."""
    b: Side
    """Module B as diffed."""
    rows: tuple[Row, ...]
    """The side-by-side alignment: A's ops in order, with B's unmatched ops placed
    before the next matched op that follows them in B."""
    parameters: tuple[ParameterPair, ...]
    """The entry parameters, paired."""
    fusions: tuple[FusionChange, ...]
    """Fusions added, removed, or whose fused op set changed."""
    functions: tuple[FunctionPair, ...]
    """Which function of B each function of A mostly went to."""
    renames: tuple[Rename, ...]
    """Functions matched by what they compute whose names differ (beyond XLA's `.N`
    suffixes): reported here and in the notes, never as changes."""
    notes: tuple[str, ...]
    """What is worth knowing but no change (the module's name differs, calls were too
    many to inline)."""

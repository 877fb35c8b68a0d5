"""What the placement analysis reports: its frozen dataclasses, the default and
host compute types, the collective kinds, and the closed sets of strings its
fields hold (as `Literal` types; the values stay plain strings)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Literal, get_args

DEVICE = "device"
HOST = "host"

CollectiveOp = Literal[
    "all_reduce",
    "all_gather",
    "reduce_scatter",
    "all_to_all",
    "collective_permute",
    "collective_broadcast",
    "ragged_all_to_all",
]
COLLECTIVES: tuple[CollectiveOp, ...] = get_args(CollectiveOp)

Via = Literal["default", "thread", "mark", "region", "call"]
"""How an op got its compute type. `default` (the device, unmarked) is never the
`via` of a `PlacedOp`."""
MemoryPlacementKind = Literal["argument", "result"]
TransferKind = Literal[
    "annotate_device_placement", "MoveToHost", "MoveToDevice", "copy", "copy-start", "host_callback"
]
ShardingKind = Literal[
    "argument", "result", "constraint", "reshard", "full_to_shard", "shard_to_full"
]
WarningKind = Literal["call_mark_not_in_body", "device_compute_on_host_memory", "large_host_input"]


@dataclasses.dataclass(frozen=True)
class PlacedOp:
    """An op whose compute type is not the default `device`."""

    op_id: int
    """Its index in `Module.ops`."""
    function: str
    op: str
    """Op name: `stablehlo.sine`."""
    compute_type: str
    """`host`, `gpu_stream:1`, `device|host` (reached from differently placed calls)."""
    via: Via
    """How it got the compute type: `mark` (its own attribute), `region` (an
    enclosing op's mark), `call` (a marked call reaches its function) or `thread`
    (its function's `execution_thread`)."""
    name: str | None
    """JAX's op name (`jit(f)/sin`) or the HLO instruction's name."""
    source: str | None
    """`file.py:LINE`."""


@dataclasses.dataclass(frozen=True)
class ComputeRegion:
    """Ops of one non-device compute type placed there by one thing: a marked call
    (with everything it reaches), or the marks in one function."""

    compute_type: str
    function: str
    """Where the ops are: the called function of a marked call, else the function
    holding the marked ops."""
    called_from: str | None
    """For a marked call: the function making the call."""
    call_source: str | None
    """For a marked call: its source line."""
    ops: int
    """Ops in the region (the marked call itself included)."""
    op_ids: tuple[int, ...]
    sources: tuple[str, ...]
    """Distinct source lines of its ops, in order."""
    input_bytes: int | None
    """Bytes of the values it reads from outside (constants excluded); None when a
    size is unknown."""
    device_input_bytes: int | None
    """Of those, bytes not in host memory: what must be copied from the device."""
    output_bytes: int | None
    """Bytes of its values read outside it."""


@dataclasses.dataclass(frozen=True)
class MemoryPlacement:
    """The memory kind of an entry argument or result."""

    kind: MemoryPlacementKind
    """`argument` or `result`."""
    index: int
    value: str
    """`%arg0`, `result 0`."""
    name: str | None
    """JAX's name for it: the argument's pytree path (`x`), `jax.result_info`."""
    memory_kind: str
    """`pinned_host`, `device`, `unpinned_host` (from `mhlo.memory_kind`), or the
    layout's memory space `S(5)` when no kind is given."""
    memory_space: int | None
    """The memory space of its layout (`S(n)`), when known."""
    host: bool
    """Whether it is host memory."""
    shape: str
    bytes: int | None


@dataclasses.dataclass(frozen=True)
class Transfer:
    """One op that moves data between memories, or between device and host."""

    kind: TransferKind
    """`annotate_device_placement`, `MoveToHost`, `MoveToDevice`, `copy`,
    `copy-start` (async), `host_callback`."""
    source_memory: str
    """Where the data is before: `device`, `pinned_host`, `S(5)`, ..."""
    target_memory: str
    """Where the op puts it."""
    moves: bool
    """False when both are the same kind of memory (an annotation that keeps a
    device value on the device)."""
    shape: str
    bytes: int | None
    function: str
    op_id: int
    name: str | None
    sources: tuple[str, ...]
    detail: str
    """One line for people: `f32[8,128] 4.0 KiB device -> pinned_host`."""


@dataclasses.dataclass(frozen=True)
class Mesh:
    """A device mesh."""

    name: str
    axes: tuple[tuple[str, int], ...]
    """(axis name, size), in order."""
    devices: int
    """Product of the axis sizes."""
    text: str
    """As printed: `<["data"=4, "model"=2]>`."""
    xla_axes: bool = False
    """Its axes are XLA's (`axis_0`, ...): a mesh of an optimized module whose
    program's mesh is not known here (a dump, or no declared mesh spans its devices)."""


@dataclasses.dataclass(frozen=True)
class ShardingAnnotation:
    """A sharding written in the module."""

    kind: ShardingKind
    """`argument`, `result`, `constraint`, `reshard`, `full_to_shard`, `shard_to_full`."""
    value: str
    """`%arg0`, `result 0`, or the constrained value (`%3`)."""
    name: str | None
    """JAX's name: the argument's path, the result's info, the op's name."""
    function: str
    sharding: str
    """As written: `#sdy.sharding<@mesh, [{"data"}, {}]>`, `{devices=[4,1,2]<=[8]}`."""
    source: str | None
    on_mesh: str | None = None
    """An XLA sharding read on the module's mesh, in Shardy's words
    (`@mesh [{"data"}, {}]`), where its device order is the mesh's; None otherwise."""
    index: int | None = None
    """An argument's or a result's index in its function; None for an op's."""
    words: str = ""
    """The sharding for reading: a Shardy one as `@mesh [{"x"}, {}]`, an XLA one as
    its tiling (`tiled [4,1], replicated ×2`), as the parameter map says it."""


@dataclasses.dataclass(frozen=True)
class ManualComputation:
    """An `sdy.manual_computation` (what `jax.shard_map` lowers to with Shardy)."""

    function: str
    manual_axes: str
    """As written: `#sdy<manual_axes{"data", "model"}>`."""
    in_shardings: str
    out_shardings: str
    ops: int
    """Ops in its body."""
    source: str | None
    axes: tuple[str, ...] = ()
    """The manual axes, by name."""
    in_words: str = ""
    """`in_shardings` for reading: `@mesh [{"x"}]; @mesh [{}]`."""
    out_words: str = ""


@dataclasses.dataclass(frozen=True)
class Collective:
    """The collectives of one kind."""

    op: CollectiveOp
    """`all_reduce`, `all_gather`, `reduce_scatter`, `all_to_all`,
    `collective_permute`, `collective_broadcast`, `ragged_all_to_all`."""
    count: int
    async_count: int
    """How many of them run asynchronously (inside async start/done pairs, HLO's
    `all-reduce-start` forms, or the TPU's async collective fusions)."""
    bytes: int | None
    """Bytes of their results together (per device once partitioned); None when a
    size is unknown."""
    functions: tuple[str, ...]
    sources: tuple[str, ...]
    """The lines that made them: each op's innermost frame (`Location.source`), which
    may be a library's (Flax's `linear.py`, where an `nnx.Linear` made the dot)."""
    user_sources: tuple[str, ...] = ()
    """The user's lines (`Location.user_source`: each op's innermost frame in the
    user's own code, else its innermost frame): what the text report shows."""
    in_loops: int = 0
    """How many of them sit inside a loop (directly or through calls): they run once
    per iteration, more often than `count` says."""
    per_call: int | None = None
    """How many run per call of the module, loops' trip counts counted; None where a
    trip count is unknown."""
    bytes_per_call: int | None = None
    """Bytes of their results per call of the module, loops' trip counts counted;
    None where a trip count or a size is unknown."""
    trip_counts_from: tuple[str, ...] = ()
    """Where the trip counts of the loops around them were read, each once:
    `known_trip_count` (XLA's, in the while's backend config) or `loop_condition`
    (the loop's own condition, start and step: the TPU's optimized whiles carry no
    count); empty when none is in a loop of known trip count."""
    across_slices: bool = False
    """Collectives between slices, over the data-centre network: libtpu makes each of
    a multi-slice program's a send and a receive tagged with the collective they carry
    out (`_xla_megascale_transfer_type`), counted here by their sends, their bytes the
    data each device sends."""


@dataclasses.dataclass(frozen=True)
class PlacementWarning:
    """Something that looks wrong."""

    kind: WarningKind
    """`call_mark_not_in_body`, `device_compute_on_host_memory`, `large_host_input`."""
    message: str
    function: str | None
    sources: tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class Placement:
    """Compute placement, memory kinds, transfers, shardings and collectives of a
    module."""

    compute_types: Mapping[str, int]
    """Op count per compute type, `device` first, then most frequent."""
    total_ops: int
    placed_ops: tuple[PlacedOp, ...]
    """Every op not on `device`, in program order (`Module.program_order`): what to
    compare between two modules of the same function."""
    regions: tuple[ComputeRegion, ...]
    """Non-device compute regions, in program order of their first op."""
    memory: tuple[MemoryPlacement, ...]
    """Entry arguments and results that carry a memory kind or memory space."""
    transfers: tuple[Transfer, ...]
    meshes: tuple[Mesh, ...]
    shardings: tuple[ShardingAnnotation, ...]
    """Shardings of arguments, results, constraints and manual-computation edges."""
    op_shardings: int
    """Other ops that carry a sharding (`mhlo.sharding`, `sdy.sharding`)."""
    manual_computations: tuple[ManualComputation, ...]
    collectives: tuple[Collective, ...]
    partitions: int | None
    """`mhlo.num_partitions`, when the module says."""
    replicas: int | None
    warnings: tuple[PlacementWarning, ...]

    @property
    def host_regions(self) -> tuple[ComputeRegion, ...]:
        return tuple(r for r in self.regions if r.compute_type == HOST)

    @property
    def other_regions(self) -> tuple[ComputeRegion, ...]:
        return tuple(r for r in self.regions if r.compute_type != HOST)

    @property
    def is_plain(self) -> bool:
        """Nothing to tell: every op on the device, no memory kinds, transfers,
        shardings, collectives or warnings."""
        return not (
            self.placed_ops
            or self.memory
            or self.transfers
            or self.meshes
            or self.shardings
            or self.op_shardings
            or self.manual_computations
            or self.collectives
            or self.warnings
        )

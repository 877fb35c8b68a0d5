"""What JAX says of a function being differentiated, as plain data: the residuals its
backward pass keeps from the forward, and its `jax.checkpoint` regions with their
policies. `hloscope.sources.jax.residuals` builds these from JAX's own jaxprs (what
`jax.ad_checkpoint.print_saved_residuals` prints); `analyses.remat` reads them.
"""

from __future__ import annotations

import dataclasses
from typing import Literal

MadeBy = Literal["argument", "op", "literal", "constant"]


@dataclasses.dataclass(frozen=True)
class ResidualFact:
    """One value the backward pass reads from the forward (one residual of `jax.vjp`)."""

    type: str
    """`f32[64,256]`."""
    bytes: int
    memory: str
    """`device`, or the memory kind it is offloaded to (`pinned_host`)."""
    made_by: MadeBy
    argument: str | None
    """For an argument: its name as JAX gives it (`params['w']`)."""
    primitive: str | None
    """The primitive whose output JAX saves (`name`, `scan`, `device_put`, `sin`)."""
    primitive_line: str | None
    """`file.py:LINE` of that primitive (the user's line): the line JAX's
    `print_saved_residuals` names."""
    name: str | None
    """The `checkpoint_name` of the value (looked through a loop, an offload and
    `reduce_precision` to the op that made it)."""
    op: str | None
    """The primitive that made the value, looked through as `name` is."""
    line: str | None
    """`file.py:LINE` of the user's line that made the value."""
    function: str | None
    """The function that line is in."""
    offloaded: bool
    """Moved off the device by the policy (`Offloadable`): it lives in `memory`."""
    stacked_by: str | None
    """`file.py:LINE` of the loop (`jax.lax.scan`) that stacks it, one per iteration."""
    region: int | None
    """Index of the checkpoint region whose body made the value, if any."""
    region_output: bool
    """It is an output of that region (what a checkpointed block returns)."""
    shard_bytes: int | None = None
    """Bytes of one device's shard, where a sharding says (JAX's `shard_shape` of an
    argument's sharding, or of a value's on a mesh of explicit axes); None where XLA
    chooses how it is sharded."""


@dataclasses.dataclass(frozen=True)
class RecomputedOp:
    """Ops of one kind and line that a checkpoint region runs again in the backward."""

    primitive: str
    source: str | None
    count: int


@dataclasses.dataclass(frozen=True)
class RegionFact:
    """One `jax.checkpoint` (`jax.remat`, `nnx.remat`, `eqx.filter_checkpoint`) region."""

    index: int
    function: str | None
    """The checkpointed function's name."""
    source: str | None
    """`file.py:LINE` where the user applied it (the region's user line)."""
    policy: str
    """The policy's name (`save_only_these_names`); `nothing_saveable` without one."""
    policy_names: tuple[str, ...]
    """The checkpoint names the policy mentions."""
    offload_to: str | None
    """Where the policy offloads to (`pinned_host`)."""
    names: tuple[str, ...]
    """The checkpoint names given inside the region."""
    in_loop: str | None
    """`file.py:LINE` of the loop the region is inside, if any."""
    recomputed: tuple[RecomputedOp, ...]
    """What the backward runs again (per call of the region)."""


@dataclasses.dataclass(frozen=True)
class RematFacts:
    """The residuals of a differentiated function and its checkpoint regions."""

    function: str | None
    """The loss's name."""
    differentiated: tuple[str, ...]
    """The arguments differentiated (JAX's names of their leaves)."""
    unwrapped: str | None
    """What the target was unwrapped from (`jax.grad`), if it was a gradient."""
    residuals: tuple[ResidualFact, ...]
    regions: tuple[RegionFact, ...]
    names: tuple[str, ...]
    """Every checkpoint name the program gives (sorted)."""
    devices: int = 1
    """The devices the arguments' (and values') shardings span: 1 for a program on one."""

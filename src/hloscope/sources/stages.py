"""What JAX and XLA produced for a target, as plain data (no JAX objects but an
opaque handle), so that analyses and front ends can read it without importing JAX.

`hloscope.sources.lower` builds these; named after JAX's own stages
(`jax.stages.Lowered` -> `Compiled`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any


@dataclasses.dataclass(frozen=True)
class ArgumentLeaf:
    """One flattened leaf of the Python call's arguments."""

    position: int
    """Index among the flattened leaves of `(args, kwargs)`."""
    path: str
    """Pytree path: `params['w']`, `batch['x']`, `step`, `scale` (a keyword)."""
    shape: str
    """HLO spelling: `f32[16,4]`."""
    nbytes: int | None
    donated: bool
    hlo_index: int | None
    """The HLO parameter it became, None when jit pruned it."""
    sharding: str | None
    memory_kind: str | None


@dataclasses.dataclass(frozen=True)
class Lowering:
    """What JAX produced for an entrypoint, before XLA optimizes it."""

    kind: str
    """`function`, `jitted`, `lowered`, `compiled` or `exported`."""
    name: str
    """The function's name (`f`) as JAX knows it."""
    mlir_bytecode: bytes | None
    """The lowered StableHLO module (bytecode); None when only a `Compiled` was given."""
    arguments: tuple[ArgumentLeaf, ...]
    static_arguments: tuple[str, ...]
    """Names of arguments JAX treated as static (not parameters)."""
    lower_seconds: float | None
    cost: Mapping[str, float] | None
    """XLA's cost analysis of the lowered module (flops, bytes accessed)."""
    notes: tuple[str, ...]
    """Warnings JAX emitted while lowering, and the like."""
    handle: Any = dataclasses.field(default=None, repr=False, compare=False)
    """The JAX object to compile later (`Lowered`, `Compiled`, `Exported`)."""


@dataclasses.dataclass(frozen=True)
class Compilation:
    """What XLA made of a module for the local backend."""

    hlo_proto: bytes
    """The optimized `HloModuleProto`."""
    hlo_text: str
    compile_seconds: float | None
    cost: Mapping[str, float] | None
    memory: Mapping[str, int] | None
    platform: str

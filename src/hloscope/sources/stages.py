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
    """Its index among the kept arguments, None when jit pruned it. This is its HLO
    parameter number unless JAX put implicit parameters first (ordered-effect tokens,
    the platform index, dimension variables): `analyses.params` accounts for those."""
    sharding: str | None
    memory_kind: str | None


@dataclasses.dataclass(frozen=True)
class StaticArgument:
    """An argument JAX treated as static: part of the trace, not a parameter."""

    path: str
    """The parameter's name (`n`), or `args[1]` when it has none."""
    value: str
    """Its value, as `repr` prints it (shortened)."""
    position: int | None
    """Its index among the positional arguments; None for a keyword argument."""


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
    """Names of arguments JAX treated as static (not parameters): positional ones
    (`static_argnums`) first, then keywords."""
    lower_seconds: float | None
    cost: Mapping[str, float] | None
    """XLA's cost analysis of the lowered module (flops, bytes accessed)."""
    notes: tuple[str, ...]
    """Warnings JAX emitted while lowering, and the like."""
    handle: Any = dataclasses.field(default=None, repr=False, compare=False)
    """The JAX object to compile later (`Lowered`, `Compiled`, `Exported`)."""
    static: tuple[StaticArgument, ...] = ()
    """The static arguments with their values (known when hloscope traced the
    function itself; a given `Lowered` does not record them)."""


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

"""What several reports share: the stage timings, and the user frames of the lowered
module that the optimized module's reports map back to."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hloscope.analyses.fusions import LoweredFrames
    from hloscope.sources.loader import Loaded


@dataclasses.dataclass(frozen=True)
class Timings:
    """Wall times of the pipeline's stages, in seconds (None: the stage did not run
    here)."""

    load_seconds: float
    """Everything: import, lowering, compiling, parsing."""
    lower_seconds: float | None
    """`jax.jit(f).lower(...)`."""
    compile_seconds: float | None
    """`.compile()` (XLA's optimizations and code generation); when `compile_cached`,
    the seconds of the compile that made the cache's entry."""
    compile_cached: bool = False
    """The compile was read from hloscope's compile cache, not run here."""


def stage_timings(loaded: Loaded) -> Timings:
    """The timings of what was loaded: the whole load, and its lowering and
    compilation where they ran here."""
    lowering = loaded.lowering
    compilation = loaded.compilation
    return Timings(
        load_seconds=loaded.load_seconds,
        lower_seconds=lowering.lower_seconds if lowering is not None else None,
        compile_seconds=compilation.compile_seconds if compilation is not None else None,
        compile_cached=compilation.cached if compilation is not None else False,
    )


def lowered_frames(loaded: Loaded) -> LoweredFrames | None:
    """The user frames of the lowered module's ops (JAX's whole Python stack), for
    `user_source` where the optimized module kept a shorter one: the module loaded
    when it is the lowered one, else the lowering's module JAX gave (read again from
    its bytecode, not lowered again); None without one (a dump)."""
    from hloscope.analyses.fusions import lowered_user_frames

    model = loaded.lowered_model()
    return lowered_user_frames(model) if model is not None else None

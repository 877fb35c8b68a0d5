"""The core that every front end calls: load a target, build the reports.

The command line, the browser and the Python API all go through these functions,
so they never disagree. Reports are frozen dataclasses; renderers in
`hloscope.render` turn them into text or JSON.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping

from hloscope.analyses.diff import ModuleDiff, diff_modules
from hloscope.analyses.structure import Structure, analyze_structure
from hloscope.errors import HloscopeError
from hloscope.sources.loader import Loaded, LoadOptions, Source, load, optimized
from hloscope.sources.target import DumpTarget, EntrypointTarget, parse_target

__all__ = [
    "DiffReport",
    "InspectReport",
    "LoadOptions",
    "Loaded",
    "Timings",
    "diff_loaded",
    "diff_report",
    "inspect_report",
    "load",
    "optimized",
]


@dataclasses.dataclass(frozen=True)
class Timings:
    """Wall times of the pipeline's stages, in seconds (None: the stage did not run
    here)."""

    load_seconds: float
    """Everything: import, lowering, compiling, parsing."""
    lower_seconds: float | None
    """`jax.jit(f).lower(...)`."""
    compile_seconds: float | None
    """`.compile()` (XLA's optimizations and code generation)."""


@dataclasses.dataclass(frozen=True)
class InspectReport:
    """The overview of a module: where it came from, its structure, and what JAX and
    XLA report about it."""

    source: Source
    structure: Structure
    timings: Timings
    cost: Mapping[str, float] | None
    """XLA's cost analysis: `flops`, `transcendentals`, `bytes_accessed`; of the
    optimized module when compiled here, else of the lowered one."""
    memory: Mapping[str, int] | None
    """XLA's memory analysis of the compiled executable (bytes of arguments, outputs,
    temporaries, generated code)."""
    notes: tuple[str, ...]


def inspect_report(loaded: Loaded) -> InspectReport:
    """Build the `inspect` report of a loaded target."""
    lowering = loaded.lowering
    compilation = loaded.compilation
    cost = None
    if compilation is not None and compilation.cost:
        cost = compilation.cost
    elif lowering is not None and lowering.cost:
        cost = lowering.cost
    return InspectReport(
        source=loaded.source,
        structure=analyze_structure(loaded.module),
        timings=Timings(
            load_seconds=loaded.load_seconds,
            lower_seconds=lowering.lower_seconds if lowering is not None else None,
            compile_seconds=compilation.compile_seconds if compilation is not None else None,
        ),
        cost=cost,
        memory=compilation.memory if compilation is not None else None,
        notes=loaded.notes,
    )


# --------------------------------------------------------------------------- diff


@dataclasses.dataclass(frozen=True)
class DiffReport:
    """`hloscope diff A B`: where each side came from and their structural diff."""

    a: Source
    """Where A came from."""
    b: Source
    """Where B came from."""
    diff: ModuleDiff
    """The structural diff."""
    load_seconds: tuple[float, float]
    """Loading A, loading B (lowering and compiling included)."""
    diff_seconds: float
    """Building the diff, loading excluded."""
    notes: tuple[str, ...]
    """The diff's notes, then what loading each side noted (prefixed `A:`/`B:`)."""

    @property
    def same(self) -> bool:
        return self.diff.verdict == "same"


def diff_options(target: str, options: LoadOptions) -> LoadOptions:
    """The target options that apply to one side: example arguments to an entrypoint,
    `--module` to a dump folder, `--compile` to both."""
    parsed = parse_target(target)
    if isinstance(parsed, EntrypointTarget):
        return dataclasses.replace(options, module=None)
    keep_module = options.module if parsed.path.is_dir() else None
    return dataclasses.replace(options, args=(), args_factory=None, module=keep_module)


def diff_report(target_a: str, target_b: str, options: LoadOptions | None = None) -> DiffReport:
    """Load both targets with the same options (each taking those that apply to it) and
    diff them."""
    options = options or LoadOptions()
    parsed = [parse_target(target_a), parse_target(target_b)]
    if (options.args or options.args_factory) and not any(
        isinstance(p, EntrypointTarget) for p in parsed
    ):
        raise HloscopeError(
            "--arg and --args give example arguments to entrypoints; A and B are dumps"
        )
    if options.module is not None and not any(
        isinstance(p, DumpTarget) and p.path.is_dir() for p in parsed
    ):
        raise HloscopeError("--module picks a module of a dump folder; neither A nor B is one")
    loaded_a = load(target_a, diff_options(target_a, options))
    loaded_b = load(target_b, diff_options(target_b, options))
    return diff_loaded(loaded_a, loaded_b)


def diff_loaded(a: Loaded, b: Loaded) -> DiffReport:
    """Diff two loaded targets."""
    start = time.perf_counter()
    result = diff_modules(a.module, b.module)
    elapsed = time.perf_counter() - start
    notes = (
        result.notes
        + tuple(f"A: {note}" for note in a.notes)
        + tuple(f"B: {note}" for note in b.notes)
    )
    return DiffReport(a.source, b.source, result, (a.load_seconds, b.load_seconds), elapsed, notes)

"""The `compare` report: configurations of one step side by side on the target.

A configuration is a target, a `--for` spec and the environment variables the program
reads when imported; each is loaded and compiled in a child process of its own
(`sources.compare_run`), and its row is read from the reports the single views build
(`memory --for`'s fit, `profile --for`'s estimate, `placement --for`'s collectives):
one answer everywhere, never re-derived here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Literal

from hloscope.reports.entry import ReportEntry

CompareSort = Literal["time", "memory", "name"]
SORTS: tuple[CompareSort, ...] = ("time", "memory", "name")


@dataclasses.dataclass(frozen=True)
class CompareConfig:
    """One configuration: what is loaded, for what, with which environment."""

    target: str
    """The target as the user wrote it (`samples/llm_step.py:step`)."""
    compile_for: str
    """The `--for` spec as the user wrote it (`tpu:v5e:4x4`)."""
    env: Mapping[str, str]
    """Environment variables set before the target is imported (`{"LLM_MESH": "2x8"}`),
    in the order of the `--vary` options."""
    label: str
    """A short name for tables: `LLM_MESH=2x8 LLM_REMAT=dots @ tpu:v5e:4x4`, the target
    first when the comparison has several."""


@dataclasses.dataclass(frozen=True)
class CompareEstimate:
    """A step's estimated time on the target, as `profile --for` estimates it
    (`analyses.estimate.EstimateAnalysis`'s figures)."""

    seconds: float
    """The step: compute plus exposed communication."""
    compute_seconds: float
    """The kernels' time."""
    communication_seconds: float
    """The collectives' time, hidden or not."""
    exposed_communication_seconds: float
    """The collectives' time no kernel hides, by the compiled schedule."""
    mfu: float | None
    """Model FLOPs utilization (None where the model's flops are not known)."""
    hfu: float | None
    """Hardware FLOPs utilization: the executed flops', recomputation included."""
    flops: float
    """The step's executed flops per device."""


@dataclasses.dataclass(frozen=True)
class CompareCollective:
    """The collectives of one kind, as `placement --for` lists them."""

    op: str
    """`all_reduce`, `all_gather`, `reduce_scatter`, `all_to_all`, `collective_permute`..."""
    count: int
    """How many the program holds (each once, loops not counted)."""
    bytes: int | None
    """Bytes of their results together, per device; None when a size is unknown."""
    in_loops: int
    """How many of them sit inside a loop (they run once per iteration)."""
    across_slices: bool
    """Over the data-centre network, between slices (else over ICI / NVLink)."""
    bytes_per_call: int | None
    """Bytes per call of the step, loops' trip counts counted; None where unknown."""


@dataclasses.dataclass(frozen=True)
class CompareRow:
    """One configuration's row: fits or not, peak memory, the estimate, communication."""

    config: CompareConfig
    fits: bool | None
    """Peak bytes per device within the device's capacity; False when XLA refused it for
    memory; None when the capacity is not known or the row failed."""
    peak_bytes: int | None
    """What one device needs, as `memory --for` says it (`fit.required_bytes`): XLA's
    `memory_analysis()`, arguments + outputs + temporaries + generated code - aliased;
    where XLA refused for memory, what its buffer assignment allocated."""
    peak_from: str | None
    """`memory analysis` or `buffer assignment`: which of XLA's figures `peak_bytes` is."""
    capacity_bytes: int | None
    """One device's memory (`CompileFor.memory_bytes`)."""
    device: str | None
    """The device, as XLA names it (`TPU v5 lite`)."""
    devices: int | None
    """How many devices the program was compiled for."""
    estimate: CompareEstimate | None
    """None where the program could not be estimated (it failed, or XLA refused it)."""
    collectives: tuple[CompareCollective, ...]
    ici_bytes: int | None
    """Bytes per step per device over the slice's interconnect (ICI, NVLink): the
    collectives within a slice, loops' trip counts counted; None when a size is unknown."""
    dcn_bytes: int | None
    """Bytes per step per device over the data-centre network, between slices."""
    compile_seconds: float | None
    """The compile's wall time (when read from the cache, that of the compile that
    filled it)."""
    compile_cached: bool
    """The compile was read from hloscope's compile cache."""
    tokens_per_step: int | None
    """`--tokens-per-step`, or the program's `TOKENS_PER_STEP` (all devices together)."""
    tokens_per_second_per_device: float | None
    """`tokens_per_step` / devices / the estimated step time."""
    refused: str | None
    """XLA's sentence when it refused to compile for memory (RESOURCE_EXHAUSTED)."""
    error: str | None
    """Why this configuration has no row (one line); None when it compiled."""
    notes: tuple[str, ...] = ()
    """What the single views noted of this configuration."""

    @property
    def succeeded(self) -> bool:
        """It compiled and was measured (it may still not fit)."""
        return self.error is None


@dataclasses.dataclass(frozen=True)
class Comparison:
    """`hloscope compare`: every configuration's row, the best marked."""

    targets: tuple[str, ...]
    """The targets as the user wrote them."""
    rows: tuple[CompareRow, ...]
    """In `sort`'s order."""
    best: int | None
    """The index in `rows` of the fastest row that fits (estimated step time); None
    when none fits."""
    sort: CompareSort
    """`time` (fastest first), `memory` (smallest peak first) or `name` (by label);
    failed rows last."""
    notes: tuple[str, ...] = ()

    @property
    def any_succeeded(self) -> bool:
        return any(row.succeeded for row in self.rows)


def config_label(env: Mapping[str, str], compile_for: str, target: str | None) -> str:
    """`LLM_MESH=2x8 LLM_REMAT=dots @ tpu:v5e:4x4`, `target` first when given."""
    words = [f"{name}={value}" for name, value in env.items()]
    head = " ".join(([target] if target else []) + words)
    return f"{head} @ {compile_for}" if head else compile_for


def _sort_key(sort: CompareSort) -> object:
    def key(row: CompareRow) -> tuple[object, ...]:
        failed = not row.succeeded
        if sort == "time":
            seconds = row.estimate.seconds if row.estimate is not None else float("inf")
            return (failed, seconds, row.config.label)
        if sort == "memory":
            peak = row.peak_bytes if row.peak_bytes is not None else float("inf")
            return (failed, peak, row.config.label)
        return (failed, row.config.label)

    return key


def comparison(
    targets: Sequence[str],
    rows: Sequence[CompareRow],
    sort: CompareSort = "time",
    notes: Sequence[str] = (),
) -> Comparison:
    """The comparison of `rows`: sorted by `sort`, failed rows last, and the fastest row
    that fits marked."""
    ordered = tuple(sorted(rows, key=_sort_key(sort)))  # type: ignore[arg-type]
    fitting = [
        (row.estimate.seconds, index)
        for index, row in enumerate(ordered)
        if row.fits and row.estimate is not None
    ]
    best = min(fitting)[1] if fitting else None
    return Comparison(tuple(targets), ordered, best, sort, tuple(notes))


ENTRY = ReportEntry(
    report=Comparison,
    json="hloscope.render.json:compare_json",
    text="hloscope.render.text.compare:render_compare",
)

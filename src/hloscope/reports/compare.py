"""The `compare` report: configurations of one step side by side on the target.

A configuration is a target, a `--for` spec and the environment variables the program
reads when imported; each is loaded and compiled in a child process of its own
(`sources.compare_run`), and its row is read from the reports the single views build
(`memory --for`'s fit, `profile --for`'s estimate, `placement --for`'s collectives):
one answer everywhere, never re-derived here.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Literal

from hloscope.reports.entry import ReportEntry

if TYPE_CHECKING:
    from hloscope.reports.common import Timings
    from hloscope.reports.estimate import EstimateReport
    from hloscope.reports.memory import MemoryReport
    from hloscope.reports.placement import PlacementReport

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
    ici_bytes: float | None
    """Bytes moved per device per step over the slice's interconnect (ICI, NVLink), as
    `profile --for` estimates each collective (ring algorithm, loops counted); None
    without an estimate."""
    dcn_bytes: float | None
    """Bytes moved per device per step over the data-centre network, between slices."""
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
    compiles: int | None = None
    """Compiles XLA ran for this row; 0 when every one was read from hloscope's compile
    cache; None for a row whose child died."""
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


CompareReport = Comparison
"""The report of `hloscope compare`, by the name every report has in the registry."""


def row_facts(row: CompareRow) -> dict[str, int | float]:
    """What `compare --baseline` records of a row: whether it failed and fits (1 or 0),
    its peak, its estimated step and exposed communication, the bytes it moves and its
    collectives (a row that failed: `failed` alone)."""
    facts: dict[str, int | float] = {"failed": 0 if row.succeeded else 1}
    if not row.succeeded:
        return facts
    if row.fits is not None:
        facts["fits"] = int(row.fits)
    if row.peak_bytes is not None:
        facts["peak_bytes"] = row.peak_bytes
    if row.estimate is not None:
        facts["estimate.seconds"] = round(row.estimate.seconds, 9)
        facts["estimate.exposed_communication_seconds"] = round(
            row.estimate.exposed_communication_seconds, 9
        )
    if row.ici_bytes is not None:
        facts["ici_bytes"] = round(row.ici_bytes)
    if row.dcn_bytes:
        facts["dcn_bytes"] = round(row.dcn_bytes)
    facts["collectives.count"] = sum(c.count for c in row.collectives)
    return facts


def config_targets(configs: Sequence[CompareConfig]) -> tuple[str, ...]:
    """The configurations' targets, each once, in their order (`Comparison.targets`)."""
    return tuple(dict.fromkeys(c.target for c in configs))


def config_label(env: Mapping[str, str], compile_for: str, target: str | None) -> str:
    """`LLM_MESH=2x8 LLM_REMAT=dots @ tpu:v5e:4x4`, `target` first when given."""
    words = [f"{name}={value}" for name, value in env.items()]
    head = " ".join(([target] if target else []) + words)
    return f"{head} @ {compile_for}" if head else compile_for


def compare_row(
    config: CompareConfig,
    memory: MemoryReport,
    estimate: EstimateReport | None,
    placement: PlacementReport | None,
    timings: Timings | None,
    tokens_per_step: int | None,
    compiles: int | None,
) -> CompareRow:
    """A configuration's row, read from the reports the single views build: `memory
    --for`'s fit, `profile --for`'s estimate, `placement --for`'s collectives (None:
    XLA refused the program for memory, so only `memory` has a word)."""
    fit = memory.fit
    analysis = estimate.analysis if estimate is not None else None
    row_estimate = None
    ici = dcn = None
    if analysis is not None:
        row_estimate = CompareEstimate(
            seconds=analysis.seconds,
            compute_seconds=analysis.compute_seconds,
            communication_seconds=analysis.communication_seconds,
            exposed_communication_seconds=analysis.exposed_communication_seconds,
            mfu=analysis.mfu,
            hfu=analysis.hfu,
            flops=analysis.flops,
        )
        ici = sum(c.bytes for c in analysis.collectives if not c.across_slices)
        dcn = sum(c.bytes for c in analysis.collectives if c.across_slices)
    collectives = tuple(
        CompareCollective(
            op=c.op,
            count=c.count,
            bytes=c.bytes,
            in_loops=c.in_loops,
            across_slices=c.across_slices,
            bytes_per_call=c.bytes_per_call,
        )
        for c in (placement.placement.collectives if placement is not None else ())
    )
    compiled_for = memory.source.compiled_for
    devices = compiled_for.devices if compiled_for is not None else None
    per_device = None
    if tokens_per_step is not None and row_estimate is not None and devices:
        per_device = (
            tokens_per_step / devices / row_estimate.seconds if row_estimate.seconds else None
        )
    notes = memory.notes + (estimate.notes if estimate is not None else ())
    return CompareRow(
        config=config,
        fits=fit.fits if fit is not None else None,
        peak_bytes=fit.required_bytes if fit is not None else None,
        peak_from=fit.required_from if fit is not None else None,
        capacity_bytes=fit.device_bytes if fit is not None else None,
        device=fit.device if fit is not None else None,
        devices=devices,
        estimate=row_estimate,
        collectives=collectives,
        ici_bytes=ici,
        dcn_bytes=dcn,
        compile_seconds=timings.compile_seconds if timings is not None else None,
        compile_cached=timings.compile_cached if timings is not None else False,
        tokens_per_step=tokens_per_step,
        tokens_per_second_per_device=per_device,
        refused=fit.refused if fit is not None else None,
        error=None,
        compiles=compiles,
        notes=tuple(dict.fromkeys(notes)),
    )


def failed_row(config: CompareConfig, error: str, compiles: int | None = None) -> CompareRow:
    """The row of a configuration that could not be compiled or measured: its reason."""
    return CompareRow(
        config=config,
        fits=None,
        peak_bytes=None,
        peak_from=None,
        capacity_bytes=None,
        device=None,
        devices=None,
        estimate=None,
        collectives=(),
        ici_bytes=None,
        dcn_bytes=None,
        compile_seconds=None,
        compile_cached=False,
        tokens_per_step=None,
        tokens_per_second_per_device=None,
        refused=None,
        error=error,
        compiles=compiles,
    )


def _sort_key(sort: CompareSort) -> Callable[[CompareRow], tuple[object, ...]]:
    def key(row: CompareRow) -> tuple[object, ...]:
        failed = not row.succeeded
        if sort == "time":
            seconds = row.estimate.seconds if row.estimate is not None else math.inf
            return (failed, seconds, row.config.label)
        if sort == "memory":
            peak = row.peak_bytes if row.peak_bytes is not None else math.inf
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
    ordered = tuple(sorted(rows, key=_sort_key(sort)))
    fitting = [
        (row.estimate.seconds, index)
        for index, row in enumerate(ordered)
        if row.fits and row.estimate is not None
    ]
    best = min(fitting)[1] if fitting else None
    return Comparison(tuple(targets), ordered, best, sort, tuple(notes))


ENTRY = ReportEntry(
    report=Comparison,
    json="hloscope.render.compare_json:compare_json",
    text="hloscope.render.text.compare:render_compare",
)

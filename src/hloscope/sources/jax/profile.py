"""Running a compiled program under JAX's profiler (`hloscope profile`).

The program is called as user code calls it (the jitted function on concrete
inputs: the arrays given, or seeded random values for shapes), first for the
warm-up runs, then for the measured runs with JAX's profiler tracing into a folder
of its own. The trace is read with JAX's public `jax.profiler.ProfileData`: every
executed XLA instruction is an event whose stats name it (`hlo_op`), its module
(`hlo_module`) and the execution it belongs to (`run_id`), on the CPU as host
events, on a GPU as device events. Nothing of the trace's own format is parsed
here.

The module compiled for the report (`Lowered.compile()`) is the executable the calls
run: JAX's call path finds it in its cache rather than compiling again.
"""

from __future__ import annotations

import contextlib
import dataclasses
import statistics
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import jax

from hloscope.errors import HloscopeError, describe_exception, display_path, one_line
from hloscope.runs import ProfiledRuns, ProfiledScript, ProgramRun, TraceEvent
from hloscope.sources.entrypoint import user_code
from hloscope.sources.jax.inputs import InputPlan
from hloscope.stages import Lowering

RUN_BUDGET_SECONDS = 2.0
"""The measured runs' default total: as many runs as fit, within the bounds below."""
MIN_RUNS = 3
MAX_RUNS = 100


def profile_lowering(
    lowering: Lowering,
    module: str,
    label: str,
    *,
    runs: int | None = None,
    warmup: int = 1,
    trace_dir: str | None = None,
) -> ProfiledRuns:
    """Run the program of `lowering` (whose optimized module is named `module`)
    `warmup` times, then `runs` times under JAX's profiler (by default as many as fit
    in about two seconds), and hand back the runs' wall times and the executions of
    the module's instructions the trace recorded."""
    if lowering.runnable is None:
        raise HloscopeError(
            f"a {_stage_name(lowering)} carries no function to call: name the function "
            "(jitted or not), with its example arguments, to profile it",
            where=label,
        )
    jitted, args, kwargs = lowering.runnable
    plan = InputPlan(jitted, args, kwargs, label)

    def call(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        return jitted(*args, **kwargs)

    return profile_runs(call, plan, module, label, runs=runs, warmup=warmup, trace_dir=trace_dir)


def profile_runs(
    call: Callable[[tuple[Any, ...], dict[str, Any]], Any],
    plan: InputPlan,
    module: str,
    label: str,
    *,
    runs: int | None,
    warmup: int,
    trace_dir: str | None,
    on_stage: Callable[[str, bool], None] | None = None,
) -> ProfiledRuns:
    """`call` on fresh inputs from `plan`: `warmup` times, then `runs` times under JAX's
    profiler; the runs' wall times and the executions of `module`'s instructions.
    `on_stage(doing, is_run)` is told each stage before it starts (`the warm-up run
    (1 of 1)`, `measured run 2 of 5`, `reading the trace`)."""
    origins = sorted({leaf.origin for leaf in plan.leaves if leaf.origin != "python"})
    run_once = _runner(call, plan, label)

    def stage(doing: str, is_run: bool = True) -> None:
        if on_stage is not None:
            on_stage(doing, is_run)

    warmups = max(warmup, 0 if runs is not None else 1)
    warm = []
    for index in range(warmups):
        stage(f"warm-up run {index + 1} of {warmups}")
        warm.append(run_once())
    if runs is None:
        typical = statistics.median(warm)
        runs = int(min(MAX_RUNS, max(MIN_RUNS, RUN_BUDGET_SECONDS // max(typical, 1e-6))))
        if typical * MIN_RUNS > RUN_BUDGET_SECONDS:
            runs = 1
    with _trace_folder(trace_dir) as folder:
        with _profiler(folder, label):
            measured = []
            for index in range(runs):
                stage(f"measured run {index + 1} of {runs}")
                measured.append(run_once())
            seconds = tuple(measured)
            stage("reading the trace", False)
        trace = _trace_file(folder, label)
        events = _instruction_events(trace, module)
        kept = str(display_path(trace)) if trace_dir is not None else None
    return ProfiledRuns(
        module=module,
        run_seconds=seconds,
        warmup=len(warm),
        events=events,
        inputs=" and ".join(origins) if origins else "given",
        trace_file=kept,
    )


def profile_script(
    script: str, argv: list[str], *, stdout_to_stderr: bool, trace_dir: str | None = None
) -> ProfiledScript:
    """Run `script` as `python SCRIPT ARGV...` would, recording what JAX compiles
    (`capture.record_script`) with JAX's profiler tracing every program it runs.

    The profiler starts at the script's first compilation, not before it: starting it
    starts JAX's backends, after which the script could no longer configure JAX
    (`jax_num_cpu_devices` right after `import jax`, as JAX's examples do). Every
    program runs after its compilation, so the trace still holds every run."""
    from hloscope.sources.jax.backend import plugins_loaded_quietly
    from hloscope.sources.jax.capture import record_script

    plugins_loaded_quietly()
    with _trace_folder(trace_dir) as folder:
        with _profiler_from_first_compile(folder) as profiler:
            recorded = record_script(script, argv, stdout_to_stderr=stdout_to_stderr)
        if profiler.failure is not None:
            raise HloscopeError(profiler.failure, where=script)
        if not profiler.started:  # nothing compiled, so nothing ran
            return ProfiledScript(recorded, (), None)
        trace = _trace_file(folder, script)
        programs = _program_runs(trace)
        kept = str(display_path(trace)) if trace_dir is not None else None
    return ProfiledScript(recorded, programs, kept)


@dataclasses.dataclass
class _LateProfiler:
    """Whether `_profiler_from_first_compile` started JAX's profiler, or why it could
    not."""

    started: bool = False
    failure: str | None = None


@contextlib.contextmanager
def _profiler_from_first_compile(folder: Path) -> Iterator[_LateProfiler]:
    """JAX's profiler tracing into `folder` from the first compilation JAX asks of
    XLA in the block (its backend started by then) to the block's end."""
    from hloscope.sources.jax.private import private_compile_observer

    state = _LateProfiler()
    lock = threading.Lock()

    def on_compile(computation: Any) -> None:
        with lock:
            if state.started or state.failure is not None:
                return
            try:
                jax.profiler.start_trace(str(folder), profiler_options=_profile_options())
            except Exception as exc:
                # The script goes on; its report is refused after it, in one line.
                state.failure = f"JAX's profiler cannot start: {one_line(str(exc), 300)}"
                return
            state.started = True

    try:
        with private_compile_observer(on_compile):
            yield state
    finally:
        if state.started:
            with contextlib.suppress(Exception):
                jax.profiler.stop_trace()


def _stage_name(lowering: Lowering) -> str:
    return {
        "lowered": "jax.stages.Lowered",
        "compiled": "jax.stages.Compiled",
        "exported": "jax.export.Exported",
    }.get(lowering.kind, "stage")


def _runner(
    call: Callable[[tuple[Any, ...], dict[str, Any]], Any], plan: InputPlan, label: str
) -> Callable[[], float]:
    """One run: fresh inputs (a run may donate, and so delete, what it is given), then
    the call until its results are ready, timed."""

    def run() -> float:
        args, kwargs = plan.make()
        try:
            with user_code():
                start = time.perf_counter()
                jax.block_until_ready(call(args, kwargs))
                return time.perf_counter() - start
        except HloscopeError:
            raise
        except Exception as exc:
            raise HloscopeError(f"running it raised {_run_error(exc)}", where=label) from exc

    return run


def _run_error(exc: Exception) -> str:
    """The error a run raised, in one line: a host callback's own exception is the
    last line of the traceback XLA's runtime error quotes."""
    message = str(exc)
    if "Traceback (most recent call last)" in message:
        last = message.strip().splitlines()[-1].strip()
        return f"{type(exc).__name__} in a host callback: {one_line(last, 300)}"
    return describe_exception(exc)


@contextlib.contextmanager
def _trace_folder(trace_dir: str | None) -> Iterator[Path]:
    """`--trace-dir` (made if missing), or a temporary folder removed afterwards."""
    if trace_dir is not None:
        folder = Path(trace_dir)
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise HloscopeError(
                f"cannot make the trace folder: {exc.strerror}", where=trace_dir
            ) from exc
        yield folder
        return
    with tempfile.TemporaryDirectory(prefix="hloscope-trace-") as temporary:
        yield Path(temporary)


@contextlib.contextmanager
def _profiler(folder: Path, label: str) -> Iterator[None]:
    """JAX's profiler tracing into `folder` while the block runs."""
    try:
        jax.profiler.start_trace(str(folder), profiler_options=_profile_options())
    except Exception as exc:
        raise HloscopeError(
            f"JAX's profiler cannot start: {one_line(str(exc), 300)}", where=label
        ) from exc
    try:
        yield
    finally:
        with contextlib.suppress(Exception):
            jax.profiler.stop_trace()


def _profile_options() -> Any:
    """JAX's profiler without its Python tracer (every Python call an event: the runs
    would measure it)."""
    options = jax.profiler.ProfileOptions()
    options.python_tracer_level = 0
    return options


def _trace_file(folder: Path, label: str) -> Path:
    """The newest `.xplane.pb` JAX's profiler wrote under `folder`."""
    files = sorted(folder.glob("plugins/profile/*/*.xplane.pb"), key=lambda p: p.stat().st_mtime)
    if not files:
        raise HloscopeError("JAX's profiler wrote no trace", where=label)
    return files[-1]


def _instruction_events(trace: Path, module: str) -> tuple[TraceEvent, ...]:
    """The executions of `module`'s instructions in a trace, each run numbered by the
    order its first instruction started in."""
    data = jax.profiler.ProfileData.from_file(str(trace))
    found: list[tuple[Any, int, int, float, float, str]] = []
    thread = 0
    for plane in data.planes:
        for line in plane.lines:
            thread += 1
            for event in line.events:
                stats = dict(event.stats)
                name = stats.get("hlo_op")
                if name is None or stats.get("hlo_module") != module:
                    continue
                device = int(stats.get("device_ordinal", 0))
                found.append(
                    (
                        stats.get("run_id"),
                        device,
                        thread,
                        float(event.start_ns),
                        float(event.duration_ns),
                        str(name),
                    )
                )
    first_start: dict[Any, float] = {}
    for run_id, _, _, start, _, _ in found:
        first_start[run_id] = min(start, first_start.get(run_id, start))
    ordered = sorted(first_start, key=lambda run_id: first_start[run_id])
    order = {run_id: index for index, run_id in enumerate(ordered)}
    return tuple(
        TraceEvent(name, order[run_id], device, thread, start, duration)
        for run_id, device, thread, start, duration, name in sorted(found, key=lambda f: f[3])
    )


def _program_runs(trace: Path) -> tuple[ProgramRun, ...]:
    """Every execution of a compiled program in a trace: its instructions' events
    grouped by the trace's `run_id` (one per execution, over all its devices)."""
    spans: dict[tuple[str, Any], list[float]] = {}
    for plane in jax.profiler.ProfileData.from_file(str(trace)).planes:
        for line in plane.lines:
            for event in line.events:
                stats = dict(event.stats)
                module = stats.get("hlo_module")
                if module is None or "hlo_op" not in stats:
                    continue
                start, end = float(event.start_ns), float(event.start_ns + event.duration_ns)
                span = spans.setdefault((str(module), stats.get("run_id")), [start, end])
                span[0], span[1] = min(span[0], start), max(span[1], end)
    runs = (ProgramRun(module, start, end) for (module, _), (start, end) in spans.items())
    return tuple(sorted(runs, key=lambda run: run.start_ns))

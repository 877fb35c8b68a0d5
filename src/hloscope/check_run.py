"""Checking programs against their baselines: the one procedure `hloscope check` and
the pytest fixture `hlo_baseline` share. Each target is measured (compiled here, or
run with its compilations recorded), compared with its stored baseline, and, with
`update`, stored as the new baseline."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hloscope.analyses.baseline.facts import Measurement
from hloscope.analyses.baseline.record import Backend, Baseline
from hloscope.analyses.baseline.tolerance import Tolerances
from hloscope.errors import HloscopeError, display_path
from hloscope.reports.check import (
    CheckReport,
    TargetCheck,
    check_target,
    measure_program,
    refuse_baseline,
    with_collective_origins,
)
from hloscope.sources import baselines
from hloscope.sources.loader import Call, Loaded, LoadOptions

if TYPE_CHECKING:
    from hloscope.reports.compare import Comparison

ToleranceSpecs = Mapping[str, str | float] | str | float | None


def check_one(
    target: str,
    baseline: Path,
    *,
    options: LoadOptions | None = None,
    calls: str | None = None,
    tolerances: ToleranceSpecs = None,
    update: bool = False,
    name: str | None = None,
    obj: Any = None,
    call: Call | None = None,
    runtime: bool = False,
) -> CheckReport:
    """Check `target` (or `obj`, a Python object in hand named `target`, called as
    `call` says) against the baseline file `baseline`; with `runtime`, its run time too
    (the program run under JAX's profiler)."""
    stored = baselines.read_baseline_file(baseline)
    # A missing file is refused before compiling; the platform is known only after
    # (JAX's backend starts once the target is imported, which may configure it).
    refuse_baseline(stored, None, display_path(baseline), update)
    measurement, backend, lowered = _measure(
        target, options or LoadOptions(), calls, obj, call, runtime
    )
    check = _compare(
        name or target,
        target,
        baseline,
        stored,
        measurement,
        backend,
        Tolerances.from_specs(tolerances, "tolerance"),
        update,
    )
    check = with_collective_origins(check, lowered)
    return CheckReport(
        checks=(check,), baseline=display_path(baseline), backend=backend, updated=update
    )


def check_comparison(
    report: Comparison,
    baseline: Path,
    *,
    tolerances: ToleranceSpecs = None,
    update: bool = False,
) -> CheckReport:
    """Check a comparison's rows (`compare --baseline`) against the baseline file
    `baseline`: each row's facts (`row_facts`), so that the chosen configuration
    stopping to fit or getting slower fails the build; with `update`, record them."""
    from hloscope.analyses.baseline.facts import comparison_facts
    from hloscope.reports.compare import row_facts

    stored = baselines.read_baseline_file(baseline)
    backend = baselines.comparison_backend([r.config.compile_for for r in report.rows])
    refuse_baseline(stored, backend, display_path(baseline), update)
    measurement = comparison_facts((row.config.label, row_facts(row)) for row in report.rows)
    check = _compare(
        "compare",
        " ".join(report.targets),
        baseline,
        stored,
        measurement,
        backend,
        Tolerances.from_specs(tolerances, "tolerance"),
        update,
    )
    return CheckReport(
        checks=(check,), baseline=display_path(baseline), backend=backend, updated=update
    )


def check_configured(
    update: bool = False, only: Sequence[str] = (), runtime: bool = False
) -> CheckReport:
    """Check every target `[tool.hloscope.check]` lists (or those named in `only`)."""
    config = baselines.find_config()
    if config is None or not config.targets:
        raise HloscopeError(
            "nothing to check: name a target (hloscope check TARGET --baseline FILE), or "
            "list targets under [tool.hloscope.check] in pyproject.toml (see hloscope "
            "check --help)"
        )
    targets = config.targets
    if only:
        unknown = [n for n in only if n not in {t.name for t in targets}]
        if unknown:
            names = ", ".join(t.name for t in targets)
            raise HloscopeError(f"no configured target {unknown[0]!r} (there are: {names})")
        targets = tuple(t for t in targets if t.name in only)
    where = display_path(config.path)
    shared = Tolerances.from_specs(config.tolerances, where)
    # The configuration's files are the project's, whichever subfolder check runs
    # in; its modules importable as from the project's folder.
    project = config.path.parent
    if str(project) not in sys.path:
        sys.path.insert(0, str(project))
    checks = []
    for entry in targets:
        options = LoadOptions(
            args=entry.arg,
            args_factory=baselines.from_project(entry.args, project),
            module=entry.module,
        )
        own = Tolerances.from_specs(entry.tolerances, where, defaults=False)
        measurement, backend, lowered = _measure(
            baselines.from_project(entry.target, project) or entry.target,
            options,
            baselines.from_project(entry.calls, project),
            None,
            None,
            runtime,
        )
        # One file per target and platform: named once the target has started JAX.
        path = baselines.baseline_path(config.folder, entry.name, backend.platform)
        stored = baselines.read_baseline_file(path)
        check = _compare(
            entry.name,
            entry.target,
            path,
            stored,
            measurement,
            backend,
            shared.merged(own),
            update,
        )
        checks.append(with_collective_origins(check, lowered))
    return CheckReport(
        checks=tuple(checks),
        baseline=display_path(config.folder),
        backend=checks[0].backend,
        updated=update,
    )


def _measure(
    target: str,
    options: LoadOptions,
    calls: str | None,
    obj: Any,
    call: Call | None,
    runtime: bool = False,
) -> tuple[Measurement, Backend, Loaded | None]:
    """The facts of a target, the backend it was compiled for (asked after the
    target is imported), and the lowered target (to explain a regressed collective);
    with `runtime`, its run time under JAX's profiler."""
    program = baselines.checked_program(target, options, call=call, calls=calls, obj=obj)
    measurement = measure_program(program)
    if runtime:
        measurement = _with_runtime(target, program, measurement)
    compiled_for = program.optimized.source.compiled_for if program.optimized else None
    return measurement, baselines.backend_record(compiled_for), program.lowered


def _with_runtime(
    target: str, program: baselines.CheckedProgram, measurement: Measurement
) -> Measurement:
    from hloscope.analyses.baseline.facts import with_estimate, with_runtime
    from hloscope.reports.profile import profile_report
    from hloscope.sources.profile import profiled

    if program.optimized is None or program.lowered is None:
        raise HloscopeError(
            "--runtime runs one compiled program: a script or a function with --calls is not one",
            where=target,
        )
    if program.optimized.options.compile_for is not None:
        # Nothing runs without the device: the step is estimated for it.
        from hloscope.reports.estimate import estimate_report

        # check records no utilization: the step's MFU needs no second compile here.
        estimate = estimate_report(program.optimized, saving_everything=False)
        return with_estimate(measurement, estimate.analysis)
    runs = profiled(program.optimized)
    report = profile_report(program.lowered, runs.loaded, runs.runs)
    return with_runtime(measurement, report.analysis)


def _compare(
    name: str,
    target: str,
    path: Path,
    stored: Baseline | None,
    measurement: Measurement,
    backend: Backend,
    tolerances: Tolerances,
    update: bool,
) -> TargetCheck:
    """The check of one measured target against its stored baseline; with `update`,
    the measurement stored as the new one. Sites are kept relative to the project's
    root (`baselines.project_root`), whatever folder `check` runs in."""
    from hloscope.analyses.baseline.sites import rebase_measurement

    here = os.getcwd()
    root = str(baselines.project_root(path.resolve().parent) or here)
    rooted = rebase_measurement(measurement, here, root)
    check = check_target(
        name, target, rooted, backend, stored, display_path(path), tolerances, update, root
    )
    if update:
        baselines.write_baseline_file(
            path, Baseline(target=target, backend=backend, measurement=rooted)
        )
    return check

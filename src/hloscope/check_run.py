"""Checking programs against their baselines: the one procedure `hloscope check` and
the pytest fixture `hlo_baseline` share. Each target is measured (compiled here, or
run with its compilations recorded), compared with its stored baseline, and, with
`update`, stored as the new baseline."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from hloscope.analyses.baseline.record import Baseline
from hloscope.analyses.baseline.tolerance import Tolerances
from hloscope.errors import HloscopeError, display_path
from hloscope.reports.check import CheckReport, TargetCheck, check_target, measure_program
from hloscope.sources import baselines
from hloscope.sources.loader import Call, LoadOptions

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
) -> CheckReport:
    """Check `target` (or `obj`, a Python object in hand named `target`, called as
    `call` says) against the baseline file `baseline`."""
    check = _check(
        name or target,
        target,
        baseline,
        options or LoadOptions(),
        calls,
        Tolerances.from_specs(tolerances, "tolerance"),
        update,
        obj,
        call,
    )
    return CheckReport(
        checks=(check,),
        baseline=display_path(baseline),
        backend=check.backend,
        updated=update,
    )


def check_configured(update: bool = False, only: Sequence[str] = ()) -> CheckReport:
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
    shared = Tolerances.from_specs(config.tolerances, display_path(config.path))
    platform = baselines.local_backend().platform
    checks = []
    for entry in targets:
        options = LoadOptions(args=entry.arg, args_factory=entry.args, module=entry.module)
        tolerances = shared.merged(Tolerances(_own(entry.tolerances, config.path)))
        checks.append(
            _check(
                entry.name,
                entry.target,
                baselines.baseline_path(config.folder, entry.name, platform),
                options,
                entry.calls,
                tolerances,
                update,
                None,
                None,
            )
        )
    return CheckReport(
        checks=tuple(checks),
        baseline=display_path(config.folder),
        backend=checks[0].backend,
        updated=update,
    )


def _own(specs: Mapping[str, str | float], path: Path) -> tuple[Any, ...]:
    """A target's own tolerances, without the defaults again."""
    if not specs:
        return ()
    every = Tolerances.from_specs(specs, display_path(path)).patterns
    return every[len(Tolerances.from_specs(None).patterns) :]


def _check(
    name: str,
    target: str,
    path: Path,
    options: LoadOptions,
    calls: str | None,
    tolerances: Tolerances,
    update: bool,
    obj: Any,
    call: Call | None,
) -> TargetCheck:
    stored = baselines.read_baseline_file(path)
    if stored is None and not update:
        raise HloscopeError(
            "no baseline here: record one with --update (and commit it)",
            where=display_path(path),
        )
    program = baselines.checked_program(target, options, call=call, calls=calls, obj=obj)
    measurement = measure_program(program)
    backend = baselines.local_backend()
    check = check_target(
        name, target, measurement, backend, stored, display_path(path), tolerances, update
    )
    if update:
        baselines.write_baseline_file(
            path, Baseline(target=target, backend=backend, measurement=measurement)
        )
    return check

"""The comparison of the two paths: which program of the call is the AOT module's
counterpart, then each check in turn (see the package docstring)."""

from __future__ import annotations

from collections.abc import Sequence

from hloscope.analyses.aot.parameters import compare_parameters
from hloscope.analyses.aot.placement import compare_placement
from hloscope.analyses.aot.programs import compare_ops, programs_text, summary
from hloscope.analyses.aot.report import (
    DIFFERENT,
    KINDS,
    OPS,
    PARAMETERS,
    PLACEMENT,
    SAME,
    TEXT,
    AotComparison,
    Check,
    Difference,
    Program,
)
from hloscope.analyses.aot.results import compare_results
from hloscope.analyses.aot.text import compare_text
from hloscope.analyses.params import analyze_params
from hloscope.ir.model import Module
from hloscope.runs import AotRuns


def compare_paths(
    runs: AotRuns,
    call: Sequence[Program],
    aot: Program | None,
    aot_run: Sequence[Program] = (),
) -> AotComparison:
    """Compare the call's compiled modules and results (`call`, `runs.call`) with the
    AOT path's (`aot`, `runs.aot`)."""
    entry = runs.entry
    differences: list[Difference] = []
    checks: dict[str, Check] = {}

    call_summaries = tuple(summary(p) for p in call)
    run_summaries = tuple(summary(p) for p in aot_run)
    # Modules both paths compiled at run time (host callbacks) pair off first.
    unpaired = list(range(len(call)))
    run_missing: list[int] = []
    for j, program in enumerate(aot_run):
        match = next((i for i in unpaired if call[i].name == program.name), None)
        if match is None:
            run_missing.append(j)
        else:
            unpaired.remove(match)
    counterpart = _counterpart(call, unpaired, aot)
    extras = [i for i in unpaired if i != counterpart]

    aot_usage = analyze_params(aot.module, runs.aot_lowering) if aot is not None else None
    aot_pruned = tuple(p.path for p in aot_usage.with_status("pruned")) if aot_usage else ()

    extra: Difference | None = None
    if aot is None:
        for kind in (PLACEMENT, PARAMETERS, OPS, TEXT):
            checks[kind] = Check(
                kind, False, None, "no lowered module on the AOT path (a Compiled was given)"
            )
    else:
        pair = (call[counterpart], aot) if counterpart is not None else None
        extra = compare_ops(call, unpaired, counterpart, extras, aot, entry, differences, checks)
        if run_missing:
            missing = [aot_run[j] for j in run_missing]
            differences.append(
                Difference(
                    OPS,
                    f"the AOT-compiled executable compiled {programs_text(missing)} while it "
                    "ran, and the call did not",
                    "host callbacks of the AOT program run JAX code that the call's "
                    "program does not reach",
                )
            )
        sides = [call[counterpart]] if counterpart is not None else [call[i] for i in unpaired]
        compare_placement(sides, aot, differences, checks)
        if pair is not None:
            compare_parameters(pair[0], pair[1], aot_pruned, differences, checks)
            compare_text(pair[0], pair[1], differences, checks, extra)
        else:
            reason = (
                "the call compiled no program"
                if not unpaired
                else f"the call ran {len(unpaired)} programs, none of them {aot.name}"
            )
            checks[PARAMETERS] = Check(PARAMETERS, False, None, f"not compared: {reason}")
            checks[TEXT] = Check(TEXT, False, None, f"not compared: {reason}")

    results = compare_results(runs, differences, checks, entry, extra)
    order = {kind: i for i, kind in enumerate(KINDS)}
    return AotComparison(
        verdict=DIFFERENT if differences else SAME,
        entry=entry,
        differences=tuple(sorted(differences, key=lambda d: order.get(d.kind, len(order)))),
        checks=tuple(checks[kind] for kind in KINDS if kind in checks),
        results=results,
        call_programs=call_summaries,
        counterpart=counterpart,
        aot_program=summary(aot) if aot is not None else None,
        aot_run_programs=run_summaries,
        aot_pruned=aot_pruned,
    )


def _counterpart(call: Sequence[Program], candidates: list[int], aot: Program | None) -> int | None:
    """The call's module to compare with the AOT module: the same jitted function
    (same module name, preferring the same entry types), else the only one."""
    if aot is None or not candidates:
        return None
    named = [i for i in candidates if call[i].name == aot.name]
    if named:
        types = _entry_types(aot.module)
        return next((i for i in named if _entry_types(call[i].module) == types), named[0])
    return candidates[0] if len(candidates) == 1 else None


def _entry_types(module: Module) -> tuple[str, ...]:
    entry = module.entry
    return tuple(a.type for a in entry.arguments) if entry is not None else ()

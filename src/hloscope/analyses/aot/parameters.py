"""The parameters check: the entry parameters of both modules in order, and what
the AOT lowering pruned."""

from __future__ import annotations

from hloscope.analyses.aot.report import MAX_LISTED, PARAMETERS, Check, Difference, Program, plural
from hloscope.analyses.params import Parameter, ParameterUsage, analyze_params


def _parameter_text(p: Parameter) -> str:
    return f"{p.path} {p.shape}"


def _parameters_line(usage: ParameterUsage) -> str:
    shown = [_parameter_text(p) for p in usage.parameters[:MAX_LISTED]]
    if len(usage.parameters) > MAX_LISTED:
        shown.append(f"… {len(usage.parameters) - MAX_LISTED} more")
    return ", ".join(shown)


def compare_parameters(
    call: Program,
    aot: Program,
    aot_pruned: tuple[str, ...],
    differences: list[Difference],
    checks: dict[str, Check],
) -> None:
    # Both read from the modules alone, so that each side is described the same way.
    mine = analyze_params(call.module)
    theirs = analyze_params(aot.module)
    checks[PARAMETERS] = Check(PARAMETERS, True, True, f"{call.name} against {aot.name}")
    found: list[Difference] = []
    implicit_call, implicit_aot = len(mine.implicit), len(theirs.implicit)
    if implicit_call != implicit_aot:
        found.append(
            Difference(
                PARAMETERS,
                f"the call's {call.name} has {plural(implicit_call, 'implicit parameter')} "
                f"(tokens, platform index, constants) and the AOT module {implicit_aot}",
                "one path has ordered effects (io_callback, debug prints) or hoisted "
                "constants the other does not",
            )
        )
    a, b = mine.parameters, theirs.parameters
    if len(a) != len(b):
        pruned = f"; the AOT path pruned {', '.join(aot_pruned)}" if aot_pruned else ""
        found.append(
            Difference(
                PARAMETERS,
                f"the call's {call.name} takes {plural(len(a), 'parameter')} "
                f"({_parameters_line(mine)}) and the AOT module "
                f"{len(b)} ({_parameters_line(theirs)}){pruned}",
                "the jit the call runs receives other arguments than the AOT path was "
                "lowered with (a wrapper adds, drops or restructures them), or prunes "
                "differently (keep_unused, static arguments)",
            )
        )
    else:
        shapes = [
            (i, p, q) for i, (p, q) in enumerate(zip(a, b, strict=True)) if p.shape != q.shape
        ]
        if shapes:
            listed = "; ".join(
                f"parameter {i} is {p.shape} in the call's {call.name} and {q.shape} in the "
                "AOT module"
                for i, p, q in shapes[:MAX_LISTED]
            )
            found.append(
                Difference(
                    PARAMETERS,
                    listed,
                    "the jit the call runs receives other arguments than the AOT path (a "
                    "wrapper reorders, reshapes or converts them before calling it)",
                )
            )
        facts = []
        for i, (p, q) in enumerate(zip(a, b, strict=True)):
            for label, mine_value, theirs_value in (
                ("used", p.status, q.status),
                ("donated", p.donated, q.donated),
                ("sharding", p.sharding_attribute, q.sharding_attribute),
                ("memory kind", p.memory_kind, q.memory_kind),
            ):
                if mine_value != theirs_value:
                    facts.append(
                        f"parameter {i} ({p.path}) {label}: {_fact(mine_value)} in the call, "
                        f"{_fact(theirs_value)} in the AOT module"
                    )
        if facts:
            found.append(
                Difference(
                    PARAMETERS,
                    "; ".join(facts[:MAX_LISTED])
                    + (f"; and {len(facts) - MAX_LISTED} more" if len(facts) > MAX_LISTED else ""),
                    "the jit the call runs is configured differently (donate_argnums, "
                    "in_shardings, memory kinds) or is given differently placed arguments",
                )
            )
    if found:
        checks[PARAMETERS] = Check(PARAMETERS, True, False, f"{call.name} against {aot.name}")
        differences.extend(found)


def _fact(value: object) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)

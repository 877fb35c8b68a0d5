"""The ops check: which programs each path compiled, and their op kinds compared
(each function once, calls left out)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from hloscope.analyses.aot.report import (
    MAX_LISTED,
    OPS,
    Check,
    Difference,
    Program,
    ProgramSummary,
    plural,
)
from hloscope.runs import AotEntry


def summary(program: Program) -> ProgramSummary:
    entry = program.module.entry
    return ProgramSummary(
        name=program.name,
        ops=sum(program.op_counts.values()),
        calls=program.calls,
        off_device_ops=len(program.placement.placed_ops),
        parameters=len(entry.arguments) if entry is not None else 0,
    )


def programs_text(programs: Sequence[Program]) -> str:
    parts = [f"{p.name} ({plural(sum(p.op_counts.values()), 'op')})" for p in programs]
    listed = ", ".join(parts[:MAX_LISTED])
    more = f" and {len(parts) - MAX_LISTED} more" if len(parts) > MAX_LISTED else ""
    return f"{plural(len(programs), 'program')}: {listed}{more}"


def compare_ops(
    call: Sequence[Program],
    unpaired: Sequence[int],
    counterpart: int | None,
    extras: Sequence[int],
    aot: Program,
    entry: AotEntry,
    differences: list[Difference],
    checks: dict[str, Check],
) -> Difference | None:
    """Compare op counts; returns the difference naming the call's programs besides
    the counterpart, if any."""
    aot_counts = aot.op_counts
    extra = None
    if counterpart is not None:
        call_counts = call[counterpart].op_counts
        same = call_counts == aot_counts
        if not same:
            differences.append(
                Difference(
                    OPS,
                    f"op counts differ between the call's {call[counterpart].name} and the "
                    f"AOT module {aot.name}: {_count_changes(call_counts, aot_counts)}",
                    "the call's jit traced other code or other arguments than the AOT path "
                    "lowered (a wrapper changes shapes or static arguments, or calls "
                    "something else)",
                )
            )
        if extras:
            same = False
            extra = Difference(
                OPS,
                f"besides {call[counterpart].name}, the call compiled "
                f"{programs_text([call[i] for i in extras])}, which the AOT path does not run",
                "code around the AOT entry runs JAX ops of its own when the target is "
                "called (eagerly, as separate programs), and .lower() of the entry does "
                "not trace it",
            )
            differences.append(extra)
        note = f"{call[counterpart].name} against {aot.name}"
        if extras:
            note += f", and {plural(len(extras), 'other program')} of the call"
        checks[OPS] = Check(OPS, True, same, note)
        return extra
    if not unpaired:
        differences.append(
            Difference(
                OPS,
                f"the call compiled no XLA program; the AOT path compiles {aot.name} "
                f"({plural(sum(aot_counts.values()), 'op')})",
                "the target computed its result without running JAX (NumPy or plain "
                "Python), or JAX reused a compilation hloscope could not clear",
            )
        )
        checks[OPS] = Check(OPS, True, False, "the call compiled nothing")
        return None
    programs = [call[i] for i in unpaired]
    total: Counter[str] = Counter()
    for program in programs:
        total.update(program.op_counts)
    detail = (
        f"the call ran {programs_text(programs)}, where the AOT path compiles one, {aot.name} "
        f"({plural(sum(aot_counts.values()), 'op')})"
    )
    if total != aot_counts:
        detail += f"; op counts over them all differ: {_count_changes(total, aot_counts)}"
    if entry.via == "jax.jit":
        cause = (
            "the target is not jitted: called directly, its jits and the ops between them "
            "run as separate programs (ops outside a jit run one by one), while jax.jit "
            "around it compiles one program that XLA optimizes as a whole"
        )
    else:
        cause = (
            "the call runs more than the AOT entry: code around it compiles and runs "
            "programs of its own, outside what .lower() traces"
        )
    differences.append(Difference(OPS, detail, cause))
    checks[OPS] = Check(
        OPS, True, False, f"{plural(len(programs), 'program')} of the call together"
    )
    return None


def _count_changes(call: Counter[str], aot: Counter[str]) -> str:
    changes = []
    for name in sorted(set(call) | set(aot), key=lambda n: (-abs(call[n] - aot[n]), n)):
        if call[name] != aot[name]:
            changes.append(f"{name} {call[name]} in the call, {aot[name]} in the AOT module")
    listed = "; ".join(changes[:MAX_LISTED])
    return listed + (f"; and {len(changes) - MAX_LISTED} more" if len(changes) > MAX_LISTED else "")

"""The placement check: ops per compute type and op kind on each path."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from hloscope.analyses.aot.report import MAX_LISTED, PLACEMENT, Check, Difference, Program, plural


def _describe_placed(counts: Counter[tuple[str, str]], regions: int) -> str:
    if not counts:
        return "runs everything on the device"
    by_type: dict[str, Counter[str]] = {}
    for (compute_type, op), n in counts.items():
        by_type.setdefault(compute_type, Counter())[op] += n
    parts = []
    for compute_type, ops in sorted(by_type.items()):
        kinds = ", ".join(
            f"{op.rpartition('.')[2]}{f' ×{n}' if n > 1 else ''}"
            for op, n in sorted(ops.items(), key=lambda kv: (-kv[1], kv[0]))[:MAX_LISTED]
        )
        where = "on the host" if compute_type == "host" else f"on {compute_type}"
        parts.append(f"{plural(sum(ops.values()), 'op')} {where} ({kinds})")
    text = " and ".join(parts)
    if regions:
        text += f" in {plural(regions, 'region')}"
    return f"runs {text}"


def compare_placement(
    call: Sequence[Program],
    aot: Program,
    differences: list[Difference],
    checks: dict[str, Check],
) -> None:
    if not call:
        checks[PLACEMENT] = Check(PLACEMENT, False, None, "not compared: the call compiled nothing")
        return
    call_counts: Counter[tuple[str, str]] = Counter()
    call_regions = 0
    for program in call:
        call_counts.update(program.placed_op_counts)
        call_regions += len(program.placement.regions)
    aot_counts = aot.placed_op_counts
    aot_regions = len(aot.placement.regions)
    what = call[0].name if len(call) == 1 else f"{len(call)} programs"
    same = call_counts == aot_counts
    checks[PLACEMENT] = Check(PLACEMENT, True, same, f"{what} against {aot.name}")
    if same:
        return
    subject = f"the call's {call[0].name}" if len(call) == 1 else "the call's programs"
    detail = (
        f"{subject} {_describe_placed(call_counts, call_regions)}; the AOT module "
        f"{aot.name} {_describe_placed(aot_counts, aot_regions)}"
    )
    if call_counts and not aot_counts:
        cause = (
            "the call runs the jitted code under a compute_on context that is not part of "
            "what .lower() traces (compute_on outside jax.jit: the decorator order, or a "
            "context around the call); put compute_on inside the jitted function"
        )
    elif aot_counts and not call_counts:
        cause = (
            "the AOT module places ops off the device that the call's program does not: "
            "the call does not run the code the AOT path lowers (a wrapper calls something "
            "else, or a compute_on context around the call overrides it)"
        )
    else:
        cause = (
            "the two programs were traced under different compute_on contexts, or from "
            "different code"
        )
    differences.append(Difference(PLACEMENT, detail, cause))

"""The results check: the output trees, then each leaf's shape, dtype and values
within a tolerance by dtype."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

import numpy as np

from hloscope.analyses.aot.report import (
    MAX_LISTED,
    OPS,
    PARAMETERS,
    PLACEMENT,
    RESULTS,
    TEXT,
    Check,
    Difference,
    ResultComparison,
    plural,
)
from hloscope.runs import AotEntry, AotRuns, ResultLeaf

# (rtol, atol) by dtype name: a few units in the last place of each format, enough
# for XLA fusing (or not) the same ops; integers and booleans compare exactly.
_TOLERANCES: Mapping[str, tuple[float, float]] = MappingProxyType(
    {
        "float64": (1e-10, 1e-12),
        "complex128": (1e-10, 1e-12),
        "float32": (1e-5, 1e-6),
        "complex64": (1e-5, 1e-6),
        "float16": (2e-3, 1e-3),
        "bfloat16": (1.6e-2, 1e-2),
    }
)


_LOW_PRECISION = (1.25e-1, 6.25e-2)  # float8_*, float6_*, float4_*


def tolerance(dtype: str | None) -> tuple[float, float]:
    """(rtol, atol) for values of a dtype: (0, 0), exact, for integers, booleans and
    non-array values."""
    if dtype is None:
        return 0.0, 0.0
    if dtype in _TOLERANCES:
        return _TOLERANCES[dtype]
    if dtype.startswith(("float8", "float6", "float4")):
        return _LOW_PRECISION
    return 0.0, 0.0


def compare_result(call: ResultLeaf | None, aot: ResultLeaf | None) -> ResultComparison:
    """One output leaf of each path, compared."""
    path = (call or aot).path if (call or aot) is not None else "?"  # type: ignore[union-attr]
    dtype = call.dtype if call is not None else None
    rtol, atol = tolerance(dtype)
    if call is None or aot is None:
        return ResultComparison(
            path,
            call.shape if call else None,
            aot.shape if aot else None,
            dtype,
            None,
            rtol,
            atol,
            0,
            0,
            False,
        )
    if call.dtype is None or aot.dtype is None:
        same = _plain_equal(call.value, aot.value)
        return ResultComparison(
            path, call.shape, aot.shape, None, None, 0.0, 0.0, 0 if same else 1, 1, same
        )
    mine, theirs = np.asarray(call.value), np.asarray(aot.value)
    elements = int(mine.size)
    if call.shape != aot.shape or call.dtype != aot.dtype or mine.shape != theirs.shape:
        return ResultComparison(
            path, call.shape, aot.shape, dtype, None, rtol, atol, elements, elements, False
        )
    if elements == 0:
        return ResultComparison(path, call.shape, aot.shape, dtype, 0.0, rtol, atol, 0, 0, True)
    if mine.dtype.kind in "biu":
        # Exact; the difference is shown in float64 (precise enough to read).
        diff = np.abs(mine.astype(np.float64) - theirs.astype(np.float64))
        mismatched = int(np.count_nonzero(mine != theirs))
        return ResultComparison(
            path,
            call.shape,
            aot.shape,
            dtype,
            float(diff.max()),
            0.0,
            0.0,
            mismatched,
            elements,
            mismatched == 0,
        )
    wide = np.complex128 if mine.dtype.kind == "c" else np.float64
    a, b = mine.astype(wide), theirs.astype(wide)
    both_nan = np.isnan(a) & np.isnan(b)
    same_inf = np.isinf(a) & np.isinf(b) & (a == b)
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.abs(a - b)
        diff = np.where(both_nan | same_inf, 0.0, diff)
        limit = atol + rtol * np.maximum(np.abs(a), np.abs(b))
        outside = ~((diff <= limit) | both_nan | same_inf)
    mismatched = int(np.count_nonzero(outside))
    # NaN where only one side is NaN: the largest difference is then unknown.
    largest = math.nan if np.any(np.isnan(diff)) else float(diff.max())
    return ResultComparison(
        path,
        call.shape,
        aot.shape,
        dtype,
        largest,
        rtol,
        atol,
        mismatched,
        elements,
        mismatched == 0,
    )


def _plain_equal(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except Exception:
        return repr(a) == repr(b)


def compare_results(
    runs: AotRuns,
    differences: list[Difference],
    checks: dict[str, Check],
    entry: AotEntry,
    extra: Difference | None,
) -> tuple[ResultComparison, ...]:
    call, aot = runs.call, runs.aot
    bypassed = entry.via == "__wrapped__"
    if call.structure != aot.structure:
        differences.append(
            Difference(
                RESULTS,
                f"the call returns {call.structure} and the AOT path {aot.structure}",
                "a wrapper changes what the function returns, and the AOT path bypasses it"
                if bypassed
                else "the call and the AOT path run different code",
            )
        )
        checks[RESULTS] = Check(RESULTS, True, False, "the output trees differ")
        return ()
    compared = tuple(compare_result(a, b) for a, b in zip(call.results, aot.results, strict=False))
    wrong = [r for r in compared if not r.same]
    checks[RESULTS] = Check(
        RESULTS,
        True,
        not wrong,
        f"{plural(len(compared), 'output')}"
        + (f", {len(wrong)} beyond tolerance" if wrong else ", within tolerance"),
    )
    if not wrong:
        return compared
    cause = _results_cause(checks, differences, extra)
    detail = "; ".join(_result_text(r) for r in wrong[:MAX_LISTED])
    if len(wrong) > MAX_LISTED:
        detail += f"; and {len(wrong) - MAX_LISTED} more outputs"
    if len(compared) > 1:
        detail = f"{len(wrong)} of {len(compared)} outputs differ: {detail}"
    differences.append(Difference(RESULTS, detail, cause))
    return compared


def _results_cause(
    checks: Mapping[str, Check], differences: Sequence[Difference], extra: Difference | None
) -> str:
    programs_differ = any(
        d.kind in (PLACEMENT, PARAMETERS, TEXT) or (d.kind == OPS and d is not extra)
        for d in differences
    )
    if programs_differ:
        return "the call and the AOT path run different programs (the differences above)"
    ops = checks.get(OPS)
    if ops is None or not ops.compared:
        return "the AOT object computes something else than the call"
    if extra is not None:
        return (
            "the AOT path compiles the module the call ran, but code around it (the other "
            "programs above) changes its arguments or results, and the AOT path bypasses it"
        )
    text = checks.get(TEXT)
    if text is not None and text.same:
        return (
            "the modules are identical but the results differ: a wrapper changes the "
            "arguments (or the results) and the AOT path bypasses it"
        )
    return (
        "the programs have the same ops, placement and parameters but the results differ: "
        "code around the compiled function changes its arguments or results, and the AOT "
        "path does not run it"
    )


def _result_text(r: ResultComparison) -> str:
    if r.call_shape != r.aot_shape:
        return f"{r.path} is {r.call_shape} from the call and {r.aot_shape} from the AOT path"
    if r.max_abs_diff is None:
        return f"{r.path} differs"
    bound = "differ" if r.rtol == 0 and r.atol == 0 else f"outside rtol {r.rtol:g}, atol {r.atol:g}"
    return (
        f"{r.path}: max |call − AOT| = {r.max_abs_diff:.6g} ({r.mismatched} of "
        f"{plural(r.elements, 'element')} {bound})"
    )

"""tests/analyses/test_forms_agree.py for `--for`: a small sharded block compiled for a
TPU slice and for a GPU host, each command's `--json` read converted and in XLA's own
form (`HLOSCOPE_HLO_FORM=xla`), the same once `forms_support.normalized` has written
the representation-only differences one way. Each run is a process of its own (`--for`
gives the program its devices before JAX starts); the compile cache serves the second
form's compile. Skipped, saying so, where the compiler is not installed.
"""

from __future__ import annotations

from typing import Any

import pytest
from test_compile_for import SHARDED, child_env, hloscope, needs

from forms_support import SWITCH, difference

pytestmark = pytest.mark.slow

TRANSFERS = (
    "XLA's form lists no transfer to the TPU's memory space S(1) (copy-start): the "
    "converted form lists three (placement `transfers`)"
)
TUPLES = (
    "a fusion's ops: XLA's form counts its tuple ROOT (a multi-output fusion) and "
    "gives its results as one tuple type, the converted form as one type a result; "
    "and a fused computation's ops (unscheduled: no schedule orders them) come in the "
    "converter's post order against the proto's order, so a fusion's `ops` differ in order"
)
ASYNC = (
    "the converted form reads an async pair (copy-start, all-reduce-start) as "
    "mhlo.async_start/async_done of a !mhlo.future (0 bytes, category async), XLA's "
    "form as the instruction it is (16,384 bytes, category collective)"
)
ESTIMATE = (
    "profile --for's estimate joins an async collective to a line differently in the "
    "two forms (ir/hlo_kernels.py, analyses/estimate.py: under change, issue 59)"
)
FAILS = {
    ("inspect", "tpu:v5e:2x2"): ASYNC + " (copy-start: the converted form's copy_ functions)",
    ("placement", "tpu:v5e:2x2"): TRANSFERS,
    ("fusions", "tpu:v5e:2x2"): TUPLES,
    ("memory", "tpu:v5e:2x2"): ASYNC,
    ("profile", "tpu:v5e:2x2"): ESTIMATE,
    ("inspect", "gpu:h100x8"): ASYNC + " (inspect's op counts)",
    ("placement", "gpu:h100x8"): ASYNC + " (placement's total_ops)",
    ("fusions", "gpu:h100x8"): ASYNC,
}


def _case(spec: str, command: str, *extra: str) -> Any:
    reason = FAILS.get((command, spec))
    marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
    label = f"{command}{''.join(extra)}-{spec}"
    return pytest.param(spec, [command, *SHARDED, "--for", spec, *extra], id=label, marks=marks)


SPECS = ("tpu:v5e:2x2", "gpu:h100x8")
CASES = [
    _case(spec, command)
    for spec in SPECS
    for command in ("inspect", "placement", "fusions", "memory", "profile")
]


@pytest.mark.parametrize(("spec", "argv"), CASES)
def test_both_forms_give_the_same_json_for_a_platform(spec: str, argv: list[str]) -> None:
    needs(spec.split(":", 1)[0])
    converted = hloscope(*argv, "--json", env=child_env())
    assert converted.code == 0, converted.stderr[-4000:]
    xla = hloscope(*argv, "--json", env={**child_env(), SWITCH: "xla"})
    assert xla.code == 0, xla.stderr[-4000:]
    assert converted.json()["source"]["ir"] == "hlo", "it no longer converts: nothing to compare"
    found = difference(converted.json(), xla.json())
    assert not found, f"hloscope {' '.join(argv)} --json, converted vs XLA's form:\n{found}"

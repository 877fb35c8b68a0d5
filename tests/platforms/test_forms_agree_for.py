"""tests/analyses/test_forms_agree.py for `--for`: a small sharded block compiled for a
TPU slice and for a GPU host, each command's `--json` read converted and in XLA's own
form (`HLOSCOPE_HLO_FORM=xla`), the same once `forms_support.normalized` has written
the representation-only differences one way. Each run is a process of its own (`--for`
gives the program its devices before JAX starts); the compile cache serves the second
form's compile. Skipped, saying so, where the compiler is not installed.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from test_compile_for import SHARDED, child_env, hloscope, needs

from forms_support import SWITCH, difference, normalized

pytestmark = pytest.mark.slow

TOTALS = (
    "the computations the conversion makes of an async pair (a copy-start's copy_, "
    "an async collective's wrapped computation: none in XLA's form) count as functions "
    "and ops in the converted form's totals (inspect's ops and calls, placement's total_ops)"
)
ORDER = (
    "a fused computation's ops (unscheduled: no schedule orders them) come in the "
    "converter's post order against the proto's order, so a fusion's `ops` differ in order"
)
CONVERT = (
    "the converted form's fusion.7 holds a convert XLA's fused computation has not "
    "(the bf16 result of a nested fusion into an f32 convolution)"
)
FAILS = {
    ("inspect", "tpu:v5e:2x2"): TOTALS,
    ("placement", "tpu:v5e:2x2"): TOTALS,
    ("fusions", "tpu:v5e:2x2"): ORDER + "; " + CONVERT,
    ("inspect", "gpu:h100x8"): TOTALS,
    ("placement", "gpu:h100x8"): TOTALS,
    ("fusions", "gpu:h100x8"): ORDER,
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


def _unordered(value: Any) -> Any:
    """A document with every list sorted: what is left when order is not compared."""
    if isinstance(value, dict):
        return {key: _unordered(item) for key, item in value.items()}
    if isinstance(value, list):
        return sorted((_unordered(item) for item in value), key=json.dumps)
    return value


@pytest.mark.parametrize(
    "spec",
    [
        pytest.param("tpu:v5e:2x2", marks=pytest.mark.xfail(strict=True, reason=CONVERT)),
        "gpu:h100x8",
    ],
)
def test_fusions_agree_in_both_forms_but_for_order(spec: str) -> None:
    """`fusions` read both ways, lists compared as sets (see ORDER): a multi-output
    fusion's results one per output and its tuple ROOT no op of it (the converted
    form's, which has no tuple), an async pair (`all-reduce-start`, `copy-start`) the
    instruction it is, with its bytes and category (XLA's form's: the converted form
    wraps it in a future of no bytes), and a copy-start's copy no op of its own."""
    needs(spec.split(":", 1)[0])
    argv = ["fusions", *SHARDED, "--for", spec, "--json"]
    converted = hloscope(*argv, env=child_env())
    assert converted.code == 0, converted.stderr[-4000:]
    xla = hloscope(*argv, env={**child_env(), SWITCH: "xla"})
    assert xla.code == 0, xla.stderr[-4000:]
    found = difference(_unordered(normalized(converted.json())), _unordered(normalized(xla.json())))
    assert not found, f"hloscope {' '.join(argv)}, converted vs XLA's form:\n{found}"

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


def _case(spec: str, command: str, *extra: str) -> Any:
    label = f"{command}{''.join(extra)}-{spec}"
    return pytest.param(spec, [command, *SHARDED, "--for", spec, *extra], id=label)


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

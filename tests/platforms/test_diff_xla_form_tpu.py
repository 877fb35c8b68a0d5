"""`diff` of two TPU compiles (`--for tpu:v5e:2x4`) read in XLA's own form
(`HLOSCOPE_HLO_FORM=xla`, the form LLM-scale TPU compiles arrive in): a step against
the same step with a sum over its batch first (tests/fixtures/diff_xla_form.py). XLA
numbers the second compile's channels and reduction computations one further; what
only renumbers is no change, as it is none in the converted form. What the sum adds
is."""

from __future__ import annotations

import pytest
from test_compile_for import child_env, hloscope, needs

pytestmark = pytest.mark.slow

FIXTURE = "tests/fixtures/diff_xla_form.py"


def test_what_xla_renumbers_is_no_change():
    needs("tpu")
    run = hloscope(
        "diff",
        f"{FIXTURE}:wide_step",
        f"{FIXTURE}:wide_step_scaled",
        "--args",
        f"{FIXTURE}:wide_args",
        "--for",
        "tpu:v5e:2x4",
        "--json",
        env={**child_env(), "HLOSCOPE_HLO_FORM": "xla", "ALLOW_MULTIPLE_LIBTPU_LOAD": "1"},
    )
    assert run.code == 1, run.stderr
    report = run.json()
    assert report["a"]["source"]["ir"] == report["b"]["source"]["ir"] == "hlo-native", report["a"]
    changes = report["changes"]
    details = " ".join(c["detail"] for c in changes)
    # Channel ids, and the equal reduction computations XLA numbered otherwise.
    assert "channel_id" not in details and "to_apply" not in details, details
    # The sum and its all-reduce are the change.
    added = {c["op"] for c in changes if c["kind"] == "added"}
    assert {"hlo.reduce", "hlo.all-reduce"} <= added, changes

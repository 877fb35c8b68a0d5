"""`compare --baseline FILE`: a comparison's rows recorded as facts (`--update`), and
checked as `hloscope check` checks a program: a configuration that stops compiling or
fitting, or whose estimated step grows, regresses (exit 1), named in the text and in
GitHub's annotations; a baseline of other specs is refused in one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_compile_for import hloscope, needs

pytestmark = pytest.mark.slow

FIXTURE = "tests/fixtures/compare_targets.py"
COMPARISON = [
    f"{FIXTURE}:step",
    "--args",
    f"{FIXTURE}:step_args",
    "--vary",
    "COMPARE_SIZE=small,raise",
]
SMALL = "compare.COMPARE_SIZE=small @ tpu:v5e:2x2"
RAISE = "compare.COMPARE_SIZE=raise @ tpu:v5e:2x2"


def test_the_rows_recorded_then_a_slower_or_broken_configuration_regresses(tmp_path: Path):
    needs("tpu")
    baseline = tmp_path / "compare.json"
    argv = [*COMPARISON, "--for", "tpu:v5e:2x2", "--baseline", str(baseline)]
    recorded = hloscope("compare", *argv, "--update", "--json")
    assert recorded.code == 0, recorded.stderr
    facts = json.loads(baseline.read_text())["facts"]
    assert facts[f"{RAISE}.failed"] == 1 and f"{RAISE}.fits" not in facts
    assert facts[f"{SMALL}.failed"] == 0 and facts[f"{SMALL}.fits"] == 1
    # The row's own numbers, as the comparison's JSON gives them.
    rows = hloscope("compare", *COMPARISON, "--for", "tpu:v5e:2x2", "--json").json()["rows"]
    (small,) = [r for r in rows if r["config"]["env"] == {"COMPARE_SIZE": "small"}]
    assert facts[f"{SMALL}.peak_bytes"] == small["peak_bytes"]
    assert facts[f"{SMALL}.estimate.seconds"] == round(small["estimate"]["seconds"], 9)

    same = hloscope("compare", *argv, "--json")
    assert same.code == 0, same.stderr
    assert same.json()["passed"] is True

    # As if, when recorded, the small step had been faster and the other had compiled.
    stored = json.loads(baseline.read_text())
    stored["facts"][f"{SMALL}.estimate.seconds"] = facts[f"{SMALL}.estimate.seconds"] / 2
    stored["facts"][f"{RAISE}.failed"] = 0
    baseline.write_text(json.dumps(stored))
    regressed = hloscope("compare", *argv, "--json")
    assert regressed.code == 1, regressed.stderr
    changes = {c["fact"]: c for c in regressed.json()["changes"]}
    assert changes[f"{SMALL}.estimate.seconds"]["regression"] is True
    assert changes[f"{RAISE}.failed"]["regression"] is True
    github = hloscope("compare", *argv, "--format", "github")
    assert github.code == 1
    assert f"::error::{RAISE}.failed" in github.stdout

    other = hloscope("compare", *COMPARISON, "--for", "tpu:v5e:2x4", "--baseline", str(baseline))
    assert other.code == 2
    said = other.stderr.splitlines()[-1]
    assert "recorded on tpu:v5e:2x2" in said and "Traceback" not in other.stderr


def test_update_without_a_baseline_is_refused_before_any_child():
    run = hloscope("compare", *COMPARISON, "--for", "tpu:v5e:2x2", "--update")
    assert run.code == 2
    assert run.stderr.strip() == (
        "hloscope: error: --update, --tolerance and --format github go with --baseline"
    )

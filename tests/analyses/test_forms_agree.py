"""Which builder reads an optimized module must not change any answer: every
command's `--json` on programs whose optimized module converts to MLIR is the same
read converted (the default) and in XLA's own form (`HLOSCOPE_HLO_FORM=xla`, the form
every LLM-scale TPU compile arrives in), once `forms_support.normalized` has written
the representation-only differences one way (docs/known-limits.md lists them).

The CPU compiles of samples run in this process (`run_cli`, the switch set around
each run); the `--for` compiles (a TPU slice, a GPU host) in processes of their own.
The corpus's optimized modules are compared in tests/corpus/test_forms_corpus.py
(`make forms` reads all of them).

A difference that lives where another change is under way is an expected failure
(strict: when it is fixed, the test says so), its reason naming it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conftest import Run, run_cli, sample
from forms_support import difference, form

pytestmark = pytest.mark.slow

NESTED = sample("nested_jits", "mlp")
SHARDED = sample("sharded_mlp", "mlp")
TRAIN = sample("params", "train_step", "train_step_args")
SCANNED = sample("scanned_layers", "deep_mlp")
AFTER = ["samples/dumps/mlp.after_optimizations.hlo"]

# A difference still open is an expected failure (strict), its reason naming it; none is.


def _case(label: str, argv: list[str], reason: str | None = None) -> Any:
    marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
    return pytest.param(argv, id=label, marks=marks)


CASES = [
    _case("inspect-nested", ["inspect", *NESTED, "--compile"]),
    _case("params-nested", ["params", *NESTED, "--compile"]),
    _case("placement-nested", ["placement", *NESTED, "--compile"]),
    _case("fusions-nested", ["fusions", *NESTED]),
    _case("memory-nested", ["memory", *NESTED]),
    _case("remat-policies", ["remat", *sample("remat_policies", "loss"), "--compile"]),
    _case("diff-nested-itself", ["diff", "samples/nested_jits.py:mlp", *NESTED, "--compile"]),
    _case("placement-sharded", ["placement", *SHARDED, "--compile"]),
    _case("why-sharded", ["placement", *SHARDED, "--compile", "--why"]),
    _case("fusions-sharded", ["fusions", *SHARDED]),
    _case("memory-sharded", ["memory", *SHARDED]),
    _case("params-train", ["params", *TRAIN, "--compile"]),
    _case("placement-train", ["placement", *TRAIN, "--compile"]),
    _case("fusions-train", ["fusions", *TRAIN]),
    _case("memory-train", ["memory", *TRAIN]),
    _case("placement-scanned", ["placement", *SCANNED, "--compile"]),
    _case("inspect-dump", ["inspect", *AFTER]),
    _case("placement-dump", ["placement", *AFTER]),
    _case("fusions-dump", ["fusions", *AFTER]),
    _case("diff-dump-itself", ["diff", *AFTER, *AFTER]),
]


def both(argv: list[str]) -> tuple[Run, Run]:
    with form(xla=False):
        converted = run_cli(*argv, "--json")
    with form(xla=True):
        xla = run_cli(*argv, "--json")
    return converted, xla


@pytest.mark.parametrize("argv", CASES)
def test_both_forms_give_the_same_json(argv: list[str]) -> None:
    converted, xla = both(argv)
    assert converted.code == 0, converted.stderr
    assert xla.code == 0, xla.stderr
    if "source" in xla.json():
        assert xla.json()["source"]["ir"] == "hlo-native"  # the switch took
    found = difference(converted.json(), xla.json())
    assert not found, f"hloscope {' '.join(argv)} --json, converted vs XLA's form:\n{found}"


def test_checks_facts_are_the_same_in_both_forms(tmp_path: Path) -> None:
    # check's facts, recorded in either form, and checked in XLA's form against the
    # baseline the converted form recorded: nothing regressed.
    baselines = {}
    for xla in (False, True):
        baseline = tmp_path / f"{'xla' if xla else 'converted'}.json"
        with form(xla):
            run = run_cli("check", *NESTED, "--baseline", str(baseline), "--update")
        assert run.code == 0, run.stderr
        baselines[xla] = json.loads(baseline.read_text())
    found = difference(baselines[False], baselines[True])
    assert not found, f"check's facts, converted vs XLA's form:\n{found}"
    # Each form against the baseline the other recorded: the op counts by kind meet
    # by XLA's opcode (`hlo.add`, `stablehlo.add`), and nothing changed.
    for xla, other in ((True, "converted"), (False, "xla")):
        with form(xla):
            run = run_cli("check", *NESTED, "--baseline", str(tmp_path / f"{other}.json"))
        assert run.code == 0, run.stdout + run.stderr
        assert "ops.optimized" not in run.stdout


def test_the_normalizer_leaves_a_real_difference() -> None:
    # The normalizer writes names one way; it does not hide a count.
    a = {"op_counts": {"stablehlo.add": 2}, "notes": []}
    b = {"op_counts": {"hlo.add": 1}, "notes": ["shown as XLA's HLO (...)"]}
    assert difference(a, a | {"op_counts": {"hlo.add": 2}}) == ""
    assert "op:add" in difference(a, b)

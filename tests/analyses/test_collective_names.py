"""A collective has one name in every view, XLA's: `placement --why` named them by
the position of their value in the model (`%128`), which in XLA's own form named two
different all-reduces alike, while `profile` and `memory` use XLA's instruction names.
Truth: the collective instructions of XLA's own text of the same compile."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import jax
import pytest

from conftest import run_cli, sample
from forms_support import form

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
_COLLECTIVE = re.compile(
    r"^\s*(?:ROOT )?%?([\w.\-]+) = .*? (all-reduce|all-gather|reduce-scatter|all-to-all|"
    r"collective-permute)(?:-start)?\(",
    re.MULTILINE,
)


def _xla_collectives() -> dict[str, str]:
    """XLA's collective instructions of the sharded sample's CPU compile, by name."""
    spec = importlib.util.spec_from_file_location("sharded_mlp", ROOT / "samples/sharded_mlp.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    text = jax.jit(module.mlp).lower(*module.example_args()).compile().as_text()
    return {m[1]: m[2].replace("-", "_") for m in _COLLECTIVE.finditer(text)}


@pytest.mark.parametrize("xla", [False, True], ids=["converted", "xla-form"])
def test_why_names_each_collective_by_its_xla_instruction(xla: bool) -> None:
    truth = _xla_collectives()
    assert truth, "XLA compiled no collective: the case tests nothing"
    with form(xla=xla):
        document = run_cli(
            "placement", *sample("sharded_mlp", "mlp"), "--compile", "--why", "--json"
        ).json()
    named = {
        site["instruction"]: collective["op"]
        for collective in document["collectives"]
        for site in collective.get("sites", ())
    }
    assert named == truth

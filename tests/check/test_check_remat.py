"""`hloscope check` on a jitted gradient: what the backward pass keeps (JAX's own
residuals of the loss it differentiates) is a fact, so a `jax.checkpoint` policy
whose name stops matching fails the check, naming the line whose residual is gone."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from jax._src.ad_checkpoint import saved_residuals

from conftest import line_of
from fixtures import remat_targets as targets
from hloscope.check_run import check_one
from hloscope.sources.loader import LoadOptions

FIXTURE = "tests/fixtures/remat_targets.py"
ARGS = LoadOptions(args_factory=f"{FIXTURE}:example_args")


def _jax_residuals(loss):
    """JAX's residuals of `loss` (what `print_saved_residuals` prints): (count, bytes)."""
    values = tuple(np.ones(s.shape, s.dtype) for s in targets.example_args())
    found = saved_residuals(loss, *values)
    return len(found), sum(int(np.prod(aval.shape)) * aval.dtype.itemsize for aval, _ in found)


def test_a_typo_in_a_policy_name_fails_the_check_of_the_gradient(tmp_path: Path) -> None:
    baseline = tmp_path / "grad.json"
    recorded = check_one(f"{FIXTURE}:grad_by_name", baseline, options=ARGS, update=True)
    facts = recorded.checks[0].measurement.facts
    count, size = _jax_residuals(targets.by_name)
    assert (facts["remat.residuals"], facts["remat.device_bytes"]) == (count, size)
    assert (facts["remat.host_bytes"], facts["remat.unmatched_names"]) == (0, 0)

    report = check_one(f"{FIXTURE}:grad_typo", baseline, options=ARGS)
    assert not report.passed
    comparison = report.checks[0].comparison
    assert comparison is not None
    found = {c.fact: (c.before, c.after) for c in comparison.regressions}
    typo_count, typo_size = _jax_residuals(targets.typo)
    assert found["remat.unmatched_names"] == (0, 1)
    assert found["remat.residuals"] == (count, typo_count)
    assert found["remat.device_bytes"] == (size, typo_size)
    # The residual that went is the one the policy saved: `hidden`'s line.
    hidden = f"{FIXTURE}:{line_of(Path(FIXTURE), 'h = checkpoint_name')}"
    residuals = next(c for c in comparison.regressions if c.fact == "remat.residuals")
    assert residuals.site_deltas == ((hidden, -1),)


def test_a_function_that_is_no_gradient_has_no_remat_facts(tmp_path: Path) -> None:
    recorded = check_one(f"{FIXTURE}:by_name", tmp_path / "loss.json", options=ARGS, update=True)
    assert not [f for f in recorded.checks[0].measurement.facts if f.startswith("remat.")]

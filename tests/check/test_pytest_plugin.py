"""The `hlo_baseline` fixture as a user meets it: installed hloscope registers it, a
test file uses it, `pytest --hloscope-update` records, a plain run passes, and a
memory regression fails the test with the report naming the fact."""

from __future__ import annotations

import os

import pytest

from conftest import ROOT

pytest_plugins = ["pytester"]

TEST_FILE = """\
import importlib.util
import sys

spec = importlib.util.spec_from_file_location("train_step", {sample!r})
train_step = importlib.util.module_from_spec(spec)
spec.loader.exec_module(train_step)


def test_step(hlo_baseline):
    # REMAT flips to False for the regression.
    step = train_step.step if REMAT else train_step.step_without_remat
    hlo_baseline(step, *train_step.example_args(), name="step")

REMAT = True
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    sample = str(ROOT / "samples" / "check" / "train_step.py")
    pytester.makepyfile(test_model=TEST_FILE.format(sample=sample))
    return pytester


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    # Its own process: JAX starts afresh, as in a user's run, with one CPU device.
    env_flags = os.environ.get("XLA_FLAGS")
    os.environ["XLA_FLAGS"] = ""
    try:
        return pytester.runpytest_subprocess("-p", "no:cacheprovider", *args)
    finally:
        if env_flags is None:
            os.environ.pop("XLA_FLAGS", None)
        else:
            os.environ["XLA_FLAGS"] = env_flags


def test_the_fixture_records_passes_then_fails_on_a_memory_regression(
    project: pytest.Pytester,
) -> None:
    missing = run(project)
    missing.assert_outcomes(failed=1)
    said = missing.stdout.str()
    assert "pytest --hloscope-update" in said
    # One failure, in pytest's words: not the check's own error chained behind it.
    assert "During handling" not in said and "HloscopeError" not in said
    assert " --update" not in said.replace("pytest --hloscope-update", "")

    recorded = run(project, "--hloscope-update")
    recorded.assert_outcomes(passed=1)
    baselines = sorted(p.name for p in (project.path / "hloscope-baselines").iterdir())
    assert baselines == ["test_model.test_step.step.cpu.json"]

    run(project).assert_outcomes(passed=1)

    source = project.path / "test_model.py"
    source.write_text(source.read_text().replace("REMAT = True", "REMAT = False"))
    failed = run(project)
    failed.assert_outcomes(failed=1)
    output = failed.stdout.str()
    assert "FAILED: " in output and "memory.peak_bytes" in output
    assert "x, _ = jax.lax.scan(body, x, params)" in output


def test_the_plugin_is_registered_by_installing_hloscope() -> None:
    from importlib.metadata import entry_points

    plugins = {e.name: e.value for e in entry_points(group="pytest11")}
    assert plugins.get("hloscope") == "hloscope.pytest_plugin"

"""The pytest plugin: the `hlo_baseline` fixture, `hloscope check` inside a test.

Installing hloscope registers it (pytest's `pytest11` entry point). A test calls

    def test_step(hlo_baseline):
        hlo_baseline(step, params, batch)               # name=, tolerance= optional

and the program `jax.jit(step)` compiles for these arguments is checked against the
baseline stored beside the test file (`hloscope-baselines/test_model.test_step.cpu.json`,
one per test and backend). `pytest --hloscope-update` records the baselines; a
regression fails the test with the report `hloscope check` prints.

Only pytest is imported when pytest starts; hloscope's pipeline loads when a test
first asks for the fixture.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from hloscope.reports.check import CheckReport

FOLDER = "hloscope-baselines"
"""Beside the test file."""


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("hloscope")
    group.addoption(
        "--hloscope-update",
        action="store_true",
        default=False,
        help="hlo_baseline: record the compiled programs' baselines instead of comparing.",
    )


@pytest.fixture
def hlo_baseline(request: pytest.FixtureRequest) -> Callable[..., CheckReport]:
    """Check the program a function compiles to against this test's baseline:
    `hlo_baseline(fn, *args, name=None, tolerance=None, **kwargs)`."""
    update = bool(request.config.getoption("hloscope_update"))
    test_path = Path(str(request.node.path))
    used: set[str] = set()

    def check(
        fn: Any,
        /,
        *args: Any,
        name: str | None = None,
        tolerance: Any = None,
        **kwargs: Any,
    ) -> CheckReport:
        from hloscope.api import object_label
        from hloscope.check_run import check_one
        from hloscope.errors import HloscopeError
        from hloscope.sources.baselines import backend_record, baseline_path
        from hloscope.sources.loader import Call

        stem = f"{test_path.stem}.{request.node.name}" + (f".{name}" if name else "")
        if stem in used:
            pytest.fail(
                "hlo_baseline was called twice in this test without a name: give each "
                "call its own name= (each has a baseline of its own)",
                pytrace=False,
            )
        used.add(stem)
        path = baseline_path(test_path.parent / FOLDER, stem, backend_record().platform)
        refused: str | None = None
        try:
            report = check_one(
                object_label(fn),
                path,
                obj=fn,
                call=Call(args, kwargs),
                tolerances=tolerance,
                update=update,
                name=name or request.node.name,
            )
        except HloscopeError as exc:
            refused = str(exc)
        # Failed outside the handler: a failure raised inside it carries the check's
        # own error along, whose advice is the command line's --update.
        if refused is not None:
            pytest.fail(f"hlo_baseline: {_pytest_words(refused)}", pytrace=False)
        if not report.passed:
            pytest.fail(_pytest_words(_text(report)), pytrace=False)
        return report

    return check


def _pytest_words(message: str) -> str:
    """The command line's advice as pytest's: `--update` is `pytest --hloscope-update`."""
    return message.replace("--update", "pytest --hloscope-update")


def _text(report: CheckReport) -> str:
    from rich.console import Console

    from hloscope.render.text.check import render_check

    out = io.StringIO()
    render_check(report, Console(file=out, width=120, color_system=None, highlight=False))
    return out.getvalue().rstrip()

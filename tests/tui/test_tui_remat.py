"""The browser's Remat tab through `App.run_test()`: it differentiates the target when
asked, shows the residuals with how they got there and the policy names that match
nothing, and enter on a residual shows the ops of its line in the IR."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

import pytest
from textual.widgets import TabbedContent

from conftest import ROOT, run_cli
from hloscope.sources import loader
from hloscope.tui.app import HloscopeApp
from hloscope.tui.widgets.pending import PendingView
from hloscope.tui.widgets.report_list import ReportList
from tui_support import SIZE, loaded, quiet, status, sync, until

REMAT_KEY = "9"
SAMPLE = "samples/remat_policies.py"


async def press(pilot, *keys: str) -> None:
    for key in keys:
        await pilot.press(key)
        await quiet(pilot)


@sync
async def test_the_remat_tab_lists_the_residuals_and_leads_to_their_line():
    app = HloscopeApp(
        f"{SAMPLE}:loss_typo", loader.LoadOptions(args_factory=f"{SAMPLE}:example_args")
    )
    async with app.run_test(size=SIZE) as pilot:
        await loaded(app, pilot)
        await press(pilot, REMAT_KEY)
        pending = app.query_one("#tab-remat PendingView", PendingView)
        assert "what the backward pass keeps" in str(pending.content)
        await press(pilot, "enter")
        await until(pilot, lambda: "remat" in app.on_demand and app.job is None, "the report")
        await quiet(pilot)
        listing = app.query_one("#remat-list", ReportList)
        shown = [line.text.plain for line in listing.lines]
        assert any(
            r.startswith("residuals       3 residuals: 1.3 MiB on the device") for r in shown
        )
        assert any("warning: policy name 'hiden' matches no checkpoint_name" in r for r in shown)
        assert any(r.startswith("  policy      save_only_these_names('hiden')") for r in shown)
        # Enter on the residual the loss's last line made shows that line's ops in the IR.
        last = next(
            i
            for i, line in enumerate(listing.lines)
            if line.selectable and "not checkpointed" in line.text.plain
        )
        listing.highlighted = last
        await press(pilot, "enter")
        assert app.query_one(TabbedContent).active == "tab-ir"
        assert f"{SAMPLE}:42" in status(app)


@sync
async def test_the_remat_tab_reads_a_step_the_browser_lowered_first():
    # Issue 60: the browser lowers the step before its Remat tab differentiates it, and
    # JAX's cached trace of the step called no gradient: the tab said "it takes a
    # gradient inside ... give the loss" where `hloscope remat` succeeds.
    fixture = "tests/fixtures/remat_targets.py"
    app = HloscopeApp(
        f"{fixture}:jitted_step", loader.LoadOptions(args_factory=f"{fixture}:example_args")
    )
    async with app.run_test(size=SIZE) as pilot:
        await loaded(app, pilot)
        await press(pilot, REMAT_KEY, "enter")
        await until(pilot, lambda: "remat" in app.on_demand and app.job is None, "the report")
        await quiet(pilot)
        shown = [line.text.plain for line in app.query_one("#remat-list", ReportList).lines]
        run = run_cli("remat", f"{fixture}:jitted_step", "--args", f"{fixture}:example_args")
        assert run.code == 0, run.stderr
        # The CLI's own lines, as the tab shows them.
        assert any(r.startswith("function        loss") for r in shown), shown
        residuals = next(r for r in run.stdout.splitlines() if r.startswith("residuals"))
        assert residuals.rstrip() in [r.rstrip() for r in shown]


def _child(*args: str) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    env["ALLOW_MULTIPLE_LIBTPU_LOAD"] = "1"
    return subprocess.Popen(
        [sys.executable, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        cwd=ROOT,
        env=env,
    )


def _json(child: subprocess.Popen[str]) -> dict:
    out, err = child.communicate(timeout=900)
    assert child.returncode == 0, err[-2000:]
    return json.loads(out)


@pytest.mark.slow
def test_the_remat_tab_under_for_gives_remats_answer():
    # Issue 60: under --for the tab differentiated the step outside the slice's meshes
    # and compiled nothing, and said "it takes a gradient inside"; `hloscope remat
    # --for` on the same target succeeds. The tab's report is the command's.
    if importlib.util.find_spec("libtpu") is None:
        pytest.skip("libtpu is not installed: --for tpu cannot compile here")
    target, factory, spec = (
        "samples/llm_step.py:train_step",
        "samples/llm_step.py:example_args",
        "tpu:v5e:2x4",
    )
    browser = _child("tests/tui/remat_for_child.py", target, factory, spec)
    command = _child("-m", "hloscope", "remat", target, "--args", factory, "--for", spec, "--json")
    tab, remat = _json(browser), _json(command)
    assert tab["report"] is not None, tab["shown"]
    assert remat["peak"] is not None and remat["compiled_for"]["spec"] == spec
    remat.pop("environment")  # the command's, of this process: the browser shows none
    assert tab["report"] == remat

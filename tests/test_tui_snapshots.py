"""The browser's screens as SVG snapshots at a fixed terminal size
(pytest-textual-snapshot; `pytest --snapshot-update` rewrites them after a change
that is meant)."""

from __future__ import annotations

import pytest
from textual.widgets import Input

from conftest import DUMPS, ROOT
from hloscope import api
from hloscope.tui.app import HloscopeApp
from tui_support import SIZE, loaded, settle

MLP = str(DUMPS.relative_to(ROOT) / "mlp.stablehlo.mlir")
HOST = str(DUMPS.relative_to(ROOT) / "host_call.after_optimizations.hlo")


async def wait_loaded(pilot) -> None:
    await loaded(pilot.app, pilot)


async def wait_settled(pilot) -> None:
    await loaded(pilot.app, pilot)
    await settle(pilot, pilot.app)


def test_ir_tab_with_an_op_selected(snap_compare):
    # The cursor on the dot_general of `dense`: its operands, user and location.
    keys = ["j"] * 9
    assert snap_compare(HloscopeApp(MLP), press=keys, terminal_size=SIZE, run_before=wait_loaded)


def test_host_ops_only(snap_compare):
    assert snap_compare(
        HloscopeApp(HOST), press=["H", "j"], terminal_size=SIZE, run_before=wait_loaded
    )


def test_locations_shown(snap_compare):
    async def run_before(pilot) -> None:
        await wait_loaded(pilot)
        for key in ["j"] * 9 + ["L"]:
            await pilot.press(key)
        await settle(pilot, pilot.app)

    assert snap_compare(HloscopeApp(MLP), terminal_size=SIZE, run_before=run_before)


def test_overview(snap_compare):
    target = api.load(MLP)
    target.load_seconds = 0.25  # a fixed time, so the picture does not change
    app = HloscopeApp(MLP, loaded=target, start="overview")
    assert snap_compare(app, terminal_size=SIZE, run_before=wait_loaded)


def test_help(snap_compare):
    assert snap_compare(
        HloscopeApp(MLP), press=["question_mark"], terminal_size=SIZE, run_before=wait_loaded
    )


def test_search_prompt(snap_compare):
    async def run_before(pilot) -> None:
        await wait_loaded(pilot)
        await pilot.press("/")
        await pilot.pause()
        pilot.app.screen.query_one(Input).cursor_blink = False
        await pilot.press(*"broadcast")

    assert snap_compare(HloscopeApp(MLP), terminal_size=SIZE, run_before=run_before)


def test_search_matches(snap_compare):
    async def run_before(pilot) -> None:
        await wait_loaded(pilot)
        await pilot.press("/", *"broadcast_in_dim", "enter")
        await settle(pilot, pilot.app)
        await pilot.press("n")

    assert snap_compare(HloscopeApp(MLP), terminal_size=SIZE, run_before=run_before)


def test_load_error(snap_compare):
    assert snap_compare(
        HloscopeApp("samples/dumps/no_such_file.mlir"), terminal_size=SIZE, run_before=wait_loaded
    )


@pytest.fixture(autouse=True)
def _no_animation(monkeypatch: pytest.MonkeyPatch) -> None:
    # Spinners and scrolling must not move between runs.
    monkeypatch.setenv("TEXTUAL_ANIMATIONS", "none")

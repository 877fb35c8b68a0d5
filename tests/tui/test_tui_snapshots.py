"""The browser's screens as SVG snapshots at a fixed terminal size
(pytest-textual-snapshot; `pytest --snapshot-update` rewrites them after a change
that is meant)."""

from __future__ import annotations

import dataclasses

import pytest
from textual.widgets import Input

from conftest import DUMPS, ROOT
from hloscope import reports
from hloscope.sources import loader
from hloscope.tui.app import HloscopeApp
from hloscope.tui.diff_app import DiffApp
from hloscope.tui.views.aot import check_aot
from tui_support import SIZE, loaded, quiet, settle

MLP = str(DUMPS.relative_to(ROOT) / "mlp.stablehlo.mlir")
HOST = str(DUMPS.relative_to(ROOT) / "host_call.after_optimizations.hlo")


async def wait_loaded(pilot) -> None:
    await loaded(pilot.app, pilot)


async def wait_settled(pilot) -> None:
    await loaded(pilot.app, pilot)
    await settle(pilot, pilot.app)


def keys_after_loading(*keys: str):
    """A `run_before` that waits for the load, then presses `keys`, each once the app
    is done with the one before."""

    async def run_before(pilot) -> None:
        await loaded(pilot.app, pilot)
        for key in keys:
            await pilot.press(key)
            await quiet(pilot)

    return run_before


def entrypoint(name: str, attr: str, factory: str = "example_args") -> loader.Loaded:
    """An entrypoint, loaded with a fixed load time (the overview shows it)."""
    loaded_target = loader.load(
        f"samples/{name}.py:{attr}", loader.LoadOptions(args_factory=f"samples/{name}.py:{factory}")
    )
    loaded_target.load_seconds = 0.5
    return loaded_target


def test_parameters_tab(snap_compare):
    # A pruned argument in red; the cursor on the first argument.
    target = entrypoint("params", "train_step", "train_step_args")
    app = HloscopeApp(target.source.target, target.options, loaded=target)
    assert snap_compare(app, terminal_size=SIZE, run_before=keys_after_loading("3"))


def test_placement_tab(snap_compare):
    target = entrypoint("memory_kinds", "host_compute_to_host_memory")
    app = HloscopeApp(target.source.target, target.options, loaded=target)
    assert snap_compare(app, terminal_size=SIZE, run_before=keys_after_loading("4", "j"))


def test_fusions_tab(snap_compare):
    app = HloscopeApp(str(DUMPS.relative_to(ROOT) / "mlp.after_optimizations.hlo"))
    assert snap_compare(app, terminal_size=SIZE, run_before=keys_after_loading("5"))


def test_fusions_tab_of_a_lowered_module(snap_compare):
    # It offers to compile.
    assert snap_compare(HloscopeApp(MLP), terminal_size=SIZE, run_before=keys_after_loading("5"))


def test_aot_check_tab(snap_compare):
    target = entrypoint("wrapped", "difference")
    report = check_aot(target)
    fixed = dataclasses.replace(
        report,
        timings=reports.AotTimings(
            load_seconds=0.5,
            call_seconds=0.1,
            lower_seconds=0.01,
            compile_seconds=0.05,
            run_seconds=0.001,
        ),
    )
    app = HloscopeApp(target.source.target, target.options, loaded=target)
    app.on_demand["aot"] = fixed
    assert snap_compare(app, terminal_size=SIZE, run_before=keys_after_loading("6"))


def test_diff_screen(snap_compare):
    # The cursor on the second change: the tanh that moved to the host.
    options = loader.LoadOptions(args_factory="samples/compute_on.py:example_args")
    app = DiffApp(
        "samples/compute_on.py:host_inside_jit", "samples/compute_on.py:host_outside_jit", options
    )
    assert snap_compare(
        app,
        terminal_size=SIZE,
        run_before=keys_after_loading("right_square_bracket", "right_square_bracket"),
    )


def test_diff_screen_changes_only(snap_compare):
    options = loader.LoadOptions(args_factory="samples/compute_on.py:example_args")
    app = DiffApp(
        "samples/compute_on.py:host_inside_jit", "samples/compute_on.py:host_outside_jit", options
    )
    assert snap_compare(app, terminal_size=SIZE, run_before=keys_after_loading("C"))


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
    target = loader.load(MLP)
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

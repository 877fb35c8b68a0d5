"""The browser on real Flax NNX, Equinox and Flax Linen models: each loads, shows
its module, and quits with 0."""

from __future__ import annotations

from typing import Any

import pytest
from textual.pilot import Pilot

from hloscope.sources import loader
from hloscope.tui.app import HloscopeApp
from hloscope.tui.browser import BrowserPane
from hloscope.tui.screens.message import ErrorScreen
from hloscope.tui.session import Session
from tui_support import SIZE, details, loaded, quiet, sync, until

TARGETS = "tests/fixtures/library_targets.py"


@pytest.mark.parametrize(
    ("target", "factory"),
    [
        ("samples/flax_nnx.py:train_step", "samples/flax_nnx.py:example_args"),
        ("samples/equinox_model.py:forward", "samples/equinox_model.py:example_args"),
        (f"{TARGETS}:linen_train_step", f"{TARGETS}:linen_args"),
    ],
    ids=["nnx", "equinox", "linen"],
)
@sync
async def test_each_model_opens_in_the_browser(target, factory):
    app = HloscopeApp(target, loader.LoadOptions(args_factory=factory))
    async with app.run_test(size=SIZE) as pilot:
        await loaded(app, pilot)
        assert not isinstance(app.screen, ErrorScreen), getattr(app.screen, "message", "")
        assert app.failure is None
        assert app.session is not None
        assert app.session.loaded.source.kind == "entrypoint"
        await pilot.press("q")
    assert app.return_code == 0


def flax_step() -> HloscopeApp:
    """The browser on the Flax NNX sample's training step."""
    return HloscopeApp(
        "samples/flax_nnx.py:train_step",
        loader.LoadOptions(args_factory="samples/flax_nnx.py:example_args"),
    )


async def with_reports(app: HloscopeApp, pilot: Pilot[Any]) -> Session:
    """The app's session once loaded and its reports are built."""
    await loaded(app, pilot)
    session = app.session
    assert session is not None
    await until(pilot, lambda: session.reports is not None, "the reports")
    await quiet(pilot)
    return session


async def entry_details(app: HloscopeApp, pilot: Pilot[Any]) -> list[str]:
    """The detail pane's rows with the entry function selected."""
    session = app.session
    assert session is not None and session.loaded.module.entry is not None
    app.query_one(BrowserPane).select(session.loaded.module.entry.op.id, force=True)
    await quiet(pilot)
    return details(app)


@sync
async def test_the_ir_tab_names_arguments_as_the_parameters_tab_does():
    """A Flax NNX step: JAX's locations name the arguments after the states nnx.jit
    hands it (`model.states[0][0]`); the IR tab's details name them by the user's
    paths, as the Parameters tab and `params` do (`model.blocks[0].linear.bias`)."""
    app = flax_step()
    async with app.run_test(size=SIZE) as pilot:
        session = await with_reports(app, pilot)
        # The entry function is selected: its arguments, with their paths.
        params = session.reports.inspect.params
        named = {p.hlo_index: p.path for p in params.parameters if p.hlo_index is not None}
        assert "model.blocks[0].linear.bias" in named.values()
        rows = await entry_details(app, pilot)
        first_lines = [row.split("\n")[0] for row in rows]
        for index, path in named.items():
            assert any(r.startswith(f"%arg{index} ") and r.endswith(path) for r in first_lines)
        assert not any(row.startswith("%arg") and "states[" in row for row in rows)
        await pilot.press("q")


@sync
async def test_one_op_count_in_every_view():
    """A Flax NNX step once showed 224 ops in the title, 218 in the tree, 211 in the
    Overview: each view counted differently. Now a function's ops are counted one way
    (as written, terminators left out: the Overview's `ops`) in the tree, the details
    and the Overview, and the title's total is theirs over every function."""
    from hloscope.tui.widgets.module_tree import ModuleTree
    from tui_support import plain

    app = flax_step()
    async with app.run_test(size=SIZE) as pilot:
        session = await with_reports(app, pilot)
        structure = session.structure
        assert structure is not None
        main = structure.function("main")
        total = sum(f.ops for f in structure.functions)
        # The title counts every function and says so; the Overview, the reachable ones.
        every = f"· {total:,} ops in {len(structure.functions)} functions"
        assert every in plain(app.query_one("#title-bar").content)
        assert every in plain(app.query_one("#browser-status").content)
        reachable = [f for f in structure.functions if f.reachable]
        overview = f"{structure.total_ops:,} ops in {len(reachable)} reachable functions"
        await pilot.press("2")
        await pilot.pause()
        shown = app.query_one("#overview-text").content  # type: ignore[attr-defined]
        assert overview in plain(shown)
        tree = app.query_one(ModuleTree)
        labels = {plain(n.label).split()[0]: plain(n.label) for n in tree.root.children}
        assert labels["main"].endswith(f"public · {main.ops:,} ops")
        assert f"public function · {main.ops:,} ops" in await entry_details(app, pilot)
        await pilot.press("q")


@sync
async def test_a_function_of_xlas_own_form_counts_its_fusions_ops_as_the_overview_does(
    monkeypatch,
):
    """Issue 61: in XLA's own form the IR tab said `main` has 306 ops (its own
    instructions) where the Overview and `inspect --json` say 920 (with the ops of its
    fusions, which the converted form holds in the fusion's region). The tree and the
    details now give the Overview's count and say what it holds."""
    from hloscope.analyses.structure import ops_inside
    from hloscope.tui.widgets.module_tree import ModuleTree
    from tui_support import plain

    monkeypatch.setenv("HLOSCOPE_HLO_FORM", "xla")
    app = HloscopeApp("samples/dumps/mlp.after_optimizations.hlo", loader.LoadOptions())
    async with app.run_test(size=SIZE) as pilot:
        session = await with_reports(app, pilot)
        assert session.loaded.source.ir == "hlo-native"
        # The title names the form as every other view does (it said `hlo-native`).
        title = plain(app.query_one("#title-bar").content)
        assert "optimized HLO (XLA's own form)" in title and "hlo-native" not in title
        structure = session.structure
        module = session.loaded.module
        assert structure is not None and module.entry is not None
        main = structure.function(module.entry.name)
        own = ops_inside(module, module.entry.op)
        assert main.ops > own  # the fusions' ops are counted in it
        tree = app.query_one(ModuleTree)
        labels = {plain(n.label).split()[0]: plain(n.label) for n in tree.root.children}
        assert labels[main.name].endswith(f"public · {main.ops:,} ops")
        held = f"({main.ops - own:,} ops in computations its instructions hold)"
        assert f"public function · {main.ops:,} ops {held}" in await entry_details(app, pilot)
        await pilot.press("q")


@sync
async def test_an_op_with_regions_counts_its_ops_as_a_function_does():
    """`stablehlo.reduce` holds one `add` (and its `return`): the tree says 1 op, as
    the Overview would count them (it said 2 ops)."""
    from hloscope.tui.widgets.module_tree import ModuleTree
    from tui_support import plain

    app = HloscopeApp("samples/dumps/mlp.stablehlo.mlir")
    async with app.run_test(size=SIZE) as pilot:
        await loaded(app, pilot)
        session = app.session
        assert session is not None
        module = session.loaded.module
        reduce = next(op for op in module.ops if op.name == "stablehlo.reduce")
        label = plain(app.query_one(ModuleTree).label(reduce))
        assert label.endswith("stablehlo.reduce  1 op"), label
        await pilot.press("q")

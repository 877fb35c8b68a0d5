"""The Placement tab's "why" section through `App.run_test()`, on a real sharded
program on 8 CPU devices (samples/why_collectives.py): `w` compiles it with Shardy's
dumps, and the tab names the collective's causes as Shardy's own dump of the same
program says them (its `sdy.sharding_origins` attributes, read here from the file XLA
writes, not from what the tab printed before); enter on a cause shows the argument
or the constraint in the IR. Under GSPMD the tab says so, in the CLI's words."""

from __future__ import annotations

import inspect

import jax
from textual.widgets import TabbedContent

from hloscope.analyses.placement import collective_kind
from hloscope.render.text.why import origin_text, site_text
from hloscope.sources import loader
from hloscope.sources.shardy import shardy_dumps
from hloscope.tui.app import HloscopeApp
from hloscope.tui.views.why import ASK
from hloscope.tui.widgets.report_list import ReportList
from tui_support import SIZE, loaded, quiet, selected_name, status, sync, until
from why_support import argument_origins, shardy_dump, source_line

SAMPLE = "samples/why_collectives.py"
PLACEMENT_KEY = "4"


async def press(pilot, *keys: str) -> None:
    for key in keys:
        await pilot.press(key)
        await quiet(pilot)


def listing(app: HloscopeApp) -> ReportList:
    return app.query_one("#placement-list", ReportList)


def rows(app: HloscopeApp) -> list[str]:
    return [line.text.plain for line in listing(app).lines]


async def enter_on(pilot, app: HloscopeApp, text: str) -> None:
    found = listing(app)
    found.highlighted = next(
        i for i, line in enumerate(found.lines) if line.selectable and line.text.plain == text
    )
    await press(pilot, "enter")


def line_of(text: str) -> str:
    return source_line(SAMPLE, text)


def shardy_dump_of_constrained(tmp_path) -> str:
    """Shardy's after-propagation dump of `constrained`, as XLA writes it."""
    from samples import why_collectives as sample

    sample.constrained.lower(*sample.constrained_args()).compile(
        compiler_options={"xla_dump_to": str(tmp_path), "xla_dump_hlo_pass_re": "shardy-verbose"}
    )
    return shardy_dump(tmp_path)


def app_of(name: str) -> HloscopeApp:
    return HloscopeApp(f"{SAMPLE}:{name}", loader.LoadOptions(args_factory=f"{SAMPLE}:{name}_args"))


async def asked_why(app: HloscopeApp, pilot) -> None:
    await loaded(app, pilot)
    await press(pilot, PLACEMENT_KEY)
    assert ASK in rows(app)
    await press(pilot, "w")
    await until(pilot, lambda: "placement" in app.deeper and app.job is None, "the causes")
    await quiet(pilot)


@sync
async def test_the_tab_names_the_causes_shardy_recorded(tmp_path):
    from samples import why_collectives as sample

    dump = shardy_dump_of_constrained(tmp_path)
    # Shardy's own record: which argument set `model` itself, and the constraint.
    set_model = [i for i, axes in argument_origins(dump).items() if axes == {"model": "self"}]
    assert set_model == [1]
    assert 'sdy.sharding_origin_name = "constraint_0"' in dump
    argument = list(inspect.signature(sample._constrained).parameters)[set_model[0]]

    app = app_of("constrained")
    async with app.run_test(size=SIZE) as pilot:
        await asked_why(app, pilot)
        why = app.deeper["placement"]
        (site,) = why.sites_of("all_gather")
        shown = rows(app)
        assert "Why each collective is there (1)" in shown
        assert f"• {site_text(site)}" in shown
        assert site.axes == ("model",)
        # The axis the dump says argument 1 set, sharded by it by its name; the
        # constraint at its line asked for it unsharded.
        sharded = f"    `model` sharded by argument `{argument}` (P(None, 'model'))"
        asked = f"    `model` asked unsharded by sharding constraint at {line_of('with_sharding')}"
        assert shown[shown.index(f"• {site_text(site)}") + 1 :][:2] == [sharded, asked]
        assert f"    they meet at the dot at {line_of('h = x @ w1')}" in shown
        w1 = next(e for e in why.origins if e.origin.kind == "argument" and e.origin.index == 1)
        assert f"  {origin_text(w1)}" in shown and origin_text(w1).endswith("cause of 1 collective")

        # Enter on a cause shows it in the IR of the module shown (the lowered one).
        await enter_on(pilot, app, sharded)
        assert app.query_one(TabbedContent).active == "tab-ir"
        assert selected_name(app) == "func.func"
        assert f"{argument} (%arg1)" in status(app)
        await press(pilot, PLACEMENT_KEY)
        await enter_on(pilot, app, asked)
        assert selected_name(app) == "sdy.sharding_constraint"

        # On the optimized module the causes stay, and the collective leads to itself.
        await press(pilot, "c")
        await loaded(app, pilot)
        assert app.session is not None and app.session.loaded.source.stage == "optimized"
        await press(pilot, PLACEMENT_KEY)
        await enter_on(pilot, app, f"• {site_text(site)}")
        module = app.session.loaded.module
        chosen = module.ops[app.query_one("#browser").selected]  # type: ignore[attr-defined]
        assert (collective_kind(chosen) or ("",))[0] == "all_gather"


@sync
async def test_under_gspmd_the_tab_says_there_are_no_origins():
    app = app_of("constrained")
    jax.config.update("jax_use_shardy_partitioner", False)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await asked_why(app, pilot)
            why = app.deeper["placement"]
            assert app.session is not None
            # The one note the CLI prints, from the same place.
            note = shardy_dumps(app.session.loaded).note
            assert note is not None and "GSPMD" in note
            assert why.note == note and not why.available
            shown = rows(app)
            assert note in shown
            assert why.sites and all(f"• {site_text(site)}" in shown for site in why.sites)
            assert all("no origins" in site.sentence for site in why.sites)
            assert "Sharding origins" not in shown
    finally:
        jax.config.update("jax_use_shardy_partitioner", True)


@sync
async def test_a_dump_folder_gives_the_causes_from_its_own_shardy_files(tmp_path):
    # The folder XLA wrote (with Shardy's verbose files) is read, not compiled again:
    # the causes are those of the folder's own dump.
    dump = shardy_dump_of_constrained(tmp_path)
    assert 'sdy.sharding_origin_name = "constraint_0"' in dump
    app = HloscopeApp(str(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await asked_why(app, pilot)
        why = app.deeper["placement"]
        assert why.available and why.note is None
        (site,) = why.sites_of("all_gather")
        shown = rows(app)
        asked = f"    `model` asked unsharded by sharding constraint at {line_of('with_sharding')}"
        assert f"• {site_text(site)}" in shown and asked in shown
        # On the module before optimizations, the constraint is XLA's `Sharding` call.
        await enter_on(pilot, app, asked)
        assert app.query_one(TabbedContent).active == "tab-ir"
        assert selected_name(app) == "stablehlo.custom_call"

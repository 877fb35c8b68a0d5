"""Typed PRNG keys in the browser, through `App.run_test()`: the Parameters tab
shows a key as JAX types it with the HLO parameter it became, and the AOT check
tab runs a model whose arguments hold keys (before keys were handled, loading
such a target failed with `TypeError: Cannot interpret 'key<fry>' as a data type`)."""

from __future__ import annotations

import jax
from rich.text import Text

from hloscope.sources import loader
from hloscope.tui.app import HloscopeApp
from hloscope.tui.widgets.report_list import ReportList
from samples import dropout
from tui_support import SIZE, loaded, quiet, sync, until


def entrypoint(attr: str, factory: str) -> HloscopeApp:
    return HloscopeApp(
        f"samples/dropout.py:{attr}",
        loader.LoadOptions(args_factory=f"samples/dropout.py:{factory}"),
    )


async def press(pilot, *keys: str) -> None:
    for key in keys:
        await pilot.press(key)
        await quiet(pilot)


def rows(app: HloscopeApp, view: str) -> list[str]:
    return [line.text.plain for line in app.query_one(f"#{view}-list", ReportList).lines]


@sync
async def test_parameters_tab_shows_the_nnx_dropout_key() -> None:
    app = entrypoint("train_step", "example_args")
    async with app.run_test(size=SIZE) as pilot:
        await loaded(app, pilot)
        assert app.failure is None
        await press(pilot, "3")
        shown = rows(app, "params")
        key = next(row for row in shown if "model.dropout.rngs.key" in row)
        model = dropout.example_args()[0]
        bytes_shown = f"{jax.random.key_data(model.dropout.rngs.key.get_value()).nbytes} B"
        assert "key<fry>[] (as u32[2])" in key and bytes_shown in key
        assert shown[0] == f"Arguments ({len(jax.tree_util.tree_leaves(dropout.example_args()))})"


@sync
async def test_aot_check_tab_runs_an_equinox_model_called_with_a_key() -> None:
    app = entrypoint("eqx_forward", "eqx_args")
    async with app.run_test(size=SIZE) as pilot:
        await loaded(app, pilot)
        assert app.failure is None
        await press(pilot, "6", "enter")
        await until(pilot, lambda: "aot" in app.on_demand and app.job is None, "the check")
        await quiet(pilot)
        content = app.query_one("#aot-text").content  # type: ignore[attr-defined]
        plain = content.plain if isinstance(content, Text) else str(content)
        assert "verdict    same" in plain
        report = app.on_demand["aot"]
        assert report.inputs[-1].shape == "key<fry>[]"

"""The browser on real Flax NNX, Equinox and Flax Linen models: each loads, shows
its module, and quits with 0."""

from __future__ import annotations

import pytest

from hloscope.sources import loader
from hloscope.tui.app import HloscopeApp
from hloscope.tui.screens.message import ErrorScreen
from tui_support import SIZE, loaded, sync

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

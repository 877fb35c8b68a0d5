"""Helpers for driving the browser through `App.run_test()`."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Coroutine
from typing import Any

from rich.text import Text
from textual.pilot import Pilot
from textual.widgets import Static

from hloscope.tui.app import HloscopeApp
from hloscope.tui.widgets.details import OpDetails
from hloscope.tui.widgets.ir_view import IRView

SIZE = (120, 40)


def sync(test: Callable[..., Coroutine[Any, Any, None]]) -> Callable[..., None]:
    """Run an async test (the repository has no asyncio plugin for pytest)."""

    @functools.wraps(test)
    def run(*args: Any, **kwargs: Any) -> None:
        asyncio.run(test(*args, **kwargs))

    return run


async def loaded(app: HloscopeApp, pilot: Pilot[int], polls: int = 2000) -> None:
    """Wait until the loading (or compiling) worker has reported and the app shows it."""
    for _ in range(polls):
        if (app.session is not None or app.failure is not None) and app.job is None:
            await pilot.pause()
            return
        await pilot.pause(0.02)
    raise AssertionError("the browser did not finish loading")


async def settle(pilot: Pilot[int], app: HloscopeApp, polls: int = 2000) -> None:
    """Wait until the browser's own workers (search, locations) are done."""
    for _ in range(polls):
        await pilot.pause(0.01)
        if not app.workers:
            await pilot.pause()
            return
    raise AssertionError("the browser's workers did not finish")


def plain(content: object) -> str:
    if isinstance(content, Text):
        return content.plain
    return str(content)


def status(app: HloscopeApp) -> str:
    return plain(app.query_one("#browser-status", Static).content)


def visible_ir(app: HloscopeApp) -> list[str]:
    """The IR view's rows as drawn (gutter included)."""
    view = app.query_one(IRView)
    return [view.render_line(y).text for y in range(view.scrollable_content_region.height)]


def cursor_text(app: HloscopeApp) -> str:
    """The printed line under the IR cursor."""
    view = app.query_one(IRView)
    line = view.cursor_line
    assert line is not None and view.printed is not None
    return view.printed.lines[line]


def details(app: HloscopeApp) -> list[str]:
    pane = app.query_one(OpDetails)
    return [plain(pane.get_option_at_index(i).prompt) for i in range(pane.option_count)]


def selected_name(app: HloscopeApp) -> str:
    session = app.session
    assert session is not None
    browser = app.query_one("#browser")
    return session.loaded.module.ops[browser.selected].name  # type: ignore[attr-defined]

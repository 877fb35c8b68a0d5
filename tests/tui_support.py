"""Helpers for driving the browser through `App.run_test()`."""

from __future__ import annotations

import asyncio
import functools
import os
import shlex
import subprocess
import time
import uuid
from collections.abc import Callable, Coroutine
from typing import Any

from rich.text import Text
from textual import events
from textual.keys import _character_to_key
from textual.pilot import Pilot
from textual.widgets import Static

from conftest import ROOT
from hloscope.tui.app import HloscopeApp
from hloscope.tui.widgets.details import OpDetails
from hloscope.tui.widgets.ir_view import IRView
from hloscope.tui.widgets.pending import PendingView

SIZE = (120, 40)


def sync(test: Callable[..., Coroutine[Any, Any, None]]) -> Callable[..., None]:
    """Run an async test (the repository has no asyncio plugin for pytest)."""

    @functools.wraps(test)
    def run(*args: Any, **kwargs: Any) -> None:
        asyncio.run(test(*args, **kwargs))

    return run


# How many times to look before giving up on a state (each look waits for the app
# to go idle, at least 10 ms): minutes, far beyond any load or compile here. Tests
# wait for the state they check, never for a length of time.
POLLS = 20_000


async def until(pilot: Pilot[Any], check: Callable[[], object], what: str) -> None:
    """Wait until `check()` holds (the app has processed what the test did)."""
    for _ in range(POLLS):
        if check():
            return
        await pilot.pause(0.01)
    raise AssertionError(f"never saw {what}")


def _pending(app: Any) -> bool:
    """Whether the app has work queued: messages, callbacks, or callbacks waiting for
    the next refresh, on any of its screens and widgets, or a worker running."""
    pumps = [app]
    for screen in app.screen_stack:
        pumps.extend(screen.walk_children(with_self=True))
        if screen._callbacks:
            return True
    if any(pump._message_queue.qsize() or pump._next_callbacks for pump in pumps):
        return True
    return _busy(app)


async def quiet(pilot: Pilot[Any]) -> None:
    """Wait until the app has done everything the test's last action caused: every
    message handled (including those that handling others posted), every callback
    run, every worker finished."""
    app = pilot.app
    await until(pilot, lambda: not _pending(app), "the app go quiet")


def _building(app: Any) -> bool:
    """Whether a report tab still says its report is being built."""
    base = app.screen_stack[0] if app.screen_stack else None
    if base is None:
        return True
    return any(
        not pending.runnable and not pending.has_class("view-failure")
        for pending in base.query(PendingView)
    )


def _done_loading(app: Any) -> bool:
    if app.failure is not None:
        return app.job is None
    session = app.session
    if session is None or app.job is not None:
        return False
    return getattr(session, "reports", True) is not None and not _building(app)


async def loaded(app: Any, pilot: Pilot[Any]) -> None:
    """Wait until the loading (or compiling) worker has finished (the module and its
    reports are shown, or the failure is) and the app is idle again."""
    await until(pilot, lambda: _done_loading(app), "the load finish")
    await quiet(pilot)


def _busy(app: Any) -> bool:
    return any(worker.is_running for worker in app.workers)


async def settle(pilot: Pilot[Any], app: Any) -> None:
    """Wait until the app's workers (search, locations, reports) are done."""
    await quiet(pilot)


def type_at_once(app: Any, *keys: str) -> None:
    """Hand `keys` to the app as a terminal delivers keys typed fast: all queued
    before the first is handled (`pilot.press` waits between keys)."""
    for key in keys:
        char = key if len(key) == 1 else None
        name = _character_to_key(key) if len(key) == 1 and not key.isalnum() else key
        event = events.Key(name, char)
        event.set_sender(app)
        app.post_message(event)


def notifications(app: Any) -> list[str]:
    """What `app` notifies from now on, as it shows it (its `notify` is wrapped)."""
    said: list[str] = []
    notify = app.notify
    app.notify = lambda message, **kw: (said.append(str(message)), notify(message, **kw))[1]
    return said


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


class Terminal:
    """A detached tmux session of 120x40 running one shell command in `cwd`, on a
    tmux server of its own (`-L`): another run of the suite, or a person's `tmux
    kill-server`, cannot touch it. Polls the screen every 0.1 s."""

    def __init__(self, command: str, cwd: str) -> None:
        self.name = f"hloscope-test-{uuid.uuid4().hex[:8]}"
        self.tmux = ["tmux", "-L", self.name]
        env = {
            "PYTHONPATH": str(ROOT / "src"),
            "XLA_FLAGS": os.environ.get("XLA_FLAGS", ""),
            "TERM": "xterm-256color",
        }
        exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
        script = (
            # COLUMNS and LINES (set under pytest) would override the terminal's size.
            f"cd {shlex.quote(cwd)} && env -u COLUMNS -u LINES {exports} {command}; "
            "echo EXIT=$?; sleep 600"
        )
        subprocess.run(
            [*self.tmux, "new-session", "-d", "-s", self.name, "-x", "120", "-y", "40", script],
            check=True,
        )

    def screen(self) -> str:
        return subprocess.run(
            [*self.tmux, "capture-pane", "-t", self.name, "-p"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout

    def type(self, line: str) -> None:
        subprocess.run([*self.tmux, "send-keys", "-t", self.name, "-l", line], check=True)
        time.sleep(0.1)
        subprocess.run([*self.tmux, "send-keys", "-t", self.name, "Enter"], check=True)

    def keys(self, *keys: str) -> None:
        for key in keys:
            subprocess.run([*self.tmux, "send-keys", "-t", self.name, key], check=True)
            # An escape followed at once by a key reads as alt+key; type like a person.
            time.sleep(0.15)

    def wait_for(self, seen: Callable[[str], bool], what: str, polls: int = 1200) -> str:
        """The screen once `seen` holds for it (a load imports JAX and lowers the
        function: up to two minutes)."""
        for _ in range(polls):
            screen = self.screen()
            if seen(screen):
                return screen
            time.sleep(0.1)
        raise AssertionError(f"never saw {what}; the screen was:\n{self.screen()}")

    def press_until(self, key: str, seen: Callable[[str], bool], what: str) -> str:
        """Press `key` until the screen shows `seen` (a key pressed in the moment the
        module appears can be undone by the app showing its first tab)."""
        for _ in range(20):
            self.keys(key)
            try:
                return self.wait_for(seen, what, polls=30)
            except AssertionError:
                continue
        raise AssertionError(f"never saw {what}; the screen was:\n{self.screen()}")

    def close(self) -> None:
        subprocess.run([*self.tmux, "kill-server"], check=False)

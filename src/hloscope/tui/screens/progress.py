"""Shown while a worker loads, lowers or compiles: what it is doing, for how long."""

from __future__ import annotations

import time

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import LoadingIndicator, Static


class ProgressScreen(ModalScreen[None]):
    """A spinner with the current step and the time so far."""

    def __init__(self, title: str, *, ticking: bool = True) -> None:
        super().__init__()
        self.title_text = title
        self.step = "starting"
        self.started = time.monotonic()
        self.ticking = ticking

    def compose(self) -> ComposeResult:
        with Vertical(id="progress-box") as box:
            box.border_title = self.title_text
            yield LoadingIndicator()
            yield Static(self.step, id="progress-step")

    def on_mount(self) -> None:
        if self.ticking:
            self.set_interval(0.5, self._tick)

    def set_step(self, step: str) -> None:
        self.step = step
        self._tick()

    def _tick(self) -> None:
        text = self.step
        if self.ticking:
            text += f"  ({time.monotonic() - self.started:.0f} s)"
        if self.is_mounted:
            self.query_one("#progress-step", Static).update(text)

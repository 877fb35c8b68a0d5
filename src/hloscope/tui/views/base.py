"""What a report view is: a tab showing one analysis's report.

A view names its tab, says how to build its report from the loaded target (a
`reports` builder, run in a worker) and how to show it (a widget made from the
report). Adding the browser's screen for a new report is one module in this package
defining a `ReportView`, named as the `tab` of the report's registry entry
(`hloscope.reports.registry`).

Most reports are built by the loading worker, after the IR is on screen. Two kinds
wait to be asked: a report of the optimized module (`optimized`), which on a
lowered module needs a compile (the tab offers it, as `c` does), and a report that
runs the user's code (`on_demand`: the AOT check), which runs when the user asks in
its tab.

A view may also have a slower part of its report that waits for a key in its tab
(`deeper`: the Placement tab's causes of collectives, `w`, which compile the target
with Shardy's dumps). Once built it is kept for the target, whichever module is
shown, and joined to each module's report.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from textual.message import Message
from textual.widget import Widget

from hloscope.sources.loader import Loaded


def always(_loaded: Loaded) -> bool:
    return True


@dataclasses.dataclass(frozen=True)
class Deeper:
    """A slower part of a view's report, built when the user asks in its tab."""

    build: Callable[[Loaded], Any]
    """Builds it (runs in a worker) from the loaded target."""
    join: Callable[[Any, Any], Any]
    """The view's report and the deeper part: what the widget shows."""
    step: str
    """What the progress screen says while it is built."""


@dataclasses.dataclass(frozen=True)
class ReportView:
    """A tab showing one report."""

    id: str
    """The tab's id (`overview`)."""
    title: str
    """The tab's label (`Overview`)."""
    build: Callable[[Loaded], Any]
    """Builds the report (a `reports` function); runs in a worker."""
    widget: Callable[[Any, Loaded], Widget]
    """Makes the widget that shows a report (of the loaded target)."""
    applies: Callable[[Loaded], bool] = always
    """Whether the view has something to show for this target (an AOT check needs an
    entrypoint); the tab is left out when it does not."""
    optimized: bool = False
    """The report reads the optimized module: on a lowered module the tab offers to
    compile (and switch to) it instead of building the report."""
    on_demand: str | None = None
    """Set for a report that is built only when the user asks in its tab (it runs
    the user's code): what the tab says it will do. The report is kept for the
    target, whichever module is shown."""
    runs_the_program: str | None = None
    """The command an `on_demand` report is (`aot-check`) when building it runs the
    program: under `--for` the tab says at once that it needs the device, and offers
    no key."""
    deeper: Deeper | None = None
    """A part built only when asked in the tab (`RunDeeper`)."""


class ShowOp(Message):
    """Ask the browser to select an op in the IR tab (a view's row leads there)."""

    def __init__(self, op_id: int) -> None:
        self.op_id = op_id
        super().__init__()


class ShowOps(Message):
    """Ask the browser to select the first of `op_ids` in the IR tab and make all of
    them the matches that `n` and `N` walk (a collective's ops, a parameter's uses);
    `label` names them in the status line."""

    def __init__(self, op_ids: tuple[int, ...], label: str) -> None:
        self.op_ids = op_ids
        self.label = label
        super().__init__()


class RunView(Message):
    """Ask the app to build a view's report now: compile for an `optimized` view on a
    lowered module, run an `on_demand` one."""

    def __init__(self, view_id: str) -> None:
        self.view_id = view_id
        super().__init__()


class RunDeeper(Message):
    """Ask the app to build (again) the `deeper` part of a view's report."""

    def __init__(self, view_id: str) -> None:
        self.view_id = view_id
        super().__init__()

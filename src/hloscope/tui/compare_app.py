"""The browser of a comparison (`hloscope compare` on a terminal): the Compare view,
filled as each configuration's child process finishes, and from it a configuration's
own browser or the diff of two.

A configuration's program reads its environment when it is imported, and `--for`
gives it its device count before JAX starts: so each configuration opens in a process
of its own (`hloscope tui` or `hloscope diff`, with the configuration's environment),
run on the terminal after the Compare view quits, which comes back on the same row
when the user quits it. Both read the compile cache the comparison filled.
"""

from __future__ import annotations

import functools
import subprocess
import tempfile
import threading
import traceback
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.dom import DOMNode
from textual.driver import Driver
from textual.message import Message
from textual.widgets import DataTable, Footer, Static

from hloscope.errors import ExitCode, one_line
from hloscope.reports.compare import (
    CompareConfig,
    CompareRow,
    CompareSort,
    Comparison,
    comparison,
    config_targets,
)
from hloscope.sources.compare_run import CompareOptions, diff_command, open_command
from hloscope.tui.app import WorkingApp, run_app
from hloscope.tui.screens.help import HelpScreen
from hloscope.tui.screens.message import ErrorScreen
from hloscope.tui.session import describe_failure
from hloscope.tui.views.compare import CompareView, DiffConfigs, OpenConfig

Request = tuple[str, int] | tuple[str, int, int]
"""`("open", i)` or `("diff", i, j)`: rows of the comparison shown."""
Runner = Callable[[Callable[[CompareRow, int, int], None], threading.Event], Comparison]
"""Runs every configuration (`compare_run.run_comparison`), calling back as each row
finishes, until the event is set."""


class CompareApp(WorkingApp):
    """The Compare view; runs the comparison in a worker unless given one finished, and
    quits with a `request` when the user opens a configuration or a diff."""

    BINDINGS: ClassVar[list[BindingType]] = []

    class RowDone(Message):
        """A configuration's child process finished."""

        def __init__(self, row: CompareRow) -> None:
            self.row = row
            super().__init__()

    class Finished(Message):
        """Every configuration is done."""

        def __init__(self, report: Comparison) -> None:
            self.report = report
            super().__init__()

    def __init__(
        self,
        configs: Sequence[CompareConfig],
        run: Runner,
        sort: CompareSort,
        *,
        report: Comparison | None = None,
        cursor: int = 0,
        message: str | None = None,
        driver_class: type[Driver] | None = None,
    ) -> None:
        super().__init__(driver_class=driver_class)
        self.configs = tuple(configs)
        self.targets = config_targets(self.configs)
        """The configurations' targets, each once, as the comparison names them."""
        self.run_comparison = run
        """Runs every configuration, calling back as each finishes (in a worker)."""
        self.sort = sort
        self.report = report
        """The finished comparison (None while it runs)."""
        self.cursor = cursor
        self.message = message
        """What the last configuration's browser or diff said when it failed."""
        self.request: Request | None = None
        self._rows: list[CompareRow] = []
        self.stop = threading.Event()
        """Set when the user quits before the comparison finished: its children end."""

    def key_sections(self) -> list[tuple[str, type[DOMNode]]]:
        return compare_key_sections()

    def _title_text(self) -> str:
        return f"hloscope compare · {' '.join(self.targets)}"

    def compose(self) -> ComposeResult:
        shown = self.report or comparison(self.targets, (), self.sort)
        yield Static(self._title_text(), id="title-bar")
        yield CompareView(shown, len(self.configs), self.cursor)
        yield Footer()

    def on_mount(self) -> None:
        if self.report is None:
            self._run()
        if self.message:
            self.push_screen(ErrorScreen("The configuration could not be opened", self.message))

    @work(thread=True, group="compare")
    def _run(self) -> None:
        def on_row(row: CompareRow, _done: int, _total: int) -> None:
            self.post_message(self.RowDone(row))

        try:
            report = self.run_comparison(on_row, self.stop)
        except BaseException as exc:
            self.failure_traceback = traceback.format_exc()
            self.post_message(self.Failed("Could not compare", describe_failure(exc), fatal=True))
            return
        self.post_message(self.Finished(report))

    @on(RowDone)
    def _row_done(self, message: RowDone) -> None:
        self._rows.append(message.row)
        if len(self._rows) < len(self.configs):
            self.query_one(CompareView).show(comparison(self.targets, self._rows, self.sort))

    @on(Finished)
    def _finished(self, message: Finished) -> None:
        self.report = message.report
        self.query_one(CompareView).show(message.report, cursor=message.report.best or 0)

    @on(OpenConfig)
    def _open(self, message: OpenConfig) -> None:
        self.request = ("open", message.index)
        self.exit(return_code=ExitCode.OK)

    @on(DiffConfigs)
    def _diff(self, message: DiffConfigs) -> None:
        self.request = ("diff", message.a, message.b)
        self.exit(return_code=ExitCode.OK)

    def action_quit(self) -> None:  # type: ignore[override]
        self.stop.set()
        super().action_quit()

    def quit_code(self) -> int:
        if self.report is not None and not self.report.any_succeeded:
            return ExitCode.ERROR
        return ExitCode.OK


def compare_key_sections() -> list[tuple[str, type[DOMNode]]]:
    """Every place the Compare view binds keys, for its help screen and the docs."""
    return [
        ("Everywhere", CompareApp),
        ("Compare", CompareView),
        ("The configurations (table)", DataTable),
        ("Messages", ErrorScreen),
        ("Help", HelpScreen),
    ]


def request_command(
    report: Comparison, request: Request, options: CompareOptions
) -> tuple[list[str], dict[str, str]]:
    """The hloscope command line (and environment) that opens what `request` asks: a
    configuration's browser (`hloscope tui TARGET --for SPEC`, its environment set), or
    the diff of two (`hloscope diff A B --for-a --for-b --env-a --env-b`)."""
    if request[0] == "open":
        return open_command(report.rows[request[1]].config, options)
    a, b = (report.rows[i].config for i in request[1:])
    return diff_command(a, b, options)


def _run_request(command: list[str], env: dict[str, str]) -> str | None:
    """Run `command` on the terminal; what it said on stderr when it failed."""
    with tempfile.TemporaryFile(mode="w+") as stderr:
        code = subprocess.run(command, env=env, stderr=stderr, check=False).returncode
        if code in (ExitCode.OK, ExitCode.DIFFERENT):
            return None
        stderr.seek(0)
        said = [line for line in stderr.read().splitlines() if line.strip()]
    return one_line(said[-1]) if said else f"{command[3]} exited with code {code}"


def _make_app(
    configs: Sequence[CompareConfig],
    run: Runner,
    sort: CompareSort,
    shown: list[CompareApp],
    driver: type[Driver] | None,
    **state: Any,
) -> CompareApp:
    app = CompareApp(configs, run, sort, driver_class=driver, **state)
    shown.append(app)
    return app


def run_compare_browser(
    configs: Sequence[CompareConfig],
    run: Runner,
    sort: CompareSort,
    options: CompareOptions,
    *,
    debug: bool = False,
) -> tuple[Comparison | None, int]:
    """`hloscope compare` on a terminal: the Compare view, then what it asks to open,
    then the view again (the comparison kept), until the user quits the view. Returns
    the comparison (None when quit before it finished) and the exit code."""
    report: Comparison | None = None
    cursor, message = 0, None
    while True:
        shown: list[CompareApp] = []

        make = functools.partial(
            _make_app, configs, run, sort, shown, report=report, cursor=cursor, message=message
        )
        code = run_app(make, debug)
        app = shown[0] if shown else None
        if app is None or app.request is None or app.report is None:
            return (app.report if app is not None else report), code
        report, request = app.report, app.request
        cursor = request[-1]
        message = _run_request(*request_command(report, request, options))

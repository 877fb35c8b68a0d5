"""The browser of a recorded run (`hloscope compiles` on a terminal,
`hloscope.watch()`'s `browse()`): the Compiles view, and from it the IR browser on
one compilation's module or the diff screen on two.

The run's modules are in memory (as JAX handed them to XLA), so each is loaded
from its bytes (`loader.load_data`). The Compiles view hands over to the IR
browser or the diff screen and comes back when the user quits them, on the same
row: each is an app of its own, run one after the other on the terminal.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable
from typing import Any, ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.dom import DOMNode
from textual.driver import Driver
from textual.widgets import DataTable, Footer, Static

from hloscope.errors import ExitCode
from hloscope.reports import CompilesReport
from hloscope.sources import loader
from hloscope.tui.app import HloscopeApp, WorkingApp, run_app, run_in_terminal
from hloscope.tui.diff_app import DiffApp, DiffPane, diff_session
from hloscope.tui.screens.help import HelpScreen
from hloscope.tui.screens.message import ErrorScreen
from hloscope.tui.session import describe_failure
from hloscope.tui.views.compiles import CompilesView, DiffCompiles, OpenCompile


def compile_label(report: CompilesReport, index: int) -> str:
    """`step #3`: the function and the compilation's number in the run."""
    return f"{report.analysis.compiles[index].function} #{index + 1}"


def compile_loaded(report: CompilesReport, index: int) -> loader.Loaded:
    """The module JAX compiled at compilation `index`, loaded from its bytes."""
    module = report.analysis.compiles[index].module
    if module is None:
        from hloscope.errors import HloscopeError

        raise HloscopeError(f"the module of compilation {index + 1} was not kept")
    return loader.load_data(module.mlir_bytecode, compile_label(report, index))


class CompilesApp(WorkingApp):
    """The Compiles view; quits with a `request` when the user opens a module
    (`("open", i)`) or a diff (`("diff", i, j)`)."""

    BINDINGS: ClassVar[list[BindingType]] = []

    def __init__(
        self,
        report: CompilesReport,
        *,
        cursor: int = 0,
        driver_class: type[Driver] | None = None,
    ) -> None:
        super().__init__(driver_class=driver_class)
        self.report = report
        self.cursor = cursor
        self.request: tuple[Any, ...] | None = None

    def key_sections(self) -> list[tuple[str, type[DOMNode]]]:
        return compiles_key_sections()

    def _title_text(self) -> str:
        return f"hloscope compiles · {self.report.target}"

    def compose(self) -> ComposeResult:
        yield Static(self._title_text(), id="title-bar")
        yield CompilesView(self.report, self.cursor)
        yield Footer()

    @on(OpenCompile)
    def _open(self, message: OpenCompile) -> None:
        self.request = ("open", message.index)
        self.exit(return_code=ExitCode.OK)

    @on(DiffCompiles)
    def _diff(self, message: DiffCompiles) -> None:
        self.request = ("diff", message.a, message.b)
        self.exit(return_code=ExitCode.OK)


class LoadedDiffApp(DiffApp):
    """The diff screen on two modules in hand."""

    def __init__(
        self,
        a: loader.Loaded,
        b: loader.Loaded,
        *,
        driver_class: type[Driver] | None = None,
    ) -> None:
        super().__init__(a.label, b.label, driver_class=driver_class)
        self.loaded_a = a
        self.loaded_b = b

    @work(thread=True, group="load")
    def _load(self) -> None:
        try:
            session = diff_session(self.loaded_a, self.loaded_b, self, summary=True)
        except BaseException as exc:
            self.failure_traceback = traceback.format_exc()
            self.post_message(self.Failed("Could not diff", describe_failure(exc), fatal=True))
            return
        self.post_message(self.Ready(session))

    def quit_code(self) -> int:
        return ExitCode.OK


def compiles_key_sections() -> list[tuple[str, type[DOMNode]]]:
    """Every place the Compiles view binds keys, for its help screen and the docs."""
    return [
        ("Everywhere", CompilesApp),
        ("Compiles", CompilesView),
        ("The compilations (table)", DataTable),
        ("Diff (from d)", DiffPane),
        ("Messages", ErrorScreen),
        ("Help", HelpScreen),
    ]


def next_app(
    report: CompilesReport, request: tuple[Any, ...]
) -> Callable[[type[Driver] | None], WorkingApp]:
    """What a request of the Compiles view opens: the IR browser on one compilation's
    module, or the diff screen on two."""
    if request[0] == "open":
        loaded = compile_loaded(report, request[1])
        return lambda driver: HloscopeApp(loaded.label, loaded=loaded, driver_class=driver)
    a, b = compile_loaded(report, request[1]), compile_loaded(report, request[2])
    return lambda driver: LoadedDiffApp(a, b, driver_class=driver)


def _browse_loop(
    report: CompilesReport, run: Callable[[Callable[[Any], WorkingApp]], None]
) -> None:
    """The Compiles view, then what it asks to open, then the view again, until the
    user quits the view."""
    cursor = 0
    while True:
        shown: list[CompilesApp] = []

        def make(
            driver: Any, cursor: int = cursor, shown: list[CompilesApp] = shown
        ) -> CompilesApp:
            app = CompilesApp(report, cursor=cursor, driver_class=driver)
            shown.append(app)
            return app

        run(make)
        request = shown[0].request if shown else None
        if request is None:
            return
        cursor = request[1]
        run(next_app(report, request))


def run_compiles_browser(report: CompilesReport, *, debug: bool = False) -> int:
    """`hloscope compiles` on a terminal: browse the run until the user quits."""
    codes: list[int] = []

    def run(make: Callable[[Any], WorkingApp]) -> None:
        codes.append(run_app(make, debug))

    _browse_loop(report, run)
    return max(codes, default=ExitCode.OK) if any(codes) else ExitCode.OK


def browse_compiles(report: CompilesReport) -> None:
    """`Watch.browse()`: the same, in this process's terminal (a REPL, pdb)."""
    _browse_loop(report, lambda make: run_in_terminal(make(None)))

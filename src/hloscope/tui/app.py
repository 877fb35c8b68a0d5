"""The browser's application: tabs for the IR and the report views, the loading
and compiling workers, errors shown in the app, and the help.

`run_browser` is what `hloscope tui` and `hloscope inspect` (on a terminal) call.
Loading runs in a thread worker that posts messages; the UI thread only shows what
they carry. The worker posts the module as soon as it is printed (the IR tab
shows it), then builds the reports, which fill their tabs when they arrive. A
failure is shown as a message in the app, and the command exits with the command
line's code for it (2) after the terminal is restored.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import signal
import sys
import threading
import traceback
from collections.abc import Iterator
from typing import IO, Any, ClassVar

from textual import on, work
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.dom import DOMNode
from textual.driver import Driver
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Footer, Static, TabbedContent, TabPane

from hloscope.errors import ExitCode, HloscopeError, print_error
from hloscope.render.text.common import ir_label
from hloscope.sources import loader
from hloscope.timeout import time_limit
from hloscope.tui.browser import BrowserPane, filter_bindings
from hloscope.tui.focus import focus_now
from hloscope.tui.printed import PrintedModule, unpaired
from hloscope.tui.screens.help import HelpScreen
from hloscope.tui.screens.message import ErrorScreen
from hloscope.tui.screens.progress import ProgressScreen
from hloscope.tui.screens.search import SearchScreen
from hloscope.tui.session import Reports, Session, build_reports, describe_failure, prepare
from hloscope.tui.views import VIEWS, ReportView, RunDeeper, RunView, ShowOp, ShowOps
from hloscope.tui.views.params import ParamsView
from hloscope.tui.views.placement import PlacementView
from hloscope.tui.widgets.details import OpDetails
from hloscope.tui.widgets.ir_view import IRView
from hloscope.tui.widgets.module_tree import ModuleTree
from hloscope.tui.widgets.pending import PendingView
from hloscope.tui.widgets.report_list import ReportList

IR_TAB = "ir"


class BrowserTabs(TabbedContent):
    """The tabs, ignoring a pane's stale news that it holds the focus.

    Textual makes a pane active when a widget in it takes the focus, by a message
    that travels up from the widget. When two tab keys come fast (`1` then `2`), the
    first tab's message can arrive after the second tab was shown, and would switch
    back to the first tab (and then blur the second tab's widget as it hides it).
    This handler runs before `TabbedContent`'s own, and a stale message's
    `prevent_default()` keeps that one (a base class's handler) from running.
    """

    def on_tab_pane_focused(self, event: TabPane.Focused) -> None:
        focused = self.screen.focused
        if focused is None or event.tab_pane not in focused.ancestors_with_self:
            event.stop()
            event.prevent_default()


class WorkingApp(App[int]):
    """What the browser and the diff screen share: slow jobs in workers behind a
    progress screen, failures shown in the app, the help, and quitting."""

    CSS_PATH = "app.tcss"
    TITLE = "hloscope"
    ENABLE_COMMAND_PALETTE = False

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "quit", "Quit", show=True),
        Binding("question_mark", "help", "Keys", tooltip="This help: every key", show=True),
    ]

    class Progress(Message):
        """A worker's current step (`printing 25 ops`)."""

        def __init__(self, step: str) -> None:
            self.step = step
            super().__init__()

    class Failed(Message):
        """A worker failed; `fatal`: nothing could be loaded at all."""

        def __init__(self, title: str, message: str, *, fatal: bool) -> None:
            self.title = title
            self.message = message
            self.fatal = fatal
            super().__init__()

    def __init__(self, *, driver_class: type[Driver] | None = None) -> None:
        super().__init__(driver_class=driver_class)
        self.failure: str | None = None
        """Why the target could not be loaded (the app then exits with code 2)."""
        self.failure_traceback = ""
        """The failure's traceback, which `--debug` prints after the app exits."""
        self._progress: ProgressScreen | None = None
        self.jobs: list[str] = []
        """Every slow job started (loading, compiling), in order."""
        self.steps: list[str] = []
        """Every step the workers reported, in order."""

    def key_sections(self) -> list[tuple[str, type[DOMNode]]]:
        """Every place keys are bound, for the help screen."""
        raise NotImplementedError

    @property
    def job(self) -> str | None:
        """The slow job running now (its progress screen is up), if any."""
        return self._progress.title_text if self._progress is not None else None

    def _start_job(self, title: str) -> None:
        self.jobs.append(title)
        self._progress = ProgressScreen(title)
        self.push_screen(self._progress)

    def _end_job(self) -> None:
        if self._progress is not None:
            if self._progress.is_attached and self.screen is self._progress:
                self.pop_screen()
            self._progress = None

    def _report_step(self, step: str) -> None:
        """Called from a worker: the progress screen shows `step`."""
        self.post_message(self.Progress(step))

    @on(Progress)
    def _when_progress(self, message: Progress) -> None:
        self.steps.append(message.step)
        if self._progress is not None:
            self._progress.set_step(message.step)

    @on(Failed)
    def _when_failed(self, message: Failed) -> None:
        self._end_job()
        if message.fatal:
            self.failure = message.message
            self.query_one("#title-bar", Static).update(
                f"{self._title_text()} · nothing loaded (q quits)"
            )
        self.push_screen(ErrorScreen(message.title, message.message))

    def _title_text(self) -> str:
        return "hloscope"

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(self.key_sections()))

    def action_quit(self) -> None:  # type: ignore[override]
        self.exit(return_code=ExitCode.ERROR if self.failure else self.quit_code())

    def quit_code(self) -> int:
        """The exit code when the user quits after a successful load."""
        return ExitCode.OK


class HloscopeApp(WorkingApp):
    """Browse one target: its printed IR, its structure, and every report view."""

    BINDINGS: ClassVar[list[BindingType]] = [
        *[
            Binding("1", f"show_tab('{IR_TAB}')", "The IR tab", show=False),
            *(
                Binding(str(n), f"show_tab('{view.id}')", f"The {view.title} tab", show=False)
                for n, view in enumerate(VIEWS, start=2)
            ),
        ],
        Binding(
            "c",
            "toggle_compiled",
            "Compiled",
            tooltip="Switch to the optimized module (compiling it), or back to the lowered one",
            show=True,
        ),
        *filter_bindings(everywhere=True),
        Binding("tab", "focus_next", "Next pane", show=False),
        Binding("shift+tab", "focus_previous", "Previous pane", show=False),
    ]

    class Printed(Message):
        """A worker printed a module whose model it is still building."""

        def __init__(self, printed: PrintedModule) -> None:
            self.printed = printed
            self.shown = threading.Event()
            """Set once the printed module is drawn (or will not be)."""
            super().__init__()

    class Ready(Message):
        """A worker loaded (or compiled) a module and printed it."""

        def __init__(self, session: Session) -> None:
            self.session = session
            super().__init__()

    class ReportsReady(Message):
        """A worker built a session's reports."""

        def __init__(self, session: Session, reports: Reports) -> None:
            self.session = session
            self.reports = reports
            super().__init__()

    class ViewBuilt(Message):
        """A worker built an on-demand view's report, or the `deeper` part of a
        view's report (or failed to: `failure`)."""

        def __init__(self, view_id: str, report: Any, failure: str, deeper: bool = False) -> None:
            self.view_id = view_id
            self.report = report
            self.failure = failure
            self.deeper = deeper
            super().__init__()

    def __init__(
        self,
        target: str,
        options: loader.LoadOptions | None = None,
        *,
        loaded: loader.Loaded | None = None,
        start: str = IR_TAB,
        driver_class: type[Driver] | None = None,
    ) -> None:
        """Browse `target` loaded with `options`, or the already `loaded` one; `start`
        names the tab shown first (`ir`, `overview`)."""
        super().__init__(driver_class=driver_class)
        self.target = target
        self.options = options or loader.LoadOptions()
        self.preloaded = loaded
        self.start = start
        self.session: Session | None = None
        self.sessions: dict[str, Session] = {}
        """Sessions by stage (`lowered`, `optimized`), to switch back without work."""
        self.on_demand: dict[str, Any] = {}
        """Reports of on-demand views (the AOT check), by view id: they are about the
        target, whichever module is shown."""
        self.on_demand_failures: dict[str, str] = {}
        self.deeper: dict[str, Any] = {}
        """The `deeper` parts of views' reports (the Placement tab's causes of
        collectives), by view id: about the target, whichever module is shown."""
        self._view_tabs: list[str] = []

    def key_sections(self) -> list[tuple[str, type[DOMNode]]]:
        return key_sections()

    def compose(self) -> ComposeResult:
        yield Static(f"hloscope · {self.target}", id="title-bar")
        with (
            BrowserTabs(id="tabs", initial=f"tab-{IR_TAB}"),
            TabPane("IR", id=f"tab-{IR_TAB}"),
        ):
            yield BrowserPane()
        yield Footer()

    def on_mount(self) -> None:
        self._start_job(f"Loading {self.target}")
        self._load(self.target, self.options, self.preloaded)

    def _title_text(self) -> str:
        return f"hloscope · {self.target}"

    # -- workers ----------------------------------------------------------------------

    def _prepare_and_build(self, loaded: loader.Loaded) -> None:
        """In a worker: post the printed module, then its reports. A module whose
        model is not built yet is printed and shown first (paint first: MLIR's
        printer takes a fraction of the time of building the model)."""
        text = None
        if not loaded.parsed.model_built:
            self._report_step("printing the module")
            text = loaded.parsed.text()
            printed = self.Printed(unpaired(text))
            self.post_message(printed)
            # The build holds the interpreter; let the module be drawn first.
            printed.shown.wait(timeout=2.0)
            self._report_step("building the model")
            loaded.parsed.model  # noqa: B018 (built here, in the worker)
        session = prepare(loaded, VIEWS, self._report_step, text)
        self.post_message(self.Ready(session))
        try:
            reports = build_reports(session, self._report_step)
        except Exception as exc:
            failure = describe_failure(exc)
            reports = Reports(
                inspect=None,
                marked={},
                built={},
                failures={view.id: failure for view in session.views},
                placed={},
            )
        self.post_message(self.ReportsReady(session, reports))

    @work(thread=True, group="load", description="load")
    def _load(self, target: str, options: loader.LoadOptions, loaded: loader.Loaded | None) -> None:
        try:
            if loaded is None:
                self.post_message(self.Progress(loader.loading_step(target)))
                loaded = loader.load(target, dataclasses.replace(options, defer_model=True))
            self._prepare_and_build(loaded)
        except BaseException as exc:
            self.failure_traceback = traceback.format_exc()
            self.post_message(
                self.Failed(f"Could not load {target}", describe_failure(exc), fatal=True)
            )

    @work(thread=True, group="load", description="compile")
    def _compile(self, loaded: loader.Loaded) -> None:
        try:
            compile_for = loaded.options.compile_for
            where = compile_for.spec if compile_for is not None else "the local backend"
            self.post_message(self.Progress(f"compiling for {where}"))
            optimized = loaded.optimized()
            self._prepare_and_build(optimized)
        except BaseException as exc:
            self.post_message(self.Failed("Could not compile", describe_failure(exc), fatal=False))

    @work(thread=True, group="view", description="build a view")
    def _build_view(self, view: ReportView, loaded: loader.Loaded) -> None:
        try:
            self.post_message(self.Progress(view.on_demand or f"building {view.title}"))
            report = view.build(loaded)
        except BaseException as exc:
            self.post_message(self.ViewBuilt(view.id, None, describe_failure(exc)))
            return
        self.post_message(self.ViewBuilt(view.id, report, ""))

    @work(thread=True, group="view", description="build a view's deeper part")
    def _build_deeper(self, view: ReportView, loaded: loader.Loaded) -> None:
        assert view.deeper is not None
        try:
            self.post_message(self.Progress(view.deeper.step))
            report = view.deeper.build(loaded)
        except BaseException as exc:
            self.post_message(self.ViewBuilt(view.id, None, describe_failure(exc), deeper=True))
            return
        self.post_message(self.ViewBuilt(view.id, report, "", deeper=True))

    @on(Printed)
    def _when_printed(self, message: Printed) -> None:
        if self.session is not None:
            message.shown.set()
            return  # a module is shown already: it stays until the new one is ready
        self._end_job()
        self.query_one(BrowserPane).show_printed(message.printed)
        self.call_after_refresh(message.shown.set)

    @on(Ready)
    async def _when_ready(self, message: Ready) -> None:
        self._end_job()
        await self.show_session(message.session)

    @on(ReportsReady)
    async def _when_reports_ready(self, message: ReportsReady) -> None:
        session = message.session
        session.reports = message.reports
        if session is not self.session:
            return
        self.query_one(BrowserPane).reports_ready()
        for view in session.views:
            await self._refresh_view(view)

    @on(ViewBuilt)
    async def _when_view_built(self, message: ViewBuilt) -> None:
        self._end_job()
        if message.failure:
            if not message.deeper:
                self.on_demand_failures[message.view_id] = message.failure
            self.push_screen(ErrorScreen("The report could not be built", message.failure))
        elif message.deeper:
            self.deeper[message.view_id] = message.report
        else:
            self.on_demand[message.view_id] = message.report
            self.on_demand_failures.pop(message.view_id, None)
        view = next((v for v in VIEWS if v.id == message.view_id), None)
        if view is not None:
            # A report run again (`r`) is a new report for the same widget type.
            await self._refresh_view(view, replace=True)

    # -- showing a session --------------------------------------------------------------

    async def show_session(self, session: Session) -> None:
        """Show `session` in every tab."""
        self.session = session
        self.sessions[session.loaded.source.stage] = session
        loaded = session.loaded
        module = loaded.module
        compiled_for = loaded.source.compiled_for
        # The platform before the IR's words: a narrow terminal cuts the title's end.
        for_platform = (
            f"for {compiled_for.spec} (without the device) · "
            if compiled_for is not None and compiled_for.spec is not None
            else ""
        )
        self.query_one("#title-bar", Static).update(
            f"hloscope · {loaded.source.target} · {module.name or 'module'} · {for_platform}"
            f"{loaded.source.stage} {ir_label(loaded.source.ir)} · {session.op_count_text}"
        )
        tabs = self.query_one(TabbedContent)
        active = self._active_view()
        for pane_id in self._view_tabs:
            await tabs.remove_pane(pane_id)
        self._view_tabs = []
        for view in session.views:
            pane = TabPane(view.title, self._view_widget(session, view), id=f"tab-{view.id}")
            await tabs.add_pane(pane)
            self._view_tabs.append(f"tab-{view.id}")
        self.query_one(BrowserPane).show_session(session)
        start, self.start = self.start, ""
        # At once, not after a refresh: keys typed as the module appears must reach
        # this tab's view (the tab bar held the focus while loading), and a tab key
        # among them must not be undone by a later switch to this one.
        self.action_show_tab(start or active)

    def _active_view(self) -> str:
        active = self.query_one(TabbedContent).active
        return active.removeprefix("tab-") if active else IR_TAB

    def _view_widget(self, session: Session, view: ReportView) -> Widget:
        """What `view`'s tab shows for `session` now."""
        loaded = session.loaded
        refusal = session.reports.failures.get(view.id) if session.reports else None
        if view.optimized and session.lowered and refusal:
            return PendingView(
                view.id, f"{view.title} could not be built: {refusal}", runnable=False
            ).add_class("view-failure")
        if view.optimized and session.lowered:
            if "optimized" in self.sessions:
                what = "press enter (or c) to switch to it"
            else:
                what = "press enter (or c) to compile it for the local backend and switch to it"
            return PendingView(
                view.id,
                f"The {view.title} tab reads the optimized module: {what}.",
                runnable=True,
            )
        if view.on_demand:
            if view.id in self.on_demand:
                return view.widget(self.on_demand[view.id], loaded)
            compile_for = loaded.options.compile_for
            if view.runs_the_program and compile_for is not None:
                refusal_text = loader.needs_the_device(view.runs_the_program, compile_for)
                return PendingView(
                    view.id, f"{view.on_demand}\n\n{refusal_text}", runnable=False
                ).add_class("view-failure")
            text = f"{view.on_demand}\n\nPress enter to run it."
            failure = self.on_demand_failures.get(view.id)
            if failure:
                text += f"\n\nThe last run failed: {failure}"
            return PendingView(view.id, text, runnable=True)
        if session.reports is None:
            return PendingView(view.id, f"Building the {view.title} report…", runnable=False)
        if view.id in session.reports.built:
            report = session.reports.built[view.id]
            if view.deeper is not None and view.id in self.deeper:
                report = view.deeper.join(report, self.deeper[view.id])
            return view.widget(report, loaded)
        failure = session.reports.failures.get(view.id, "no report")
        return PendingView(
            view.id, f"{view.title} could not be built: {failure}", runnable=False
        ).add_class("view-failure")

    async def _refresh_view(self, view: ReportView, replace: bool = False) -> None:
        """Show what `view`'s tab should show now (its report arrived); with `replace`,
        even when it shows a report already (one built again)."""
        session = self.session
        pane_id = f"tab-{view.id}"
        if session is None or pane_id not in self._view_tabs:
            return
        pane = self.query_one(TabbedContent).get_pane(pane_id)
        old = pane.children[0] if pane.children else None
        widget = self._view_widget(session, view)
        if (
            not replace
            and old is not None
            and type(old) is type(widget)
            and not isinstance(old, PendingView)
        ):
            return  # already showing the report
        had_focus = self.focused is not None and pane in self.focused.ancestors
        await pane.remove_children()
        await pane.mount(widget)
        if had_focus or self.query_one(TabbedContent).active == pane_id:
            self._focus_pane(pane_id)

    def _focus_pane(self, pane_id: str) -> None:
        """Focus the view in a tab, so that its keys work and focus stays on the tab."""
        pane = self.query_one(TabbedContent).get_pane(pane_id)
        target = next((w for w in pane.query("*") if w.focusable), None)
        if target is not None:
            focus_now(target)

    # -- actions ------------------------------------------------------------------------

    def action_show_tab(self, view_id: str) -> None:
        tabs = self.query_one(TabbedContent)
        pane = f"tab-{view_id}"
        if view_id == IR_TAB or pane in self._view_tabs:
            tabs.active = pane
            if view_id == IR_TAB:
                focus_now(self.query_one(IRView))
            else:
                self._focus_pane(pane)
        elif self.session is not None:
            title = next((v.title for v in VIEWS if v.id == view_id), view_id)
            self.notify(f"No {title} for this target.", timeout=3)

    def action_toggle_filter(self, filter_id: str) -> None:
        """Show only the filter's ops in the IR (on the IR tab, from any tab), or
        everything again; a module without any says so."""
        browser = self.query_one(BrowserPane)
        if browser.session is None:
            return
        if browser.session.marked.get(filter_id) or browser.active_filter == filter_id:
            self.action_show_tab(IR_TAB)
        browser.action_toggle_filter(filter_id)

    def action_toggle_compiled(self) -> None:
        session = self.session
        if session is None or self._progress is not None:
            return
        stage = session.loaded.source.stage
        other = "lowered" if stage == "optimized" else "optimized"
        if other in self.sessions:
            self.run_worker(self.show_session(self.sessions[other]))
            self.notify(f"Showing the {other} module.", timeout=2)
            return
        if other == "lowered":
            if session.loaded.options.optimized:
                message = (
                    "The optimized module was asked for (--compile); without it, the lowered one."
                )
            else:
                message = "This target is an optimized module; there is no lowered one here."
            self.notify(message, timeout=4)
            return
        self._start_job(f"Compiling {session.loaded.source.target}")
        self._compile(session.loaded)

    @on(RunView)
    def _run_view(self, message: RunView) -> None:
        session = self.session
        view = next((v for v in VIEWS if v.id == message.view_id), None)
        if session is None or view is None or self._progress is not None:
            return
        if view.optimized and session.lowered:
            self.action_toggle_compiled()
        elif view.on_demand:
            self._start_job(f"{view.title}: {session.loaded.source.target}")
            self._build_view(view, session.loaded)

    @on(RunDeeper)
    def _run_deeper(self, message: RunDeeper) -> None:
        session = self.session
        view = next((v for v in VIEWS if v.id == message.view_id), None)
        if session is None or view is None or view.deeper is None or self._progress is not None:
            return
        self._start_job(f"{view.title}: {session.loaded.source.target}")
        self._build_deeper(view, session.loaded)

    @on(ShowOp)
    def _show_op(self, message: ShowOp) -> None:
        origin = self._to_the_ir()
        self.query_one(BrowserPane).jump(message.op_id)
        self._remember(origin)

    @on(ShowOps)
    def _show_ops(self, message: ShowOps) -> None:
        origin = self._to_the_ir()
        self.query_one(BrowserPane).show_ops(message.op_ids, message.label)
        self._remember(origin)

    def _to_the_ir(self) -> str | None:
        """Switch to the IR tab; the tab it was on (None: the IR's own)."""
        tabs = self.query_one(TabbedContent)
        origin = tabs.active
        tabs.active = f"tab-{IR_TAB}"
        focus_now(self.query_one(IRView))
        return origin if origin and origin != f"tab-{IR_TAB}" else None

    def _remember(self, origin: str | None) -> None:
        if origin is not None:
            self.query_one(BrowserPane).came_from(origin)

    @on(BrowserPane.ReturnToTab)
    def _return_to_tab(self, message: BrowserPane.ReturnToTab) -> None:
        view_id = message.tab.removeprefix("tab-")
        if message.tab in self._view_tabs:
            self.action_show_tab(view_id)


def key_sections() -> list[tuple[str, type[DOMNode]]]:
    """Every place the browser binds keys, for the help screen and the docs."""
    return [
        ("Everywhere", HloscopeApp),
        ("IR tab", BrowserPane),
        ("The IR (printed module)", IRView),
        ("Module tree", ModuleTree),
        ("Details (links)", OpDetails),
        ("Report tabs' tables", ReportList),
        ("Parameters tab", ParamsView),
        ("Placement tab", PlacementView),
        ("Tabs that wait for enter", PendingView),
        ("Search prompt", SearchScreen),
        ("Messages", ErrorScreen),
        ("Help", HelpScreen),
    ]


# --------------------------------------------------------------------------- running


def terminal_output() -> IO[str] | None:
    """A stream of its own onto the terminal, for the app to draw on.

    Textual draws on file descriptor 2, but hloscope redirects descriptor 2 while
    XLA and MLIR run (they log straight to it), which would swallow the screen's
    updates during a load or a compile. A duplicate of the terminal's descriptor is
    not redirected. None when neither stderr nor stdout is a terminal.
    """
    for fd in (2, 1):
        try:
            if os.isatty(fd):
                return open(os.dup(fd), "w", encoding="utf-8", errors="replace")
        except OSError:
            continue
    return None


def _driver_for(output: IO[str]) -> type[Driver] | None:
    """The platform's driver, drawing on `output`: its output methods (`Driver.write`
    and `Driver.flush`, what the app draws through) write there, and flush at once,
    as the driver's own writer does when it has nothing queued."""
    if sys.platform == "win32":
        return None
    from textual.drivers.linux_driver import LinuxDriver

    class TerminalDriver(LinuxDriver):
        def write(self, data: str) -> None:
            output.write(data)
            output.flush()

        def flush(self) -> None:
            output.flush()

    return TerminalDriver


@contextlib.contextmanager
def _ends_with_its_terminal() -> Iterator[None]:
    """The browser ends when its terminal does (SIGHUP: an SSH connection dropped, a
    tmux server killed): it would otherwise go on without one, drawing nowhere and
    spinning on a dead input for good. There is no screen to give back; the child
    processes see their input close and end too."""
    if not hasattr(signal, "SIGHUP"):
        yield
        return

    def hang_up(signum: int, _frame: object) -> None:
        os._exit(128 + signum)

    previous = signal.signal(signal.SIGHUP, hang_up)
    try:
        yield
    finally:
        signal.signal(signal.SIGHUP, previous)


def run_app(make: Any, debug: bool) -> int:
    """Run the app `make(driver_class)` builds on the terminal until the user quits;
    its exit code (2 when nothing could be loaded, after printing why on stderr;
    with `debug`, the traceback too)."""
    output = terminal_output()
    if output is None or not sys.stdin.isatty():
        if output is not None:
            output.close()
        raise HloscopeError(
            "the browser needs a terminal: run it in one, or print the report with "
            "hloscope inspect --print (or --json)"
        )
    try:
        app: WorkingApp = make(_driver_for(output))
        with _ends_with_its_terminal():
            app.run()
    finally:
        output.close()
    if app.failure is not None:
        if debug and app.failure_traceback:
            sys.stderr.write(app.failure_traceback)
        print_error(app.failure)
        return ExitCode.ERROR
    code = app.return_code
    return code if code is not None else ExitCode.OK


# --------------------------------------------------------------------------- the Python API


def browse(loaded: loader.Loaded, *, start: str = IR_TAB) -> None:
    """Browse an already loaded module in this process's terminal until the user
    quits: `Inspection.browse()`, from a REPL or at a pdb prompt (where the terminal
    is in line mode: the app takes it over and gives it back as it found it). Raises
    `HloscopeError` when there is no terminal to draw on, or when the module cannot
    be shown."""
    app = HloscopeApp(loaded.label, loaded.options, loaded=loaded, start=start)
    run_in_terminal(app)
    if app.failure is not None:
        raise HloscopeError(app.failure)


def run_in_terminal(app: App[Any]) -> None:
    """Run `app` on this process's terminal, drawing on a stream of its own (see
    `terminal_output`). Raises `HloscopeError` when that cannot be done here."""
    import asyncio
    import contextlib
    import threading

    where = "look at the reports here instead (display them, or print them)"
    if threading.current_thread() is not threading.main_thread():
        raise HloscopeError(
            "the browser runs on the main thread (it handles the terminal's signals)"
        )
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        raise HloscopeError(
            "the browser cannot start inside a running asyncio event loop (a notebook "
            f"kernel, an async REPL): {where}, or run hloscope tui in a terminal"
        )
    stdin = sys.__stdin__
    if stdin is None or not stdin.isatty():
        raise HloscopeError(
            f"the browser needs a terminal, and stdin is not one here (a notebook, a pipe?): "
            f"{where}, or run hloscope tui in a terminal"
        )
    output = terminal_output()
    if output is None:
        raise HloscopeError(
            "the browser needs a terminal, and neither stdout nor stderr is one here: "
            f"{where}, or run hloscope tui in a terminal"
        )
    app.driver_class = _driver_for(output) or app.driver_class
    with contextlib.suppress(Exception):
        sys.stdout.flush()
    try:
        app.run()
    finally:
        output.close()


def run_browser(
    target: str,
    options: loader.LoadOptions,
    *,
    start: str = IR_TAB,
    debug: bool = False,
    timeout: float | None = None,
) -> int:
    """Run the browser on `target` until the user quits; the exit code (2 when the
    target could not be loaded, after printing why on stderr; with `debug`, the
    traceback too). With `timeout` (`--timeout`), the target is loaded first, here,
    as every command loads it under that limit, and the browser opens on it."""

    def make(driver: type[Driver]) -> HloscopeApp:
        loaded = None
        if timeout is not None:
            # In the main thread, where the limit can stop user code that does not
            # return (the browser's workers cannot be stopped).
            with time_limit(timeout, target):
                loaded = loader.load(target, dataclasses.replace(options, defer_model=True))
        return HloscopeApp(target, options, loaded=loaded, start=start, driver_class=driver)

    return run_app(make, debug)

"""The passes screen: `hloscope passes TARGET` on a terminal.

XLA's pipeline as a table, one row per pass (its pipeline, op count, change and
the op kinds it changed), built by the same `reports` call the command line makes.
Enter shows the selected pass's diff (the module before it against after it) on
the diff screen; escape comes back. `/` asks for a pattern and marks the passes
where its count changes (`]` and `[` go from one to the next); `C` shows only the
passes that changed something.

The per-pass files of an entrypoint are compiled into a temporary folder that
lives as long as the screen (a pass's diff reads its two files when asked).
"""

from __future__ import annotations

import contextlib
import traceback
from typing import ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.dom import DOMNode
from textual.driver import Driver
from textual.message import Message
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static

from hloscope import reports
from hloscope.render.text.passes import INSTRUCTIONS_COLUMN, find_summary, pass_cells
from hloscope.sources import loader
from hloscope.sources.passes import PassDumps, pass_dumps
from hloscope.tui.app import WorkingApp, run_app
from hloscope.tui.diff_app import DiffPane, DiffSession, DiffSideView, diff_session
from hloscope.tui.screens.help import HelpScreen
from hloscope.tui.screens.message import ErrorScreen
from hloscope.tui.screens.search import SearchScreen
from hloscope.tui.session import describe_failure
from hloscope.tui.widgets.lists import RowTable

FIND_HINT = (
    "an op kind (all-gather, fusion, copy), a custom-call target, attribute text "
    "(_xla_compute_type) or a source line (model.py:42); enter marks the passes that change it"
)


class PassFindScreen(SearchScreen):
    """`/` on the passes screen: the pattern to find."""

    def on_mount(self) -> None:
        super().on_mount()
        self.query_one("#search-hint", Static).update(FIND_HINT)


class PassDiffScreen(Screen[None]):
    """One pass's diff, on the diff screen's pane."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "back", "Back to the passes", show=True),
        Binding("tab", "focus_next", "The other side", show=False),
        Binding("shift+tab", "focus_previous", "The other side", show=False),
    ]

    def __init__(self, title: str, session: DiffSession) -> None:
        super().__init__()
        self.title_text = title
        self.session = session

    def compose(self) -> ComposeResult:
        yield Static(self.title_text, id="title-bar")
        yield DiffPane()
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(DiffPane).show(self.session)

    def action_back(self) -> None:
        self.dismiss(None)


_TABLE_ACTIONS = frozenset({"diff_pass", "find", "next_mark", "toggle_changed"})


class PassesApp(WorkingApp):
    """`hloscope passes TARGET` on a terminal."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "diff_pass", "Diff of the pass", show=True),
        Binding("slash", "find", "Find", tooltip="Mark the passes where a pattern changes"),
        Binding("right_square_bracket", "next_mark(1)", "Next mark", show=True),
        Binding("left_square_bracket", "next_mark(-1)", "Previous mark", show=True),
        Binding("C", "toggle_changed", "Changed only", show=True),
    ]

    class Ready(Message):
        """The worker read the passes (and searched them)."""

        def __init__(self, report: reports.PassesReport) -> None:
            self.report = report
            super().__init__()

    class DiffReady(Message):
        """The worker diffed a pass."""

        def __init__(self, title: str, session: DiffSession) -> None:
            self.title = title
            self.session = session
            super().__init__()

    def __init__(
        self,
        target: str,
        options: loader.LoadOptions | None = None,
        *,
        find: str | None = None,
        driver_class: type[Driver] | None = None,
    ) -> None:
        super().__init__(driver_class=driver_class)
        self.target = target
        self.options = options or loader.LoadOptions()
        self.find = find
        self.report: reports.PassesReport | None = None
        self.dumped: PassDumps | None = None
        self.only_changed = False
        self._files = contextlib.ExitStack()

    def key_sections(self) -> list[tuple[str, type[DOMNode]]]:
        return passes_key_sections()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """The passes table's keys are off (and out of the footer) on a pass's diff
        screen, which has its own."""
        if action in _TABLE_ACTIONS and isinstance(self.screen, PassDiffScreen):
            return False
        return super().check_action(action, parameters)

    def _title_text(self) -> str:
        return f"hloscope passes · {self.target}"

    def compose(self) -> ComposeResult:
        yield Static(self._title_text(), id="title-bar")
        yield Static(id="passes-summary")
        yield RowTable(id="passes-table", cursor_type="row", zebra_stripes=True)
        yield Footer()

    def on_mount(self) -> None:
        self._start_job("Reading XLA's passes")
        self._load()

    def on_unmount(self) -> None:
        self._files.close()

    @work(thread=True, group="load")
    def _load(self) -> None:
        try:
            if self.dumped is None:
                self._report_step(
                    "reading the per-pass files (an entrypoint is compiled with them first)"
                )
                self.dumped = self._files.enter_context(pass_dumps(self.target, self.options))
            self._report_step(f"counting the ops of {len(self.dumped.files)} passes")
            report = reports.passes_report(self.dumped, self.find)
        except BaseException as exc:
            self.failure_traceback = traceback.format_exc()
            fatal = self.report is None
            self.post_message(
                self.Failed("Could not read the passes", describe_failure(exc), fatal=fatal)
            )
            return
        self.post_message(self.Ready(report))

    @on(Ready)
    def _when_ready(self, message: Ready) -> None:
        self._end_job()
        self.report = message.report
        self._show()

    # -- the table --------------------------------------------------------------------

    def _shown_steps(self) -> list[int]:
        report = self.report
        if report is None:
            return []
        found = report.find
        return [
            step.index
            for step in report.table.steps
            if not self.only_changed
            or step.changed
            or (found is not None and found.changed_at(step.index) is not None)
        ]

    def _show(self, keep: int | None = None) -> None:
        report = self.report
        assert report is not None
        table = report.table
        summary = Text()
        summary.append(f"{report.module}", style="bold")
        summary.append(
            f" · {len(table.steps)} passes · {len(table.pipelines)} pipelines · "
            f"{sum(1 for s in table.steps if s.changed)} changed the op counts"
        )
        if report.find is not None:
            summary.append("\nfind ", style="bold")
            summary.append_text(find_summary(report.find))
        if self.only_changed:
            summary.append("\nshowing only the passes that changed something", style="yellow")
        self.query_one("#passes-summary", Static).update(summary)
        grid = self.query_one("#passes-table", DataTable)
        grid.clear(columns=True)
        columns = ["#", "pipeline", "pass", INSTRUCTIONS_COLUMN, "Δ", "changed kinds"]
        if report.find is not None:
            columns.append(report.find.pattern)
        grid.add_columns(*columns)
        found = report.find
        for index in self._shown_steps():
            step = table.steps[index]
            grid.add_row(*pass_cells(step, found), key=str(index))
        if keep is not None and str(keep) in {str(i) for i in self._shown_steps()}:
            grid.move_cursor(row=grid.get_row_index(str(keep)))
        grid.focus()

    @property
    def selected(self) -> int | None:
        """The index of the pass under the cursor."""
        grid = self.query_one("#passes-table", DataTable)
        shown = self._shown_steps()
        if not shown or grid.cursor_row < 0 or grid.cursor_row >= len(shown):
            return None
        return shown[grid.cursor_row]

    def action_toggle_changed(self) -> None:
        if self.report is None:
            return
        keep = self.selected
        self.only_changed = not self.only_changed
        self._show(keep)

    def action_next_mark(self, direction: int) -> None:
        report = self.report
        if report is None or report.find is None:
            self.notify("Nothing is marked: / finds a pattern.", timeout=3)
            return
        marks = [change.index for change in report.find.changes]
        current = self.selected if self.selected is not None else -1
        ahead = [m for m in marks if (m > current if direction > 0 else m < current)]
        if not ahead:
            self.notify("No more marked passes that way.", timeout=2)
            return
        target = ahead[0] if direction > 0 else ahead[-1]
        grid = self.query_one("#passes-table", DataTable)
        shown = self._shown_steps()
        if target in shown:
            grid.move_cursor(row=shown.index(target))

    # -- find ------------------------------------------------------------------------

    def action_find(self) -> None:
        self.push_screen(PassFindScreen(self.find or ""), self._when_pattern)

    def _when_pattern(self, pattern: str | None) -> None:
        if pattern is None or self.dumped is None:
            return
        self.find = pattern.strip() or None
        self._start_job(f"Finding {self.find}" if self.find else "Clearing the find")
        self._load()

    # -- a pass's diff ---------------------------------------------------------------

    @on(DataTable.RowSelected)
    def _row_selected(self, event: DataTable.RowSelected) -> None:
        # The table takes enter for itself (selecting the row).
        event.stop()
        self.action_diff_pass()

    def action_diff_pass(self) -> None:
        index = self.selected
        if index is None or self.report is None or self.dumped is None:
            return
        step = self.report.table.steps[index]
        self._start_job(f"Diffing #{index} {step.pass_name}")
        self._diff(index)

    @work(thread=True, group="diff")
    def _diff(self, index: int) -> None:
        report, dumped = self.report, self.dumped
        assert report is not None and dumped is not None
        try:
            step = report.table.steps[index]
            self._report_step("parsing the module before the pass and after it")
            a, b = reports.pass_sides(dumped, report.table, index)
            session = diff_session(a, b, self)
        except BaseException as exc:
            self.failure_traceback = traceback.format_exc()
            self.post_message(
                self.Failed("Could not diff the pass", describe_failure(exc), fatal=False)
            )
            return
        title = f"hloscope passes · #{index} {step.pipeline}/{step.pass_name}"
        self.post_message(self.DiffReady(title, session))

    @on(DiffReady)
    def _when_diff_ready(self, message: DiffReady) -> None:
        self._end_job()
        self.push_screen(PassDiffScreen(message.title, message.session))


def passes_key_sections() -> list[tuple[str, type[DOMNode]]]:
    """Every place the passes screen binds keys, for its help screen and the docs."""
    return [
        ("Everywhere", PassesApp),
        ("A pass's diff", PassDiffScreen),
        ("Diff", DiffPane),
        ("Each side (A, B)", DiffSideView),
        ("Find prompt", PassFindScreen),
        ("Messages", ErrorScreen),
        ("Help", HelpScreen),
    ]


def run_passes(
    target: str,
    options: loader.LoadOptions,
    *,
    find: str | None = None,
    debug: bool = False,
) -> int:
    """Run the passes screen until the user quits; the exit code (2 when the passes
    could not be read, after printing why on stderr; with `debug`, the traceback)."""
    return run_app(lambda driver: PassesApp(target, options, find=find, driver_class=driver), debug)

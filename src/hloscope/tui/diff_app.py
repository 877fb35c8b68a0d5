"""The diff screen: `hloscope diff A B` on a terminal.

A summary header (the verdict and the op counts; of two compiled programs, below it
the command's own "Compiled: A → B" table, its height capped), the two modules printed side by
side on the rows `tui.diff_align.align_printed` lays out (matched ops on one row, a
blank row facing what one side has alone, a pair that crosses the others' order
beside a copy of A's line marked `»`), one cursor row for both, added lines in
green, removed in red, changed in yellow, and below them what changed in the op
under the cursor. `]` and `[` go to the next and previous change, `C` shows only
the rows that changed, `L` lists the changes grouped by what changed (and the
functions renamed) and goes to a group's first occurrence.

Loading, diffing and printing run in a worker behind the progress screen, as in the
browser; the diff is the same `reports` call the command line makes.
"""

from __future__ import annotations

import bisect
import dataclasses
import traceback
from collections.abc import Mapping
from typing import ClassVar

from rich.style import Style
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.dom import DOMNode
from textual.driver import Driver
from textual.message import Message
from textual.widgets import Footer, Static

from hloscope import reports
from hloscope.analyses.diff import (
    ADDED,
    CHANGED,
    NORMALIZED,
    REMOVED,
    Change,
    ChangeGroup,
)
from hloscope.errors import ExitCode
from hloscope.render.text.common import describe_source
from hloscope.render.text.diff import change_where, compiled_table
from hloscope.sources import diff_sides, loader
from hloscope.tui.app import WorkingApp, run_app
from hloscope.tui.diff_align import MOVED, AlignedLines, align_printed, group_rows
from hloscope.tui.printed import PrintedModule
from hloscope.tui.screens.changes import ChangesScreen
from hloscope.tui.screens.help import HelpScreen
from hloscope.tui.screens.message import ErrorScreen
from hloscope.tui.session import describe_failure, print_module
from hloscope.tui.widgets.details import op_summary
from hloscope.tui.widgets.ir_view import IRView
from hloscope.units import counted

STYLES: Mapping[str, Style] = {
    ADDED: Style(color="bright_green", bold=True, bgcolor="#0f2f16"),
    REMOVED: Style(color="bright_red", bold=True, bgcolor="#3a1216"),
    CHANGED: Style(color="yellow", bold=True, bgcolor="#33300c"),
    NORMALIZED: Style(color="bright_black"),
    MOVED: Style(color="bright_black"),
}
"""How a line of each status is drawn: the gutter mark and op name in the colour,
the row on the background."""
KIND_STYLES = {ADDED: "bold green", REMOVED: "bold red", CHANGED: "bold yellow"}
MAX_CHANGES_SHOWN = 4
# Renames named in the header; `g` lists every one.
MAX_RENAMES_IN_SUMMARY = 3


@dataclasses.dataclass(eq=False)
class DiffSession:
    """Both modules, their diff, and the side-by-side layout."""

    a: loader.Loaded
    b: loader.Loaded
    report: reports.DiffReport
    printed_a: PrintedModule
    printed_b: PrintedModule
    aligned: AlignedLines
    changes_a: Mapping[int, tuple[Change, ...]]
    """A's op id -> the changes naming it."""
    changes_b: Mapping[int, tuple[Change, ...]]
    """B's op id -> the changes naming it."""
    groups: Mapping[int, ChangeGroup]
    """id() of each change -> its group."""
    group_rows: tuple[int, ...]
    """The alignment row of each group's first occurrence, or -1."""
    homes: tuple[Mapping[int, int], Mapping[int, int]]
    """A's and B's line -> the row of its own place."""
    copies: tuple[Mapping[int, int], Mapping[int, int]]
    """A's and B's line -> the first row showing a copy of it beside its pair."""


def diff_session(
    a: loader.Loaded,
    b: loader.Loaded,
    progress: WorkingApp | None = None,
    *,
    summary: bool = False,
) -> DiffSession:
    """Diff two loaded targets and lay them out side by side (in a worker); with
    `summary`, two compiled programs' diff carries their `compiled_summary`, as the
    command's does (built here, in the worker: it compiles each again)."""

    def step(text: str) -> None:
        if progress is not None:
            progress._report_step(text)

    step("diffing")
    report = reports.diff_loaded(a, b, summary=summary)
    step(f"printing A ({len(a.module.ops):,} ops)")
    printed_a = print_module(a, locations=False)
    step(f"printing B ({len(b.module.ops):,} ops)")
    printed_b = print_module(b, locations=False)
    step("aligning")
    diff = report.diff
    aligned = align_printed(diff, printed_a, printed_b)
    changes_a: dict[int, list[Change]] = {}
    changes_b: dict[int, list[Change]] = {}
    for change in diff.changes:
        if change.a is not None:
            changes_a.setdefault(diff.a.ops[change.a], []).append(change)
        if change.b is not None:
            changes_b.setdefault(diff.b.ops[change.b], []).append(change)
    groups = {id(change): group for group in diff.groups for change in group.changes}
    homes: tuple[dict[int, int], dict[int, int]] = ({}, {})
    copies: tuple[dict[int, int], dict[int, int]] = ({}, {})
    for side, (lines, copied) in enumerate(
        ((aligned.a, aligned.copy_a), (aligned.b, aligned.copy_b))
    ):
        for row, (line, copy) in enumerate(zip(lines, copied, strict=True)):
            if line < 0:
                continue
            if copy:
                copies[side].setdefault(line, row)
            else:
                homes[side][line] = row
    return DiffSession(
        a=a,
        b=b,
        report=report,
        printed_a=printed_a,
        printed_b=printed_b,
        aligned=aligned,
        changes_a={op: tuple(found) for op, found in changes_a.items()},
        changes_b={op: tuple(found) for op, found in changes_b.items()},
        groups=groups,
        group_rows=group_rows(diff, printed_a, printed_b, aligned),
        homes=homes,
        copies=copies,
    )


def summary_text(report: reports.DiffReport) -> Text:
    """The header: each side, then the verdict and the op counts."""
    diff = report.diff
    text = Text()
    for label, source, side in (("A", report.a, diff.a), ("B", report.b, diff.b)):
        text.append(f"{label}  ", style="bold")
        text.append(source.target, style="bold")
        ops = sum(side.counted)
        text.append(
            f"  {describe_source(source)} · {side.module or '(unnamed)'} · {counted(ops, 'op')}\n"
        )
    summary = diff.summary
    text.append("verdict ", style="bold")
    text.append(diff.verdict, style="bold green" if report.same else "bold yellow")
    text.append(" · ")
    text.append(f"{summary.added} added", style="green")
    text.append(" · ")
    text.append(f"{summary.removed} removed", style="red")
    text.append(" · ")
    text.append(f"{summary.changed} changed", style="yellow")
    text.append(f" · {summary.unchanged} unchanged")
    if summary.normalized:
        text.append(f" · {summary.normalized} normalised", style="dim")
    other = sum(1 for c in diff.changes if c.op in ("parameter", "result", "module"))
    if other:
        text.append(f" · {other} parameter, result or module changes")
    if diff.groups:
        text.append(f" · {len(diff.groups)} distinct", style="dim")
    if diff.renames:
        shown = ", ".join(f"{r.a} → {r.b}" for r in diff.renames[:MAX_RENAMES_IN_SUMMARY])
        more = len(diff.renames) - MAX_RENAMES_IN_SUMMARY
        text.append("\nrenamed ", style="bold")
        text.append(f"{len(diff.renames)} functions (not changes): {shown}")
        if more > 0:
            text.append(f" and {more} more (L lists them)", style="dim")
    return text


class DiffSideView(IRView, inherit_bindings=False):
    """One side of the diff: the IR view's keys, but for following links (the diff
    screen has no details of links)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        binding
        for binding in IRView.BINDINGS
        if isinstance(binding, Binding) and binding.action != "follow"
    ]


class DiffPane(Vertical):
    """The summary, both modules side by side, and the change under the cursor."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("right_square_bracket", "next_change(1)", "Next change", show=True),
        Binding("left_square_bracket", "next_change(-1)", "Previous change", show=True),
        Binding(
            "L",
            "grouped_changes",
            "Grouped changes",
            tooltip="The changes grouped by what changed, with counts and places, and the "
            "functions renamed; enter goes to a group's first occurrence",
            show=True,
        ),
        Binding(
            "C",
            "toggle_changes",
            "Changes only",
            tooltip="Show only the rows that changed (added, removed, changed), or all again",
            show=True,
        ),
    ]

    def __init__(self) -> None:
        super().__init__(id="diff")
        self.session: DiffSession | None = None
        self.only_changes = False
        self.shown_rows: list[int] | None = None
        """The alignment's row on each view row when only changes are shown."""

    def compose(self) -> ComposeResult:
        yield Static(id="diff-summary")
        # Capped in height (app.tcss) so that the modules keep the screen; the wheel
        # scrolls what does not fit.
        with VerticalScroll(id="diff-compiled", can_focus=False):
            yield Static(id="diff-compiled-table")
        with Horizontal(id="diff-sides"):
            yield DiffSideView(id="diff-a")
            yield DiffSideView(id="diff-b")
        yield Static(id="diff-details")
        yield Static(id="diff-status")

    @property
    def views(self) -> tuple[IRView, IRView]:
        return self.query_one("#diff-a", IRView), self.query_one("#diff-b", IRView)

    def show(self, session: DiffSession) -> None:
        self.session = session
        self.query_one("#diff-summary", Static).update(summary_text(session.report))
        compiled = session.report.compiled
        # The command's own table, so the screen and `--print` give one answer.
        self.query_one("#diff-compiled", VerticalScroll).display = compiled is not None
        if compiled is not None:
            self.query_one("#diff-compiled-table", Static).update(compiled_table(compiled))
        aligned = session.aligned
        view_a, view_b = self.views
        for view, loaded, printed, statuses, lines, copied in (
            (view_a, session.a, session.printed_a, aligned.status_a, aligned.a, aligned.copy_a),
            (view_b, session.b, session.printed_b, aligned.status_b, aligned.b, aligned.copy_b),
        ):
            styles = {
                line: STYLES[status]
                for line, status, copy in zip(lines, statuses, copied, strict=True)
                if line >= 0 and status in STYLES and not copy
            }
            view.show_module(
                loaded.module,
                printed,
                hlo=loaded.source.ir == "hlo-native",
                line_styles=styles,
            )
        view_a.follower, view_b.follower = view_b, view_a
        view_a.min_width = view_b.min_width = max(session.printed_a.width, session.printed_b.width)
        self._show_rows()
        view_a.focus()

    def _show_rows(self, row: int = 0) -> None:
        """Show every row, or only the changes; the cursor on alignment row `row`."""
        session = self.session
        assert session is not None
        aligned = session.aligned
        if self.only_changes:
            self.shown_rows = [r for r in range(len(aligned.a)) if aligned.is_change(r)]
        else:
            self.shown_rows = None
        shown = self.shown_rows if self.shown_rows is not None else range(len(aligned.a))
        for view, lines, statuses, copied in (
            (self.views[0], aligned.a, aligned.status_a, aligned.copy_a),
            (self.views[1], aligned.b, aligned.status_b, aligned.copy_b),
        ):
            copy_rows = {
                index: STYLES.get(statuses[r], Style())
                for index, r in enumerate(shown)
                if copied[r]
            }
            view.show_rows([lines[r] for r in shown], copy_rows)
        self._go_to(row)

    def _view_row(self, row: int) -> int:
        """The view row showing alignment row `row` (the next one shown, when hidden)."""
        if self.shown_rows is None:
            return row
        index = bisect.bisect_left(self.shown_rows, row)
        return min(index, max(0, len(self.shown_rows) - 1))

    @property
    def row(self) -> int:
        """The alignment row under the cursor (-1 when nothing is shown)."""
        cursor = self.views[0].cursor
        if self.shown_rows is None:
            return cursor
        return self.shown_rows[cursor] if cursor < len(self.shown_rows) else -1

    def _go_to(self, row: int) -> None:
        view_a, view_b = self.views
        target = view_b if self.app.focused is view_b else view_a
        target.go_to_row(self._view_row(row), centre=True)
        self._update()

    @on(IRView.CursorMoved)
    def _cursor_moved(self, event: IRView.CursorMoved) -> None:
        event.stop()
        self._update()

    def action_next_change(self, direction: int) -> None:
        session = self.session
        if session is None:
            return
        stops = session.aligned.stops
        if not stops:
            self.notify("The modules are the same: no changes.", timeout=3)
            return
        row = self.row
        if direction > 0:
            index = bisect.bisect_right(stops, row)
            if index >= len(stops):
                self.notify("No more changes below.", timeout=2)
                return
        else:
            index = bisect.bisect_left(stops, row) - 1
            if index < 0:
                self.notify("No more changes above.", timeout=2)
                return
        self._go_to(stops[index])

    def action_grouped_changes(self) -> None:
        session = self.session
        if session is None:
            return

        def go(index: int | None) -> None:
            if index is None or index >= len(session.group_rows):
                return
            row = session.group_rows[index]
            if row < 0:
                self.notify("That change is no op's line (a parameter, a result).", timeout=3)
                return
            if self.only_changes and not session.aligned.is_change(row):
                self.only_changes = False
                self._show_rows(row)
                return
            self._go_to(row)

        self.app.push_screen(ChangesScreen(session.report.diff), go)

    def action_toggle_changes(self) -> None:
        session = self.session
        if session is None:
            return
        if not self.only_changes and not session.aligned.stops:
            self.notify("The modules are the same: no changes.", timeout=3)
            return
        row = self.row
        self.only_changes = not self.only_changes
        self._show_rows(max(0, row))

    # -- what is under the cursor ----------------------------------------------------

    def _update(self) -> None:
        session = self.session
        if session is None or not self.is_mounted:
            return
        row = self.row
        self.query_one("#diff-details", Static).update(self.details(row))
        aligned = session.aligned
        status = Text()
        if row >= 0:
            status.append(f"row {row + 1:,}/{len(aligned.a):,}")
            stop = bisect.bisect_right(aligned.stops, row)
            if aligned.stops:
                status.append(
                    f" · change {stop}/{len(aligned.stops)}"
                    if stop
                    else " · before the first change"
                )
        if self.only_changes:
            status.append(" · only changes", style="yellow")
        self.query_one("#diff-status", Static).update(status)

    def details(self, row: int) -> Text:
        """What the pane below the modules says about alignment row `row`."""
        session = self.session
        assert session is not None
        if row < 0:
            return Text("No rows.", style="dim")
        aligned = session.aligned
        text = Text()
        sides = (
            ("A", aligned.a[row], session.printed_a, session.a, session.changes_a),
            ("B", aligned.b[row], session.printed_b, session.b, session.changes_b),
        )
        copied = (aligned.copy_a[row], aligned.copy_b[row])
        moved = (aligned.status_a[row] == MOVED, aligned.status_b[row] == MOVED)
        changes: list[Change] = []
        for side, (label, line, printed, loaded, by_op) in enumerate(sides):
            text.append(f"{label} ", style="bold")
            if line < 0:
                text.append("(nothing on this row)\n", style="dim")
                continue
            op_id = printed.line_op[line]
            own = op_id >= 0 and printed.own_line[op_id] and printed.op_line[op_id] == line
            text.append(f"line {line + 1:,}  ", style="dim")
            if own:
                text.append_text(op_summary(loaded.module, printed, loaded.module.ops[op_id]))
                for change in by_op.get(op_id, ()):
                    if change not in changes:
                        changes.append(change)
            else:
                text.append(printed.lines[line].strip()[:100])
            if copied[side]:
                home = session.homes[side].get(line, -1)
                text.append(
                    f"  (» shown again beside its pair; its place is row {home + 1:,})",
                    style="dim",
                )
            elif moved[side]:
                copy = session.copies[side].get(line, -1)
                text.append(f"  (moved: shown beside its pair on row {copy + 1:,})", style="dim")
            text.append("\n")
        if not changes:
            statuses = {aligned.status_a[row], aligned.status_b[row]} - {""}
            text.append(
                "unchanged" if statuses <= {"same"} else ", ".join(sorted(statuses)), style="dim"
            )
            return text
        for change in changes[:MAX_CHANGES_SHOWN]:
            text.append(change.kind, style=KIND_STYLES.get(change.kind, "bold"))
            text.append(f" {change.op}", style="bold")
            text.append(f" in {change.function}", style="dim")
            group = session.groups.get(id(change))
            if group is not None and group.count > 1:
                places = ", ".join(f"{p.function} ×{p.count}" for p in group.places[:3])
                if len(group.places) > 3:
                    places += f" and {len(group.places) - 3} more"
                text.append(f"  (the same change ×{group.count}: {places})", style="dim")
            text.append("\n")
            if change.detail:
                text.append(f"  {change.detail}\n")
            where = change_where(change)
            if where:
                text.append(f"  at {where}\n", style="dim")
            if change.aspects:
                text.append(f"  what: {', '.join(change.aspects)}\n", style="dim")
        if len(changes) > MAX_CHANGES_SHOWN:
            text.append(f"… {len(changes) - MAX_CHANGES_SHOWN} more changes\n", style="dim")
        return text


class DiffApp(WorkingApp):
    """`hloscope diff A B` on a terminal."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("tab", "focus_next", "The other side", show=False),
        Binding("shift+tab", "focus_previous", "The other side", show=False),
    ]

    class Ready(Message):
        """The worker diffed the modules and laid them out."""

        def __init__(self, session: DiffSession) -> None:
            self.session = session
            super().__init__()

    def __init__(
        self,
        target_a: str,
        target_b: str,
        options: loader.LoadOptions | diff_sides.DiffOptions | None = None,
        *,
        driver_class: type[Driver] | None = None,
    ) -> None:
        super().__init__(driver_class=driver_class)
        self.target_a = target_a
        self.target_b = target_b
        self.options = options or loader.LoadOptions()
        """One side's options for both, or each side's."""
        self.session: DiffSession | None = None

    def key_sections(self) -> list[tuple[str, type[DOMNode]]]:
        return diff_key_sections()

    def _title_text(self) -> str:
        return f"hloscope diff · {self.target_a} → {self.target_b}"

    def compose(self) -> ComposeResult:
        yield Static(self._title_text(), id="title-bar")
        yield DiffPane()
        yield Footer()

    def on_mount(self) -> None:
        self._start_job("Diffing")
        self._load()

    @work(thread=True, group="load")
    def _load(self) -> None:
        try:
            steps = (loader.loading_step(self.target_a), loader.loading_step(self.target_b))
            self._report_step(
                f"A: {steps[0]}; B: {steps[1]}" if steps[0] != steps[1] else f"A and B: {steps[0]}"
            )
            a, b = diff_sides.load_diff_sides(self.target_a, self.target_b, self.options)
            session = diff_session(a, b, self, summary=True)
        except BaseException as exc:
            self.failure_traceback = traceback.format_exc()
            self.post_message(self.Failed("Could not diff", describe_failure(exc), fatal=True))
            return
        self.post_message(self.Ready(session))

    @on(Ready)
    def _when_ready(self, message: Ready) -> None:
        self._end_job()
        self.session = message.session
        self.query_one(DiffPane).show(message.session)

    def quit_code(self) -> int:
        if self.session is None:
            return ExitCode.OK
        return ExitCode.OK if self.session.report.same else ExitCode.DIFFERENT


def diff_key_sections() -> list[tuple[str, type[DOMNode]]]:
    """Every place the diff screen binds keys, for its help screen and the docs."""
    return [
        ("Everywhere", DiffApp),
        ("Diff", DiffPane),
        ("Grouped changes", ChangesScreen),
        ("Each side (A, B)", DiffSideView),
        ("Messages", ErrorScreen),
        ("Help", HelpScreen),
    ]


def run_diff(
    target_a: str,
    target_b: str,
    options: loader.LoadOptions | diff_sides.DiffOptions,
    *,
    debug: bool = False,
) -> int:
    """Run the diff screen until the user quits; the exit code: 0 when the modules are
    the same, 1 when they differ, 2 when one could not be loaded (after printing why
    on stderr; with `debug`, the traceback too)."""
    return run_app(lambda driver: DiffApp(target_a, target_b, options, driver_class=driver), debug)

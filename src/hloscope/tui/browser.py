"""The IR tab: the module tree, the printed module and the selected op's details.

It owns the browsing state: the selected op, the history that backspace walks
back, the search and its hits, the filter, and whether locations are shown. Slow
steps (printing with locations, searching a large module) run in thread workers
that post messages back; nothing here walks the module on a keystroke.
"""

from __future__ import annotations

import bisect
from typing import ClassVar

from rich.style import Style
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widgets import Static, Tree

from hloscope.tui.filters import FILTERS, OpFilter
from hloscope.tui.focus import focus_now
from hloscope.tui.printed import PrintedModule, search
from hloscope.tui.session import Session, describe_failure, print_module
from hloscope.tui.widgets.details import OpDetails, callees, detail_rows
from hloscope.tui.widgets.ir_view import IRView
from hloscope.tui.widgets.module_tree import ModuleTree, OpNode, PageNode

MAX_HISTORY = 200


def filter_bindings(*, everywhere: bool = False) -> list[BindingType]:
    """The op filters' keys: on the IR tab, shown in its footer; `everywhere`: the
    app's, unshown, so that `H` on another tab (the Overview, where inspect opens)
    shows the IR tab's host ops too."""
    return [
        Binding(
            f.key,
            f"toggle_filter('{f.id}')",
            f.label.capitalize(),
            tooltip=f"Show only {f.label} in the IR"
            + (" (from any tab)" if everywhere else ", or everything again"),
            show=not everywhere,
        )
        for f in FILTERS
    ]


class BrowserPane(Vertical):
    """Tree | IR view over details, and a status line."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("/", "search", "Search", show=True),
        Binding("n", "next_hit(1)", "Next match", show=True),
        Binding("N", "next_hit(-1)", "Previous match", show=False),
        Binding(
            "backspace,ctrl+o", "back", "Back", tooltip="Back to where you jumped from", show=True
        ),
        Binding(
            "L",
            "toggle_locations",
            "Locations",
            tooltip="Show or hide locations in the IR",
            show=True,
        ),
        *filter_bindings(),
        Binding("t", "focus('module-tree')", "Focus the module tree", show=False),
        Binding("i", "focus('ir-view')", "Focus the IR", show=False),
        Binding("d", "focus('op-details')", "Focus the details (links)", show=False),
    ]

    class PrintedReady(Message):
        """The worker printed the module with its locations."""

        def __init__(self, session: Session, printed: PrintedModule) -> None:
            self.session = session
            self.printed = printed
            super().__init__()

    class SearchDone(Message):
        """The worker searched `printed` for `text`; `jump`: go to the first match."""

        def __init__(
            self, query: str, printed: PrintedModule, hits: tuple[int, ...], jump: bool
        ) -> None:
            self.text = query
            self.printed = printed
            self.hits = hits
            self.jump = jump
            super().__init__()

    class Failed(Message):
        """A worker failed; the message is shown, the module stays."""

        def __init__(self, title: str, message: str) -> None:
            self.title = title
            self.message = message
            super().__init__()

    def __init__(self) -> None:
        super().__init__(id="browser")
        self.session: Session | None = None
        self.selected = -1
        self.history: list[int | str] = []
        """Ops selected before (ids) and, where a report's row jumped here, the tab it
        was on (its pane id): backspace walks back through both."""
        self.locations = False
        self.active_filter: str | None = None
        self.search_text = ""
        self.hits: tuple[int, ...] = ()
        self.hit_ops: tuple[int, ...] = ()
        """The ops a report's row sent here (`show_ops`): the hits are their lines."""
        self.hits_label = ""
        """What those ops are, for the status line (empty for a search's hits)."""
        self._rows_cache: dict[tuple[str, bool], list[int]] = {}
        self._busy = ""

    def compose(self) -> ComposeResult:
        with Horizontal(id="browser-main"):
            yield ModuleTree(id="module-tree")
            with Vertical(id="browser-right"):
                yield IRView(id="ir-view")
                yield OpDetails(id="op-details")
        yield Static(id="browser-status")

    # -- the module -----------------------------------------------------------------

    @property
    def printed(self) -> PrintedModule | None:
        if self.session is None:
            return None
        return self.session.printed_for(self.locations)

    def _marks(self) -> tuple[tuple[frozenset[int], Style], ...]:
        assert self.session is not None
        return tuple(
            (self.session.marked.get(f.id, frozenset()), f.style)
            for f in FILTERS
            if self.session.marked.get(f.id)
        )

    def _op_style(self, op_id: int) -> Style | None:
        if self.session is None:
            return None
        for f in FILTERS:
            if op_id in self.session.marked.get(f.id, frozenset()):
                return f.style
        return None

    def show_session(self, session: Session) -> None:
        """Show a (new) module, its entry function selected."""
        rerun = self.search_text and not self.hit_ops
        self.session = session
        self.history = []
        self.hits = ()
        self.hit_ops = ()
        self.hits_label = ""
        self._rows_cache = {}
        self.active_filter = None
        if self.locations and session.located is None:
            self.locations = False
        printed = self.printed
        assert printed is not None
        module = session.loaded.module
        self.query_one(ModuleTree).show_module(module, printed, self._op_style)
        self._show_printed(printed)
        entry = module.entry
        first = entry.op.id if entry is not None else (0 if module.ops else -1)
        self.select(first, centre=True, force=True)
        if rerun:
            self._run_search(self.search_text, jump=False)

    def show_printed(self, printed: PrintedModule) -> None:
        """Show a printed module before its model is built: its lines, to read and
        scroll; what needs the model (selection, search, the tree) waits for
        `show_session`."""
        view = self.query_one(IRView)
        view.show_module(None, printed, hlo=False)
        focus_now(view)  # the keys that scroll reach it while the model is built
        self.query_one("#browser-status", Static).update(
            Text(f"{len(printed.lines):,} lines · building the model…", style="dim")
        )

    def reports_ready(self) -> None:
        """The session's reports arrived: marks, placement details, tree colours."""
        session = self.session
        if session is None:
            return
        self._rows_cache = {}
        view = self.query_one(IRView)
        view.marks = self._marks()
        view.set_hits(view.hits)  # redraws with the marks
        self.query_one(ModuleTree).relabel()
        self.select(self.selected, force=True, source="ir")

    def _show_printed(self, printed: PrintedModule) -> None:
        assert self.session is not None
        view = self.query_one(IRView)
        view.show_module(
            self.session.loaded.module,
            printed,
            hlo=self.session.hlo_native,
            marks=self._marks(),
            sources=self.locations,
        )
        if self.active_filter is not None:
            view.set_rows(self._filter_rows(self.active_filter))
        view.set_hits(frozenset(self.hits))

    # -- selection and history ------------------------------------------------------

    def select(
        self, op_id: int, *, centre: bool = False, source: str = "", force: bool = False
    ) -> None:
        """Make `op_id` the selection (-1: a line outside every op): the IR view, the
        tree and the details follow. `source` names the widget the selection came
        from (`ir`, `tree`), which is already there."""
        if (op_id == self.selected and not force) or self.session is None:
            return
        self.selected = op_id
        printed = self.printed
        assert printed is not None
        module = self.session.loaded.module
        if source != "ir" and 0 <= op_id < len(printed.op_line) and printed.op_line[op_id] >= 0:
            self.query_one(IRView).go_to_line(printed.op_line[op_id], centre=centre)
        if source != "tree" and op_id >= 0:
            self.query_one(ModuleTree).reveal(op_id, centre=centre)
        reports = self.session.reports
        self.query_one(OpDetails).show_rows(
            detail_rows(
                module,
                printed,
                self.session.structure,
                op_id,
                reports.placed if reports is not None else None,
                reports.argument_paths if reports is not None else None,
            )
        )
        self._update_status()

    def jump(self, op_id: int) -> None:
        """Select `op_id`, remembering where we were (backspace returns)."""
        if op_id == self.selected:
            return
        if self.selected >= 0:
            self.history.append(self.selected)
            del self.history[:-MAX_HISTORY]
        self.select(op_id, centre=True)

    def came_from(self, tab: str) -> None:
        """A report's row in tab `tab` jumped here: backspace returns to it."""
        self.history.append(tab)
        del self.history[:-MAX_HISTORY]

    def action_back(self) -> None:
        if not self.history:
            self.notify("Nothing to go back to.", timeout=2)
            return
        where = self.history.pop()
        if isinstance(where, str):
            self.post_message(self.ReturnToTab(where))
            return
        self.select(where, centre=True)

    class ReturnToTab(Message):
        """Backspace walked back to the report tab a row jumped from."""

        def __init__(self, tab: str) -> None:
            super().__init__()
            self.tab = tab

    def action_focus(self, widget_id: str) -> None:
        focus_now(self.query_one(f"#{widget_id}"))

    @on(IRView.CursorMoved)
    def _cursor_moved(self, message: IRView.CursorMoved) -> None:
        self.select(message.op_id, source="ir")
        self._update_status()

    @on(IRView.Follow)
    def _follow_in_ir(self, message: IRView.Follow) -> None:
        """Enter in the IR: a call goes to its callee; otherwise the links take focus."""
        if self.session is None or message.op_id < 0:
            return
        module = self.session.loaded.module
        op = module.ops[message.op_id]
        called = callees(module, op)
        if called:
            self.jump(module.functions[called[0]].op.id)
            return
        details = self.query_one(OpDetails)
        if details.highlighted is not None:
            focus_now(details)
        else:
            self.notify("This op has no links to follow.", timeout=2)

    @on(OpDetails.Follow)
    def _follow_link(self, message: OpDetails.Follow) -> None:
        self.jump(message.op_id)
        focus_now(self.query_one(IRView))

    @on(Tree.NodeHighlighted)
    def _tree_moved(self, event: Tree.NodeHighlighted[object]) -> None:
        data = event.node.data
        if isinstance(data, OpNode):
            self.select(data.op_id, centre=True, source="tree")

    @on(Tree.NodeSelected)
    def _tree_chose(self, event: Tree.NodeSelected[object]) -> None:
        data = event.node.data
        if isinstance(data, PageNode):
            self.query_one(ModuleTree).page(event.node)  # type: ignore[arg-type]

    # -- filters --------------------------------------------------------------------

    def _filter_rows(self, filter_id: str) -> list[int]:
        """The lines of the filter's ops and of their functions' headers."""
        assert self.session is not None
        key = (filter_id, self.locations)
        rows = self._rows_cache.get(key)
        if rows is None:
            printed = self.printed
            assert printed is not None
            module = self.session.loaded.module
            lines: set[int] = set()
            for op_id in self.session.marked.get(filter_id, frozenset()):
                lines.add(printed.op_line[op_id])
                function = module.functions.get(module.ops[op_id].function or "")
                if function is not None:
                    lines.add(printed.op_line[function.op.id])
            lines.discard(-1)
            rows = self._rows_cache[key] = sorted(lines)
        return rows

    def action_toggle_filter(self, filter_id: str) -> None:
        if self.session is None:
            return
        op_filter: OpFilter = next(f for f in FILTERS if f.id == filter_id)
        view = self.query_one(IRView)
        if self.active_filter == filter_id:
            self.active_filter = None
            view.set_rows(None)
        elif not self.session.marked.get(filter_id):
            self.notify(f"This module has no {op_filter.label}.", timeout=3)
            return
        else:
            self.active_filter = filter_id
            view.set_rows(self._filter_rows(filter_id))
        op_id = view.cursor_op
        if op_id >= 0 and op_id != self.selected:
            self.select(op_id, source="ir")
        self._update_status()

    # -- locations ------------------------------------------------------------------

    def action_toggle_locations(self) -> None:
        if self.session is None or self._busy:
            return
        if not self.locations and self.session.located is None:
            self._busy = "printing the module with its locations…"
            self._update_status()
            self._print_with_locations(self.session)
            return
        self._set_locations(not self.locations)

    @work(thread=True, exclusive=True, group="locations", description="print with locations")
    def _print_with_locations(self, session: Session) -> None:
        try:
            printed = print_module(session.loaded, locations=True)
        except Exception as exc:
            self.post_message(self.Failed("Could not print locations", describe_failure(exc)))
            return
        self.post_message(self.PrintedReady(session, printed))

    @on(PrintedReady)
    def _printed_ready(self, message: PrintedReady) -> None:
        self._busy = ""
        message.session.located = message.printed
        if message.session is self.session:
            self._set_locations(True)

    @on(Failed)
    def _failed(self, message: Failed) -> None:
        self._busy = ""
        self._update_status()
        from hloscope.tui.screens.message import ErrorScreen

        self.app.push_screen(ErrorScreen(message.title, message.message))

    def _set_locations(self, locations: bool) -> None:
        self.locations = locations
        printed = self.printed
        assert printed is not None
        selected = self.selected
        self.hits = self._op_lines(self.hit_ops) if self.hit_ops else ()
        self._show_printed(printed)
        if 0 <= selected < len(printed.op_line):
            self.query_one(IRView).go_to_line(printed.op_line[selected], centre=True)
        if self.search_text and not self.hit_ops:
            self._run_search(self.search_text, jump=False)
        self._update_status()

    # -- search ---------------------------------------------------------------------

    def action_search(self) -> None:
        if self.session is None:
            return
        from hloscope.tui.screens.search import SearchScreen

        def searched(query: str | None) -> None:
            if query is not None and query.strip():
                self._run_search(query.strip(), jump=True)

        self.app.push_screen(SearchScreen(self.search_text), searched)

    def _run_search(self, query: str, *, jump: bool) -> None:
        assert self.session is not None
        printed = self.printed
        assert printed is not None
        self.search_text = query
        self.hit_ops = ()
        self.hits_label = ""
        self._busy = f"searching for {query!r}…"
        self._update_status()
        self._search(self.session, printed, query, jump)

    # A description of its own: textual's default prints the worker's arguments with
    # repr, the whole printed module (100 ms at 100k ops) on every search.
    @work(thread=True, exclusive=True, group="search", description="search")
    def _search(self, session: Session, printed: PrintedModule, query: str, jump: bool) -> None:
        try:
            hits = search(session.loaded.module, printed, query)
        except Exception as exc:
            self.post_message(self.Failed("Search failed", describe_failure(exc)))
            return
        self.post_message(self.SearchDone(query, printed, hits, jump))

    @on(SearchDone)
    def _search_done(self, message: SearchDone) -> None:
        self._busy = ""
        if message.printed is not self.printed or message.text != self.search_text or self.hit_ops:
            return  # the module, the query or the matches changed meanwhile
        self.hits = message.hits
        view = self.query_one(IRView)
        view.set_hits(frozenset(message.hits))
        if not message.hits:
            self.notify(f"No match for {message.text!r}.", timeout=3)
        elif message.jump:
            line = view.cursor_line or 0
            index = bisect.bisect_left(message.hits, line)
            self._go_to_hit(index % len(message.hits))
        self._update_status()

    def _op_lines(self, op_ids: tuple[int, ...]) -> tuple[int, ...]:
        printed = self.printed
        assert printed is not None
        lines = {printed.op_line[op_id] for op_id in op_ids if 0 <= op_id < len(printed.op_line)}
        lines.discard(-1)
        return tuple(sorted(lines))

    def show_ops(self, op_ids: tuple[int, ...], label: str) -> None:
        """Select the first of `op_ids` and make their lines the matches `n` and `N`
        walk (a report's row: a collective's ops, a parameter's readers)."""
        if self.session is None or not op_ids:
            return
        self.hit_ops = op_ids
        self.hits_label = label
        self.hits = self._op_lines(op_ids)
        view = self.query_one(IRView)
        view.set_hits(frozenset(self.hits))
        first = self.printed.op_line[op_ids[0]] if self.printed is not None else -1
        if view.rows is not None and first not in view.rows:
            self.active_filter = None
            view.set_rows(None)
        self.jump(op_ids[0])
        self._update_status()

    def action_next_hit(self, direction: int) -> None:
        if not self.hits:
            self.notify("No search: press / to search.", timeout=2)
            return
        line = self.query_one(IRView).cursor_line or 0
        if direction > 0:
            index = bisect.bisect_right(self.hits, line)
        else:
            index = bisect.bisect_left(self.hits, line) - 1
        if not 0 <= index < len(self.hits):
            # As vim does: go round, and say so.
            self.notify(
                "search hit BOTTOM, continuing at TOP"
                if direction > 0
                else "search hit TOP, continuing at BOTTOM",
                timeout=2,
            )
        self._go_to_hit(index % len(self.hits))

    def _go_to_hit(self, index: int) -> None:
        printed = self.printed
        assert printed is not None
        line = self.hits[index]
        view = self.query_one(IRView)
        if view.rows is not None and line not in view.rows:
            # A match the filter hides: show everything again.
            self.active_filter = None
            view.set_rows(None)
        op_id = printed.line_op[line]
        if op_id >= 0 and op_id != self.selected:
            self.jump(op_id)
        view.go_to_line(line, centre=True)
        self._update_status()

    # -- status ---------------------------------------------------------------------

    def _update_status(self) -> None:
        if self.session is None or not self.is_mounted:
            return
        printed = self.printed
        assert printed is not None
        loaded = self.session.loaded
        view = self.query_one(IRView)
        text = Text()
        text.append(f"{loaded.module.name or 'module'}", style="bold")
        text.append(f" · {loaded.source.stage} · {self.session.op_count_text}")
        line = view.cursor_line
        if line is not None:
            text.append(f" · line {line + 1:,}/{len(printed.lines):,}")
        if self.locations:
            text.append(" · locations shown", style="green")
        if self.active_filter is not None:
            op_filter = next(f for f in FILTERS if f.id == self.active_filter)
            count = len(self.session.marked.get(op_filter.id, ()))
            text.append(f" · only {op_filter.label} ({count:,})", style=op_filter.style)
        if self.hits:
            current = line if line is not None else -1
            index = bisect.bisect_left(self.hits, current)
            position = (
                f"{index + 1}/" if index < len(self.hits) and self.hits[index] == current else ""
            )
            if self.hits_label:
                text.append(
                    f" · {self.hits_label}: {position}{len(self.hits):,} lines", style="yellow"
                )
            else:
                text.append(
                    f" · /{self.search_text}: {position}{len(self.hits):,} matches", style="yellow"
                )
        elif self.search_text and not self._busy and not self.hits_label:
            text.append(f" · /{self.search_text}: no match", style="yellow")
        if self._busy:
            text.append(f" · {self._busy}", style="italic")
        elif self.session.reports is None:
            text.append(" · building the reports…", style="italic")
        self.query_one("#browser-status", Static).update(text)

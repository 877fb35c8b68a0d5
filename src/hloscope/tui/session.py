"""Everything the browser shows about one module, prepared off the UI thread.

Two steps, both in a worker. `prepare` prints the module and pairs its ops with
the printed lines: what the IR view needs, so the module is on screen as soon as
it is loaded. `build_reports` then computes the filters and builds the report
views' reports, which fill the tabs when they are ready. The UI only looks things
up; nothing here touches a widget.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping
from typing import Any

from hloscope import reports
from hloscope.analyses.placement import PlacedOp
from hloscope.analyses.structure import Structure, module_op_count
from hloscope.errors import HloscopeError, one_line
from hloscope.sources import loader
from hloscope.tui.filters import FILTERS, OpFilter
from hloscope.tui.printed import PrintedModule, index_printed
from hloscope.tui.views.base import ReportView
from hloscope.units import counted

Progress = Callable[[str], None]


@dataclasses.dataclass(eq=False)
class Reports:
    """What the browser derived from a module besides its printed text."""

    inspect: reports.InspectReport | None
    """The overview report (the tree and the detail pane read its structure); None
    when it could not be built."""
    marked: Mapping[str, frozenset[int]]
    """Each filter's ops, by filter id."""
    built: Mapping[str, Any]
    """Each view's report, by view id (missing when it is not built yet or building
    it failed)."""
    failures: Mapping[str, str]
    """Why a view's report could not be built, by view id."""
    placed: Mapping[int, PlacedOp]
    """Ops placed elsewhere than the device, by op id (the placement analysis)."""

    @functools.cached_property
    def argument_paths(self) -> Mapping[int, str] | None:
        """The user's pytree path of each entry argument, by HLO index, as the `params`
        analysis names them (what the IR tab calls the arguments too)."""
        if self.inspect is None or self.inspect.params is None:
            return None
        parameters = self.inspect.params.parameters
        return {p.hlo_index: p.path for p in parameters if p.hlo_index is not None}


@dataclasses.dataclass(eq=False)
class Session:
    """A loaded module and what the browser derived from it."""

    loaded: loader.Loaded
    printed: PrintedModule
    """The printed module without locations."""
    views: tuple[ReportView, ...]
    """The report views that apply to this target, in tab order."""
    reports: Reports | None = None
    """Filled once `build_reports` is done."""
    located: PrintedModule | None = None
    """The printed module with locations, once asked for."""
    refusal: str | None = None
    """Why the module cannot be compiled here (`compile_refusal`), empty when nothing
    says so; None until asked."""

    @property
    def hlo_native(self) -> bool:
        return self.loaded.source.ir == "hlo-native"

    @property
    def lowered(self) -> bool:
        return self.loaded.source.stage != "optimized"

    @property
    def marked(self) -> Mapping[str, frozenset[int]]:
        return self.reports.marked if self.reports is not None else {}

    @functools.cached_property
    def op_count(self) -> int:
        """The module's ops as written, for the title and the status line
        (`analyses.structure.module_op_count`)."""
        return module_op_count(self.loaded.module)

    @functools.cached_property
    def op_count_text(self) -> str:
        """`218 ops in 6 functions`: the op count with what it counts, every function
        (the Overview's says `211 ops in 4 reachable functions`)."""
        functions = counted(len(self.loaded.module.functions), "function")
        return f"{counted(self.op_count, 'op')} in {functions}"

    @property
    def structure(self) -> Structure | None:
        if self.reports is None or self.reports.inspect is None:
            return None
        return self.reports.inspect.structure

    def printed_for(self, locations: bool) -> PrintedModule | None:
        return self.located if locations else self.printed


def print_module(loaded: loader.Loaded, locations: bool, text: str | None = None) -> PrintedModule:
    """The module's printed text (with locations or not; `text` when printed already),
    paired with its ops."""
    if text is None:
        text = loaded.parsed.text(debug_info=locations)
    return index_printed(loaded.module, text, hlo_native=loaded.source.ir == "hlo-native")


def describe_failure(exc: BaseException) -> str:
    """The message the browser shows for a failure (as the command line would say it)."""
    if isinstance(exc, HloscopeError):
        return str(exc)
    if isinstance(exc, RecursionError):
        return f"the input nests too deeply to process ({exc})"
    if isinstance(exc, MemoryError):
        return "out of memory while processing the input"
    return (
        f"internal error: {type(exc).__name__}: {one_line(str(exc), 300)} "
        "(rerun with --debug for the traceback, and please report it)"
    )


def prepare(
    loaded: loader.Loaded,
    views: tuple[ReportView, ...],
    progress: Progress,
    text: str | None = None,
) -> Session:
    """What the IR tab needs: the printed module (`text`, when printed already) paired
    with its ops."""
    module = loaded.module
    if text is None:
        progress(f"printing {len(module.ops):,} ops")
    printed = print_module(loaded, locations=False, text=text)
    progress(f"indexing {len(printed.lines):,} lines")
    if module.value_types:
        # Both are computed on first use; do it here rather than on a keystroke.
        module.users(0)
        module.value_name(0)
    printed.folded  # noqa: B018 (the text search scans, made here, not on the first search)
    return Session(
        loaded=loaded,
        printed=printed,
        views=tuple(view for view in views if view.applies(loaded)),
    )


def reports_from_inspect(inspect: reports.InspectReport, loaded: loader.Loaded) -> dict[Any, Any]:
    """The `params` and `placement` reports, from the analyses the overview already
    ran (as `reports.params_report` and `reports.placement_report` build them), so that a
    large module is not analysed twice."""
    built: dict[Any, Any] = {}
    if inspect.params is not None:
        usage = inspect.params
        built[reports.params_report] = reports.ParamsReport(
            source=loaded.source,
            module=loaded.module.name,
            usage=usage,
            notes=loaded.notes + usage.notes,
        )
    if inspect.placement is not None:
        built[reports.placement_report] = reports.PlacementReport(
            source=loaded.source, placement=inspect.placement, notes=loaded.notes
        )
    return built


def compile_refusal(session: Session) -> str | None:
    """Why the session's module cannot be compiled here, known without compiling
    (`Loaded.compile_refusal`); asked once per session."""
    if session.refusal is None:
        try:
            session.refusal = session.loaded.compile_refusal() or ""
        except Exception:
            session.refusal = ""  # compiling will say what is wrong
    return session.refusal or None


def build_reports(
    session: Session, progress: Progress, filters: tuple[OpFilter, ...] = FILTERS
) -> Reports:
    """Build every report the session's views show now (not those that wait to be
    asked for), and each filter's ops."""
    loaded = session.loaded
    progress("building the overview")
    built: dict[Any, Any] = {}
    inspect: reports.InspectReport | None = None
    try:
        inspect = reports.inspect_report(loaded)
    except Exception:
        pass  # the Overview tab says why, when it builds it again
    else:
        built[reports.inspect_report] = inspect
        built.update(reports_from_inspect(inspect, loaded))
    by_view: dict[str, Any] = {}
    failures: dict[str, str] = {}

    def report(build: Callable[[loader.Loaded], Any], title: str) -> Any:
        if build not in built:
            progress(f"building {title}")
            built[build] = build(loaded)
        return built[build]

    for view in session.views:
        if view.optimized and session.lowered:
            # The tab offers to compile; say now, not after XLA's pipeline, when the
            # local backend cannot run the module.
            refusal = compile_refusal(session)
            if refusal is not None:
                failures[view.id] = refusal
            continue
        if view.on_demand:
            continue
        try:
            by_view[view.id] = report(view.build, view.title)
        except Exception as exc:
            failures[view.id] = describe_failure(exc)
    marked: dict[str, frozenset[int]] = {}
    for op_filter in filters:
        progress(f"finding {op_filter.label}")
        try:
            marked[op_filter.id] = op_filter.ops(report(op_filter.report, op_filter.label))
        except Exception:
            marked[op_filter.id] = frozenset()
    placement = built.get(reports.placement_report)
    placed = {p.op_id: p for p in placement.placement.placed_ops} if placement is not None else {}
    return Reports(inspect=inspect, marked=marked, built=by_view, failures=failures, placed=placed)

"""Everything the browser shows about one module, prepared off the UI thread.

`prepare` runs in a worker: it loads the target through `api` (importing,
lowering, compiling, parsing), prints the module, pairs its ops with the printed
lines, computes the filters and builds every report view's report. The UI then
only looks things up. Nothing here touches a widget.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

from hloscope import api
from hloscope.analyses.printed import PrintedModule, index_printed
from hloscope.errors import HloscopeError, one_line
from hloscope.tui.filters import FILTERS, OpFilter
from hloscope.tui.views.base import ReportView

Progress = Callable[[str], None]


@dataclasses.dataclass(eq=False)
class Session:
    """A loaded module and what the browser derived from it."""

    loaded: api.Loaded
    inspect: api.InspectReport
    """The overview report (the tree and the detail pane read its structure)."""
    printed: PrintedModule
    """The printed module without locations."""
    marked: Mapping[str, frozenset[int]]
    """Each filter's ops, by filter id."""
    views: tuple[ReportView, ...]
    """The report views that apply to this target, in tab order."""
    reports: Mapping[str, Any]
    """Each view's report, by view id (missing when building it failed)."""
    failures: Mapping[str, str]
    """Why a view's report could not be built, by view id."""
    located: PrintedModule | None = None
    """The printed module with locations, once asked for."""

    @property
    def hlo_native(self) -> bool:
        return self.loaded.source.ir == "hlo-native"

    def printed_for(self, locations: bool) -> PrintedModule | None:
        return self.located if locations else self.printed


def print_module(loaded: api.Loaded, locations: bool) -> PrintedModule:
    """The module's printed text (with locations or not), paired with its ops."""
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
    loaded: api.Loaded,
    views: tuple[ReportView, ...],
    progress: Progress,
    filters: tuple[OpFilter, ...] = FILTERS,
) -> Session:
    """Derive everything the browser shows from a loaded target."""
    module = loaded.module
    progress(f"printing {len(module.ops):,} ops")
    printed = print_module(loaded, locations=False)
    progress(f"indexing {len(printed.lines):,} lines")
    if module.value_types:
        # Both are computed on first use; do it here rather than on a keystroke.
        module.users(0)
        module.value_name(0)
    marked: dict[str, frozenset[int]] = {}
    for op_filter in filters:
        progress(f"finding {op_filter.label}")
        marked[op_filter.id] = op_filter.ops(loaded)
    progress("building the overview")
    inspect = api.inspect_report(loaded)
    built: dict[Callable[[api.Loaded], Any], Any] = {api.inspect_report: inspect}
    reports: dict[str, Any] = {}
    failures: dict[str, str] = {}
    applying = []
    for view in views:
        if not view.applies(loaded):
            continue
        applying.append(view)
        if view.build not in built:
            progress(f"building {view.title}")
            try:
                built[view.build] = view.build(loaded)
            except Exception as exc:
                failures[view.id] = describe_failure(exc)
                continue
        reports[view.id] = built[view.build]
    return Session(
        loaded=loaded,
        inspect=inspect,
        printed=printed,
        marked=marked,
        views=tuple(applying),
        reports=reports,
        failures=failures,
    )

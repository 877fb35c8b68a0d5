"""What the front ends know of a report: its type, its renderers and its browser
tab.

Renderers and tabs are named as dotted strings (`hloscope.render.text.memory:
render_memory`) and imported when first used: `reports` sits below the renderers and
the front ends and imports none of them, and a command printing JSON never loads
rich or a text renderer.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import sys
from collections.abc import Callable
from typing import Any


@dataclasses.dataclass(frozen=True)
class ReportEntry:
    """One report in the registry (`hloscope.reports.registry.REPORTS`)."""

    report: type
    """Its dataclass; a report is rendered by the entry of the first class of its
    MRO that has one (the Python API shows subclasses of it)."""
    json: str
    """Its JSON renderer, `module:function`: report -> the `--json` document."""
    text: str
    """Its text renderer, `module:function`: (report, rich console) -> None."""
    tab: str | None = None
    """The browser tab it feeds, `module:attribute` (a `tui.views.base.ReportView`);
    None for a report shown by a screen of its own (diff, compiles, passes)."""

    def json_renderer(self) -> Callable[[Any], dict[str, Any]]:
        renderer: Callable[[Any], dict[str, Any]] = resolve(self.json)
        return renderer

    def text_renderer(self) -> Callable[[Any, Any], None]:
        renderer: Callable[[Any, Any], None] = resolve(self.text)
        return renderer

    def browser_tab(self) -> Any:
        """The tab's view (None without one); imports the browser."""
        return None if self.tab is None else resolve(self.tab)


@functools.cache
def resolve(dotted: str) -> Any:
    """The object `module:attribute` names, importing its module: one of hloscope's
    own, named by an entry's constant, never by anything read from input."""
    module, _, attribute = dotted.partition(":")
    if not module.startswith("hloscope."):
        raise ValueError(f"a report entry names hloscope's own modules only, not {dotted}")
    return getattr(importlib.import_module(module), attribute)


def entry_of(report: object) -> ReportEntry:
    """The entry of a report: that of the first class of its MRO that has one.

    A report's entry is a constant of the module that defines its class, so this
    looks there rather than in `registry.REPORTS`, whose import would load every
    report's module: a command loads only its own (tests/cli/test_startup.py; every
    entry found here is one of REPORTS, tests/house)."""
    for cls in type(report).__mro__:
        module = sys.modules.get(cls.__module__)
        for value in vars(module).values() if module is not None else ():
            if isinstance(value, ReportEntry) and value.report is cls:
                return value
    raise TypeError(f"no report entry for {type(report).__name__}")

"""Reports that show themselves, for the Python API.

A report in a REPL, a notebook or at a pdb prompt reads as the command line prints
it: its repr and `str` (what a pdb prompt, a plain REPL and IPython show) are the
text report, rich (in a terminal) renders it in colour, a notebook shows it as
HTML, and `report.to_json()` is the document `--json` prints. The reports of
`hloscope.reports` are plain data; `shown(report)` gives the Python API the same
report with the `Displayed` mixin, which shows it with the command line's own
renderers (`render.text`, `render.json`), those its entry in the reports' registry
names (`renderers`), so Python and the command line cannot disagree.

Importing this module imports nothing heavy: rich is loaded when a report is shown.
"""

from __future__ import annotations

import dataclasses
import functools
import io
import json
import shutil
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions

# The width of the HTML rendering (a notebook cell is about this wide).
HTML_WIDTH = 120

# A notebook's output cell, as rich's own Jupyter support styles it.
HTML_FORMAT = (
    '<pre style="white-space:pre;overflow-x:auto;line-height:normal;'
    "font-family:Menlo,'DejaVu Sans Mono',consolas,'Courier New',monospace\">"
    "<code>{code}</code></pre>"
)

Renderers = tuple[Callable[[Any], dict[str, Any]], Callable[[Any, "Console"], None]]

R = TypeVar("R")


def renderers(report: object) -> Renderers:
    """The JSON and text renderers of a report: those its command uses, as its
    registry entry names them."""
    from hloscope.reports.entry import entry_of

    entry = entry_of(report)
    return entry.json_renderer(), entry.text_renderer()


def text_console(width: int | None = None, *, color_system: str | None = None) -> Console:
    """A console writing into memory, `width` columns wide (the terminal's width when
    not given), in colour only when `color_system` is given."""
    from rich.console import Console

    columns = width or shutil.get_terminal_size((120, 24)).columns
    return Console(
        file=io.StringIO(),
        width=columns,
        color_system=color_system,  # type: ignore[arg-type]
        force_terminal=color_system is not None,
        highlight=False,
        soft_wrap=False,
        record=True,
    )


class Displayed:
    """What makes a report show itself (see the module docstring). Subclasses
    rendered differently override `_json_document` and `_render_into`."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # A report's repr is the report as its command prints it (as a DataFrame's
        # is its table): what a pdb prompt and a plain REPL show. Set on the class
        # itself, because the dataclass decorator replaces an inherited __repr__ but
        # leaves a class's own alone.
        if "__repr__" not in cls.__dict__:
            cls.__repr__ = Displayed.__repr__  # type: ignore[method-assign]

    def __repr__(self) -> str:
        try:
            return self.render()
        except Exception as exc:  # a repr must not raise while debugging
            return f"<{type(self).__name__}: cannot render it ({type(exc).__name__}: {exc})>"

    def to_json(self) -> dict[str, Any]:
        """The JSON document the command's `--json` prints, as Python values."""
        from hloscope.environment import environment_json
        from hloscope.render import json as json_render

        # Through the printed text: exactly what the command line prints (lists,
        # not tuples; NaN as null).
        document = {**self._json_document(), "environment": environment_json()}
        loaded: dict[str, Any] = json.loads(json_render.dumps(document))
        return loaded

    def render(self, width: int | None = None) -> str:
        """The report as the command prints it, in plain text `width` columns wide
        (the terminal's width when not given)."""
        console = text_console(width)
        self._render_into(console)
        lines = console.export_text().splitlines()
        return "\n".join(line.rstrip() for line in lines).rstrip("\n")

    def __str__(self) -> str:
        return self.render()

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        # IPython's display in a terminal.
        printer.text(type(self).__name__ + "(...)" if cycle else self.render())

    def _repr_html_(self) -> str:
        # A notebook's display.
        console = text_console(HTML_WIDTH, color_system="truecolor")
        self._render_into(console)
        return console.export_html(inline_styles=True, code_format=HTML_FORMAT)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Iterator[Any]:
        # rich's display (rich.print, rich.pretty in a REPL): drawn at the width and
        # in the colours of the console it is printed on.
        from rich.text import Text

        inner = text_console(options.max_width, color_system=console.color_system)
        self._render_into(inner)
        text = inner.export_text(styles=inner.color_system is not None).rstrip("\n")
        yield Text.from_ansi(text, no_wrap=True, overflow="ignore")

    def _json_document(self) -> dict[str, Any]:
        return renderers(self)[0](self)

    def _render_into(self, console: Console) -> None:
        renderers(self)[1](self, console)


def shown(report: R) -> R:
    """`report` as the Python API hands it out: the same frozen dataclass, of a
    subclass that shows itself (`Displayed`)."""
    if isinstance(report, Displayed):
        return report
    fields = {f.name: getattr(report, f.name) for f in dataclasses.fields(report)}  # type: ignore[arg-type]
    cls: type = type(report)
    displayed: R = _displayed_class(cls)(**fields)
    return displayed


@functools.cache
def _displayed_class(cls: type) -> type:
    # Named as the report's class, so that it reads the same in tracebacks and pdb.
    return type(cls.__name__, (Displayed, cls), {"__doc__": cls.__doc__})

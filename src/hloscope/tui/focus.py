"""Moving the focus at once.

`Widget.focus()` moves it after the messages already queued, so keys typed right
after the one that moved it (`4 j j`, as fast as a terminal delivers them) would
still go to the old widget, which may be on a tab that is no longer shown.
"""

from __future__ import annotations

from textual.dom import NoScreen
from textual.widget import Widget


def focus_now(widget: Widget) -> None:
    """Give `widget` the focus before the next message is handled."""
    try:
        widget.screen.set_focus(widget)
    except NoScreen:
        widget.focus()

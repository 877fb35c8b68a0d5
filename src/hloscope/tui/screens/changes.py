"""`L` on the diff screen: the changes grouped by what changed (one row per group,
with its count and its places), and the functions renamed; enter goes to the group's
first occurrence."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from hloscope.analyses.diff import ChangeGroup, ModuleDiff
from hloscope.tui.widgets.lists import RowList

GROUP_STYLES = {"added": "bold green", "removed": "bold red", "changed": "bold yellow"}
# Renames listed on the screen (every one is in --json `renames`).
MAX_RENAMES_SHOWN = 200
# Places named on a group's row.
MAX_PLACES_SHOWN = 4


def group_text(group: ChangeGroup) -> Text:
    """One group as a row: kind, count, op and detail, then where (its places)."""
    text = Text()
    text.append(f"{group.kind:<8}", style=GROUP_STYLES.get(group.kind, "bold"))
    text.append(f" ×{group.count:<4}", style="bold")
    text.append(f" {group.op}", style="bold")
    if group.detail:
        text.append(f"  {group.detail}")
    places = ", ".join(
        f"{p.function} ×{p.count}" if p.count > 1 else p.function
        for p in group.places[:MAX_PLACES_SHOWN]
    )
    if len(group.places) > MAX_PLACES_SHOWN:
        places += f" and {len(group.places) - MAX_PLACES_SHOWN} more"
    if places:
        text.append(f"\n          in {places}", style="dim")
    return text


def renames_text(diff: ModuleDiff) -> Text:
    """The functions renamed, one per line."""
    if not diff.renames:
        return Text("No function renamed.", style="dim")
    text = Text(
        f"{len(diff.renames)} functions renamed, matched by what they compute (not changes):\n",
        style="bold",
    )
    for rename in diff.renames[:MAX_RENAMES_SHOWN]:
        text.append(f"  {rename.a} → {rename.b}\n")
    if len(diff.renames) > MAX_RENAMES_SHOWN:
        text.append(f"  … {len(diff.renames) - MAX_RENAMES_SHOWN} more (in --json)\n", style="dim")
    return text


class ChangesScreen(ModalScreen[int | None]):
    """The change groups and the renames; dismissed with the index of the group to
    go to, or None."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,L", "close", "Close the changes"),
    ]

    def __init__(self, diff: ModuleDiff) -> None:
        super().__init__()
        self.diff = diff

    def compose(self) -> ComposeResult:
        groups = self.diff.groups
        total = sum(group.count for group in groups)
        with Vertical(id="changes-box") as box:
            box.border_title = f"Changes: {len(groups)} distinct, {total} in all"
            box.border_subtitle = "enter goes to the first · escape closes"
            yield RowList(
                *(Option(group_text(group), id=str(i)) for i, group in enumerate(groups)),
                id="changes-list",
            )
            yield Static(renames_text(self.diff), id="changes-renames")

    def on_mount(self) -> None:
        self.query_one(OptionList).focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss(event.option_index)

    def action_close(self) -> None:
        self.dismiss(None)

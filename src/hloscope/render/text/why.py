"""`placement --why` as text: one sentence per collective, and what each argument,
result and constraint set."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Group, RenderableType
from rich.text import Text

from hloscope.render.text.common import sentence_text

if TYPE_CHECKING:
    from hloscope.analyses.placement.why_report import CollectiveSite, Why


def why_section(why: Why, notes: tuple[str, ...] = ()) -> RenderableType:
    """The causes, one line per collective site, then the origins; `why.note` unless
    it is among the report's `notes` (shown below)."""
    lines: list[RenderableType] = [
        Text(f"Why each collective is there ({len(why.sites)})", style="bold")
    ]
    for site in why.sites:
        lines.append(Text.assemble("• ", _short(site), style="dim" if site.note else ""))
    if why.note and why.note not in notes:
        lines.append(Text(why.note, style="dim"))
    if why.origins:
        lines.append(Text(""))
        lines.append(Text("Sharding origins", style="bold"))
        for effect in why.origins:
            origin = effect.origin
            sets = ", ".join(f"`{a}`" for a in effect.axes) or "no axis"
            asks = f" {origin.sharding}" if origin.sharding else ""
            caused = len(effect.collectives)
            cause = f"; cause of {caused} collective{'s' * (caused != 1)}" if caused else ""
            label = sentence_text(origin.label, [origin.source])
            lines.append(
                Text.assemble("  ", label, f"{asks}: sets {sets} on {effect.values} values{cause}")
            )
    return Group(*lines)


def _short(site: CollectiveSite) -> Text:
    """The sentence with its files relative to the working directory, as tables show
    them (and linked to, on a terminal)."""
    sources = {site.source, site.meets}
    for cause in site.causes:
        sources.update(o.source for o in (*cause.sharded_by, *cause.unsharded_by))
    return sentence_text(site.sentence, sources)

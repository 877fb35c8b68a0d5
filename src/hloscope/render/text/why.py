"""`placement --why` as text: one sentence per collective (collectives explained
alike on one line, with their count), and what each argument, result and
constraint set. The browser's Placement tab shows the same lines
(`site_text`, `cause_text`, `origin_text`), as rows that lead to the ops."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Group, RenderableType
from rich.text import Text

from hloscope.render.text.common import sentence_text, short_source

if TYPE_CHECKING:
    from hloscope.analyses.placement.why_report import (
        AxisCause,
        CollectiveSite,
        OriginEffect,
        ShardingOrigin,
        Why,
    )

WHY_TITLE = "Why each collective is there"
ORIGINS_TITLE = "Sharding origins"


def why_section(why: Why, notes: tuple[str, ...] = ()) -> RenderableType:
    """The causes, one line per collective site, then the origins; `why.note` unless
    it is among the report's `notes` (shown below)."""
    groups = why.groups
    distinct = f", {len(groups)} explanations" if len(groups) < len(why.sites) else ""
    lines: list[RenderableType] = [Text(f"{WHY_TITLE} ({len(why.sites)}{distinct})", style="bold")]
    # Sites explained alike (a loop's collectives) are one line, with their count.
    for group in groups:
        site = why.sites[group.sites[0]]
        count = f"{len(group.sites)}× " if len(group.sites) > 1 else ""
        lines.append(
            Text.assemble("• ", count, site_sentence(site), style="dim" if site.note else "")
        )
    if why.note and why.note not in notes:
        lines.append(Text(why.note, style="dim"))
    if why.origins:
        lines.append(Text(""))
        lines.append(Text(ORIGINS_TITLE, style="bold"))
        for effect in why.origins:
            lines.append(Text.assemble("  ", origin_line(effect)))
    return Group(*lines)


def origin_text(effect: OriginEffect) -> str:
    """`argument `w1` P(None, 'model'): sets `model` on 1 values; cause of 1
    collective`."""
    return origin_line(effect).plain


def origin_line(effect: OriginEffect) -> Text:
    """`origin_text`, its source line a link to its file (on a terminal)."""
    origin = effect.origin
    sets = ", ".join(f"`{a}`" for a in effect.axes) or "no axis"
    asks = f" {origin.sharding}" if origin.sharding else ""
    caused = len(effect.collectives)
    cause = f"; cause of {caused} collective{'s' * (caused != 1)}" if caused else ""
    label = sentence_text(origin.label, [origin.source])
    return Text.assemble(label, f"{asks}: sets {sets} on {effect.values} values{cause}")


def origin_label(origin: ShardingOrigin) -> str:
    """The origin's label with its file relative to the working directory."""
    return sentence_text(origin.label, [origin.source]).plain


def cause_text(cause: AxisCause, origin: ShardingOrigin, sharded: bool) -> str:
    """One origin of one axis of a collective: ``model` sharded by argument `w1`
    (P(None, 'model'))`, or ``model` asked unsharded by sharding constraint at
    model.py:14` (`sharded`: whether `origin` sharded the values along the axis)."""
    if sharded:
        role = "sharded on two dimensions by" if cause.conflict else "sharded by"
        asks = f" ({origin.sharding})" if origin.sharding and origin.kind == "argument" else ""
    else:
        role, asks = "asked unsharded by", ""
    return f"`{cause.axis}` {role} {origin_label(origin)}{asks}"


def meets_text(site: CollectiveSite) -> str | None:
    """Where the shardings meet: `the dot at model.py:13`, `result 0`."""
    if not site.meets:
        return None
    if site.meets.startswith("result"):
        return f"they meet at {site.meets}"
    return f"they meet at the {site.meets_label} at {short_source(site.meets)}"


def site_text(site: CollectiveSite) -> str:
    """The sentence with its files relative to the working directory, as tables show them."""
    return site_sentence(site).plain


def site_sentence(site: CollectiveSite) -> Text:
    """`site_text`, each file:line in it a link to its file (on a terminal)."""
    sources = {site.source, site.meets}
    for cause in site.causes:
        sources.update(o.source for o in (*cause.sharded_by, *cause.unsharded_by))
    return sentence_text(site.sentence, sources)

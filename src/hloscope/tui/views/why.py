"""The Placement tab's "why" section: each collective with its causes, and what each
argument, result and sharding constraint set, as `placement --why` says them (the
lines come from `hloscope.render.text.why`). Built when asked (`w`: it compiles the
target with Shardy's dumps) and kept for the target: on the lowered module the
causes lead to the arguments, results and constraints that set the shardings; on
the optimized one a collective's line also leads to the collective itself.

Enter on a collective shows it (or, where the module shown has none, the ops made
at its line); on a cause or an origin, the argument, the result or the ops made at
the constraint's line."""

from __future__ import annotations

from collections.abc import Callable

from rich.text import Text

from hloscope.analyses.placement.why_report import CollectiveSite, ShardingOrigin, Why
from hloscope.ir.model import Module, Op
from hloscope.render.text.common import short_source
from hloscope.render.text.why import (
    ORIGINS_TITLE,
    WHY_TITLE,
    cause_text,
    meets_text,
    origin_text,
    site_text,
)
from hloscope.tui.views.jumps import JumpFactory, is_collective, result_jump, scan_jump
from hloscope.tui.views.params import argument_jump
from hloscope.tui.widgets.report_list import Line, blank, heading, text_line

WHY_KEY = "w"
ASK = (
    f"{WHY_TITLE}: press {WHY_KEY} to compile with Shardy's dumps "
    "(xla_dump_hlo_pass_re=shardy-verbose) and trace each collective to the argument, "
    "result or sharding constraint that caused it."
)
NOT_HERE = "No op of the module shown was made at that line."


def made_at_line(source: str) -> Callable[[Op], bool]:
    """Whether an op was made at `source` (`file.py:LINE`), by the user's own frame
    (as `placement --why` names lines)."""
    return lambda op: op.location.user_source == source


def site_jump(module: Module, site: CollectiveSite) -> JumpFactory:
    """The collective in the module shown (same kind, same line), else the ops made
    at its line (on the lowered module: the op that needed the data)."""
    kind = is_collective(site.op)
    label = f"{site.op} at {short_source(site.source)}" if site.source else site.op
    if site.source is None:
        return scan_jump(module, kind, label)
    at_line = made_at_line(site.source)
    collectives = scan_jump(module, lambda op: kind(op) and at_line(op), label)
    ops = scan_jump(module, at_line, label)
    return lambda: collectives() or ops()


def origin_jump(module: Module, origin: ShardingOrigin) -> JumpFactory | None:
    """An argument, a result, or the ops made at a constraint's line."""
    entry = module.entry
    if origin.kind == "argument" and origin.index is not None:
        return argument_jump(module, origin.index, origin.name or f"argument {origin.index}")
    if origin.kind == "result" and origin.index is not None and entry is not None:
        return result_jump(module, entry.name, f"result {origin.index}")
    if origin.source is not None:
        return scan_jump(module, made_at_line(origin.source), short_source(origin.source))
    return None


def meets_jump(module: Module, site: CollectiveSite) -> JumpFactory | None:
    meets = site.meets
    entry = module.entry
    if meets is None:
        return None
    if meets.startswith("result"):
        return result_jump(module, entry.name, meets) if entry is not None else None
    return scan_jump(module, made_at_line(meets), short_source(meets))


def why_lines(why: Why, module: Module) -> list[Line]:
    """The section: a line per collective, its causes under it, then the origins."""
    lines = [heading(f"{WHY_TITLE} ({len(why.sites)})")]
    for site in why.sites:
        lines.append(
            Line(
                Text("• " + site_text(site), style="dim" if site.note else ""),
                selectable=True,
                jump=site_jump(module, site),
                note=NOT_HERE,
            )
        )
        for cause in site.causes:
            for origins, sharded in ((cause.sharded_by, True), (cause.unsharded_by, False)):
                for origin in origins:
                    lines.append(
                        Line(
                            Text("    " + cause_text(cause, origin, sharded)),
                            selectable=True,
                            jump=origin_jump(module, origin),
                            note=f"{origin.label}: no op of the module shown.",
                        )
                    )
        meets = meets_text(site)
        if meets is not None:
            lines.append(
                Line(
                    Text("    " + meets, style="dim"),
                    selectable=True,
                    jump=meets_jump(module, site),
                    note=NOT_HERE,
                )
            )
    if why.note:
        lines.append(text_line(why.note, "dim"))
    if why.origins:
        lines += [blank(), heading(ORIGINS_TITLE)]
        for effect in why.origins:
            lines.append(
                Line(
                    Text("  " + origin_text(effect)),
                    selectable=True,
                    jump=origin_jump(module, effect.origin),
                    note=f"{effect.origin.label}: no op of the module shown.",
                )
            )
    return lines

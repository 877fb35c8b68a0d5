"""`placement --why --json`: each collective group's sites with their causes, and
the origins (arguments, results, constraints) with what each set and caused. Keys
are added to `placement`'s document, none renamed."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hloscope.analyses.placement.why_report import CollectiveSite, ShardingOrigin, Why


def add_why(body: dict[str, Any], why: Why) -> None:
    """Add the causes to `placement`'s JSON `body` (its `collectives` entries gain
    `sites`; `why` lists the origins)."""
    for entry in body["collectives"]:
        entry["sites"] = [site_json(site) for site in why.sites_of(entry["op"])]
    body["why"] = {
        "available": why.available,
        "note": why.note,
        # The sites explained alike, as the text report groups them (each site keeps
        # its own entry in `collectives[].sites`).
        "groups": [
            {
                "sentence": group.sentence,
                "count": len(group.sites),
                "instructions": [why.sites[i].instruction for i in group.sites],
            }
            for group in why.groups
        ],
        "origins": [
            {
                **origin_json(effect.origin),
                "axes": list(effect.axes),
                "values": effect.values,
                "collectives": [why.sites[i].instruction for i in effect.collectives],
            }
            for effect in why.origins
        ],
    }


def origin_json(origin: ShardingOrigin) -> dict[str, Any]:
    return {
        "origin": origin.kind,
        "index": origin.index,
        "argument": origin.name if origin.kind == "argument" else None,
        "result": origin.name if origin.kind == "result" else None,
        "name": origin.name,
        "source": origin.source,
        "sharding": origin.sharding,
        "xla_loop_constraint": origin.xla_loop_constraint,
        "constrains": origin.constrains,
        "backward_loop": origin.backward_loop,
    }


def site_json(site: CollectiveSite) -> dict[str, Any]:
    return {
        "instruction": site.instruction,
        "source": site.source,
        "axes": list(site.axes),
        "causes": [
            {
                "axis": cause.axis,
                "sharded_by": [origin_json(o) for o in cause.sharded_by],
                "unsharded_by": [origin_json(o) for o in cause.unsharded_by],
                "conflict": cause.conflict,
            }
            for cause in site.causes
        ],
        "meets": site.meets,
        "meets_op": site.meets_op,
        "sentence": site.sentence,
        "note": site.note,
        "gradient_of": site.gradient_of,
        "user_collective": site.user_collective,
    }

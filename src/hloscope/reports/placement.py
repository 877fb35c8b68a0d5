"""The `placement` report: where a module's ops run and where its data lives."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from hloscope.reports.entry import ReportEntry
from hloscope.stages import Source

if TYPE_CHECKING:
    from hloscope.analyses.placement import Placement
    from hloscope.analyses.placement.why_report import Why
    from hloscope.sources.loader import Loaded
    from hloscope.sources.shardy import ShardyDumps


@dataclasses.dataclass(frozen=True)
class PlacementReport:
    """Where a module's ops run and where its data lives: compute types, host
    regions, memory kinds, transfers, shardings and collectives."""

    source: Source
    placement: Placement
    notes: tuple[str, ...]
    why: Why | None = None
    """With `--why`: each collective's cause, from Shardy's origins."""


def placement_report(loaded: Loaded) -> PlacementReport:
    """Build the `placement` report of a loaded target."""
    return PlacementReport(
        source=loaded.source, placement=loaded_placement(loaded), notes=loaded.notes
    )


def loaded_placement(loaded: Loaded) -> Placement:
    """The placement of a loaded target's module, its arguments named by the paths
    `params` shows and its meshes' axes by the user's names (one naming for every
    view)."""
    from hloscope.analyses.params import argument_paths, result_paths
    from hloscope.analyses.placement import analyze_placement

    return analyze_placement(
        loaded.module,
        argument_names=argument_paths(loaded.module, loaded.lowering),
        declared_meshes=loaded.declared_meshes,
        result_names=result_paths(loaded.module, loaded.lowering),
    )


def placement_why_report(loaded: Loaded) -> PlacementReport:
    """The `placement --why` report: the target compiled with Shardy's dumps, its
    optimized module's placement, and each collective's cause."""
    why, dumps = _why(loaded)
    compiled = dumps.compiled
    notes = compiled.notes + ((dumps.note,) if dumps.note else ())
    return PlacementReport(
        source=compiled.source,
        placement=loaded_placement(compiled),
        notes=notes,
        why=why,
    )


def placement_why(loaded: Loaded) -> Why:
    """Each collective's cause alone, as `placement --why` says it (the browser's
    Placement tab asks for it with `w`, beside the placement of the module shown)."""
    return _why(loaded)[0]


def _why(loaded: Loaded) -> tuple[Why, ShardyDumps]:
    from hloscope.analyses.params import analyze_params, result_paths
    from hloscope.analyses.placement.why import explain_collectives
    from hloscope.sources.shardy import shardy_dumps

    # The user's names for the arguments, from the parameter map (`params`'s paths).
    usage = analyze_params(loaded.module, loaded.lowering)
    arguments = {
        p.hlo_index: (p.path, _spec(p.sharding))
        for p in usage.parameters
        if p.hlo_index is not None
    }
    results = result_paths(loaded.module, loaded.lowering)
    dumps = shardy_dumps(loaded)
    why = explain_collectives(
        dumps.compiled.module, dumps.propagation, dumps.before, arguments, results, dumps.note
    )
    return why, dumps


def _spec(sharding: str | None) -> str | None:
    """`P(None, 'model')` of the parameter map's `P(None, 'model') over mesh(...)`."""
    if sharding is None:
        return None
    return sharding.partition(" over ")[0]


ENTRY = ReportEntry(
    report=PlacementReport,
    json="hloscope.render.json:placement_json",
    text="hloscope.render.text.placement:render_placement",
    tab="hloscope.tui.views.placement:VIEW",
)

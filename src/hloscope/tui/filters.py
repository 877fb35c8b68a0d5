"""Op filters: sets of ops that stand out by colour everywhere in the browser and
that a key narrows the IR view to.

A filter is a key, a colour, and the ops it marks: read from a report (a `reports`
function the browser builds anyway, computed once per module in the loading
worker). Host ops come from the placement analysis's per-op compute types, so
ops placed on the host through a call or an enclosing op count as well as those
carrying the mark themselves.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from rich.style import Style

from hloscope import reports
from hloscope.analyses.placement import HOST
from hloscope.sources import loader


@dataclasses.dataclass(frozen=True)
class OpFilter:
    """A set of ops the browser can mark and show alone."""

    id: str
    key: str
    """The key that shows only these ops (and their functions), or everything again."""
    label: str
    """What the ops are, for the help screen and the status line: `host ops`."""
    style: Style
    """Their colour in the tree, the IR view's gutter and op names."""
    report: Callable[[loader.Loaded], Any]
    """The report the ops are read from (built once per module, in a worker)."""
    ops: Callable[[Any], frozenset[int]]
    """The ops, by id, from that report."""


def host_ops(report: reports.PlacementReport) -> frozenset[int]:
    """Ops the placement analysis puts on the host (also when other calls of the same
    function run it on the device: `device|host`)."""
    return frozenset(
        placed.op_id
        for placed in report.placement.placed_ops
        if HOST in placed.compute_type.split("|")
    )


HOST_OPS = OpFilter(
    id="host",
    key="H",
    label="host ops",
    style=Style(color="bright_magenta", bold=True),
    report=reports.placement_report,
    ops=host_ops,
)

FILTERS: tuple[OpFilter, ...] = (HOST_OPS,)
"""Every filter, in the order of the help screen."""

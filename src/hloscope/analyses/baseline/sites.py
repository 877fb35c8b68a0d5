"""Where a baseline's sites are relative to: the project's root, not the folder
`check` ran in.

The analyses name a line `file.py:LINE` relative to the working directory. A baseline
keyed that way would change with where `check` runs (from the repository's parent,
every line would be `repo/model.py:14`, none the recorded one), so a measurement's
sites are rebased onto the project's root before they are compared or stored, and a
comparison's back onto the working directory to be shown.
"""

from __future__ import annotations

import dataclasses
import posixpath
from collections.abc import Iterable

from hloscope.analyses.baseline.compare import Change, Comparison
from hloscope.analyses.baseline.facts import Measurement


def rebase_site(site: str, frm: str, to: str) -> str:
    """`site` (`path/file.py:LINE`, its path relative to the folder `frm` or absolute)
    with its path relative to the folder `to` where below it, else absolute. Anything
    else (`(no source line)`, an op name) is returned as it is."""
    path, colon, line = site.rpartition(":")
    if not colon or not path or not line.isdigit():
        return site
    # Paths as strings (both folders absolute): no file system is asked.
    absolute = posixpath.normpath(posixpath.join(frm, path))
    relative = posixpath.relpath(absolute, to)
    if relative == posixpath.pardir or relative.startswith(posixpath.pardir + "/"):
        return f"{absolute}:{line}"
    return f"{relative}:{line}"


def rebase_measurement(measurement: Measurement, frm: str, to: str) -> Measurement:
    """`measurement` with every site's path rebased from `frm` onto `to`."""
    if frm == to:
        return measurement
    sites = {
        fact: _merged((rebase_site(site, frm, to), count) for site, count in counts.items())
        for fact, counts in measurement.sites.items()
    }
    buffers = tuple(
        dataclasses.replace(b, source=rebase_site(b.source, frm, to)) if b.source is not None else b
        for b in measurement.peak_buffers
    )
    arguments = tuple(
        dataclasses.replace(a, source=rebase_site(a.source, frm, to)) if a.source is not None else a
        for a in measurement.arguments
    )
    return dataclasses.replace(measurement, sites=sites, peak_buffers=buffers, arguments=arguments)


def rebase_comparison(comparison: Comparison, frm: str, to: str) -> Comparison:
    """`comparison` with the sites its changes name rebased from `frm` onto `to`."""
    if frm == to:
        return comparison
    changes = tuple(
        dataclasses.replace(
            c,
            sources=tuple(rebase_site(s, frm, to) for s in c.sources),
            site_deltas=tuple((rebase_site(s, frm, to), d) for s, d in c.site_deltas),
            detail=_rebased_detail(c, frm, to),
        )
        for c in comparison.changes
    )
    grown = tuple(
        dataclasses.replace(g, site=rebase_site(g.site, frm, to)) for g in comparison.grown_at_peak
    )
    causes = tuple(
        dataclasses.replace(c, source=rebase_site(c.source, frm, to)) if c.source else c
        for c in comparison.causes
    )
    return dataclasses.replace(comparison, changes=changes, grown_at_peak=grown, causes=causes)


def _rebased_detail(change: Change, frm: str, to: str) -> str:
    # The detail names the sites of its deltas (`+2 at model.py:14`).
    detail = change.detail
    for site, _ in change.site_deltas:
        moved = rebase_site(site, frm, to)
        if moved != site:
            detail = detail.replace(f" {site}", f" {moved}")
    return detail


def _merged(pairs: Iterable[tuple[str, int]]) -> dict[str, int]:
    merged: dict[str, int] = {}
    for site, count in pairs:
        merged[site] = merged.get(site, 0) + count
    return merged

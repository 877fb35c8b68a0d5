"""`insp.placement_why()`: the `placement --why` report from the Python API."""

from __future__ import annotations

import hloscope
from samples import why_collectives


def test_placement_why_in_hand():
    insp = hloscope.inspect(why_collectives.constrained, *why_collectives.constrained_args())
    report = insp.placement_why()
    assert report is insp.placement_why()  # compiled once
    assert report.source.stage == "optimized"
    assert report.why is not None and report.why.available
    (site,) = report.why.sites_of("all_gather")
    assert site.axes == ("model",)
    (cause,) = site.causes
    assert [(o.kind, o.name) for o in cause.sharded_by] == [("argument", "w1")]
    assert [o.kind for o in cause.unsharded_by] == ["constraint"]
    assert report.to_json()["collectives"][0]["sites"][0]["axes"] == ["model"]

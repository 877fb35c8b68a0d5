"""`insp.placement_why()`: the `placement --why` report from the Python API."""

from __future__ import annotations

import importlib.util
import inspect

import hloscope
from conftest import FIXTURES
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


def _fixture(name):
    """A fixture program of tests/fixtures, imported as hloscope imports a target."""
    spec = importlib.util.spec_from_file_location(name, FIXTURES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _line(function, needle):
    """The fixture's `file.py:LINE` of `function`'s first line holding `needle`."""
    lines, first = inspect.getsourcelines(function)
    offset = next(i for i, text in enumerate(lines) if needle in text)
    return f"{inspect.getsourcefile(function)}:{first + offset}"


def test_the_gradient_of_a_bias_broadcast_is_what_sums_over_the_batch():
    # The bias `b` is broadcast over the batch; the backward pass transposes that
    # broadcast into a sum over the batch's rows, which `x` splits over `data`: that
    # sum (a stablehlo.reduce JAX names `transpose(jvp())/...`) is what XLA
    # all-reduces, not the forward broadcast at the same line (which reduces nothing).
    fsdp = _fixture("why_fsdp_step")
    model, optimizer, x, y = fsdp.example_args()
    broadcast = _line(fsdp.Dense.__call__, "broadcast_in_dim")
    (batch_axis,) = [axis for axis in x.sharding.spec[:1] if axis]  # JAX's own sharding of x
    report = hloscope.inspect(fsdp.train_step, model, optimizer, x, y).placement_why()
    assert report.why is not None and report.why.available
    sites = [s for s in report.why.sites_of("all_reduce") if s.source == broadcast]
    assert len(sites) == 1, [s.sentence for s in report.why.sites]
    (site,) = sites
    assert site.axes == (batch_axis,)
    assert site.meets == broadcast
    assert site.meets_op == "stablehlo.reduce"
    assert site.gradient_of == "broadcast_in_dim"
    (cause,) = site.causes
    assert [(o.kind, o.name) for o in cause.sharded_by] == [("argument", "x")]
    assert f"the gradient of the broadcast at {broadcast} sums over" in site.sentence
    assert f"sharded along `{batch_axis}`" in site.sentence
    assert "broadcast_in_dim at" not in site.sentence
    (entry,) = [
        s for c in report.to_json()["collectives"] for s in c["sites"] if s["source"] == broadcast
    ]
    assert entry["gradient_of"] == "broadcast_in_dim"

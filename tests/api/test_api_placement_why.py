"""`insp.placement_why()`: the `placement --why` report from the Python API."""

from __future__ import annotations

import importlib.util
import inspect
import json
import re

import numpy as np

import hloscope
from conftest import FIXTURES
from hloscope.render.text.why import origin_text, site_text
from hloscope.tui.views.why import why_lines
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
    function = inspect.unwrap(function)  # a jitted function's own code
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


def _spanned_axes(mesh, group):
    """The axes of JAX's `mesh` along which the devices of `group` (ids) differ."""
    where = [np.argwhere(mesh.device_ids == device)[0] for device in group]
    return tuple(
        name for k, name in enumerate(mesh.axis_names) if len({int(w[k]) for w in where}) > 1
    )


def test_a_psum_inside_shard_map_is_the_users_own_collective():
    # The all-reduce is the program's own `psum` over `model` inside `shard_map`: no
    # op of Shardy's propagation (which sees the manual computation whole) put it
    # there. It was reported as untied ("no origins"), and the origins listed Shardy's
    # internal name of the manual computation (`mc_0`).
    shmap = _fixture("why_shard_map_psum")
    args = shmap.example_args()
    psum = _line(shmap._block, "psum(")
    call = _line(shmap.matmul, "jax.shard_map(")
    compiled = shmap.matmul.lower(*args).compile().as_text()
    (groups,) = re.findall(r"all-reduce\(.*replica_groups=\{((?:\{[\d,]+\},?)+)\}", compiled)
    spans = {
        _spanned_axes(shmap.mesh, map(int, g.split(",")))
        for g in re.findall(r"\{([\d,]+)\}", groups)
    }
    (axes,) = spans  # XLA's groups, on JAX's mesh: ("model",)
    insp = hloscope.inspect(shmap.matmul, *args)
    report = insp.placement_why()
    why = report.why
    assert why is not None and why.available and why.note is None
    (site,) = why.sites_of("all_reduce")
    assert site.note is None
    assert site.source == psum
    assert site.axes == axes
    assert site.user_collective == "psum"
    over = ", ".join(f"`{a}`" for a in axes)
    assert f"your psum over {over} inside shard_map at {psum}" in site.sentence
    # The manual computation is named by the user's shard_map call, never by `mc_0`.
    (manual,) = [e for e in why.origins if e.origin.kind == "shard_map"]
    assert manual.origin.source == call
    assert set(manual.axes) == set(shmap.mesh.axis_names)
    document = report.to_json()
    (entry,) = document["collectives"][0]["sites"]
    assert entry["user_collective"] == "psum"
    assert not entry["causes"]
    texts = [site_text(s) for s in why.sites] + [origin_text(e) for e in why.origins]
    texts += [line.text.plain for line in why_lines(why, insp.loaded.module)]
    for shown in (json.dumps(document), *texts):
        assert "mc_0" not in shown, shown

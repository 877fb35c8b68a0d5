"""One answer everywhere (issue 37): every view names an argument as `params`
does, and the user's mesh axes as the lowered module declares them."""

from __future__ import annotations

import hloscope
from hloscope.ir.attributes import parse_mesh, with_declared_axes
from samples import params_sharded, sharded_mlp, why_nnx


def argument_names(report):
    return [s.name for s in report.placement.shardings if s.kind == "argument"]


def test_an_nnx_models_placement_names_its_arguments_as_params_does():
    # The module's own locations say `model.states[0][0]`: what nnx.jit hands jax.jit.
    insp = hloscope.inspect(why_nnx.forward, *why_nnx.example_args())
    paths = [p.path for p in insp.params.usage.parameters]
    assert paths[0] == "model.blocks[0].down.kernel"
    assert argument_names(insp.placement) == paths
    assert argument_names(insp.optimized().placement) == paths


def test_xla_mesh_axes_take_the_declared_names():
    xla = parse_mesh("mesh", '#sdy.mesh<["axis_0"=4, "axis_1"=1, "axis_2"=2]>')
    user = parse_mesh("mesh", '#sdy.mesh<["data"=4, "model"=2]>')
    (renamed,) = with_declared_axes([xla], [user])
    # The user's mesh, names and sizes: XLA's size-1 axis is none of its (issue 47).
    assert renamed.axes == (("data", 4), ("model", 2))
    assert renamed.text == '#sdy.mesh<["data"=4, "model"=2]>'
    # Other devices, or names that are not XLA's: kept as they are.
    other_order = parse_mesh(
        "mesh", '#sdy.mesh<["data"=4, "model"=2], device_ids=[7,6,5,4,3,2,1,0]>'
    )
    assert with_declared_axes([xla], [other_order]) == (xla,)
    assert with_declared_axes([user], [xla]) == (user,)
    # Two declared meshes over the same devices: the one of XLA's sizes other than 1.
    other = parse_mesh("m", '#sdy.mesh<["a"=2, "b"=4]>')
    assert with_declared_axes([xla], [other, user])[0].axes == user.axes


def test_a_compiled_placement_names_the_users_mesh_axes():
    # jax.ShapeDtypeStruct shardings: XLA keeps its mesh as `axis_0=4 x axis_1=2`.
    insp = hloscope.inspect(params_sharded.sharded_step, *params_sharded.sharded_step_args())
    placement = insp.optimized().placement.placement
    (mesh,) = placement.meshes
    assert mesh.axes == (("data", 4), ("model", 2))
    shardings = {s.name: s.on_mesh for s in placement.shardings if s.kind == "argument"}
    assert shardings["x"] == '@mesh [{"data"}, {}]'
    assert shardings["w"] == '@mesh [{}, {"model"}]'
    # in_shardings: the optimized module keeps no mesh, and names no axis at all.
    compiled = hloscope.inspect(sharded_mlp.mlp, *sharded_mlp.example_args()).optimized()
    assert "axis_" not in str(compiled.placement.placement.shardings)

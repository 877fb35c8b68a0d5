"""`placement` of sharded Flax NNX programs compiled here (issue 47), against JAX's
own answers: the compiled mesh is the program's mesh, the shardings of a compiled
module's tuple of results read like any other, and results are named by their paths
as arguments are."""

from __future__ import annotations

import jax
import pytest
from jax.sharding import NamedSharding

import hloscope
from conftest import run_cli
from fixtures import nnx_sharded_targets as targets
from hloscope.ir.attributes import parse_mesh, with_declared_axes


def on_mesh(sharding: NamedSharding, rank: int) -> str:
    """A NamedSharding as placement writes it on the module's mesh:
    `@mesh [{"model"}, {}]`, a fully replicated one as `replicated`."""
    spec = tuple(sharding.spec) + (None,) * (rank - len(sharding.spec))
    if all(part is None for part in spec):
        return "replicated"
    dims = []
    for part in spec:
        axes = () if part is None else (part,) if isinstance(part, str) else tuple(part)
        dims.append("{" + ", ".join(f'"{axis}"' for axis in axes) + "}")
    return "@mesh [" + ", ".join(dims) + "]"


def leaves(tree):
    return jax.tree.leaves(tree, is_leaf=lambda x: isinstance(x, NamedSharding))


def compiled_placement(function, args):
    return hloscope.inspect(function, *args).optimized().placement.placement


@pytest.mark.parametrize("name", ["tensor_parallel", "tensor_parallel_jit"])
def test_the_compiled_mesh_is_the_programs_mesh(name):
    function = getattr(targets, name)
    args = getattr(targets, f"{name}_args")()
    compiled = function.lower(*args).compile()
    (mesh,) = {s.mesh for s in leaves(compiled.input_shardings)}
    placement = compiled_placement(function, args)
    # XLA's collectives name meshes of their own (`axis_0=1, axis_1=4, axis_2=2`,
    # `axis_0=2, axis_1=1, axis_2=4`): the mesh shown is the program's.
    assert [m.axes for m in placement.meshes] == [tuple(mesh.shape.items())]
    assert "axis_" not in str(placement)
    shardings = [s for s in placement.shardings if s.kind == "argument"]
    expected = [
        on_mesh(s, len(a.shape))
        for s, a in zip(leaves(compiled.input_shardings), jax.tree.leaves(args), strict=True)
    ]
    assert sorted(s.on_mesh or s.words for s in shardings) == sorted(expected)


def test_an_xla_mesh_takes_the_declared_mesh():
    xla = parse_mesh("mesh", '#sdy.mesh<["axis_0"=2, "axis_1"=1, "axis_2"=4]>')
    user = parse_mesh("mesh", '#sdy.mesh<["data"=2, "tensor"=4]>')
    (mesh,) = with_declared_axes([xla], [user])
    assert mesh.axes == (("data", 2), ("tensor", 4))
    # XLA's factoring may differ from the program's: the devices decide.
    other = parse_mesh("mesh", '#sdy.mesh<["axis_0"=1, "axis_1"=4, "axis_2"=2]>')
    assert with_declared_axes([other], [user])[0].axes == (("data", 2), ("tensor", 4))
    # Nothing declared, or other devices: XLA's mesh as it is.
    assert with_declared_axes([xla], []) == (xla,)
    elsewhere = parse_mesh(
        "mesh", '#sdy.mesh<["data"=2, "tensor"=4], device_ids=[7,6,5,4,3,2,1,0]>'
    )
    assert with_declared_axes([xla], [elsewhere]) == (xla,)


def test_an_xla_mesh_read_alone_says_so_once(tmp_path):
    # An optimized dump read alone: no declared mesh to recover, XLA's axes are kept
    # and the header says once that they are XLA's.
    args = targets.tensor_parallel_jit_args()
    dump = tmp_path / "tensor_parallel.hlo"
    dump.write_text(targets.tensor_parallel_jit.lower(*args).compile().as_text())
    run = run_cli("placement", str(dump))
    assert run.code == 0, run.stderr
    assert run.stdout.count("the program's mesh is not known") == 1
    (mesh,) = run_cli("placement", str(dump), "--json").json()["meshes"]
    assert mesh["xla_axes"] is True
    assert [axis["size"] for axis in mesh["axes"]] == [2, 1, 4]

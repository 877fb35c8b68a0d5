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
from hloscope.ir.attributes import parse_hlo_sharding, parse_mesh, with_declared_axes


def on_mesh(sharding: NamedSharding) -> str:
    """A NamedSharding as placement writes it on the module's mesh, `@mesh [{"model"},
    {}]` (trailing unsplit dimensions left out), a fully replicated one as
    `replicated`."""
    spec = list(sharding.spec)
    while spec and spec[-1] is None:
        spec.pop()
    if not spec:
        return "replicated"
    dims = []
    for part in spec:
        axes = () if part is None else (part,) if isinstance(part, str) else tuple(part)
        dims.append("{" + ", ".join(f'"{axis}"' for axis in axes) + "}")
    return "@mesh [" + ", ".join(dims) + "]"


def shown(annotation) -> str:
    """What placement shows for a sharding, trailing unsplit dimensions left out."""
    text = annotation.on_mesh or annotation.words
    while text.endswith(", {}]"):
        text = text[: -len(", {}]")] + "]"
    return text


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
    expected = [on_mesh(s) for s in leaves(compiled.input_shardings)]
    assert sorted(map(shown, shardings)) == sorted(expected)


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


def test_every_result_of_a_compiled_tuple_reads_as_jax_places_it():
    # Seven results: XLA writes `/*index=5*/` before the sixth element of the tuple
    # sharding; each element is read by XLA's parser, not cut out of the text.
    args = targets.fsdp_args()
    compiled = targets.fsdp_step.lower(*args).compile()
    expected = [on_mesh(s) for s in leaves(compiled.output_shardings)]
    assert len(expected) == 7
    placement = compiled_placement(targets.fsdp_step, args)
    results = [s for s in placement.shardings if s.kind == "result"]
    assert [s.index for s in results] == list(range(7))
    assert [shown(s) for s in results] == expected
    assert not any("/*" in s.sharding for s in placement.shardings)


def test_a_tuple_sharding_is_read_by_xlas_parser():
    text = (
        "{{replicated}, {replicated}, {replicated}, {replicated}, {maximal device=1}, "
        "/*index=5*/{devices=[4,1,2]<=[2,4]T(1,0) last_tile_dim_replicate}, {replicated}}"
    )
    sharding = parse_hlo_sharding(text)
    assert sharding.kind == "tuple"
    assert [e.kind for e in sharding.elements] == ["replicated"] * 4 + [
        "maximal",
        "tiled",
        "replicated",
    ]
    assert sharding.elements[5].text == ("{devices=[4,1,2]<=[2,4]T(1,0) last_tile_dim_replicate}")
    assert sharding.elements[5].tiles == (4, 1, 2)


def user_result_names():
    """The result names the user would write: nnx.jit returns each argument's updated
    state (its key path from `jax.tree_util`, under the parameter's name), then what
    the function returned (`result`, as JAX names a single output)."""
    return [
        "model.b1",
        "model.w1",
        "model.w2",
        "optimizer.momentum.b1",
        "optimizer.momentum.w1",
        "optimizer.momentum.w2",
        "result",
    ]


def test_nnx_results_are_named_by_their_paths_as_arguments_are():
    args = targets.fsdp_args()
    # JAX's own names of the outputs: what nnx.jit hands jax.jit, `[0][0].states[0][0]`.
    lowered = targets.fsdp_step.lower(*args).lowered
    jax_paths = [
        jax.tree_util.keystr(path)
        for path, _ in jax.tree_util.tree_flatten_with_path(
            jax.tree_util.tree_unflatten(lowered.out_tree, range(lowered.out_tree.num_leaves))
        )[0]
    ]
    assert jax_paths[0] == "[0][0].states[0][0]"
    placement = compiled_placement(targets.fsdp_step, args)
    results = [s.name for s in placement.shardings if s.kind == "result"]
    assert results == user_result_names()
    arguments = [s.name for s in placement.shardings if s.kind == "argument"]
    assert arguments[:3] == ["model.b1", "model.w1", "model.w2"]


def test_nnx_results_are_named_in_json_and_text():
    target = "tests/fixtures/nnx_sharded_targets.py"
    argv = ["placement", f"{target}:fsdp_step", "--args", f"{target}:fsdp_args", "--compile"]
    document = run_cli(*argv, "--json").json()
    results = [s["name"] for s in document["shardings"] if s["kind"] == "result"]
    assert results == user_result_names()
    text = run_cli(*argv).stdout
    assert "optimizer.momentum.w1" in text
    assert ".states[" not in text

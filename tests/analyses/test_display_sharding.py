"""XLA's own shardings read as people read Shardy's: on the module's mesh where its
device order is the mesh's, else as tiles and replication."""

import pytest

from conftest import FIXTURES
from hloscope.analyses.placement import analyze_placement
from hloscope.ir import parse
from hloscope.ir.attributes import Mesh, parse_hlo_sharding

MESH = Mesh(name="mesh", axes=(("data", 4), ("model", 2)), device_ids=None, text="")


def hlo_sharding_on_mesh(text, meshes):
    return parse_hlo_sharding(text).on_mesh(meshes)


@pytest.mark.parametrize(
    ("sharding", "on_mesh"),
    [
        ("{devices=[4,1,2]<=[8] last_tile_dim_replicate}", '@mesh [{"data"}, {}]'),
        ("{devices=[1,2,4]<=[4,2]T(1,0) last_tile_dim_replicate}", '@mesh [{}, {"model"}]'),
        ("{devices=[2,1,4]<=[4,2]T(1,0) last_tile_dim_replicate}", '@mesh [{"model"}, {}]'),
        ("{devices=[4,2]<=[8]}", '@mesh [{"data"}, {"model"}]'),
        ("{devices=[8,1]<=[8]}", '@mesh [{"data", "model"}, {}]'),
        # Devices listed one by one, or in an order that is not the mesh's: no mesh words.
        ("{devices=[4,2]0,1,2,3,4,5,6,7}", None),
        ("{devices=[2,4]<=[8]}", None),
        ("{devices=[4,1,2]<=[8] last_tile_dims={manual}}", None),
        ("{replicated}", None),
    ],
)
def test_an_xla_sharding_on_the_modules_mesh(sharding, on_mesh):
    assert hlo_sharding_on_mesh(sharding, [MESH]) == on_mesh


def test_without_one_mesh_there_are_no_mesh_words():
    assert hlo_sharding_on_mesh("{devices=[4,2]<=[8]}", []) is None
    assert hlo_sharding_on_mesh("{devices=[4,2]<=[8]}", [MESH, MESH]) is None


def test_a_tuple_sharding_reads_element_by_element():
    assert (
        parse_hlo_sharding("{{devices=[4,1,2]<=[8] last_tile_dim_replicate}, {replicated}}").words
        == "(tiled [4,1], replicated ×2; replicated)"
    )


def test_an_hlo_module_with_a_shardy_mesh_reads_its_xla_shardings_on_it():
    path = FIXTURES / "display" / "sharded_mlp.hlo"
    placement = analyze_placement(parse.parse_hlo_text(path.read_text(), path.name).model)
    on_mesh = {s.name or s.value: s.on_mesh for s in placement.shardings}
    # What JAX wrote as Shardy shardings beside them (xla.sdy.sharding), read back.
    assert on_mesh == {
        "x.1": '@mesh [{"data"}, {}]',
        "w1.1": '@mesh [{}, {"model"}]',
        "w2.1": '@mesh [{"model"}, {}]',
        "result 0": '@mesh [{"data"}, {}]',
        "sharding_constraint.1": '@mesh [{"data"}, {"model"}]',
    }

"""`diff_modules` on modules written for the purpose: what must be the same (renamed
values, reordered ops, other locations, another printer) and what must be exactly
one change."""

from __future__ import annotations

import re

import pytest

from conftest import DUMPS
from hloscope.analyses.diff import ModuleDiff, diff_modules, normalize_function_name
from hloscope.ir import parse

BASE = """
module @m {
  func.func public @main(%arg0: tensor<8x16xf32>, %arg1: tensor<16x4xf32>, %arg2: tensor<4xf32>) -> tensor<8x4xf32> {
    %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0] : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
    %1 = stablehlo.broadcast_in_dim %arg2, dims = [1] : (tensor<4xf32>) -> tensor<8x4xf32>
    %2 = stablehlo.add %0, %1 : tensor<8x4xf32>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %3 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<8x4xf32>
    %4 = stablehlo.maximum %2, %3 : tensor<8x4xf32>
    %5 = call @scale(%4) : (tensor<8x4xf32>) -> tensor<8x4xf32>
    %6 = call @scale(%5) : (tensor<8x4xf32>) -> tensor<8x4xf32>
    return %6 : tensor<8x4xf32>
  }
  func.func private @scale(%arg0: tensor<8x4xf32>) -> tensor<8x4xf32> {
    %c = stablehlo.constant dense<2.000000e+00> : tensor<8x4xf32>
    %0 = stablehlo.multiply %arg0, %c : tensor<8x4xf32>
    %1 = stablehlo.tanh %0 : tensor<8x4xf32>
    return %1 : tensor<8x4xf32>
  }
}
"""  # noqa: E501

# The same program: other value names, the independent ops in another order, the
# callee renamed and moved first, locations everywhere.
RENAMED_REORDERED = """
module @other_name {
  func.func private @scale_1(%x: tensor<8x4xf32> loc("x")) -> tensor<8x4xf32> {
    %two = stablehlo.constant dense<2.000000e+00> : tensor<8x4xf32> loc("two.py":1:1)
    %scaled = stablehlo.multiply %x, %two : tensor<8x4xf32> loc("jit(f)/mul"("two.py":2:1))
    %t = stablehlo.tanh %scaled : tensor<8x4xf32> loc("tanh")
    return %t : tensor<8x4xf32> loc(unknown)
  }
  func.func public @main(%a: tensor<8x16xf32>, %w: tensor<16x4xf32>, %b: tensor<4xf32>) -> tensor<8x4xf32> {
    %zero = stablehlo.constant dense<0.000000e+00> : tensor<f32> loc("z.py":9:9)
    %zeros = stablehlo.broadcast_in_dim %zero, dims = [] : (tensor<f32>) -> tensor<8x4xf32>
    %bias = stablehlo.broadcast_in_dim %b, dims = [1] : (tensor<4xf32>) -> tensor<8x4xf32>
    %prod = stablehlo.dot_general %a, %w, contracting_dims = [1] x [0] : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32> loc("dot.py":4:2)
    %sum = stablehlo.add %prod, %bias : tensor<8x4xf32>
    %relu = stablehlo.maximum %sum, %zeros : tensor<8x4xf32>
    %once = call @scale_1(%relu) : (tensor<8x4xf32>) -> tensor<8x4xf32>
    %twice = call @scale_1(%once) : (tensor<8x4xf32>) -> tensor<8x4xf32>
    return %twice : tensor<8x4xf32>
  }
}
"""  # noqa: E501


def mlir(text: str):
    return parse.parse_mlir(text, "test.mlir").model


def hlo(text: str):
    return parse.parse_hlo_text(text, "test.hlo").model


def only_change(result: ModuleDiff):
    assert len(result.changes) == 1, [(c.kind, c.op, c.detail) for c in result.changes]
    return result.changes[0]


def test_a_module_against_itself_is_the_same():
    result = diff_modules(mlir(BASE), mlir(BASE))
    assert result.verdict == "same"
    assert result.changes == ()
    # 6 ops in main (2 calls among them) and 3 in each of the two inlined calls.
    assert result.summary.unchanged == 6 + 2 + 3 * 2
    assert result.summary.added == result.summary.removed == result.summary.changed == 0


def test_renamed_values_reordered_ops_and_locations_are_the_same():
    result = diff_modules(mlir(BASE), mlir(RENAMED_REORDERED))
    assert result.verdict == "same", [(c.kind, c.op, c.detail) for c in result.changes]
    assert result.summary.unchanged == 14
    # The module's name is not a change, but it is said.
    assert any("other_name" in note for note in result.notes)


def test_renamed_and_reordered_from_real_jax_output():
    """The bundled StableHLO dump with every SSA value renamed and two independent
    ops swapped in each function."""
    text = (DUMPS / "mlp.stablehlo.mlir").read_text()
    renamed = re.sub(r"%(\d+)\b", r"%v\1_renamed", text)
    renamed = re.sub(r"%(cst\w*)", r"%\1_renamed", renamed)
    lines = renamed.splitlines()
    dot = next(i for i, line in enumerate(lines) if "stablehlo.dot_general" in line)
    lines[dot], lines[dot + 1] = lines[dot + 1], lines[dot]  # the bias broadcast first
    renamed = "\n".join(lines)
    assert renamed != text
    result = diff_modules(mlir(text), mlir(renamed))
    assert result.verdict == "same"
    assert result.summary.unchanged == 32


def test_one_changed_attribute_is_exactly_one_change():
    changed = BASE.replace(
        "contracting_dims = [1] x [0] :",
        "contracting_dims = [1] x [0], precision = [HIGHEST, HIGHEST] :",
    )
    result = diff_modules(mlir(BASE), mlir(changed))
    change = only_change(result)
    assert change.kind == "changed"
    assert change.op == "stablehlo.dot_general"
    assert change.function == "main"
    assert change.aspects == ("attributes",)
    assert "precision_config" in change.detail and "HIGHEST" in change.detail
    assert result.summary.changed == 1
    assert result.summary.unchanged == 13
    assert result.verdict == "different"


def test_a_change_in_a_function_called_twice_is_one_group_of_two():
    changed = BASE.replace("stablehlo.tanh %0", "stablehlo.sine %0")
    result = diff_modules(mlir(BASE), mlir(changed))
    assert len(result.groups) == 1
    group = result.groups[0]
    assert (group.kind, group.op, group.count) == (
        "changed",
        "stablehlo.tanh → stablehlo.sine",
        2,
    )
    assert group.aspects == ("kind",)
    assert group.detail == "stablehlo.tanh → stablehlo.sine"


def test_the_same_change_in_three_layers_is_grouped():
    text = (DUMPS / "mlp.stablehlo.mlir").read_text()
    changed = text.replace("precision = [DEFAULT, DEFAULT]", "precision = [HIGH, HIGH]")
    result = diff_modules(mlir(text), mlir(changed))
    assert [(g.op, g.count) for g in result.groups] == [("stablehlo.dot_general", 3)]
    assert result.summary.changed == 3


def test_a_changed_dtype_is_named_as_a_dtype_change():
    changed = BASE.replace(
        "%5 = call @scale(%4) : (tensor<8x4xf32>) -> tensor<8x4xf32>",
        "%h = stablehlo.convert %4 : (tensor<8x4xf32>) -> tensor<8x4xbf16>\n"
        "    %back = stablehlo.convert %h : (tensor<8x4xbf16>) -> tensor<8x4xf32>\n"
        "    %5 = call @scale(%back) : (tensor<8x4xf32>) -> tensor<8x4xf32>",
    )
    result = diff_modules(mlir(BASE), mlir(changed))
    added = [c for c in result.changes if c.kind == "added"]
    assert [c.op for c in added] == ["stablehlo.convert", "stablehlo.convert"]
    assert added[0].detail == "bf16[8,4]"
    rewired = [c for c in result.changes if c.kind == "changed"]
    assert [c.op for c in rewired] == ["stablehlo.multiply"]
    assert rewired[0].aspects == ("operands",)
    assert "convert (added)" in rewired[0].detail
    assert result.summary.added == 2 and result.summary.removed == 0


def test_compute_type_sharding_and_memory_are_named():
    def with_attrs(attrs: str) -> str:
        return BASE.replace(
            "%2 = stablehlo.add %0, %1 : tensor<8x4xf32>",
            f"%2 = stablehlo.add %0, %1 {{{attrs}}} : tensor<8x4xf32>",
        )

    host = with_attrs('mhlo.frontend_attributes = {_xla_compute_type = "host"}')
    change = only_change(diff_modules(mlir(BASE), mlir(host)))
    assert change.aspects == ("compute_type",)
    assert change.detail == "compute type device → host"

    sharded = with_attrs('mhlo.sharding = "{devices=[2,1]<=[2]}"')
    change = only_change(diff_modules(mlir(BASE), mlir(sharded)))
    assert change.aspects == ("sharding",)


def test_parameter_changes():
    sharded = BASE.replace(
        "%arg2: tensor<4xf32>)",
        '%arg2: tensor<4xf32> {mhlo.sharding = "{replicated}", mhlo.memory_kind = "pinned_host"})',
    )
    result = diff_modules(mlir(BASE), mlir(sharded))
    change = only_change(result)
    assert (change.kind, change.op) == ("changed", "parameter")
    assert set(change.aspects) == {"parameter", "sharding", "memory_kind"}
    assert change.a_where == "main %arg2"
    # Ops are not affected.
    assert result.summary.unchanged == 14
    pairs = [(p.a, p.b, p.status) for p in result.parameters]
    assert pairs == [(0, 0, "same"), (1, 1, "same"), (2, 2, "changed")]


def test_a_parameter_pruned_in_the_middle_is_one_removed_parameter():
    # %arg1 of `with_unused` is unused; `pruned` drops it: the rest still pair.
    with_unused = """
    module @m {
      func.func public @main(%arg0: tensor<4xf32>, %arg1: tensor<3xi32>, %arg2: tensor<4xf32>) -> tensor<4xf32> {
        %0 = stablehlo.subtract %arg0, %arg2 : tensor<4xf32>
        return %0 : tensor<4xf32>
      }
    }"""  # noqa: E501
    pruned = """
    module @m {
      func.func public @main(%arg0: tensor<4xf32>, %arg1: tensor<4xf32>) -> tensor<4xf32> {
        %0 = stablehlo.subtract %arg0, %arg1 : tensor<4xf32>
        return %0 : tensor<4xf32>
      }
    }"""
    result = diff_modules(mlir(with_unused), mlir(pruned))
    change = only_change(result)
    assert (change.kind, change.op, change.detail) == ("removed", "parameter", "s32[3]")
    assert result.summary.unchanged == 1


def test_swapped_parameters_are_a_change_of_operands():
    swapped = BASE.replace(
        "%arg0: tensor<8x16xf32>, %arg1: tensor<16x4xf32>",
        "%arg0: tensor<16x4xf32>, %arg1: tensor<8x16xf32>",
    ).replace("stablehlo.dot_general %arg0, %arg1", "stablehlo.dot_general %arg1, %arg0")
    result = diff_modules(mlir(BASE), mlir(swapped))
    parameters = [c for c in result.changes if c.op == "parameter"]
    assert [c.detail for c in parameters] == ["f32[8,16] → f32[16,4]", "f32[16,4] → f32[8,16]"]
    ops = [c for c in result.changes if c.op != "parameter"]
    assert [(c.op, c.aspects) for c in ops] == [("stablehlo.dot_general", ("operands",))]
    assert (
        ops[0].detail
        == "operand 0: parameter 0 → parameter 1; operand 1: parameter 1 → parameter 0"
    )


def test_printer_differences_are_normalised():
    """What another printer writes differently for the same program: a `dot` for a
    `dot_general`, swapped operands of a commutative op, the default precision
    spelled out, a reshape adding a unit dimension before a broadcast, one constant
    where the other wrote two equal ones."""
    other = """
    module @m {
      func.func public @main(%arg0: tensor<8x16xf32>, %arg1: tensor<16x4xf32>, %arg2: tensor<4xf32>) -> tensor<8x4xf32> {
        %0 = stablehlo.dot %arg0, %arg1, precision = [DEFAULT, DEFAULT] : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
        %r = stablehlo.reshape %arg2 : (tensor<4xf32>) -> tensor<1x4xf32>
        %1 = stablehlo.broadcast_in_dim %r, dims = [0, 1] : (tensor<1x4xf32>) -> tensor<8x4xf32>
        %2 = stablehlo.add %1, %0 : tensor<8x4xf32>
        %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
        %3 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<8x4xf32>
        %4 = stablehlo.maximum %3, %2 : tensor<8x4xf32>
        %c = stablehlo.constant dense<2.000000e+00> : tensor<8x4xf32>
        %5 = stablehlo.multiply %4, %c : tensor<8x4xf32>
        %6 = stablehlo.tanh %5 : tensor<8x4xf32>
        %7 = stablehlo.multiply %c, %6 : tensor<8x4xf32>
        %8 = stablehlo.tanh %7 : tensor<8x4xf32>
        return %8 : tensor<8x4xf32>
      }
    }"""  # noqa: E501
    result = diff_modules(mlir(BASE), mlir(other))
    # The calls are gone (inlined), and that is the only change.
    assert {(c.kind, c.op) for c in result.changes} == {("removed", "func.call")}
    assert result.summary.removed == 2
    assert result.summary.normalized == 2  # B's reshape, A's second constant
    assert result.summary.changed == 0


def test_stablehlo_against_its_own_hlo_is_the_same():
    result = diff_modules(
        mlir((DUMPS / "mlp.stablehlo.mlir").read_text()),
        hlo((DUMPS / "mlp.before_optimizations.hlo").read_text()),
    )
    assert result.verdict == "same", [(c.kind, c.op, c.detail) for c in result.changes]
    # The round trip writes broadcast_in_dim 64 -> 1x64 as reshapes: normalised.
    assert result.summary.normalized == 6


def test_lowered_against_optimized_shows_inlined_calls_and_new_fusions():
    result = diff_modules(
        hlo((DUMPS / "mlp.before_optimizations.hlo").read_text()),
        hlo((DUMPS / "mlp.after_optimizations.hlo").read_text()),
    )
    removed = {c.op for c in result.changes if c.kind == "removed"}
    assert removed == {"func.call"}
    fusions = [f for f in result.fusions if f.status == "added"]
    assert len(fusions) == 8 and result.b.fusions == 8
    assert {f.b_kind for f in fusions} == {"kLoop", "kCustom"}
    # The dot_generals are matched inside their fusions.
    assert not any(c.op == "stablehlo.dot" for c in result.changes)


def test_fusion_boundary_moved(tmp_path):
    """The optimized module with tanh taken out of its fusion: the fusion's op set
    changed, tanh itself did not."""
    text = (DUMPS / "mlp.after_optimizations.hlo").read_text()
    moved = text.replace(
        "  %max.18 = f32[8,64]{1,0} maximum(%add.24, %max.19)",
        "  ROOT %max.18 = f32[8,64]{1,0} maximum(%add.24, %max.19)",
    )
    moved = re.sub(r"  ROOT %tanh\.2 = [^\n]*\n", "", moved)
    moved = moved.replace(
        "  %wrapped_reduce-window = f32[8,2]{1,0} fusion(%maximum_tanh_fusion, ",
        "  %tanh.9 = f32[8,64]{1,0} tanh(%maximum_tanh_fusion)\n"
        "  %wrapped_reduce-window = f32[8,2]{1,0} fusion(%tanh.9, ",
    )
    assert moved.count("tanh(") == 1
    result = diff_modules(hlo(text), hlo(moved))
    changed_fusions = [f for f in result.fusions if f.status == "changed"]
    assert len(changed_fusions) == 1
    fusion = changed_fusions[0]
    assert fusion.moved_out == ("tanh",)
    assert fusion.moved_in == ()
    assert "tanh" in fusion.a_ops and "tanh" not in fusion.b_ops
    change = only_change(result)
    assert (change.kind, change.op, change.aspects) == ("changed", "mhlo.fusion", ("fusion",))
    assert "moved out: tanh" in change.detail


def test_rows_hold_every_node_once_in_order():
    changed = BASE.replace("stablehlo.tanh %0", "stablehlo.sine %0")
    result = diff_modules(mlir(BASE), mlir(changed))
    a_nodes = [row.a for row in result.rows if row.a >= 0]
    b_nodes = [row.b for row in result.rows if row.b >= 0]
    assert a_nodes == list(range(len(result.a.ops)))
    assert sorted(b_nodes) == list(range(len(result.b.ops)))
    statuses = [row.status for row in result.rows if result.a.counted[row.a]]
    assert statuses.count("changed") == 2


@pytest.mark.parametrize(
    ("name", "normal"),
    [("dense.2", "dense"), ("region_0.3.clone", "region"), ("main", "main"), ("f_1", "f")],
)
def test_function_names_lose_unique_suffixes(name, normal):
    assert normalize_function_name(name) == normal


def test_a_function_renamed_is_the_same_function():
    """Matched by what it computes: `scale` called `rescale_by_two` in B is no change
    (its calls' callee names differ), and a note."""
    renamed = BASE.replace("@scale", "@rescale_by_two")
    result = diff_modules(mlir(BASE), mlir(renamed))
    assert result.verdict == "same", [(c.kind, c.op, c.detail) for c in result.changes]
    assert [(r.a, r.b) for r in result.renames] == [("scale", "rescale_by_two")]
    assert result.notes == (
        "1 function renamed, matched by what it computes (not a change): scale → rescale_by_two",
    )


def test_a_call_of_another_function_is_a_callee_change():
    """Two functions in B where A has one: the second call now calls the other, and
    the op inside differs."""
    twin = BASE.replace("%6 = call @scale(%5)", "%6 = call @twin(%5)").replace(
        "\n}\n",
        "\n  func.func private @twin(%arg0: tensor<8x4xf32>) -> tensor<8x4xf32> {\n"
        "    %c = stablehlo.constant dense<2.000000e+00> : tensor<8x4xf32>\n"
        "    %0 = stablehlo.multiply %arg0, %c : tensor<8x4xf32>\n"
        "    %1 = stablehlo.sine %0 : tensor<8x4xf32>\n"
        "    return %1 : tensor<8x4xf32>\n  }\n}\n",
    )
    result = diff_modules(mlir(BASE), mlir(twin))
    details = sorted((c.op, c.detail) for c in result.changes)
    assert details == [
        ("func.call", "callee @scale → @twin"),
        ("stablehlo.tanh → stablehlo.sine", "stablehlo.tanh → stablehlo.sine"),
    ]
    assert result.renames == ()


def test_the_same_change_in_two_functions_is_one_group_with_its_places():
    """Clones with unrelated names (XLA clones a computation per call site): the same
    change in each is one group, its places the clones."""
    clones = BASE.replace("%6 = call @scale(%5)", "%6 = call @other_clone(%5)").replace(
        "\n}\n",
        "\n  func.func private @other_clone(%arg0: tensor<8x4xf32>) -> tensor<8x4xf32> {\n"
        "    %c = stablehlo.constant dense<2.000000e+00> : tensor<8x4xf32>\n"
        "    %0 = stablehlo.multiply %arg0, %c : tensor<8x4xf32>\n"
        "    %1 = stablehlo.tanh %0 : tensor<8x4xf32>\n"
        "    return %1 : tensor<8x4xf32>\n  }\n}\n",
    )
    changed = clones.replace("stablehlo.tanh %0", "stablehlo.sine %0")
    result = diff_modules(mlir(clones), mlir(changed))
    assert len(result.groups) == 1
    group = result.groups[0]
    assert (group.op, group.count, group.function) == (
        "stablehlo.tanh → stablehlo.sine",
        2,
        "scale, other_clone",
    )
    assert [(p.function, p.count) for p in group.places] == [("scale", 1), ("other_clone", 1)]


def test_hlo_with_every_name_renamed_is_the_same():
    """XLA's HLO of the MLP, every instruction and computation renamed: the same, the
    four functions renamed (the reduction's computation, which the conversion leaves
    uncalled, matched by its contents)."""
    from conftest import rename_hlo

    text = (DUMPS / "mlp.before_optimizations.hlo").read_text()
    renamed, renaming = rename_hlo(text)
    result = diff_modules(hlo(text), hlo(renamed))
    assert result.verdict == "same", [(c.kind, c.op, c.detail) for c in result.changes]
    assert {(r.a, r.b) for r in result.renames} == {
        (name, renaming[name]) for name in ("relu.1", "dense.2", "region_0.3", "head.4")
    }


def test_hlo_renamed_with_a_change_in_a_function_called_three_times():
    from conftest import rename_hlo

    text = (DUMPS / "mlp.before_optimizations.hlo").read_text()
    line = "ROOT max.3 = f32[8,64]{1,0} maximum(Arg_0.2, max.2)"
    assert line in text
    renamed, _ = rename_hlo(text.replace(line, line.replace("maximum(", "minimum(")))
    result = diff_modules(hlo(text), hlo(renamed))
    assert [(g.kind, g.op, g.count, g.function) for g in result.groups] == [
        ("changed", "stablehlo.maximum → stablehlo.minimum", 3, "relu.1")
    ]
    assert [(p.function, p.count) for p in result.groups[0].places] == [("relu.1", 3)]
    assert len(result.renames) == 4


def test_a_module_without_locations_names_no_source_line():
    # MLIR's parser gives an op of a text without loc(...) the location "-":LINE:COL,
    # the buffer it read: no source line, and the note says there are none.
    result = diff_modules(mlir(BASE), mlir(BASE.replace("stablehlo.tanh", "stablehlo.exponential")))
    assert result.changes
    assert all("-:" not in c.detail for c in result.changes), [c.detail for c in result.changes]
    assert any("neither module's ops carry source locations" in n for n in result.notes)
    located = diff_modules(
        mlir(RENAMED_REORDERED),
        mlir(RENAMED_REORDERED.replace("stablehlo.tanh", "stablehlo.exponential")),
    )
    assert not any("source locations" in n for n in located.notes)

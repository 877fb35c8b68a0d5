"""Functions, call graph and op counts."""

import pytest

from conftest import DUMPS, FIXTURES
from hloscope.analyses.structure import analyze_structure, clone_base
from hloscope.ir import parse


def structure_of(name):
    path = DUMPS / name
    if path.suffix == ".hlo":
        return analyze_structure(parse.parse_hlo_text(path.read_text(), name).model)
    return analyze_structure(parse.parse_mlir(path.read_bytes(), name).model)


def test_nested_jits_are_private_functions_called_by_func_call():
    structure = structure_of("mlp.stablehlo.mlir")
    assert structure.entry == "main"
    main = structure.function("main")
    dense = structure.function("dense")
    assert main is not None and dense is not None
    assert [(c.callee, c.count) for c in main.calls] == [("dense", 3), ("head", 1)]
    assert dense.called_by == ("main",)
    assert dense.visibility == "private"
    assert structure.call_depth == 2  # main -> dense -> relu
    # Inlining multiplies the callee's ops by its call sites.
    relu = structure.function("relu")
    head = structure.function("head")
    assert relu is not None and head is not None
    assert dense.inlined_ops == dense.ops + relu.ops
    assert main.inlined_ops == main.ops + 3 * dense.inlined_ops + head.inlined_ops


def test_op_counts_cover_reachable_functions_without_terminators():
    structure = structure_of("mlp.stablehlo.mlir")
    assert structure.op_counts["func.call"] == 5  # 4 in main, 1 in dense (relu)
    assert "func.return" not in structure.op_counts
    assert structure.total_ops == sum(structure.op_counts.values())
    assert structure.dialects["stablehlo"] + structure.dialects["func"] == structure.total_ops


def test_fused_computation_copies_are_not_counted_twice():
    structure = structure_of("mlp.after_optimizations.hlo")
    fused = [f for f in structure.functions if f.name.startswith("fused_computation")]
    assert fused and not any(f.reachable for f in fused)
    main = structure.function("main")
    assert main is not None
    assert structure.total_ops == main.ops
    assert structure.op_counts["mhlo.fusion"] >= 3


CLONES = FIXTURES / "display" / "clones.hlo"


def test_xla_clones_of_one_computation_form_a_group():
    structure = analyze_structure(parse.parse_hlo_text(CLONES.read_text(), CLONES.name).model)
    assert [(g.name, g.functions) for g in structure.groups] == [
        ("remainder_1", ("remainder_1.11", "remainder_1.12", "remainder_1.13"))
    ]
    # Same base name, different body (another constant): not a clone.
    assert structure.group_of("remainder_1.14") is None
    # Every function is still listed on its own.
    assert len(structure.functions) == 5


def test_clone_base_strips_only_xlas_suffixes():
    assert clone_base("remainder_1.9915") == "remainder_1"
    # XLA's `.clone` suffixes too (Mixtral's 64 `compare_greater_than.N.M.clone`).
    assert clone_base("compare_greater_than.6.1251.clone") == "compare_greater_than"
    assert clone_base("region_0.3.clone.1") == "region_0"
    assert clone_base("cloned_value") == "cloned_value"
    assert clone_base("fused_computation.1.2") == "fused_computation"
    assert clone_base("_where_0") == "_where_0"
    assert clone_base("main") == "main"


@pytest.mark.corpus
def test_a_real_model_calls_its_clones_from_many_places(corpus):
    path = corpus / "xla/xla/backends/cpu/benchmarks/hlo/gemma2_2b_keras_jax.hlo"
    structure = analyze_structure(parse.parse_hlo_text(path.read_text(), path.name).model)
    groups = {g.name: len(g.functions) for g in structure.groups}
    assert groups["_where_5"] == 26
    assert groups["triu"] == 13
    # Grouped clones have the same body, so the same op counts.
    for group in structure.groups:
        counts = {tuple(structure.function(n).op_counts.items()) for n in group.functions}
        assert len(counts) == 1


@pytest.mark.corpus
def test_clones_named_clone_are_one_row_of_the_overview(corpus, cli):
    """Mixtral's `main` calls 64 `compare_greater_than.N.M.clone`: one group, one entry
    in its calls cell (a 48-line wall once), and counts with thousands separators."""
    path = corpus / "xla/xla/tools/benchmarks/hlo/hlo_mixtral_8x7b_bf16_2x8.hlo"
    structure = analyze_structure(parse.parse_hlo_text(path.read_text(), path.name).model)
    groups = {g.name: len(g.functions) for g in structure.groups}
    assert groups["compare_greater_than"] == 64
    text = cli("inspect", str(path), "--print").stdout
    main = next(line for line in text.splitlines() if line.startswith(" main "))
    assert main.split()[-2:] == ["compare_greater_than", "×64"]
    assert "33,454 ops in 65 reachable functions" in text


def test_a_group_is_named_after_its_first_member_where_the_base_names_another():
    structure = structure_of("mlp.after_optimizations.hlo")
    names = {g.name: g.functions for g in structure.groups}
    # `fused_computation` is in its own group, so the other group takes its first member's name.
    assert names["fused_computation"][0] == "fused_computation"
    (other,) = [n for n in names if n.startswith("fused_computation") and n != "fused_computation"]
    assert other == names[other][0] and other.startswith("fused_computation.")


# XLA's own form of a module with a loop, a reduction and a call: the loop's body and
# condition and the reduction's `to_apply` are regions of their op once converted, so
# their ops count in the function holding the op, and only the `call` is a call.
HELD = """
HloModule held, entry_computation_layout={(f32[4]{0})->f32[]}

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %sum = f32[] add(%a, %b)
}

%body (state: (s32[], f32[4])) -> (s32[], f32[4]) {
  %state = (s32[], f32[4]{0}) parameter(0)
  %i = s32[] get-tuple-element(%state), index=0
  %one = s32[] constant(1)
  %next = s32[] add(%i, %one)
  %x = f32[4]{0} get-tuple-element(%state), index=1
  %y = f32[4]{0} exponential(%x)
  ROOT %out = (s32[], f32[4]{0}) tuple(%next, %y)
}

%cond (state.1: (s32[], f32[4])) -> pred[] {
  %state.1 = (s32[], f32[4]{0}) parameter(0)
  %j = s32[] get-tuple-element(%state.1), index=0
  %limit = s32[] constant(3)
  ROOT %less = pred[] compare(%j, %limit), direction=LT
}

%negate (v: f32[]) -> f32[] {
  %v = f32[] parameter(0)
  ROOT %n = f32[] negate(%v)
}

ENTRY %main (x.1: f32[4]) -> f32[] {
  %x.1 = f32[4]{0} parameter(0)
  %zero = s32[] constant(0)
  %init = (s32[], f32[4]{0}) tuple(%zero, %x.1)
  %loop = (s32[], f32[4]{0}) while(%init), condition=%cond, body=%body
  %done = f32[4]{0} get-tuple-element(%loop), index=1
  %z = f32[] constant(0)
  %total = f32[] reduce(%done, %z), dimensions={0}, to_apply=%add
  ROOT %called = f32[] call(%total), to_apply=%negate
}
"""


def test_xla_forms_held_computations_count_in_the_op_holding_them():
    import jaxlib._hlo as xla_hlo

    from hloscope.analyses.structure import holding_function
    from hloscope.ir.hlo_native import build_hlo_native_model

    module = build_hlo_native_model(xla_hlo.hlo_module_from_text(HELD))
    structure = analyze_structure(module)
    main = structure.function("main")
    assert main is not None
    # Only the call is one; the loop's and the reduction's computations are held.
    assert [(c.callee, c.count) for c in main.calls] == [("negate", 1)]
    assert structure.call_depth == 1
    for held in ("add", "body", "cond"):
        info = structure.function(held)
        assert info is not None and not info.called_by and not info.reachable
        assert holding_function(module, held) == "main"
    assert holding_function(module, "negate") == "negate"
    # main's own 5 ops, the body's 3, the condition's 2, the reducer's 1: parameters,
    # tuples and their elements compute nothing (the converted form has none of them).
    assert main.ops == 5 + 3 + 2 + 1
    assert main.op_counts["hlo.exponential"] == 1
    assert structure.total_ops == main.ops + 1  # and negate's, called

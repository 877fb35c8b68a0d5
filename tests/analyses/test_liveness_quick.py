"""The quick answers the analyses give on modules where their subject is absent
must be the answers of the full analyses: `entry_arguments` against the
worklist of `analyze_liveness`.

Small modules pin down where the quick walk must give up (dead code, rules of
their own, arguments owned by HLO `parameter` instructions); the samples' dumps and
a spread of corpus modules check the two agree wherever the walk answers.
"""

import pytest

from conftest import DUMPS, require_corpus
from hloscope.analyses.liveness import analyze_liveness, call_sites, entry_arguments
from hloscope.ir import parse
from hloscope.sources import loader

S = "tensor<f32>"


def model(text):
    return parse.parse_mlir(text, "test.mlir").model


def full_answer(module):
    """(uses, live argument values) of the entry as the worklist gives them."""
    entry = module.entry
    liveness = analyze_liveness(module)
    uses = {a.value: 0 for a in entry.arguments if a.value >= 0}
    for op in module.function_ops(entry):
        for operand in op.operands:
            if operand in uses:
                uses[operand] += 1
    return uses, {value for value in uses if liveness.is_live(value)}


def assert_agrees(module):
    quick = entry_arguments(module)
    if quick is not None:
        uses, live = full_answer(module)
        assert dict(quick.uses) == uses
        assert set(quick.live) == live
    return quick


def test_a_module_without_dead_code_is_settled_by_the_walk():
    text = f"""
    func.func public @main(%a: {S}, %b: {S}, %c: {S}) -> {S} {{
      %s = stablehlo.add %a, %b : {S}
      %t = stablehlo.multiply %s, %a : {S}
      return %t : {S}
    }}"""
    quick = assert_agrees(model(text))
    assert quick is not None
    assert dict(quick.uses) == {0: 2, 1: 1, 2: 0}
    assert quick.live == {0, 1}


def test_regions_of_ordinary_ops_are_walked_through_their_terminators():
    text = f"""
    func.func public @main(%a: tensor<4xf32>, %init: {S}) -> {S} {{
      %r = stablehlo.reduce(%a init: %init) applies stablehlo.add across dimensions = [0]
        : (tensor<4xf32>, {S}) -> {S}
      return %r : {S}
    }}"""
    quick = assert_agrees(model(text))
    assert quick is not None
    assert quick.live == {0, 1}


def test_dead_code_leaves_the_answer_to_the_worklist():
    text = f"""
    func.func public @main(%a: {S}, %b: {S}) -> {S} {{
      %dead = stablehlo.multiply %b, %b : {S}
      %r = stablehlo.negate %a : {S}
      return %r : {S}
    }}"""
    assert entry_arguments(model(text)) is None


@pytest.mark.parametrize(
    "body",
    [
        # a tuple's element: only the extracted one is needed
        f"""%t = stablehlo.tuple %a, %b : tuple<{S}, {S}>
      %r = stablehlo.get_tuple_element %t[0] : (tuple<{S}, {S}>) -> {S}""",
        # a barrier: result i is operand i
        f"""%r, %u = stablehlo.optimization_barrier %a, %b : {S}, {S}""",
    ],
)
def test_ops_with_rules_of_their_own_leave_the_answer_to_the_worklist(body):
    text = f"""
    func.func public @main(%a: {S}, %b: {S}) -> {S} {{
      {body}
      return %r : {S}
    }}"""
    module = model(text)
    assert entry_arguments(module) is None
    assert full_answer(module)[1] == {0}


def test_a_call_leaves_the_answer_to_the_worklist():
    text = f"""
    func.func public @main(%a: {S}, %b: {S}) -> {S} {{
      %r = func.call @first(%a, %b) : ({S}, {S}) -> {S}
      return %r : {S}
    }}
    func.func private @first(%p: {S}, %q: {S}) -> {S} {{
      return %p : {S}
    }}"""
    module = model(text)
    assert entry_arguments(module) is None
    assert [op.function for op in call_sites(module)["first"]] == ["main"]


HLO_NATIVE = """HloModule module

ENTRY main {
  p = f64[3,4,5]{0,1,2} parameter(0)
  t = f32[5,4,3]{2,0,1} transpose(p), dimensions={2,1,0}
  ROOT out = abs(t)
}
"""


def test_arguments_owned_by_hlo_parameter_instructions_are_counted(tmp_path):
    # XLA's own form (this transpose's layouts fail the MLIR conversion): the
    # argument is the result of a `parameter` instruction, not a block argument.
    path = tmp_path / "native.hlo"
    path.write_text(HLO_NATIVE)
    module = loader.load(str(path), loader.LoadOptions()).module
    assert module.ops[1].name == "hlo.parameter"
    quick = assert_agrees(module)
    assert quick is not None
    assert dict(quick.uses) == {0: 1}
    assert quick.live == {0}


def test_the_samples_dumps_agree():
    for path in sorted(DUMPS.iterdir()):
        for optimized in (False, True):
            assert_agrees(loader.load(str(path), loader.LoadOptions(optimized=optimized)).module)


CORPUS_MODULES = [
    "gleasonk-stablehlo-exports/exports/pt_bert.mlir",
    "xla/xla/backends/cpu/benchmarks/hlo/resnet50_keras_jax_f32.hlo",
    "xla/xla/backends/cpu/benchmarks/hlo/bench_scan_N2000_M3.hlo",
    "xla/xla/tools/benchmarks/hlo/hlo_llama31_70b_bf16_32x8.hlo",
    "xla-cc-embedded-hlo/xla/service/layout_normalization_test.008.hlo",
    "xla-cc-embedded-hlo/xla/service/memory_space_assignment/simulator_test.004.hlo",
    "xla-cc-embedded-hlo/xla/hlo/analysis/hlo_ordering_test.007.hlo",
    "jax/export_back_compat_test_data/tpu_Sharding/data_2025_06_30_shardy.mlir",
    "jax/export_back_compat_test_data/stablehlo_dynamic_rng_bit_generator/data_2023_06_17.mlir",
    "shardy/shardy/dialect/mpmd/transforms/export/test/mark_aliasing_and_donation.mlir",
]


@pytest.mark.corpus
@pytest.mark.parametrize("relative", CORPUS_MODULES)
def test_corpus_modules_agree(relative):
    path = require_corpus() / relative
    assert_agrees(loader.load(str(path), loader.LoadOptions()).module)

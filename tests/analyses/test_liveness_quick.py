"""The walk that settles a function's arguments from its results alone
(`argument_liveness`, `entry_arguments`) must answer as the worklist of
`analyze_liveness` over the whole module does, or not at all.

Small modules pin down what it settles (ordinary ops, regions, loops, calls,
tuples, functions calling each other) and where it must give up (an argument read
only by dead code or by what an op does not pass on); the samples' dumps and a
spread of corpus modules check the two agree wherever the walk answers.
"""

import pytest

from conftest import DUMPS, require_corpus
from hloscope.analyses.liveness import (
    analyze_liveness,
    argument_liveness,
    call_sites,
    entry_arguments,
)
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
    """The walk's answers on `module`, checked against the worklist's: the entry's
    arguments, and the parameters of the private functions (their own results the
    roots) where the walk settles them."""
    quick = entry_arguments(module)
    if quick is not None:
        uses, live = full_answer(module)
        assert dict(quick.uses) == uses
        assert set(quick.live) == live
    entry = module.entry
    private = [
        f
        for f in module.functions.values()
        if f is not entry and not f.is_declaration and f.visibility != "public"
    ]
    together = argument_liveness(module, private) if private else None
    if together is not None:
        intrinsic = analyze_liveness(module, intrinsic=True)
        for function in private:
            parameters = {
                a.index
                for a in function.arguments
                if a.value in together.live and module.value_owner[a.value] == function.op.id
            }
            assert parameters == set(intrinsic.live_parameters.get(function.name, ()))
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
def test_an_argument_an_op_does_not_pass_on_leaves_the_answer_to_the_worklist(body):
    text = f"""
    func.func public @main(%a: {S}, %b: {S}) -> {S} {{
      {body}
      return %r : {S}
    }}"""
    module = model(text)
    assert entry_arguments(module) is None
    assert full_answer(module)[1] == {0}


def test_tuples_barriers_loops_and_calls_are_followed_by_their_own_rules():
    text = f"""
    func.func public @main(%a: {S}, %b: {S}, %n: tensor<i32>) -> ({S}, {S}) {{
      %t = stablehlo.tuple %a, %b : tuple<{S}, {S}>
      %x = stablehlo.get_tuple_element %t[0] : (tuple<{S}, {S}>) -> {S}
      %y = stablehlo.get_tuple_element %t[1] : (tuple<{S}, {S}>) -> {S}
      %p, %q = stablehlo.optimization_barrier %x, %y : {S}, {S}
      %zero = stablehlo.constant dense<0> : tensor<i32>
      %r:2 = stablehlo.while(%i = %zero, %acc = %p) : tensor<i32>, {S}
      cond {{
        %c = stablehlo.compare LT, %i, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
        stablehlo.return %c : tensor<i1>
      }} do {{
        %one = stablehlo.constant dense<1> : tensor<i32>
        %i2 = stablehlo.add %i, %one : tensor<i32>
        %acc2 = stablehlo.add %acc, %q : {S}
        stablehlo.return %i2, %acc2 : tensor<i32>, {S}
      }}
      %s = func.call @first(%r#1, %a) : ({S}, {S}) -> {S}
      return %s, %q : {S}, {S}
    }}
    func.func private @first(%p: {S}, %q: {S}) -> {S} {{
      return %p : {S}
    }}"""
    module = model(text)
    quick = assert_agrees(module)
    assert quick is not None
    assert dict(quick.uses) == {0: 2, 1: 1, 2: 1}
    assert quick.live == {0, 1, 2}


def test_a_call_that_ignores_the_argument_leaves_the_answer_to_the_worklist():
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
    assert full_answer(module)[1] == {0}
    assert [op.function for op in call_sites(module)["first"]] == ["main"]


def test_functions_calling_each_other_are_settled_together():
    # Intrinsic liveness of the private functions: each one's results are roots.
    # @outer's %b reaches its result only through @inner's parameter.
    text = f"""
    func.func public @main(%a: {S}, %b: {S}) -> {S} {{
      %r = func.call @outer(%a, %b) : ({S}, {S}) -> {S}
      return %r : {S}
    }}
    func.func private @outer(%a: {S}, %b: {S}) -> {S} {{
      %r = func.call @inner(%b) : ({S}) -> {S}
      %s = stablehlo.add %r, %a : {S}
      return %s : {S}
    }}
    func.func private @inner(%x: {S}) -> {S} {{
      %y = stablehlo.negate %x : {S}
      return %y : {S}
    }}"""
    module = model(text)
    private = [module.functions["outer"], module.functions["inner"]]
    quick = argument_liveness(module, private)
    assert quick is not None
    intrinsic = analyze_liveness(module, intrinsic=True)
    for function in private:
        assert {a.index for a in function.arguments if a.value in quick.live} == set(
            intrinsic.live_parameters[function.name]
        )


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
    "xla/xla/backends/cpu/benchmarks/hlo/gemma2_2b_keras_jax.hlo",
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

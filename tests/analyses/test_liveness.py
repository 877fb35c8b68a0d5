"""Backward liveness: which parameters can contribute to a result.

Small StableHLO modules, parsed by jaxlib, pin down each rule (calls, loops,
branches, tuples, side effects); real JAX lowerings check that nothing feeding a
result through a call, a loop or a branch is ever called unused.
"""

import jax
import jax.numpy as jnp
import pytest

from hloscope.analyses.liveness import analyze_liveness
from hloscope.ir import parse


def model(text):
    return parse.parse_mlir(text, "test.mlir").model


def live_parameters(text, function="main", intrinsic=False):
    """Indices of `function`'s live parameters."""
    module = model(text)
    liveness = analyze_liveness(module, intrinsic=intrinsic)
    return [a.index for a in module.functions[function].arguments if liveness.is_live(a.value)]


def lowered_model(fun, *args):
    lowered = jax.jit(fun).lower(*args)
    return parse.parse_mlir(lowered.as_text(), "lowered.mlir").model


S = "tensor<f32>"


def test_a_parameter_read_only_by_dead_ops_is_unused():
    text = f"""
    func.func public @main(%a: {S}, %b: {S}) -> {S} {{
      %dead = stablehlo.multiply %b, %b : {S}
      %dead2 = stablehlo.add %dead, %a : {S}
      %r = stablehlo.negate %a : {S}
      return %r : {S}
    }}"""
    assert live_parameters(text) == [0]


def test_tuple_elements_are_tracked_through_get_tuple_element():
    text = f"""
    func.func public @main(%a: {S}, %b: {S}) -> {S} {{
      %t = stablehlo.tuple %a, %b : tuple<{S}, {S}>
      %x = stablehlo.get_tuple_element %t[1] : (tuple<{S}, {S}>) -> {S}
      return %x : {S}
    }}"""
    assert live_parameters(text) == [1]


def test_a_tuple_returned_whole_keeps_every_element():
    text = f"""
    func.func public @main(%a: {S}, %b: {S}) -> tuple<{S}, {S}> {{
      %t = stablehlo.tuple %a, %b : tuple<{S}, {S}>
      return %t : tuple<{S}, {S}>
    }}"""
    assert live_parameters(text) == [0, 1]


WHILE = f"""
func.func public @main(%n: tensor<i32>, %x: {S}, %carried: {S}, %addend: {S}) -> {S} {{
  %zero = stablehlo.constant dense<0> : tensor<i32>
  %r:4 = stablehlo.while(%i = %zero, %acc = %x, %k = %carried, %m = %n)
      : tensor<i32>, {S}, {S}, tensor<i32>
  cond {{
    %c = stablehlo.compare LT, %i, %m : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %c : tensor<i1>
  }} do {{
    %one = stablehlo.constant dense<1> : tensor<i32>
    %i2 = stablehlo.add %i, %one : tensor<i32>
    %acc2 = stablehlo.add %acc, %addend : {S}
    stablehlo.return %i2, %acc2, %k, %m : tensor<i32>, {S}, {S}, tensor<i32>
  }}
  return %r#1 : {S}
}}"""


def test_while_tracks_each_loop_carried_value():
    # n bounds the loop (the condition always matters), x is the accumulator's start,
    # addend reaches the result only inside the body, carried goes round unread.
    assert live_parameters(WHILE) == [0, 1, 3]


def test_a_carried_value_that_feeds_a_needed_one_is_needed():
    text = f"""
    func.func public @main(%x: {S}, %y: {S}) -> {S} {{
      %zero = stablehlo.constant dense<0> : tensor<i32>
      %r:3 = stablehlo.while(%i = %zero, %a = %x, %b = %y) : tensor<i32>, {S}, {S}
      cond {{
        %three = stablehlo.constant dense<3> : tensor<i32>
        %c = stablehlo.compare LT, %i, %three : (tensor<i32>, tensor<i32>) -> tensor<i1>
        stablehlo.return %c : tensor<i1>
      }} do {{
        %one = stablehlo.constant dense<1> : tensor<i32>
        %i2 = stablehlo.add %i, %one : tensor<i32>
        stablehlo.return %i2, %b, %a : tensor<i32>, {S}, {S}
      }}
      return %r#1 : {S}
    }}"""
    # The result is carried value 1, which after one iteration is carried value 2 (y).
    assert live_parameters(text) == [0, 1]


def test_case_needs_the_index_and_each_branch_result():
    text = f"""
    func.func public @main(%i: tensor<i32>, %a: {S}, %b: {S}, %c: {S}) -> {S} {{
      %r:2 = "stablehlo.case"(%i) ({{
        stablehlo.return %a, %c : {S}, {S}
      }}, {{
        %n = stablehlo.negate %b : {S}
        stablehlo.return %n, %c : {S}, {S}
      }}) : (tensor<i32>) -> ({S}, {S})
      return %r#0 : {S}
    }}"""
    # c is only in the second result, which nobody reads.
    assert live_parameters(text) == [0, 1, 2]


CALLS = f"""
func.func public @main(%x: {S}, %y: {S}, %z: {S}) -> {S} {{
  %r:2 = func.call @pair(%x, %y, %z) : ({S}, {S}, {S}) -> ({S}, {S})
  return %r#0 : {S}
}}
func.func private @pair(%a: {S}, %b: {S}, %c: {S}) -> ({S}, {S}) {{
  %s = func.call @first(%a, %b) : ({S}, {S}) -> {S}
  %t = stablehlo.add %b, %c : {S}
  return %s, %t : {S}, {S}
}}
func.func private @first(%p: {S}, %q: {S}) -> {S} {{
  return %p : {S}
}}"""


def test_calls_are_followed_per_parameter_and_per_result():
    # pair's second result is unused by main, so y and z feed nothing; first ignores q.
    assert live_parameters(CALLS) == [0]
    assert live_parameters(CALLS, "pair") == [0]
    assert live_parameters(CALLS, "first") == [0]


def test_intrinsic_liveness_judges_each_function_on_its_own():
    # On its own, pair computes its second result from b and c.
    assert live_parameters(CALLS, "pair", intrinsic=True) == [0, 1, 2]
    assert live_parameters(CALLS, "first", intrinsic=True) == [0]


def test_a_dead_call_site_does_not_make_its_operands_live():
    text = f"""
    func.func public @main(%x: {S}, %y: {S}) -> {S} {{
      %dead = func.call @id(%y) : ({S}) -> {S}
      %r = func.call @id(%x) : ({S}) -> {S}
      return %r : {S}
    }}
    func.func private @id(%p: {S}) -> {S} {{
      return %p : {S}
    }}"""
    assert live_parameters(text) == [0]


def test_recursive_calls_reach_a_fixed_point():
    text = f"""
    func.func public @main(%x: {S}, %y: {S}) -> {S} {{
      %r = func.call @ping(%x, %y) : ({S}, {S}) -> {S}
      return %r : {S}
    }}
    func.func private @ping(%a: {S}, %b: {S}) -> {S} {{
      %r = func.call @pong(%b, %a) : ({S}, {S}) -> {S}
      return %r : {S}
    }}
    func.func private @pong(%c: {S}, %d: {S}) -> {S} {{
      %r = func.call @ping(%c, %d) : ({S}, {S}) -> {S}
      %s = stablehlo.add %r, %c : {S}
      return %s : {S}
    }}"""
    # pong adds its first parameter; the calls swap the two arguments every round,
    # so both reach that add.
    assert live_parameters(text) == [0, 1]


SIDE_EFFECTS = f"""
func.func public @main(%logged: {S}, %pure: {S}, %in_loop: {S}, %via_call: {S}) -> {S} {{
  stablehlo.custom_call @log(%logged) {{has_side_effect = true}} : ({S}) -> ()
  %unused = stablehlo.custom_call @pure_kernel(%pure) : ({S}) -> {S}
  %zero = stablehlo.constant dense<0> : tensor<i32>
  %w:2 = stablehlo.while(%i = %zero, %v = %in_loop) : tensor<i32>, {S}
  cond {{
    %three = stablehlo.constant dense<3> : tensor<i32>
    %c = stablehlo.compare LT, %i, %three : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %c : tensor<i1>
  }} do {{
    %t = stablehlo.create_token : !stablehlo.token
    %t2 = "stablehlo.outfeed"(%v, %t) {{outfeed_config = ""}}
        : ({S}, !stablehlo.token) -> !stablehlo.token
    %one = stablehlo.constant dense<1> : tensor<i32>
    %i2 = stablehlo.add %i, %one : tensor<i32>
    stablehlo.return %i2, %v : tensor<i32>, {S}
  }}
  %ignored = func.call @prints(%via_call) : ({S}) -> {S}
  %c0 = stablehlo.constant dense<0.0> : {S}
  return %c0 : {S}
}}
func.func private @prints(%p: {S}) -> {S} {{
  stablehlo.custom_call @log(%p) {{has_side_effect = true}} : ({S}) -> ()
  return %p : {S}
}}"""


def test_side_effects_are_roots_even_in_loops_and_callees():
    module = model(SIDE_EFFECTS)
    liveness = analyze_liveness(module)
    live = [a.index for a in module.entry.arguments if liveness.is_live(a.value)]
    assert live == [0, 2, 3]
    assert liveness.effectful_functions == {"main", "prints"}


def test_pass_through_regions_map_operands_to_results():
    text = """
    sdy.mesh @mesh = <["x"=2]>
    func.func public @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
      %r:2 = sdy.manual_computation(%a, %b)
          in_shardings=[<@mesh, [{"x"}]>, <@mesh, [{"x"}]>]
          out_shardings=[<@mesh, [{"x"}]>, <@mesh, [{"x"}]>]
          manual_axes={"x"} (%la: tensor<2xf32>, %lb: tensor<2xf32>) {
        sdy.return %la, %lb : tensor<2xf32>, tensor<2xf32>
      } : (tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
      %o:2 = stablehlo.optimization_barrier %r#0, %r#1 : tensor<4xf32>, tensor<4xf32>
      return %o#1 : tensor<4xf32>
    }"""
    assert live_parameters(text) == [1]


def test_values_captured_by_a_region_are_live():
    text = f"""
    func.func public @main(%p: tensor<i1>, %a: {S}, %b: {S}) -> {S} {{
      %r = "stablehlo.if"(%p) ({{
        %s = stablehlo.add %a, %b : {S}
        stablehlo.return %s : {S}
      }}, {{
        stablehlo.return %a : {S}
      }}) : (tensor<i1>) -> {S}
      return %r : {S}
    }}"""
    assert live_parameters(text) == [0, 1, 2]


# --------------------------------------------------------------------------- real lowerings

X = jax.ShapeDtypeStruct((4,), jnp.float32)


def entry_live(module):
    liveness = analyze_liveness(module)
    return [liveness.is_live(a.value) for a in module.entry.arguments]


@pytest.mark.parametrize(
    ("name", "fun"),
    [
        ("cond", lambda p, x, y: jax.lax.cond(p > 0, lambda: x * 2, lambda: y + 1)),
        ("fori_loop", lambda p, x, y: jax.lax.fori_loop(0, 3, lambda i, c: c * x[0] + y[1], p)),
        (
            "scan",
            lambda p, x, y: jax.lax.scan(lambda c, xs: (c + xs * y[0], None), p, x)[0],
        ),
        ("nested jit", lambda p, x, y: jax.jit(lambda a, b: a * b)(x, y) + p),
        (
            "switch",
            lambda p, x, y: jax.lax.switch(
                p.astype(jnp.int32), [lambda: x, lambda: y, lambda: x * y]
            ),
        ),
        ("map", lambda p, x, y: jax.lax.map(lambda v: v * y[0] + p, x)),
    ],
)
def test_values_reaching_results_through_control_flow_are_used(name, fun):
    module = lowered_model(fun, jax.ShapeDtypeStruct((), jnp.float32), X, X)
    assert entry_live(module) == [True] * len(module.entry.arguments), name


def test_a_value_carried_through_a_jax_loop_but_never_read_is_unused():
    def fun(x, y):
        def body(c):
            return c[0] + 1, c[1] * 2, c[2]

        return jax.lax.while_loop(lambda c: c[0] < 3, body, (0, x, y))[1]

    module = lowered_model(fun, X, X)
    assert entry_live(module) == [True, False]

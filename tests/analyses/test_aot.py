"""The direct call against the AOT path: the analysis on real runs of the samples
(compute_on in both orders and around a call, functools.wraps wrappers, a plain
jit, keyword arguments and pytree outputs), and its pure parts on their own."""

import math

import ml_dtypes
import numpy as np
import pytest

from conftest import FIXTURES, SAMPLES
from hloscope import reports
from hloscope.analyses.aot import (
    Program,
    compare_paths,
    compare_result,
    normalized_text,
    tolerance,
)
from hloscope.ir import parse
from hloscope.runs import AotEntry, AotRuns, PathRun, ResultLeaf
from hloscope.sources import loader


def check(target: str, factory: str, aot: str | None = None) -> reports.AotReport:
    options = loader.LoadOptions(args_factory=factory)
    return reports.aot_check_report(loader.load_runs(target, options, aot))


def kinds(report: reports.AotReport) -> list[str]:
    return [d.kind for d in report.comparison.differences]


def outcome(report: reports.AotReport) -> dict[str, bool | None]:
    return {c.kind: c.same for c in report.comparison.checks}


COMPUTE_ON = str(SAMPLES / "compute_on.py")
AOT = str(SAMPLES / "aot.py")


# --------------------------------------------------------------------------- compute_on


def test_compute_on_outside_jit_runs_on_the_host_only_when_called():
    report = check("samples/compute_on.py:host_outside_jit", f"{COMPUTE_ON}:example_args")
    comparison = report.comparison
    assert comparison.verdict == "different"
    assert comparison.entry.via == "__wrapped__"
    assert comparison.entry.expression == "host_outside_jit.__wrapped__"
    assert kinds(report) == ["placement", "text"]
    placement = comparison.differences[0]
    assert "5 ops on the host" in placement.detail
    assert "the AOT module jit_host_outside_jit runs everything on the device" in placement.detail
    assert "compute_on" in placement.cause and "not part of what .lower() traces" in placement.cause
    text = comparison.differences[1]
    assert '_xla_compute_type = "host"' in text.detail
    # On the CPU, host and device are one processor: the values agree.
    assert outcome(report)["results"] is True
    assert [p.off_device_ops for p in comparison.call_programs] == [5]
    assert comparison.aot_program is not None and comparison.aot_program.off_device_ops == 0


@pytest.mark.parametrize("name", ["host_inside_jit", "host_call_inside_jit", "device_only"])
def test_compute_on_inside_jit_is_what_lower_compiles(name):
    report = check(f"samples/compute_on.py:{name}", f"{COMPUTE_ON}:example_args")
    assert report.verdict == "same", report.comparison.differences
    assert report.comparison.entry.via == "own"
    assert outcome(report) == {
        "placement": True,
        "parameters": True,
        "ops": True,
        "text": True,
        "results": True,
    }


@pytest.mark.parametrize("name", ["host_inside_jit", "host_call_inside_jit"])
def test_ops_off_the_device_are_counted_as_placement_counts_them(name):
    # One rule in both views: every op that computes in a host region, constants and
    # the call into a host function included.
    report = check(f"samples/compute_on.py:{name}", f"{COMPUTE_ON}:example_args")
    options = loader.LoadOptions(args_factory=f"{COMPUTE_ON}:example_args")
    placement = reports.placement_report(loader.load(f"samples/compute_on.py:{name}", options))
    host = placement.placement.compute_types["host"]
    assert [p.off_device_ops for p in report.comparison.call_programs] == [host]
    assert report.comparison.aot_program is not None
    assert report.comparison.aot_program.off_device_ops == host


def test_a_compute_on_context_around_a_call_of_a_jitted_function():
    # The target's own AOT path, jax.jit(step_on_host), traces the context too; the
    # call compiled `step` alone and the AOT module nests it: compared without text.
    report = check("samples/aot.py:step_on_host", f"{AOT}:example_args")
    assert report.verdict == "same", report.comparison.differences
    assert report.comparison.entry.name == "jax.jit(aot.step_on_host)"
    assert outcome(report)["text"] is None
    assert outcome(report)["placement"] is True
    # Lowering the jitted function itself, as a user holding `step` would, loses it.
    report = check("samples/aot.py:step_on_host", f"{AOT}:example_args", f"{AOT}:step")
    assert report.comparison.entry.via == "--aot"
    assert report.comparison.entry.name == "aot.step"
    assert kinds(report) == ["placement", "text"]
    assert "a context around the call" in report.comparison.differences[0].cause


# --------------------------------------------------------------------------- wrappers


def test_a_wraps_wrapper_swapping_arguments_is_bypassed():
    report = check("samples/wrapped.py:difference", "samples/wrapped.py:example_args")
    comparison = report.comparison
    assert comparison.verdict == "different"
    assert comparison.entry.name == "wrapped.difference"
    assert comparison.entry.expression == "difference.__wrapped__"
    assert "functools.wraps" in comparison.entry.reason
    assert kinds(report) == ["results"]
    (difference,) = comparison.differences
    # a = [0, 1, 2, 3], b = [1, 1, 1, 1]: b - a against a - b.
    assert difference.detail.startswith("result: max |call − AOT| = 4 (3 of 4 elements")
    assert difference.cause.startswith("the modules are identical but the results differ")
    assert "bypasses" in difference.cause
    (result,) = comparison.results
    assert (result.path, result.call_shape, result.max_abs_diff, result.mismatched) == (
        "result",
        "f32[4]",
        4.0,
        3,
    )
    assert outcome(report)["text"] is True


def test_a_wrapper_computing_before_the_jit_adds_a_program():
    report = check("samples/aot.py:prescaled", f"{AOT}:prescaled_args")
    comparison = report.comparison
    assert kinds(report) == ["ops", "results"]
    assert [p.name for p in comparison.call_programs] == ["jit_multiply", "jit_prescaled"]
    assert comparison.call_programs[comparison.counterpart or 0].name == "jit_prescaled"
    ops, results = comparison.differences
    assert ops.detail.startswith("besides jit_prescaled, the call compiled 1 program: jit_multiply")
    assert "code around it" in results.cause
    assert outcome(report)["text"] is True


def test_a_plain_jitted_function_is_no_false_alarm():
    report = check("samples/wrapped.py:plain_difference", "samples/wrapped.py:example_args")
    assert report.verdict == "same"
    assert report.comparison.differences == ()
    assert report.comparison.results[0].max_abs_diff == 0.0


# --------------------------------------------------------------------------- arguments


def test_a_keyword_argument_and_a_pytree_output():
    report = check("samples/aot.py:normalize", f"{AOT}:normalize_args")
    assert report.verdict == "same", report.comparison.differences
    assert [r.path for r in report.comparison.results] == [
        "result['stats'][0]",
        "result['stats'][1]",
        "result['y']",
    ]
    assert [(i.path, i.origin) for i in report.inputs] == [
        ("x", "generated"),
        ("axis", "python"),
        ("eps", "given"),
    ]


def test_a_donating_train_step_with_a_keyword_argument():
    report = check("samples/params.py:train_step", "samples/params.py:train_step_args")
    assert report.verdict == "same", report.comparison.differences
    assert report.comparison.entry.name == "params._train_step"
    assert [r.path for r in report.comparison.results] == [
        "result['b']",
        "result['unused_scale']",
        "result['w']",
    ]
    assert outcome(report)["parameters"] is True


def test_sharded_and_host_memory_inputs_are_placed_as_the_structs_say():
    report = check(
        "samples/params_sharded.py:host_offloaded", "samples/params_sharded.py:host_offloaded_args"
    )
    assert report.verdict == "same", report.comparison.differences
    shardings = [i.sharding for i in report.inputs]
    assert shardings[0] == "P('data',) over mesh(data=4, model=2)"
    assert shardings[1] == "P('data',) over mesh(data=4, model=2) in pinned_host"


# --------------------------------------------------------------------------- programs


def test_a_plain_function_calling_two_jits_is_two_programs():
    report = check("samples/aot.py:two_jits", f"{AOT}:two_jits_args")
    comparison = report.comparison
    assert comparison.entry.via == "jax.jit"
    assert comparison.counterpart is None
    assert kinds(report) == ["ops"]
    assert comparison.differences[0].detail.startswith(
        "the call ran 2 programs: jit_layer (4 ops), jit_head (3 ops), where the AOT path "
        "compiles one, jit_two_jits (7 ops)"
    )
    assert outcome(report) == {
        "placement": True,
        "parameters": None,
        "ops": False,
        "text": None,
        "results": True,
    }


def test_a_function_compiled_when_its_module_was_imported_is_still_seen():
    target = f"{FIXTURES / 'aot_targets.py'}:sine"
    report = check(target, f"{FIXTURES / 'aot_targets.py'}:sine_args")
    assert [p.name for p in report.comparison.call_programs] == ["jit_sine"]
    assert report.verdict == "same"


def test_a_donated_input_is_made_afresh_for_each_path():
    options = loader.LoadOptions(args=("f32[4]",))
    report = reports.aot_check_report(
        loader.load_runs(f"{FIXTURES / 'aot_targets.py'}:donates", options)
    )
    assert report.verdict == "same"


def test_the_compile_hook_is_restored_when_the_call_raises():
    from jax._src import compiler

    from hloscope.errors import HloscopeError

    original = compiler.compile_or_get_cached
    options = loader.LoadOptions(args=("f32[4]",))
    with pytest.raises(HloscopeError, match="calling it raised RuntimeError"):
        loader.load_runs(f"{FIXTURES / 'aot_targets.py'}:raises_when_called", options)
    assert compiler.compile_or_get_cached is original


# --------------------------------------------------------------------------- pure parts


SUBTRACT = """module @{name} {{
  func.func public @main(%arg0: tensor<4xf32>, %arg1: tensor<4xf32>) -> tensor<4xf32> {{
    %0 = stablehlo.subtract {a}, {b} : tensor<4xf32>
    return %0 : tensor<4xf32>
  }}
}}
"""


def program(text: str) -> Program:
    parsed = parse.parse_mlir(text, "test.mlir")
    return Program(parsed.model.name or "", parsed.model, parsed.text())


def leaf(values: list[float], dtype: object = "float32") -> ResultLeaf:
    array = np.asarray(values, dtype=dtype)
    return ResultLeaf("result", f"x[{array.size}]", array.dtype.name, array)


def runs(call: list[float], aot: list[float]) -> AotRuns:
    entry = AotEntry("m.f", "own", "f", "because")

    def path(values: list[float]) -> PathRun:
        return PathRun((), "PyTreeDef(*)", (leaf(values),), 0.0, ())

    return AotRuns(entry, (), 0, path(call), path(aot), None, None)


def test_swapped_operands_show_in_the_text_only():
    call = program(SUBTRACT.format(name="jit_f", a="%arg0", b="%arg1"))
    aot = program(SUBTRACT.format(name="jit_f", a="%arg1", b="%arg0"))
    comparison = compare_paths(runs([1, 2], [-1, -2]), [call], aot)
    assert [d.kind for d in comparison.differences] == ["text", "results"]
    text, results = comparison.differences
    assert text.detail.startswith("1 line of 6 differs; first at line 3:")
    assert "call `%2 = stablehlo.subtract %0, %1 : tensor<4xf32>`" in text.detail
    assert "AOT `%2 = stablehlo.subtract %1, %0 : tensor<4xf32>`" in text.detail
    assert "operand order" in text.cause
    assert results.cause.startswith("the call and the AOT path run different programs")


def test_a_call_that_compiled_nothing():
    aot = program(SUBTRACT.format(name="jit_f", a="%arg0", b="%arg1"))
    comparison = compare_paths(runs([1, 2], [1, 2]), [], aot)
    assert [d.kind for d in comparison.differences] == ["ops"]
    assert comparison.differences[0].detail.startswith("the call compiled no XLA program")


def test_text_normalisation_drops_names_not_structure():
    a = normalized_text(SUBTRACT.format(name="jit_f", a="%arg0", b="%arg1"))
    b = normalized_text(
        SUBTRACT.format(name="jit_g", a="%x", b="%y").replace("%arg0", "%x").replace("%arg1", "%y")
    )
    assert a == b
    assert a[0].startswith("module @module")
    assert normalized_text(SUBTRACT.format(name="f", a="%arg1", b="%arg0")) != a


def test_tolerances_by_dtype():
    assert tolerance("float32") == (1e-5, 1e-6)
    assert tolerance("bfloat16")[0] > tolerance("float16")[0] > tolerance("float32")[0]
    assert tolerance("int32") == (0.0, 0.0)
    assert tolerance("bool") == (0.0, 0.0)
    assert tolerance("float8_e4m3fn")[0] > tolerance("bfloat16")[0]


def test_comparing_result_leaves():
    close = compare_result(leaf([1.0, 2.0]), leaf([1.0 + 1e-7, 2.0]))
    assert close.same and close.max_abs_diff is not None and close.max_abs_diff > 0
    far = compare_result(leaf([1.0, 2.0]), leaf([1.0, 2.1]))
    assert not far.same and far.mismatched == 1
    assert math.isclose(far.max_abs_diff or 0, 0.1, rel_tol=1e-5)
    nan = compare_result(leaf([float("nan"), 1.0]), leaf([float("nan"), 1.0]))
    assert nan.same and nan.max_abs_diff == 0.0
    one_nan = compare_result(leaf([float("nan")]), leaf([1.0]))
    assert not one_nan.same and one_nan.max_abs_diff is not None
    assert math.isnan(one_nan.max_abs_diff)
    ints = compare_result(leaf([1, 2], "int32"), leaf([1, 3], "int32"))
    assert not ints.same and ints.rtol == 0 and ints.max_abs_diff == 1.0
    bf16 = compare_result(
        leaf([1.0, 2.0], ml_dtypes.bfloat16), leaf([1.0, 2.0078125], ml_dtypes.bfloat16)
    )
    assert bf16.same
    shapes = compare_result(leaf([1.0, 2.0]), leaf([1.0, 2.0, 3.0]))
    assert not shapes.same and shapes.max_abs_diff is None


def test_large_modules_are_compared_line_by_line():
    from hloscope.analyses.aot.text import MAX_DIFFED_LINES, line_changes

    mine = [f"%{i} = stablehlo.add %0, %0" for i in range(MAX_DIFFED_LINES + 10)]
    theirs = list(mine)
    theirs[7] = "%7 = stablehlo.multiply %0, %0"
    assert line_changes(mine, theirs) == (1, (8, mine[7], theirs[7]))
    assert line_changes(mine, theirs[:-2])[0] == 3


CONSTANT = """module @jit_f {{
  func.func public @main() -> tensor<64xf32> {{
    %0 = stablehlo.constant dense<[{values}]> : tensor<64xf32>
    return %0 : tensor<64xf32>
  }}
}}
"""


def test_constants_are_printed_in_full_for_the_comparison():
    values = ", ".join(f"{i}.0" for i in range(64))
    parsed = parse.parse_mlir(CONSTANT.format(values=values), "test.mlir")
    assert "63.0" not in parsed.text()  # elided by default
    assert "6.300000e+01" in parsed.text(elements_limit=reports.AOT_TEXT_ELEMENTS)

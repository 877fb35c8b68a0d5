"""Parameter usage and source lines on XLA's own form of an optimized module (what
hloscope shows when the module does not convert to MLIR: a tuple all-to-all with
`replica_groups=mesh[...]`), on real sharded programs compiled for 8 CPU devices.

XLA's answer: which entry parameters of the compiled module have users (XLA's own
`HloInstruction.users()`, after XLA's dead-code elimination), the entry's result
shape (`program_shape()`), and the locations XLA's own converter writes from the
instructions' metadata. JAX's answer: which arguments `jax.jit` keeps when it
prunes unused ones (`keep_unused=False`)."""

import importlib.util
import re
from pathlib import Path

import jax
import jax.numpy as jnp
import jaxlib._hlo as xla_hlo
import pytest

from conftest import line_of
from hloscope.analyses.liveness import analyze_liveness, entry_arguments
from hloscope.analyses.params import analyze_params
from hloscope.analyses.placement import analyze_placement
from hloscope.ir.hlo import from_hlo_proto
from hloscope.ir.hlo_native import build_hlo_native_model
from hloscope.ir.types import parse_type, type_bytes
from hloscope.sources import loader

COLLECTIVES = "tests/fixtures/collective_targets.py"
TRAINING = "tests/fixtures/native_liveness_targets.py"
PROGRAMS = [(COLLECTIVES, "fsdp_step"), (TRAINING, "train_step")]


def fixture_module(path):
    spec = importlib.util.spec_from_file_location(path.rsplit("/", 1)[-1][:-3], path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def entry_computation(module, text):
    """XLA's entry computation of a module it printed as `text`."""
    name = text.split("\nENTRY %", 1)[1].split(" ", 1)[0]
    (entry,) = [c for c in module.computations() if c.name == name]
    return entry


def xla_used_parameters(text):
    """XLA's answer: the entry parameters that some instruction of the optimized
    module reads (XLA removed every dead instruction)."""
    module = xla_hlo.hlo_module_from_text(text)
    used = set()
    for instruction in entry_computation(module, text).instructions():
        printed = str(instruction.to_string())
        number = re.search(r" parameter\((\d+)\)", printed)
        if number and "parameter" in str(instruction.opcode).lower() and instruction.users():
            used.add(int(number.group(1)))
    return used


def jax_kept_arguments(function, args):
    """JAX's answer: how many arguments `jax.jit` keeps when it prunes unused ones
    (`keep_unused=False`): the parameters of the module it compiles."""
    compiled = jax.jit(function).lower(*args).compile()
    module = xla_hlo.hlo_module_from_text(compiled.as_text())
    program = xla_hlo.XlaComputation(module.as_serialized_hlo_module_proto()).program_shape()
    return len(program.parameter_shapes())


def hloscope_statuses(usage):
    return {p.hlo_index: p.status for p in usage.parameters if p.hlo_index is not None}


@pytest.mark.parametrize(("path", "name"), PROGRAMS)
def test_the_optimized_module_in_xlas_form_reads_the_parameters_xla_reads(path, name):
    targets = fixture_module(path)
    args = getattr(targets, f"{name}_args")()
    compiled = getattr(targets, name).lower(*args).compile()
    text = compiled.as_text()
    used = xla_used_parameters(text)
    count = len(jax.tree.leaves(args))
    assert used  # the program reads its arguments

    options = loader.LoadOptions(args_factory=f"{path}:{name}_args", optimized=True)
    loaded = loader.load(f"{path}:{name}", options)
    assert loaded.source.ir == "hlo-native"  # the case at hand: no MLIR conversion
    statuses = hloscope_statuses(analyze_params(loaded.module, loaded.lowering))
    assert len(statuses) == count
    assert {i for i, status in statuses.items() if status == "used"} == used
    assert {i for i, status in statuses.items() if status == "unused"} == set(range(count)) - used

    # The same module read from XLA's text, and the worklist over the whole module
    # (not only the quick walk from the entry's results), agree.
    native = build_hlo_native_model(xla_hlo.hlo_module_from_text(text))
    entry = native.entry
    liveness = analyze_liveness(native)
    assert {a.index for a in entry.arguments if liveness.is_live(a.value)} == used
    quick = entry_arguments(native)
    assert quick is not None
    assert {a.index for a in entry.arguments if a.value in quick.live} == used

    # The lowered module (before XLA) says the same.
    lowered = loader.load(f"{path}:{name}", loader.LoadOptions(args_factory=options.args_factory))
    before = hloscope_statuses(analyze_params(lowered.module, lowered.lowering))
    assert before == statuses


def test_jax_keeps_the_arguments_the_optimized_module_reads():
    """JAX's own pruning agrees with XLA's: the FSDP step reads all 8 weights and
    batches; the training step all but the step counter it kept on request."""
    collective = fixture_module(COLLECTIVES)
    args = collective.fsdp_step_args()
    text = collective.fsdp_step.lower(*args).compile().as_text()
    assert len(xla_used_parameters(text)) == 8
    assert jax_kept_arguments(collective.fsdp_step.__wrapped__, args) == 8
    training = fixture_module(TRAINING)
    args = training.train_step_args()
    count = len(jax.tree.leaves(args))
    used = xla_used_parameters(training.train_step.lower(*args).compile().as_text())
    assert used == set(range(count - 1))  # all but the step counter, the last
    assert jax_kept_arguments(training._train_step, args) == count - 1


def test_the_root_is_the_entrys_result_wherever_xla_prints_it():
    """A scheduled module prints its ROOT before a loop kept for its side effect (a
    callback that reads `y`): `x` feeds the result, `y` only the side effect, and
    both are read."""

    def f(x, y):
        def body(i, carry):
            jax.debug.callback(lambda v: None, y * i)
            return carry

        jax.lax.fori_loop(0, 3, body, x)
        return x * 2

    compiled = jax.jit(f).lower(jnp.ones(4), jnp.ones(4)).compile()
    text = compiled.as_text()
    module = xla_hlo.hlo_module_from_text(text)
    entry = entry_computation(module, text)
    entry_lines = text.split("\nENTRY ", 1)[1].split("\n}", 1)[0].splitlines()
    assert any(line.lstrip().startswith("ROOT ") for line in entry_lines)
    assert not entry_lines[-1].lstrip().startswith("ROOT ")  # the case at hand
    assert len(list(entry.instructions())) == len(entry_lines) - 1
    assert xla_used_parameters(text) == {0, 1}

    native = build_hlo_native_model(module)
    assert {p.hlo_index: p.status for p in analyze_params(native).parameters} == {
        0: "used",
        1: "used",
    }
    # The function's result is XLA's: its ROOT's shape.
    program = xla_hlo.XlaComputation(module.as_serialized_hlo_module_proto()).program_shape()
    result = program.result_shape()
    (declared,) = native.entry.results
    (tensor,) = parse_type(declared.type)
    assert tuple(tensor.shape) == tuple(result.dimensions())
    assert type_bytes(declared.type) == 16


def test_locations_are_the_converters_and_give_collective_sources():
    """Where a module converts, XLA's own form has the converter's locations (op name
    around the source frames from the stack frame index); where it does not (the
    FSDP step), the collectives keep their source lines."""

    def f(x, w):
        def body(carry, layer):
            return jnp.tanh(carry @ layer), carry.sum()

        return jax.lax.scan(body, x, w)

    compiled = jax.jit(f).lower(jnp.ones((4, 4)), jnp.ones((3, 4, 4))).compile()
    module = xla_hlo.hlo_module_from_text(compiled.as_text())
    parsed = from_hlo_proto(
        module.as_serialized_hlo_module_proto(), str(module.to_string()), "f", []
    )
    assert parsed.format == "hlo"  # converted by XLA's converter
    converted = parsed.model
    expected = {op.hlo_name: op.location_text for op in converted.ops if op.hlo_name}
    native = build_hlo_native_model(module)
    found = {op.hlo_name: op.location_text for op in native.ops if op.hlo_name in expected}
    assert len(found) >= 10
    assert found == {name: expected[name] for name in found}
    assert any(op.location.frames for op in native.ops)

    collective = fixture_module(COLLECTIVES)
    args = collective.fsdp_step_args()
    text = collective.fsdp_step.lower(*args).compile().as_text()
    native = build_hlo_native_model(xla_hlo.hlo_module_from_text(text))
    update = line_of(Path(COLLECTIVES), "p - 0.1 * g")
    sources = {c.op: c.sources for c in analyze_placement(native).collectives}
    assert sources["all_to_all"] == (f"{collective.__file__}:{update}",)
    assert all(sources.values())


@pytest.mark.parametrize("index", [0, 1])
def test_a_get_tuple_element_reads_only_its_element(index):
    """XLA's `get-tuple-element` of a tuple built in the same computation reads that
    element alone (index 0 is the proto's default, left out of XLA's proto)."""
    text = (
        "HloModule m\n\nENTRY e {\n"
        "  p0 = f32[2]{0} parameter(0)\n  p1 = f32[3]{0} parameter(1)\n"
        "  t = (f32[2]{0}, f32[3]{0}) tuple(p0, p1)\n"
        f"  ROOT g = f32[{2 + index}]{{0}} get-tuple-element(t), index={index}\n}}\n"
    )
    native = build_hlo_native_model(xla_hlo.hlo_module_from_text(text))
    (gte,) = [op for op in native.ops if op.name == "hlo.get-tuple-element"]
    assert gte.attributes["index"] == str(index)
    statuses = {p.hlo_index: p.status for p in analyze_params(native).parameters}
    assert statuses == {index: "used", 1 - index: "unused"}
    liveness = analyze_liveness(native)
    assert [liveness.is_live(a.value) for a in native.entry.arguments] == [
        index == 0,
        index == 1,
    ]

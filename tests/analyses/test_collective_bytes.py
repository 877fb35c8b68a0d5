"""Bytes of collectives equal the sum of XLA's own result shapes, on real sharded
programs compiled for 8 CPU devices, whichever way the optimized module is read
(converted to MLIR, or XLA's own form where the conversion fails: the FSDP step's
`replica_groups=mesh[...]` does not convert). XLA prints a long tuple shape with
`/*index=5*/` comments, which once dropped its sixth element.

XLA's answer: each instruction's shape in the compiled module's text, read by XLA's
own parser into `Shape` objects (`tuple_shapes()`, `dimensions()`, `numpy_dtype()`);
JAX's: the bytes of one device's shard."""

import importlib.util
import math
import re
from collections import Counter

import jaxlib._hlo as xla_hlo
import pytest

from hloscope.analyses.placement import analyze_placement
from hloscope.ir.hlo_native import build_hlo_native_model, xla_shapes_as_mlir
from hloscope.ir.types import hlo_shape, parse_type, type_bytes
from hloscope.sources import loader

TARGETS = "tests/fixtures/collective_targets.py"
COLLECTIVES = ("all-to-all", "all-gather", "all-reduce", "reduce-scatter", "collective-permute")
INSTRUCTION = re.compile(r"^\s*(?:ROOT\s+)?%\S+ = (?P<shape>.+?) (?P<opcode>[a-z][\w-]*)\(")


# ---------------------------------------------------------------- XLA's answers


def xla_shape(text):
    """XLA's `Shape` of an HLO shape as XLA prints it, read by XLA's parser."""
    module = xla_hlo.hlo_module_from_text(
        f"HloModule s\n\nENTRY s {{\n  ROOT p = {text} parameter(0)\n}}\n"
    )
    program = xla_hlo.XlaComputation(module.as_serialized_hlo_module_proto()).program_shape()
    (shape,) = program.parameter_shapes()
    return shape


def shape_bytes(shape):
    if shape.is_tuple():
        return sum(shape_bytes(part) for part in shape.tuple_shapes())
    return math.prod(shape.dimensions()) * shape.numpy_dtype().itemsize


def xla_collective_bytes(hlo_text):
    """Op kind (`all_to_all`) -> the summed bytes of XLA's result shapes of every
    collective of that kind in the module, and how many tuple shapes XLA printed
    with index comments."""
    totals: Counter[str] = Counter()
    commented = 0
    for line in hlo_text.splitlines():
        match = INSTRUCTION.match(line)
        if match and match.group("opcode") in COLLECTIVES:
            shape = match.group("shape")
            commented += "/*index=" in shape
            totals[match.group("opcode").replace("-", "_")] += shape_bytes(xla_shape(shape))
    return dict(totals), commented


def compiled_text(name):
    spec = importlib.util.spec_from_file_location("collective_targets", TARGETS)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    args = getattr(module, f"{name}_args")()
    compiled = getattr(module, name).lower(*args).compile()
    return compiled.as_text(), args


def hloscope_bytes(module):
    placement = analyze_placement(module)
    assert all(c.async_count == 0 for c in placement.collectives)
    return {c.op: c.bytes for c in placement.collectives}


def loaded_module(name):
    options = loader.LoadOptions(args_factory=f"{TARGETS}:{name}_args", optimized=True)
    return loader.load(f"{TARGETS}:{name}", options)


# ---------------------------------------------------------------- real programs


@pytest.mark.parametrize("name", ["all_to_all", "fsdp_step"])
def test_collective_bytes_are_xla_shapes_summed(name):
    text, args = compiled_text(name)
    expected, commented = xla_collective_bytes(text)
    assert commented >= 1  # the case at hand: a tuple shape with /*index=5*/
    loaded = loaded_module(name)
    assert hloscope_bytes(loaded.module) == expected
    # XLA's own form, which the optimized module falls back to when the conversion
    # fails, reads the same shapes the same way.
    native = build_hlo_native_model(xla_hlo.hlo_module_from_text(text))
    assert hloscope_bytes(native) == expected
    if name == "all_to_all":
        # JAX's answer: each device exchanges its whole shard, 8 x f32[8,1,8].
        shard = args[0].addressable_shards[0].data
        assert expected == {"all_to_all": shard.nbytes} == {"all_to_all": 2048}


def test_the_cli_reports_the_fsdp_steps_collective_bytes(cli):
    text, _ = compiled_text("fsdp_step")
    expected, _ = xla_collective_bytes(text)
    run = cli(
        "placement",
        f"{TARGETS}:fsdp_step",
        "--args",
        f"{TARGETS}:fsdp_step_args",
        "--compile",
        "--json",
    )
    assert run.code == 0, run.stderr
    found = {c["op"]: c["bytes"] for c in run.json()["collectives"]}
    assert found == expected
    assert set(expected) >= {"all_gather", "all_reduce", "all_to_all"}


# ---------------------------------------------------------------- shapes, one by one


SHAPES = [
    # Long tuples carry index comments.
    "(f32[1,8]{1,0}, f32[2]{0}, f32[2]{0}, f32[2]{0}, f32[2]{0}, /*index=5*/f32[3,3]{1,0})",
    "(s32[], (u8[3]{0}, bf16[2,2]{1,0}), f32[4]{0:S(5)})",  # nested, a memory space
    "f32[8,128]{1,0:T(8,128)}",  # tiled layout
    "f32[<=4,3]{1,0}",  # a bounded dynamic dimension: XLA allocates the bound
    "f8e4m3fn[16]{0}",
    "c64[2]{0}",
    "pred[5]{0}",
    "f32[]",
]


@pytest.mark.parametrize("text", SHAPES)
def test_hlo_shapes_read_by_xla_become_their_bytes(text):
    mlir = xla_shapes_as_mlir([text])[text]
    assert type_bytes(mlir) == shape_bytes(xla_shape(text))
    # Every array of the shape is kept, in XLA's order, with XLA's dimensions.
    assert [(t.shape, t.bounds) for t in parse_type(mlir)] == xla_arrays(xla_shape(text))


def xla_arrays(shape):
    """(dimensions, bounds) of each array of an XLA shape, tuples flattened."""
    if shape.is_tuple():
        return [array for part in shape.tuple_shapes() for array in xla_arrays(part)]
    dims = tuple(shape.dimensions())
    dynamic = [shape.is_dynamic_dimension(i) for i in range(len(dims))]
    if not any(dynamic):
        return [(dims, None)]
    shown = tuple(None if dyn else d for d, dyn in zip(dims, dynamic, strict=True))
    bounds = tuple(d if dyn else None for d, dyn in zip(dims, dynamic, strict=True))
    return [(shown, bounds)]


def test_a_tuple_with_index_comments_keeps_every_element():
    text = SHAPES[0]
    mlir = xla_shapes_as_mlir([text])[text]
    assert [t.hlo for t in parse_type(mlir)] == [
        "f32[1,8]",
        "f32[2]",
        "f32[2]",
        "f32[2]",
        "f32[2]",
        "f32[3,3]",
    ]
    assert type_bytes(mlir) == 32 + 4 * 8 + 36


def test_bounded_dimensions_count_at_their_bound():
    # As XLA's converter writes `f32[<=4,3]`, and as XLA's own form now does.
    converted = "tensor<?x3xf32, #stablehlo.bounds<4, ?>>"
    assert xla_shapes_as_mlir(["f32[<=4,3]{1,0}"])["f32[<=4,3]{1,0}"] == converted
    assert hlo_shape(converted) == "f32[<=4,3]"
    assert type_bytes(converted) == shape_bytes(xla_shape("f32[<=4,3]")) == 48
    assert type_bytes("tensor<?x3xf32>") is None  # unbounded: unknown

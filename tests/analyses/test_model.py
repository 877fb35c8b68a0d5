"""The model's pure helpers: locations, types, attributes."""

from hloscope.ir.attributes import parse_dict_attribute, string_attribute, symbol_references
from hloscope.ir.locations import Frame, Location, parse_location
from hloscope.ir.types import hlo_shape, parse_type, type_bytes


def test_unknown_location():
    assert parse_location("loc(unknown)").is_unknown


def test_jax_location_with_name_stack_and_frames():
    text = (
        'loc("jit(f)/jit(inner)/mul"(callsite("inner"("/tmp/a.py":4:21 to :33) at '
        'callsite("f"("/tmp/a.py":9:8) at "<module>"("/tmp/a.py":13:3)))))'
    )
    loc = parse_location(text)
    assert loc.name == "jit(f)/jit(inner)/mul"
    assert loc.frames == (
        Frame("inner", "/tmp/a.py", 4, 21),
        Frame("f", "/tmp/a.py", 9, 8),
        Frame("<module>", "/tmp/a.py", 13, 3),
    )
    assert loc.source == "/tmp/a.py:4"


def test_hlo_instruction_name_location():
    assert parse_location('loc("fusion.3")') == Location(("fusion.3",))


def test_plain_file_location_and_range():
    assert parse_location('loc("x.py":3:4 to 5:6)').frames == (Frame(None, "x.py", 3, 4),)


def test_fused_location_collects_names_and_frames():
    loc = parse_location('loc(fused["a", "b"("f.py":1:2)])')
    assert loc.names == ("a",)
    assert loc.frames == (Frame("b", "f.py", 1, 2),)


def test_escaped_names():
    loc = parse_location('loc("params[\\22w\\22]")')
    assert loc.name == 'params["w"]'


def test_garbage_location_does_not_raise():
    assert parse_location("loc(((((") is not None


def test_tensor_types():
    (t,) = parse_type("tensor<8x128xf32>")
    assert t.hlo == "f32[8,128]"
    assert t.nbytes == 8 * 128 * 4
    assert parse_type("tensor<i1>")[0].hlo == "pred[]"
    assert parse_type("tensor<4xui8>")[0].hlo == "u8[4]"
    assert parse_type("tensor<?x4xbf16>")[0].hlo == "bf16[?,4]"
    assert parse_type("tensor<?x4xbf16>")[0].nbytes is None
    assert parse_type("tensor<2xcomplex<f32>>")[0].hlo == "c64[2]"
    assert parse_type("tensor<3xf8E4M3FN>")[0].hlo == "f8e4m3fn[3]"
    assert parse_type("tensor<4xf32, #stablehlo.bounds<?>>")[0].hlo == "f32[4]"
    assert parse_type("!stablehlo.token")[0].dtype == "token"


def test_tuple_types():
    assert hlo_shape("tuple<tensor<2xf32>, tensor<i32>>") == "(f32[2], s32[])"
    assert type_bytes("tuple<tensor<2xf32>, tensor<i32>>") == 12


def test_dict_attribute():
    parsed = parse_dict_attribute('{_xla_compute_type = "host", _other = 1 : i32}')
    assert parsed == {"_xla_compute_type": "host", "_other": "1 : i32"}


def test_string_attribute_and_symbols():
    assert string_attribute('"{replicated}"') == "{replicated}"
    assert symbol_references("[@a, @b.c]") == ["a", "b.c"]
    assert symbol_references('@"odd name"') == ["odd name"]

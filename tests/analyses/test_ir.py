"""Parsing through jaxlib and the model built from it."""

import re

import pytest

from conftest import DUMPS, SAMPLES, line_of
from hloscope.errors import HloscopeError
from hloscope.ir import parse

DENSE_LINE = f"samples/nested_jits.py:{line_of(SAMPLES / 'nested_jits.py', 'x @ w + b')}"


def parse_file(path):
    data = path.read_bytes()
    if path.suffix == ".hlo":
        return parse.parse_hlo_text(data.decode(), str(path))
    return parse.parse_mlir(data, str(path))


def test_stablehlo_text_model():
    parsed = parse_file(DUMPS / "mlp.stablehlo.mlir")
    module = parsed.model
    assert parsed.format == "stablehlo"
    assert module.name == "jit_mlp"
    assert list(module.functions) == ["main", "dense", "relu", "head"]
    main = module.entry
    assert main is not None and main.name == "main" and main.visibility == "public"
    assert [a.name for a in main.arguments][:2] == ["params[0]['b']", "params[0]['w']"]
    assert main.arguments[1].shape == "f32[64,64]"
    calls = [op for op in module.function_ops(main) if op.name == "func.call"]
    assert [op.attributes["callee"] for op in calls] == ["@dense", "@dense", "@dense", "@head"]


def test_every_operand_is_defined_before_use():
    module = parse_file(DUMPS / "mlp.stablehlo.mlir").model
    for op in module.ops:
        for operand in op.operands:
            assert operand >= 0
            assert module.value_owner[operand] < op.id or op.id in range(
                module.value_owner[operand], module.ops[module.value_owner[operand]].end
            )


def test_value_names_follow_mlir_numbering():
    parsed = parse_file(DUMPS / "mlp.stablehlo.mlir")
    module = parsed.model
    text = parsed.text()
    dense = module.functions["dense"]
    for op in module.function_ops(dense):
        if len(op.results) == 1 and op.name != "stablehlo.constant":
            name = module.value_name(op.results[0])
            short = op.name.removeprefix("stablehlo.").removeprefix("func.")
            assert re.search(rf"{re.escape(name)} = (stablehlo\.|func\.)?{short}\b", text), name


def test_source_locations_survive_lowering():
    module = parse_file(DUMPS / "mlp.stablehlo.mlir").model
    dense = module.functions["dense"]
    dots = [op for op in module.function_ops(dense) if op.name == "stablehlo.dot_general"]
    assert dots
    loc = dots[0].location
    # Inside a nested jit's function the name stack is relative to that function.
    assert loc.name == "dot_general"
    assert loc.source == DENSE_LINE
    assert loc.frames[0].function == "dense"
    calls = [op for op in module.function_ops(module.entry) if op.name == "func.call"]
    assert calls[0].location.name == "jit(mlp)/jit(dense)"


def test_bytecode_and_text_give_the_same_model():
    text = parse_file(DUMPS / "mlp.stablehlo.mlir").model
    bytecode = parse.parse_mlir((DUMPS / "mlp.mlirbc").read_bytes(), "mlp.mlirbc").model
    assert [op.name for op in text.ops] == [op.name for op in bytecode.ops]
    assert [op.operands for op in text.ops] == [op.operands for op in bytecode.ops]


def test_portable_artifact_is_deserialized_to_stablehlo():
    parsed = parse.parse_mlir((DUMPS / "mlp.vhlo.mlirbc").read_bytes(), "mlp.vhlo.mlirbc")
    assert parsed.format == "vhlo"
    assert not any(op.dialect == "vhlo" for op in parsed.model.ops)
    assert "main" in parsed.model.functions


def test_optimized_hlo_keeps_fusions_and_source_lines():
    parsed = parse_file(DUMPS / "mlp.after_optimizations.hlo")
    assert parsed.format == "hlo"
    module = parsed.model
    fusions = [op for op in module.function_ops(module.entry) if op.name == "mhlo.fusion"]
    assert fusions
    assert all("fusion_kind" in op.attributes for op in fusions)
    inner = [op for f in fusions for op in module.descendants(f)]
    assert DENSE_LINE in {op.location.source for op in inner}
    assert "jit(mlp)/jit(dense)/add" in {op.location.name for op in inner}


def test_malformed_mlir_names_line_and_column():
    with pytest.raises(HloscopeError) as info:
        parse.parse_mlir("module {\n  func.func @f() {\n    %0 = nope\n  }\n}\n", "bad.mlir")
    assert info.value.where == "bad.mlir:3:10"


def test_truncated_bytecode_is_refused():
    data = (DUMPS / "mlp.mlirbc").read_bytes()[:300]
    with pytest.raises(HloscopeError, match="malformed MLIR bytecode"):
        parse.parse_mlir(data, "cut.mlirbc")


def test_malformed_hlo_names_line_and_column():
    with pytest.raises(HloscopeError) as info:
        parse.parse_hlo_text("HloModule m\n\nENTRY e {\n  p = f32[4] parameterr(0)\n}\n", "x.hlo")
    assert "malformed HLO" in info.value.message
    assert info.value.where and info.value.where.startswith("x.hlo:4:")


def test_large_constants_are_summarised():
    rows = ", ".join(str(i) for i in range(1000))
    text = (
        "func.func @main() -> tensor<1000xi32> {\n"
        f"  %0 = stablehlo.constant dense<[{rows}]> : tensor<1000xi32>\n"
        "  return %0 : tensor<1000xi32>\n}\n"
    )
    module = parse.parse_mlir(text, "big.mlir").model
    value = module.ops[1].attributes["value"]
    assert value.startswith("dense<...1000 elements,") and len(value) < 120


@pytest.mark.corpus
def test_converter_failure_falls_back_to_xla_view(corpus):
    # XLA parses this module, but its MLIR form does not verify.
    path = corpus / "xla-cc-embedded-hlo/xla/hlo/parser/hlo_parser_test.159.hlo"
    parsed = parse_file(path)
    assert parsed.format == "hlo-native"
    assert any(op.name == "hlo.collective-permute" for op in parsed.model.ops)
    assert "converting it to MLIR failed" in parsed.notes[0]


@pytest.mark.corpus
def test_converter_crash_is_contained(corpus):
    # hlo_to_stablehlo segfaults on this module (typed-FFI custom call whose
    # backend_config is not a dictionary); the child process takes the crash.
    path = corpus / "xla-cc-embedded-hlo/xla/hlo/transforms/hlo_module_stitcher_test.007.hlo"
    parsed = parse_file(path)
    assert parsed.format == "hlo-native"
    assert "crashed (SIGSEGV)" in parsed.notes[0]
    assert [op.name for op in parsed.model.function_ops(parsed.model.entry)] == [
        "hlo.parameter",
        "hlo.custom-call",
        "hlo.custom-call",
    ]
    # The reader process is replaced after a crash.
    assert parse_file(DUMPS / "mlp.after_optimizations.hlo").format == "hlo"


def test_complex_constants_the_bindings_cannot_represent():
    # jaxlib raises TypeError reading complex dense attributes (and aborts the
    # process when one is read through NamedAttribute.attr).
    text = (
        "func.func @f() -> tensor<complex<f32>> {\n"
        "  %0 = stablehlo.constant {mhlo.x = 1 : i32} dense<(1.0,2.0)> : tensor<complex<f32>>\n"
        "  return %0 : tensor<complex<f32>>\n}\n"
    )
    op = parse.parse_mlir(text, "c.mlir").model.ops[1]
    assert op.attributes == {
        "mhlo.x": "1 : i32",
        "value": "dense<(1.000000e+00,2.000000e+00)> : tensor<complex<f32>>",
    }


def test_gc_paused_for_exit_keeps_what_was_built_from_the_collector_until_the_next_block() -> None:
    import gc

    from hloscope.gc_pause import gc_paused

    gc.enable()
    gc.unfreeze()
    try:
        with gc_paused(keep_for_exit=True):
            assert not gc.isenabled()
            built = [[index] for index in range(100)]
        assert gc.isenabled()
        assert gc.get_freeze_count() >= len(built)
        with gc_paused(keep_for_exit=True):
            assert gc.get_freeze_count() == 0
        with gc_paused():
            pass
        assert gc.isenabled()
    finally:
        gc.unfreeze()


def test_proto_rewrite_drops_rewrites_and_reads_fields_copying_the_rest() -> None:
    from hloscope.ir.proto import proto_key, proto_rewrite, proto_varint

    def field(number: int, payload: bytes) -> bytes:
        return proto_key(number, 2) + proto_varint(len(payload)) + payload

    varint_field = proto_key(5, 0) + proto_varint(300)
    message = field(1, b"name") + varint_field + field(7, b"metadata") + field(2, b"x" * 200)
    dropped, found = proto_rewrite(message, 7, lambda _payload: None, frozenset({1, 2}))
    assert dropped == field(1, b"name") + varint_field + field(2, b"x" * 200)
    assert found == {1: b"name", 2: b"x" * 200}
    grown, _ = proto_rewrite(message, 1, lambda payload: payload * 100)
    assert grown == (
        field(1, b"name" * 100) + varint_field + field(7, b"metadata") + field(2, b"x" * 200)
    )
    assert proto_rewrite(message, 9, lambda payload: payload)[0] is message
    with pytest.raises(ValueError):
        proto_rewrite(message[:-3], 7, lambda _payload: None)


@pytest.mark.parametrize("xla", [False, True], ids=["converted", "xla-form"])
def test_program_order_is_xlas_schedule(xla):
    """`Module.program_order` gives a scheduled module's ops as XLA's text prints them
    (a scheduled computation prints in schedule order), in either form: converted, the
    converter's dependency order sorted by the schedule; in XLA's own form, the order
    it was read in. A module without a schedule keeps its order."""
    from forms_support import form

    text = (DUMPS / "mlp.after_optimizations.hlo").read_text()
    entry = text[text.index("\nENTRY") :]
    printed = [
        name
        for name, rest in re.findall(r"^\s*(?:ROOT\s+)?%?([\w.-]+) = (.*)$", entry, re.MULTILINE)
        if " parameter(" not in rest
    ]
    with form(xla):
        module = parse.parse_hlo_text(text, "mlp").model
    main = module.entry
    assert main is not None
    ops = main.op.regions[0].blocks[0].ops
    ordered = [op.hlo_name for op in module.program_order(ops) if op.hlo_name in printed]
    assert ordered == [name for name in printed if name in ordered]
    assert len(ordered) >= 8
    if not xla:
        # The converter put the constant later than XLA's schedule does.
        assert [op.hlo_name for op in ops if op.hlo_name in printed] != ordered
        assert module.program_order(ops)[-1].is_terminator
    lowered = parse_file(DUMPS / "mlp.stablehlo.mlir").model
    assert lowered.program_order(lowered.ops) == list(lowered.ops)

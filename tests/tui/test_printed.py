"""Pairing ops with the lines of the printed module, printed value names, search."""

import re

import pytest

from conftest import CORPUS, DUMPS, ROOT, line_of, require_corpus
from hloscope.errors import HloscopeError
from hloscope.ir import parse
from hloscope.ir.model import Module
from hloscope.ir.parsed import ParsedModule
from hloscope.sources import loader
from hloscope.tui.printed import PrintedModule, index_printed, search, source_query, unpaired

# Regions the printer prints in full (reducer, while, case) and one it folds into
# its op's line (`applies stablehlo.maximum`), multi-result ops and custom names.
REGIONS = """\
func.func @main(%arg0: tensor<8x4xf32>, %arg1: tensor<i32>) -> (tensor<8xf32>, tensor<i32>) {
  %cst = stablehlo.constant dense<0.0> : tensor<f32>
  %0 = stablehlo.reduce(%arg0 init: %cst) across dimensions = [1]
      : (tensor<8x4xf32>, tensor<f32>) -> tensor<8xf32>
   reducer(%a: tensor<f32>, %b: tensor<f32>) {
    %s = stablehlo.add %a, %b : tensor<f32>
    %m = stablehlo.multiply %s, %s : tensor<f32>
    stablehlo.return %m : tensor<f32>
  }
  %1 = stablehlo.reduce(%arg0 init: %cst) applies stablehlo.maximum across dimensions = [1]
      : (tensor<8x4xf32>, tensor<f32>) -> tensor<8xf32>
  %2:2 = stablehlo.while(%i = %arg1, %v = %0) : tensor<i32>, tensor<8xf32>
  cond {
    %c = stablehlo.constant dense<3> : tensor<i32>
    %lt = stablehlo.compare LT, %i, %c : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %lt : tensor<i1>
  } do {
    %one = stablehlo.constant dense<1> : tensor<i32>
    %n = stablehlo.add %i, %one : tensor<i32>
    %w = stablehlo.add %v, %1 : tensor<8xf32>
    stablehlo.return %n, %w : tensor<i32>, tensor<8xf32>
  }
  %3 = "stablehlo.case"(%arg1) ({
    stablehlo.return %2#1 : tensor<8xf32>
  }, {
    stablehlo.return %1 : tensor<8xf32>
  }) : (tensor<i32>) -> tensor<8xf32>
  return %3, %2#0 : tensor<8xf32>, tensor<i32>
}
"""

_TOKEN = re.compile(r' *(?:%[\w.$#:-]+(?:, %[\w.$#:-]+)* = )?"?([\w.$-]+)')


def printed_of(parsed: ParsedModule, locations: bool = False) -> PrintedModule:
    return index_printed(
        parsed.model, parsed.text(debug_info=locations), hlo_native=parsed.format == "hlo-native"
    )


def assert_paired(module: Module, printed: PrintedModule, hlo_native: bool = False) -> None:
    """Every op is on a line that prints it, or folded into an ancestor's line; every
    line is owned by the op on it or by an op around it."""
    for op in module.ops:
        line = printed.op_line[op.id]
        if hlo_native and line < 0:
            # XLA's text leaves out some computations (an async op's wrapped one);
            # then the whole computation has no line.
            function = module.functions[op.function] if op.function else None
            assert function is not None or op.name == "func.func", op
            assert function is None or printed.op_line[function.op.id] < 0, op
            continue
        assert line >= 0, op
        if printed.own_line[op.id] and hlo_native:
            assert printed.line_op[line] == op.id
            name = op.hlo_name or op.location.name
            assert f"%{name} " in printed.lines[line], (op, printed.lines[line])
        elif printed.own_line[op.id]:
            assert printed.line_op[line] == op.id
            token = _TOKEN.match(printed.lines[line])
            assert token is not None
            assert op.name == token.group(1) or op.name.endswith("." + token.group(1)), (
                op,
                printed.lines[line],
            )
        else:
            ancestor = op.parent
            while ancestor is not None and not printed.own_line[ancestor.id]:
                ancestor = ancestor.parent
            assert ancestor is not None and printed.op_line[ancestor.id] == line, op


@pytest.mark.parametrize("locations", [False, True])
def test_every_op_of_a_lowered_module_has_its_own_line(locations):
    parsed = parse.parse_mlir((DUMPS / "mlp.stablehlo.mlir").read_bytes(), "mlp")
    printed = printed_of(parsed, locations)
    assert_paired(parsed.model, printed)
    # The reduce's body is folded into its line (`applies stablehlo.add`).
    folded = [op for op in parsed.model.ops if not printed.own_line[op.id]]
    assert [op.name for op in folded] == ["stablehlo.add", "stablehlo.return"]
    assert "applies stablehlo.add" in printed.lines[printed.op_line[folded[0].id]]
    assert set(printed.function_lines) == {"main", "dense", "relu", "head"}
    assert (
        printed.lines[printed.function_lines["relu"]]
        .lstrip()
        .startswith("func.func private @relu(")
    )


def test_regions_printed_in_full_and_folded():
    parsed = parse.parse_mlir(REGIONS, "regions.mlir")
    module = parsed.model
    printed = printed_of(parsed)
    assert_paired(module, printed)
    by_name = {}
    for op in module.ops:
        by_name.setdefault(op.name, []).append(op)
    full, folded = by_name["stablehlo.reduce"]
    assert all(printed.own_line[op.id] for op in module.descendants(full))
    assert not any(printed.own_line[op.id] for op in module.descendants(folded))
    # The op after a folded reduce is paired with its own line, not the reduce's body.
    assert printed.lines[printed.op_line[folded.end]].lstrip().startswith("%2:2 = stablehlo.while")
    # `cond {`, `} do {` and block labels belong to the op whose region they open.
    loop = by_name["stablehlo.while"][0]
    for number, line in enumerate(printed.lines):
        if line.strip() in ("cond {", "} do {"):
            assert printed.line_op[number] == loop.id
    case = by_name["stablehlo.case"][0]
    closing = next(n for n, line in enumerate(printed.lines) if line.strip().startswith("})"))
    assert printed.line_op[closing] == case.id


def test_value_names_are_the_printed_ones():
    parsed = parse.parse_mlir(REGIONS, "regions.mlir")
    module = parsed.model
    printed = printed_of(parsed)
    names = {printed.value_name(module, v) for op in module.ops for v in op.results}
    # The printer's names, including custom ones (`%cst`, `%c`) and result groups.
    assert {"%cst", "%0", "%1", "%2#0", "%2#1", "%3", "%c"} <= names
    loop = next(op for op in module.ops if op.name == "stablehlo.while")
    assert [printed.value_name(module, v) for v in loop.results] == ["%2#0", "%2#1"]
    # Each printed op line starts with its results' names.
    for op in module.ops:
        if op.results and printed.own_line[op.id]:
            first = printed.value_name(module, op.results[0]).split("#")[0]
            assert re.match(
                re.escape(first) + "[ :]", printed.lines[printed.op_line[op.id]].lstrip()
            )


def test_fusion_regions_of_an_optimized_module():
    parsed = parse.parse_hlo_text(
        (DUMPS / "host_call.after_optimizations.hlo").read_text(), "host_call"
    )
    printed = printed_of(parsed)
    assert_paired(parsed.model, printed)
    fusion = next(op for op in parsed.model.ops if op.name == "mhlo.fusion")
    assert all(printed.own_line[op.id] for op in parsed.model.descendants(fusion))
    # The block label and the closing `})` belong to the fusion.
    label = next(n for n, line in enumerate(printed.lines) if line.lstrip().startswith("^bb0"))
    assert printed.line_op[label] == fusion.id
    assert printed.line_op[printed.op_line[fusion.end - 1] + 1] == fusion.id


@pytest.mark.corpus
def test_xla_native_hlo_text_is_paired_by_instruction_name(corpus):
    path = corpus / "xla-cc-embedded-hlo/xla/hlo/parser/hlo_parser_test.159.hlo"
    parsed = parse.parse_hlo_text(path.read_text(), str(path))
    assert parsed.format == "hlo-native"
    printed = printed_of(parsed)
    module = parsed.model
    assert_paired(module, printed, hlo_native=True)
    assert all(printed.own_line[op.id] for op in module.ops)
    root = next(op for op in module.ops if op.name == "hlo.collective-permute")
    assert printed.lines[printed.op_line[root.id]].lstrip().startswith("ROOT %root = ")
    assert printed.value_name(module, root.results[0]) == "%root"
    entry = module.entry
    assert entry is not None
    assert printed.lines[printed.op_line[entry.op.id]].startswith("ENTRY ")


def test_search_matches_names_values_and_attribute_text():
    parsed = parse.parse_mlir(REGIONS, "regions.mlir")
    module = parsed.model
    printed = printed_of(parsed)
    lines = printed.lines

    def found(query):
        return [lines[n].strip() for n in search(module, printed, query)]

    assert all("stablehlo.add" in line for line in found("stablehlo.add"))
    assert len(found("stablehlo.add")) == 3
    assert found("STABLEHLO.CASE") == [line.strip() for line in lines if "stablehlo.case" in line]
    # A value name matches whole names only: `%2` finds `%2:2` and `%2#1`, not `%20`.
    assert found("%1") == [line.strip() for line in lines if re.search(r"%1(?![\w.$-])", line)]
    assert any(line.startswith("%2:2 =") for line in found("%2"))
    assert found("%zzz") == []
    assert found("   ") == []
    assert len(found("dimensions = [1]")) == 2
    assert search(module, printed, "stablehlo.while") == tuple(
        n for n, line in enumerate(lines) if "stablehlo.while" in line
    )


@pytest.mark.corpus
def test_search_by_source_line(corpus):
    del corpus  # the samples are enough; the entrypoint records real source lines
    loaded = loader.load(
        "samples/nested_jits.py:mlp",
        loader.LoadOptions(args_factory="samples/nested_jits.py:example_args"),
    )
    module = loaded.module
    printed = index_printed(module, loaded.parsed.text())
    line = line_of(ROOT / "samples/nested_jits.py", "jnp.tanh")
    hits = search(module, printed, f"nested_jits.py:{line}")
    assert hits
    assert any("stablehlo.tanh" in printed.lines[n] for n in hits)
    # A trailing part of the path works too; a wrong line matches nothing.
    assert search(module, printed, f"samples/nested_jits.py:{line}") == hits
    assert search(module, printed, "nested_jits.py:99999") == ()
    assert search(module, printed, f"other.py:{line}") == ()


def test_source_query():
    assert source_query("model.py:42") == ("model.py", 42)
    assert source_query(" pkg/model.py:7 ") == ("pkg/model.py", 7)
    assert source_query("%3") is None
    assert source_query("stablehlo.add") is None


def test_a_hundred_thousand_ops_are_paired(tmp_path):
    """A module as large as real models: every op is paired, in one pass."""
    body = ["func.func @main(%arg0: tensor<8xf32>) -> tensor<8xf32> {"]
    previous = "%arg0"
    for i in range(50_000):
        body.append(f"  %s{i} = stablehlo.sine {previous} : tensor<8xf32>")
        body.append(f"  %t{i} = stablehlo.add %s{i}, {previous} : tensor<8xf32>")
        previous = f"%t{i}"
    body.append(f"  return {previous} : tensor<8xf32>")
    body.append("}")
    path = tmp_path / "big.mlir"
    path.write_text("\n".join(body) + "\n")
    loaded = loader.load(str(path))
    module = loaded.module
    assert len(module.ops) == 100_002
    printed = index_printed(module, loaded.parsed.text())
    assert all(printed.own_line)
    last = module.ops[-2]
    assert printed.lines[printed.op_line[last.id]].lstrip().startswith("%99999 = stablehlo.add")
    assert len(search(module, printed, "stablehlo.sine")) == 50_000


@pytest.mark.corpus
@pytest.mark.slow
def test_corpus_every_printed_op_line_is_paired():
    """Over the shared corpus, with and without locations: no line that prints an op
    result is left without its op, and every op is on its line or folded into an
    ancestor's."""
    require_corpus()
    files = sorted(
        p
        for p in CORPUS.rglob("*")
        if p.is_file() and p.name not in {"LICENSE", "COMMIT", "README.md"}
    )
    result_line = re.compile(r"^ +(?:ROOT +)?%[\w.$-]+(?::\d+)?(?:, %[\w.$-]+(?::\d+)?)* = ")
    checked = 0
    problems = []
    for path in files:
        try:
            loaded = loader.load(str(path))
        except HloscopeError:
            continue
        for locations in (False, True):
            printed = printed_of(loaded.parsed, locations)
            try:
                assert_paired(loaded.module, printed, loaded.parsed.format == "hlo-native")
            except AssertionError as exc:
                problems.append(f"{path}: {exc}")
                continue
            for number, line in enumerate(printed.lines):
                op_id = printed.line_op[number]
                if result_line.match(line) and not (
                    op_id >= 0 and printed.own_line[op_id] and printed.op_line[op_id] == number
                ):
                    problems.append(f"{path}:{number + 1}: not paired: {line[:100]}")
                    break
        checked += 1
    assert checked > 1000
    assert problems == []


def _per_line(printed: PrintedModule, query: str) -> tuple[int, ...]:
    """What search finds, the slow way: the query in each line, case ignored."""
    pattern = re.escape(query)
    if query.startswith("%") and re.match(r"[\w.$-]", query[-1]):
        pattern += r"(?![\w.$-])"
    regex = re.compile(pattern, re.IGNORECASE)
    return tuple(n for n, line in enumerate(printed.lines) if regex.search(line))


@pytest.mark.parametrize(
    "query",
    ["stablehlo.add", "STABLEHLO.CASE", "%1", "%2", "%arg0", "tensor<8xf32>", "}", "add", "x"],
)
def test_search_in_one_scan_finds_what_a_scan_per_line_finds(query):
    parsed = parse.parse_mlir(REGIONS, "regions.mlir")
    printed = printed_of(parsed)
    assert printed.folded is not None
    assert search(parsed.model, printed, query) == _per_line(printed, query)


def test_search_when_lowering_changes_the_length_of_the_text():
    # `İ` lowers to two characters, so the lowered text's offsets are not the
    # original's: search scans the text itself, ignoring case, instead. (MLIR's
    # printer escapes such characters; XLA's HLO text, shown as it is, may hold them.)
    module = parse.parse_mlir(REGIONS, "regions.mlir").model
    printed = unpaired('%x = f32[] parameter(0), metadata={op_name="İİ x"}\nROOT %y = add\nİ\n')
    assert printed.folded is None
    for query in ("İ x", "root %Y", "ADD", "i", "%x"):
        assert search(module, printed, query) == _per_line(printed, query)
    assert search(module, printed, "root %Y") == (1,)


def test_a_deferred_model_is_built_on_first_use_and_printed_before():
    parsed = parse.parse_mlir(REGIONS, "regions.mlir", defer_model=True)
    assert not parsed.model_built
    assert "stablehlo.while" in parsed.text()
    assert parsed.format == "stablehlo"
    module = parsed.model
    assert parsed.model_built and parsed.model is module
    eager = parse.parse_mlir(REGIONS, "regions.mlir").model
    assert [op.name for op in module.ops] == [op.name for op in eager.ops]
    assert [op.attributes for op in module.ops] == [op.attributes for op in eager.ops]


def test_a_deferred_model_raises_what_building_it_raises():
    # An attribute name that is not valid UTF-8 (a string escape): read when the
    # model is built, so the error comes then, as the loader's would.
    text = (ROOT / "tests/fixtures/malformed/text_utf8_attribute_name.mlir").read_text()
    with pytest.raises(HloscopeError, match="not valid UTF-8"):
        _ = parse.parse_mlir(text, "bad.mlir", trusted=True, defer_model=True).model


def test_search_finds_the_op_names_the_tree_shows_in_xlas_own_form(monkeypatch):
    # Issue 61: in XLA's own form the tree and the Overview name ops `hlo.fusion`,
    # `hlo.dot`, which XLA's text prints as `fusion(` and `dot(`: searching the name
    # shown finds those ops' lines, as it does in the converted form.
    monkeypatch.setenv("HLOSCOPE_HLO_FORM", "xla")
    path = DUMPS / "mlp.after_optimizations.hlo"
    parsed = parse.parse_hlo_text(path.read_text(), str(path))
    assert parsed.format == "hlo-native"
    module = parsed.model
    printed = printed_of(parsed)
    for name, printed_as in (("hlo.fusion", " fusion("), ("hlo.dot", " dot(")):
        ops = [op for op in module.ops if op.name == name]
        assert ops
        expected = sorted({printed.op_line[op.id] for op in ops})
        assert list(search(module, printed, name)) == expected
        assert list(search(module, printed, name.upper())) == expected
        assert all(printed_as in printed.lines[n] for n in expected)
    # Text that names no op is still searched as text.
    assert search(module, printed, "stack_frame_id=8")

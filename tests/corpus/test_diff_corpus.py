"""Real modules of the shared corpus against copies mutated in known ways: renamed
values and reordered ops must be the same, each planted change must come out as
exactly that change. The large real-model pairs are marked slow."""

from __future__ import annotations

import collections
import re
from pathlib import Path

import pytest

from conftest import rename_hlo
from hloscope.analyses.diff import ModuleDiff, diff_modules
from hloscope.ir import parse

pytestmark = pytest.mark.corpus

RESNET = "xla/xla/backends/cpu/benchmarks/hlo/resnet50_keras_jax_f32.hlo"
CHESS = "gleasonk-stablehlo-exports/exports/searchless_chess_9m.mlir"
BENCHMARKS = "xla/xla/tools/benchmarks/hlo"
GEMMA = "xla/xla/backends/cpu/benchmarks/hlo/gemma2_2b_keras_jax.hlo"


def changes_of(result: ModuleDiff) -> list[tuple[str, str, str]]:
    return [(c.kind, c.op, c.detail) for c in result.changes]


def rename_hlo_instructions(text: str) -> str:
    """Every instruction renamed (`%mul.318` -> `%renamed_mul.318`), uses included."""
    defined = set(re.findall(r"^\s*(?:ROOT\s+)?%([\w.-]+)\s*=", text, flags=re.MULTILINE))
    return re.sub(
        r"%([\w.-]+)",
        lambda m: f"%renamed_{m.group(1)}" if m.group(1) in defined else m.group(0),
        text,
    )


def hlo(path: Path | str, text: str | None = None):
    return parse.parse_hlo_text(text if text is not None else Path(path).read_text(), "x").model


@pytest.fixture(scope="module")
def resnet_text() -> str:
    from conftest import require_corpus

    return (require_corpus() / RESNET).read_text()


@pytest.fixture(scope="module")
def resnet(resnet_text):
    return hlo("", resnet_text)


def test_hlo_renamed_is_the_same(resnet, resnet_text, tmp_path):
    renamed = rename_hlo_instructions(resnet_text)
    assert renamed.count("%renamed_") > 1000
    result = diff_modules(resnet, hlo("", renamed))
    assert result.verdict == "same", changes_of(result)[:5]
    assert result.summary.unchanged > 1000


def test_hlo_one_opcode_changed(resnet, resnet_text):
    line = "%mul.323 = f32[1,112,112,64]{3,2,1,0} multiply(%add.550, %mul.322)"
    assert line in resnet_text
    mutated = rename_hlo_instructions(resnet_text.replace(line, line.replace("multiply(", "add(")))
    result = diff_modules(resnet, hlo("", mutated))
    assert changes_of(result) == [
        ("changed", "stablehlo.multiply → stablehlo.add", "stablehlo.multiply → stablehlo.add")
    ]
    assert result.changes[0].aspects == ("kind",)
    assert result.summary.changed == 1
    assert result.summary.added == result.summary.removed == 0


def test_hlo_every_name_renamed_is_the_same(resnet, resnet_text, tmp_path):
    """Instructions and computations renamed, nothing else: the functions are matched
    by what they compute, the renames are notes, not changes."""
    renamed, renaming = rename_hlo(resnet_text)
    path = tmp_path / "renamed.hlo"
    path.write_text(renamed)
    assert "%r_relu_2 (" in renamed and "to_apply=%r_region_0_4" in renamed
    result = diff_modules(resnet, hlo(path))
    assert result.verdict == "same", changes_of(result)[:5]
    assert result.changes == () and result.groups == ()
    assert result.summary.changed == result.summary.added == result.summary.removed == 0
    called = {f for f in resnet.functions if f != resnet.entry.name}
    assert len(called) == 15  # 51 call sites, and 4 reductions
    assert {(r.a, r.b) for r in result.renames} == {(f, renaming[f]) for f in called}
    (note,) = [n for n in result.notes if "renamed" in n]
    assert note.startswith(f"{len(called)} functions renamed")
    assert f"{result.renames[0].a} → {result.renames[0].b}" in note


def test_hlo_every_name_renamed_one_opcode_changed(resnet, resnet_text, tmp_path):
    line = "%mul.323 = f32[1,112,112,64]{3,2,1,0} multiply(%add.550, %mul.322)"
    renamed, _ = rename_hlo(resnet_text.replace(line, line.replace("multiply(", "add(")))
    path = tmp_path / "renamed.hlo"
    path.write_text(renamed)
    result = diff_modules(resnet, hlo(path))
    assert changes_of(result) == [
        ("changed", "stablehlo.multiply → stablehlo.add", "stablehlo.multiply → stablehlo.add")
    ]
    assert result.summary.changed == 1
    assert result.summary.added == result.summary.removed == 0
    assert len(result.renames) == 15


@pytest.mark.slow
def test_gemma_every_name_renamed(tmp_path):
    """Gemma 2 2B (Keras, XLA's CPU benchmarks; 111 called computations, XLA's clones
    per call site among them): every function matched to its renamed self. Its six
    elided constants (`constant({...})`) are no values: XLA's parser fills them with
    whatever it likes, differently on each load, so they are all that may differ."""
    from conftest import require_corpus

    text = (require_corpus() / GEMMA).read_text()
    renamed, renaming = rename_hlo(text)
    path = tmp_path / "renamed.hlo"
    path.write_text(renamed)
    original = hlo("", text)
    result = diff_modules(original, hlo(path))
    called = {f for f in original.functions if f != original.entry.name}
    assert {(r.a, r.b) for r in result.renames} >= {
        (f, renaming[f]) for f in called if f in {r.a for r in result.renames}
    }
    assert len(result.renames) > 100
    assert all(r.b == renaming[r.a] for r in result.renames)
    assert {c.op for c in result.changes} <= {"stablehlo.constant"}
    assert len(result.changes) <= text.count("constant({...})")


def test_the_same_change_in_every_relu_is_one_group(resnet, resnet_text, tmp_path):
    """ResNet's relu: 9 computations (one per shape) called from 49 places. The relu
    made a `minimum` in each, every name renamed: one group of 49, its places the 9
    functions with their call counts."""
    lines, function = [], ""
    for line in resnet_text.splitlines():
        if line.startswith("%"):
            function = line.split()[0].lstrip("%")
        if function.startswith("relu"):
            line = line.replace(" maximum(", " minimum(")
        lines.append(line)
    calls = collections.Counter(re.findall(r"to_apply=%(relu[\w.]*)", resnet_text))
    assert len(calls) == 9 and sum(calls.values()) == 49
    path = tmp_path / "renamed.hlo"
    path.write_text(rename_hlo("\n".join(lines))[0])
    result = diff_modules(resnet, hlo(path))
    (group,) = result.groups
    assert (group.kind, group.op, group.count) == (
        "changed",
        "stablehlo.maximum → stablehlo.minimum",
        49,
    )
    assert {(p.function, p.count) for p in group.places} == set(calls.items())
    assert group.function == "relu.2"  # one function, XLA's `_N.M` suffixes aside
    assert result.summary.changed == 49


def test_hlo_one_op_inserted(resnet, resnet_text):
    line = "%mul.323 = f32[1,112,112,64]{3,2,1,0} multiply(%add.550, %mul.322)"
    inserted = "%planted = f32[1,112,112,64]{3,2,1,0} negate(%mul.322)\n  " + line.replace(
        "%mul.322)", "%planted)"
    )
    result = diff_modules(resnet, hlo("", resnet_text.replace(line, inserted)))
    assert [(c.kind, c.op) for c in result.changes] == [
        ("added", "stablehlo.negate"),
        ("changed", "stablehlo.multiply"),
    ]
    rewired = result.changes[1]
    assert rewired.aspects == ("operands",)
    # %mul.322 is a broadcast (XLA names instructions after the JAX op they came from).
    assert rewired.detail == "operand 1: broadcast_in_dim → negate (added)"


def test_hlo_one_constant_changed(resnet, resnet_text):
    line = "%constant.12 = f32[] constant(0)"
    assert resnet_text.count(line) == 1
    result = diff_modules(
        resnet, hlo("", resnet_text.replace(line, "%constant.12 = f32[] constant(1)"))
    )
    assert [(c.kind, c.op, c.aspects) for c in result.changes] == [
        ("changed", "stablehlo.constant", ("attributes",))
    ]
    assert "dense<0.000000e+00>" in result.changes[0].detail
    assert "dense<1.000000e+00>" in result.changes[0].detail


@pytest.fixture(scope="module")
def chess_text() -> str:
    from conftest import require_corpus

    return (require_corpus() / CHESS).read_text()


def mlir(text: str):
    return parse.parse_mlir(text, "x.mlir").model


def rename_and_reorder(text: str) -> str:
    """Values renamed, two independent ops swapped."""
    lines = text.splitlines()
    first = next(i for i, line in enumerate(lines) if line.lstrip().startswith("%44 = "))
    assert lines[first + 1].lstrip().startswith("%45 = ")
    assert "%44" not in lines[first + 1]
    lines[first], lines[first + 1] = lines[first + 1], lines[first]
    swapped = "\n".join(lines)
    swapped = re.sub(r"%(\d+)\b", r"%value\1", swapped)
    return re.sub(r"%(cst\w*)", r"%c_\1", swapped)


def test_stablehlo_renamed_and_reordered_is_the_same(chess_text):
    mutated = rename_and_reorder(chess_text)
    result = diff_modules(mlir(chess_text), mlir(mutated))
    assert result.verdict == "same", changes_of(result)[:5]
    assert result.summary.unchanged > 1000


def test_stablehlo_one_attribute_changed(chess_text):
    needle = "%44 = stablehlo.dot_general %43, %arg62, contracting_dims = [2] x [0]"
    assert chess_text.count(needle) == 1
    mutated = rename_and_reorder(
        chess_text.replace(needle, needle + ", precision = [HIGHEST, HIGHEST]")
    )
    result = diff_modules(mlir(chess_text), mlir(mutated))
    assert [(c.kind, c.op, c.aspects) for c in result.changes] == [
        ("changed", "stablehlo.dot_general", ("attributes",))
    ]
    assert "HIGHEST" in result.changes[0].detail


def test_stablehlo_against_its_bytecode(chess_text):
    from conftest import require_corpus

    bytecode = (require_corpus() / (CHESS + ".bc")).read_bytes()
    result = diff_modules(mlir(chess_text), parse.parse_mlir(bytecode, "x.bc").model)
    assert result.verdict == "same"


@pytest.mark.slow
def test_large_real_model_against_a_mutated_copy():
    """Mixtral 8x7B (about 49k ops): every instruction and computation renamed (4,001
    functions), one opcode changed."""
    from conftest import require_corpus

    text = (require_corpus() / BENCHMARKS / "hlo_mixtral_8x7b_bf16_2x8.hlo").read_text()
    lines = text.splitlines()
    target = next(
        i
        for i, line in enumerate(lines)
        if " multiply(" in line and "ROOT" not in line and line.startswith("  %")
    )
    lines[target] = lines[target].replace(" multiply(", " add(", 1)
    mutated, _ = rename_hlo("\n".join(lines))
    original = hlo("", text)
    result = diff_modules(original, hlo("", mutated))
    assert result.summary.unchanged > 30_000
    assert len(result.renames) > 4000
    # Each to its own renamed self (the MLIR conversion writes `-` in names as `_`).
    assert all(r.b == "r_" + re.sub(r"[.-]", "_", r.a) for r in result.renames)
    assert [(c.kind, c.aspects) for c in result.changes] == [("changed", ("kind",))]
    assert result.changes[0].op == "stablehlo.multiply → stablehlo.add"


@pytest.mark.slow
def test_large_real_model_pair_bf16_against_fp8():
    """Llama 3.1 405B in bf16 and in fp8: the fp8 training step quantizes with
    clamps and converts to f8e4m3fn; the two share most of their structure."""
    from conftest import require_corpus

    folder = require_corpus() / BENCHMARKS
    result = diff_modules(
        hlo(folder / "hlo_llama31_405b_bf16_64x8.hlo"),
        hlo(folder / "hlo_llama31_405b_fp8_64x8.hlo"),
    )
    assert result.verdict == "different"
    added = {(g.op, g.detail) for g in result.groups if g.kind == "added"}
    assert any(op == "stablehlo.convert" and detail.startswith("f8e4m3fn[") for op, detail in added)
    assert any(op == "stablehlo.clamp" for op, _ in added)
    assert result.summary.unchanged > 1000
    # The same change in many layers is one group.
    assert max(g.count for g in result.groups) >= 20
    assert len(result.groups) < len(result.changes)


@pytest.mark.slow
def test_large_real_model_against_itself():
    """Llama 3.1 8B (about 35k ops) against itself: no change, every op matched."""
    from conftest import require_corpus

    module = hlo(require_corpus() / BENCHMARKS / "hlo_llama31_8b_bf16_1x8.hlo")
    result = diff_modules(module, module)
    assert result.verdict == "same"
    assert result.summary.unchanged == sum(result.a.counted)

"""What XLA's converter adds to an optimized module is no op of the program (issue 59):
read converted and in XLA's own form (`HLOSCOPE_HLO_FORM=xla`), a module with an async
copy, an async all-reduce, a convolution of a bf16 nested fusion by f32 and a shared
reducer (tests/fixtures/conversion_artefacts.hlo) gives one answer; so does one with a loop
carrying a tuple, a conditional on a predicate and an async pair of one all-to-all
(tests/fixtures/conversion_signatures.hlo), whose tuples the converter flattens.

The converter makes a `copy_` function for the copy-start (`mhlo.async_start` calls
it), wraps the all-reduce in the region of a `stablehlo.async_start`, and puts a
`convert` to f32 before the convolution; XLA's module has none of them
(`Module.conversion_artefacts`). XLA's own form keeps each computation an instruction
holds apart; its ops are listed where the converted form's region holds them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import FIXTURES, run_cli
from forms_support import difference, form, normalized
from hloscope.ir.context import hlo_computations, xla_hlo
from hloscope.ir.parse import parse_hlo_text

MODULE = FIXTURES / "conversion_artefacts.hlo"
# A loop carrying a tuple, a conditional on a predicate and an async-start of one
# all-to-all: the converter flattens the tuples, XLA prints the pair as
# `all-to-all-start` and the conditional's branches as `true_computation`...
SIGNATURES = FIXTURES / "conversion_signatures.hlo"

# XLA's instructions that compute: main's copy-start, copy-done, all-reduce-start,
# all-reduce-done and two fusions; the all-reduce's reducer (add); the multi-output
# fusion's negate and sine; the convolution fusion's nested fusion, convolution,
# constant, reduce and multiply, the nested fusion's exponential and convert, and the
# reduce's reducer (add). Parameters, tuples and get-tuple-elements compute nothing.
XLA_OPS = 17


def both(command: str, module: Path = MODULE) -> tuple[dict, dict]:
    documents = []
    for xla in (False, True):
        with form(xla):
            run = run_cli(command, str(module), "--json")
        assert run.code == 0, run.stderr
        documents.append(run.json())
    assert documents[0]["source"]["ir"] == "hlo", "it no longer converts: nothing to compare"
    return documents[0], documents[1]


@pytest.mark.parametrize("module", [MODULE, SIGNATURES], ids=lambda path: path.stem)
@pytest.mark.parametrize("command", ["inspect", "placement", "fusions"])
def test_both_forms_give_the_same_json(command: str, module: Path) -> None:
    converted, xla = both(command, module)
    found = difference(converted, xla)
    assert not found, f"hloscope {command} {module.name} --json, converted vs XLA's form:\n{found}"


def test_the_functions_and_totals_are_xlas() -> None:
    module = xla_hlo().hlo_module_from_text(MODULE.read_text())
    computations = {str(c.name) for c in hlo_computations(module)}
    for document in both("inspect"):
        names = {f["name"] for f in document["functions"]}
        assert names == (computations - {"main"}) | {"main"}, "no copy_, no wrapped collective"
        assert document["total_ops"] == XLA_OPS
        main = next(f for f in document["functions"] if f["name"] == "main")
        assert main["calls"] == [], "a copy-start calls nothing"
        counts = normalized(main["op_counts"])
        assert counts["op:copy_start"] == counts["op:all_reduce_start"] == 1
        assert "op:async_start" not in counts
    for document in both("placement"):
        assert document["total_ops"] == XLA_OPS  # the reducer once per instruction


def test_the_artefacts_are_what_xla_has_no_instruction_for() -> None:
    built = parse_hlo_text(MODULE.read_text(), MODULE.name).model
    made = sorted(
        (op.name, op.function or "", op.hlo_name)
        for op in built.ops
        if op.id in built.conversion_artefacts
    )
    # The copy-start's function, the all-reduce its async_start wraps, and the convert
    # before the convolution (in the fusion's region in main, and in the private copy
    # of its computation the converter leaves), each named for XLA's instruction.
    assert made == [
        ("func.func", "", "copy-start"),
        ("func.return", "copy_", "copy-start"),
        ("mhlo.copy", "copy_", "copy-start"),
        ("stablehlo.all_reduce", "main", "all-reduce-start"),
        ("stablehlo.convert", "convolved", "conv"),
        ("stablehlo.convert", "main", "conv"),
    ]
    with form(xla=True):
        assert not parse_hlo_text(MODULE.read_text(), MODULE.name).model.conversion_artefacts


def test_a_fusions_ops_come_in_one_order() -> None:
    # XLA's order of `convolved`'s instructions, `narrowed`'s in place of the nested
    # fusion and the reducer's add after the reduce, as the converted form's regions
    # hold them; no convert the conversion put before the convolution.
    expected = [
        "op:exponential",
        "op:convert",
        "op:convolution",
        "op:constant",
        "op:reduce",
        "op:add",
        "op:multiply",
    ]
    for document in both("fusions"):
        fusion = next(f for f in normalized(document)["fusions"] if f["name"] == "fusion")
        assert fusion["ops"] == expected
        assert fusion["op_counts"]["op:convert"] == 1


def test_loops_branches_and_async_pairs_read_as_xla_prints_them() -> None:
    module = xla_hlo().hlo_module_from_text(SIGNATURES.read_text())
    printed = {
        str(i.name): str(i.to_string()) for c in hlo_computations(module) for i in c.instructions()
    }
    assert " all-to-all-start(" in printed["a2a-start"]  # XLA's own name for the pair
    for document in both("inspect", SIGNATURES):
        functions = {f["name"]: f for f in normalized(document)["functions"]}
        # The carried tuple is one argument and one result per array, as converted.
        assert (functions["body"]["parameters"], functions["body"]["results"]) == (2, 2)
        counts = functions["main"]["op_counts"]
        assert counts["op:all_to_all_start"] == counts["op:all_to_all_done"] == 1
        assert counts["op:conditional"] == counts["op:negate"] == counts["op:cosine"] == 1
        # main's 6 instructions, the condition's 2, the body's 3 and a branch each.
        assert functions["main"]["ops"] == document["total_ops"] == 13
    for document in both("fusions", SIGNATURES):
        # A loop's and a conditional's ops where the op is: its condition's, its body's.
        assert [(u["name"], u["function"]) for u in document["unfused"]] == [
            ("loop", "main"),
            ("less", "main"),
            ("next", "main"),
            ("y", "main"),
            ("branched", "main"),
            ("negated", "main"),
            ("cosined", "main"),
            ("a2a-start", "main"),
            ("a2a-done", "main"),
        ]

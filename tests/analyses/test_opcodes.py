"""`ir.opcodes.converted_opcode` against XLA's own answer: the opcode of the
instruction each op of a converted optimized module came from (`Module.hlo_opcode`,
read from the module's proto), on the samples compiled here and an optimized dump;
and check's comparison meeting the two forms' op counts by it."""

from __future__ import annotations

from types import MappingProxyType

import pytest

from conftest import DUMPS, sample
from hloscope.analyses.baseline.compare import compare
from hloscope.analyses.baseline.facts import Measurement
from hloscope.analyses.baseline.tolerance import Tolerances
from hloscope.ir.opcodes import converted_opcode
from hloscope.sources.loader import LoadOptions, load

TARGETS = [
    (str(DUMPS / "mlp.after_optimizations.hlo"), LoadOptions()),
    *(
        (argv[0], LoadOptions(args_factory=argv[2], optimized=True))
        for argv in (
            sample("params", "train_step", "train_step_args"),
            sample("scanned_layers", "deep_mlp"),
            sample("sharded_mlp", "mlp"),
        )
    ),
]


@pytest.mark.parametrize(("target", "options"), TARGETS, ids=lambda t: str(t)[-30:])
def test_the_converted_forms_op_names_are_xlas_opcodes(target, options, monkeypatch):
    monkeypatch.delenv("HLOSCOPE_HLO_FORM", raising=False)
    module = load(target, options).module
    checked = 0
    for op in module.ops:
        opcode = module.hlo_opcode(op)
        # An async pair is one op, or async wrappers, of the converted form; a
        # get_tuple_element carries the name of the instruction whose tuple it reads.
        if opcode is None or op.is_terminator or opcode.endswith(("-start", "-done")):
            continue
        if op.short_name == "get_tuple_element":
            continue
        assert converted_opcode(op.name) == opcode, (op.name, op.hlo_name)
        checked += 1
    assert checked > 10
    assert converted_opcode("hlo.reduce-window") == "reduce-window"
    assert converted_opcode("sdy.sharding_constraint") is None


def _measured(kinds: dict[str, int]) -> Measurement:
    facts = {"ops.optimized.total": sum(kinds.values())}
    facts |= {f"ops.optimized.{kind}": count for kind, count in kinds.items()}
    sites = {f"ops.optimized.{kind}": {"model.py:3": count} for kind, count in kinds.items()}
    return Measurement(
        facts=MappingProxyType(facts),
        sites=MappingProxyType({k: MappingProxyType(v) for k, v in sites.items()}),
        peak_buffers=(),
    )


def test_check_meets_the_two_forms_counts_by_opcode_and_keeps_a_real_change():
    converted = _measured(
        {"stablehlo.dot": 1, "stablehlo.dot_general": 1, "stablehlo.broadcast_in_dim": 2}
    )
    xla = _measured({"hlo.dot": 2, "hlo.broadcast": 2, "hlo.get-tuple-element": 3})
    xla = Measurement(
        facts=MappingProxyType({**xla.facts, "ops.optimized.total": 4}),
        sites=xla.sites,
        peak_buffers=(),
    )
    assert compare(converted, xla, Tolerances()).changes == ()
    assert compare(xla, converted, Tolerances()).changes == ()
    # A baseline read in one form keeps its names against the same form.
    more = _measured(
        {"stablehlo.dot": 1, "stablehlo.dot_general": 2, "stablehlo.broadcast_in_dim": 2}
    )
    kinds = [c for c in compare(more, converted, Tolerances()).changes if "total" not in c.fact]
    (change,) = kinds
    assert change.fact == "ops.optimized.stablehlo.dot_general"
    # A count that moved is still a change, named by XLA's opcode.
    grown = _measured({"hlo.dot": 3, "hlo.broadcast": 2})
    (change,) = [c for c in compare(converted, grown, Tolerances()).changes if "dot" in c.fact]
    assert (change.fact, change.before, change.after) == ("ops.optimized.hlo.dot", 2, 3)
    assert change.regression


def test_a_converted_side_that_counts_an_async_wrapper_by_xlas_name_is_still_converted():
    # The converted form counts an async wrapper as XLA's instruction (`hlo.copy-start`):
    # a baseline recorded converted for tpu:v5e:2x4 held both names, was taken for XLA's
    # form, and a check read in XLA's form found 9 kinds new.
    converted = _measured(
        {"stablehlo.add": 1, "mhlo.fusion": 2, "hlo.copy-start": 1, "hlo.copy-done": 1}
    )
    xla = _measured({"hlo.add": 1, "hlo.fusion": 2, "hlo.copy-start": 1, "hlo.copy-done": 1})
    assert compare(converted, xla, Tolerances()).changes == ()
    assert compare(xla, converted, Tolerances()).changes == ()

"""What differs between the JAX releases hloscope supports (0.8, 0.9, 0.10), handled
where JAX's and jaxlib's APIs are wrapped (`sources/jax/private.py`, `ir/context.py`).

These run on whichever release is installed: the full suite on the newest, and the
smoke tier (`make smoke-jax`) on 0.8 and 0.9, where the bindings and JAX's words
differ. JAX 0.8's explanations are checked here on text JAX 0.8.3 wrote, so that the
newest release checks the rewriting too.
"""

from __future__ import annotations

from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

from conftest import DUMPS, run_cli
from hloscope.ir import hlo_native
from hloscope.ir.context import bytecode_producer, hlo_computations, release_note, xla_hlo
from hloscope.ir.hlo_listing import instruction_texts, listed_computations
from hloscope.sources.jax.capture import parse_explanation
from hloscope.sources.jax.explain_words import explanation_in_current_words

HLO_DUMPS = sorted(p for p in DUMPS.iterdir() if p.name.endswith((".hlo", ".hlo.pb")))

# What JAX 0.8.3 logged for samples/recompiles.py-like calls (`jax_explain_cache_misses`).
JAX_0_8_TYPES = """\
TRACING CACHE MISS at /tmp/prog.py:14:15 (<module>) costing 0.476 ms because:
  for scale defined at /tmp/prog.py:5
  all previously seen cache keys are different. Closest previous key:
  * key with different input types:
      types now: x: f32[8,4], factor: f32[]
        * at factor, now f32[]{weak_type=False} and before f32[]{weak_type=True}
    where weak_type=True often means a Python builtin numeric value, and\x20
    weak_type=False means a jax.Array.
    See https://docs.jax.dev/en/latest/type_promotion.html#weak-types."""
JAX_0_8_PYTREE = """\
TRACING CACHE MISS at /tmp/prog.py:17:16 (<module>) costing 0.633 ms because:
  for loss defined at /tmp/prog.py:11
  all previously seen cache keys are different. Closest previous key:
  * key with different input pytree:
      now: PyTreeDef((({'a': *, 'b': *},), {}))
      before: PyTreeDef((({'a': *},), {}))
      * at args[0], now <class 'dict'> with 2 children and before <class 'dict'> with 1 \
child, so the numbers of children do not match, with the symmetric difference of key sets: {'b'}"""
JAX_0_8_STATIC_KWARGS = """\
TRACING CACHE MISS at /tmp/prog.py:15:22 (<module>) costing 0.344 ms because:
  for power defined at /tmp/prog.py:7
  all previously seen cache keys are different. Several previous keys are closest:
  * key with different value of static kwargs:
      now {exponent: 3, name: 'a, b'} and before {exponent: 2, name: 'a, b'}
  * key with different value of static kwargs:
      now {exponent: 3, name: 'a, b'} and before {exponent: 4, name: 'a, b'}"""
# What JAX 0.10.2 logged for the same calls.
JAX_0_10_TYPES = """\
TRACING CACHE MISS at /tmp/prog.py:14:15 (<module>):
  for scale defined at /tmp/prog.py:5
  all previously seen cache keys differ. For the closest previous key:
  different input types:
  * at factor, now f32[]{weak_type=False} and before f32[]{weak_type=True}\
https://docs.jax.dev/en/latest/type_promotion.html#weak-types"""
JAX_0_10_PYTREE = """\
TRACING CACHE MISS at /tmp/prog.py:17:16 (<module>):
  for loss defined at /tmp/prog.py:11
  all previously seen cache keys differ. For the closest previous key:
  different input pytree:
  * at input path [0][0], now <class 'dict'> with 2 children and before <class 'dict'> \
with 1 child, so the numbers of children do not match, with the symmetric difference of key \
sets: {'b'}"""


@pytest.mark.parametrize(
    ("jax_0_8", "jax_0_10"),
    [(JAX_0_8_TYPES, JAX_0_10_TYPES), (JAX_0_8_PYTREE, JAX_0_10_PYTREE)],
    ids=["types", "pytree"],
)
def test_jax_0_8_explanations_read_as_the_newer_ones(jax_0_8: str, jax_0_10: str) -> None:
    # JAX 0.8 words the same differences otherwise: read as they were, every change was
    # lost (only the cause's text was kept, with the 'types now' line in it).
    older = parse_explanation(explanation_in_current_words(jax_0_8))
    newer = parse_explanation(jax_0_10)
    assert older is not None and newer is not None
    assert older == newer


def test_jax_0_8_static_keywords_and_several_closest_keys() -> None:
    explanation = parse_explanation(explanation_in_current_words(JAX_0_8_STATIC_KWARGS))
    assert explanation is not None
    [change] = explanation.changes
    # The first closest key, as JAX 0.9 and newer name one; the keyword whose value is
    # the same ('a, b', which holds the separator) is no change.
    assert (change.path, change.before, change.after, change.kind) == (
        "exponent",
        "2",
        "3",
        "static",
    )


def test_newer_explanations_are_left_as_they_are() -> None:
    assert explanation_in_current_words(JAX_0_10_TYPES) == JAX_0_10_TYPES
    assert explanation_in_current_words("") == ""


@pytest.mark.parametrize("dump", HLO_DUMPS, ids=[p.name for p in HLO_DUMPS])
def test_hlo_dumps_load_whatever_module_binds_xla(dump: Path) -> None:
    # jaxlib 0.10 binds XLA's HLO in jaxlib._hlo, 0.8 and 0.9 in jaxlib._jax: on 0.9.2
    # every HLO dump failed ('XLA's HLO parser failed (exit 1)', the reader process
    # dying on the import).
    bindings = xla_hlo()
    assert hasattr(bindings, "HloModule") and hasattr(bindings, "hlo_module_from_text")
    run = run_cli("inspect", str(dump), "--json")
    assert run.code == 0, run.stderr
    assert run.json()["source"]["format"].startswith("hlo")


def _module(name: str) -> Any:
    return xla_hlo().hlo_module_from_text((DUMPS / name).read_text())


@pytest.mark.parametrize(
    "name", ["mlp.after_optimizations.hlo", "host_call.after_optimizations.hlo"]
)
def test_listed_instructions_are_the_bound_ones(name: str) -> None:
    # The listing (jaxlib 0.8 and 0.9 bind no instructions) gives what jaxlib 0.10's
    # `HloComputation.instructions()` gives; on a release without them, the texts it
    # lists are XLA's printing of the module, line for line.
    module: Any = _module(name)
    listed = listed_computations(module)
    bound = list(module.computations())
    assert [c.name for c in listed] == [str(c.name) for c in bound]
    printed = instruction_texts(str(module.to_string()))
    for mine, theirs in zip(listed, bound, strict=True):
        rows = [
            (i.name, [o.name for o in i.operands()], i.to_string()) for i in mine.instructions()
        ]
        assert rows and all(text == printed[name] for name, _, text in rows)
        # The opcode as XLA prints it (`sine`, where jaxlib's enum says kSin).
        assert all(f" {i.opcode}(" in i.to_string() for i in mine.instructions())
        if hasattr(theirs, "instructions"):  # in its own order: hlo_native orders them
            assert sorted(rows) == sorted(
                (str(i.name), [str(o.name) for o in i.operands()], str(i.to_string()))
                for i in theirs.instructions()
            )
    assert len(hlo_computations(module)) == len(bound)


def test_xla_own_form_from_the_listing_equals_the_bound_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # XLA's own form of a module (when its MLIR conversion fails) read its instructions
    # from `HloComputation.instructions()`, which jaxlib 0.8 and 0.9 lack: an internal
    # error on every such module there (34 corpus files on 0.9.2).
    for name in ("mlp.after_optimizations.hlo", "host_call.after_optimizations.hlo"):
        module = _module(name)
        built = hlo_native.build_hlo_native_model(module)
        monkeypatch.setattr(hlo_native, "hlo_computations", listed_computations)
        listed = hlo_native.build_hlo_native_model(module)
        monkeypatch.undo()

        def ops(model: object) -> list[tuple[object, ...]]:
            return [
                (op.name, op.operands, op.results, dict(op.attributes), op.location_text)
                for op in model.ops  # type: ignore[attr-defined]
            ]

        assert ops(listed) == ops(built)
        assert listed.value_types == built.value_types


def test_a_file_a_newer_release_wrote_names_the_releases(tmp_path: Path) -> None:
    # An opcode the installed XLA does not know (`scan` came with a newer XLA than
    # jaxlib 0.8's): the refusal names the installed jaxlib, as the file says nothing
    # of who wrote it.
    hlo = tmp_path / "newer.hlo"
    hlo.write_text(
        "HloModule m\n\nENTRY main {\n  p = f32[4] parameter(0)\n"
        "  ROOT r = f32[4] frobnicate(p)\n}\n"
    )
    run = run_cli("inspect", str(hlo))
    jaxlib = metadata.version("jaxlib")
    assert run.code == 2 and run.stderr.count("\n") == 1
    assert "Unknown opcode: frobnicate" in run.stderr
    assert f"(installed: jaxlib {jaxlib}, StableHLO " in run.stderr
    assert "a newer release may have written it" in run.stderr
    # MLIR bytecode names its producer: a bytecode version the installed MLIR does not
    # read is refused with both.
    data = bytearray((DUMPS / "mlp.mlirbc").read_bytes())
    assert bytecode_producer(bytes(data)) == "MLIR23.0.0git"
    data[4] = 0x63  # bytecode version 49, as a one-byte prefix varint
    newer = tmp_path / "newer.mlirbc"
    newer.write_bytes(bytes(data))
    run = run_cli("inspect", str(newer))
    assert run.code == 2 and run.stderr.count("\n") == 1
    assert "bytecode version 49 is newer than the current version" in run.stderr
    assert f"(written by MLIR23.0.0git; installed: jaxlib {jaxlib}, StableHLO " in run.stderr
    assert bytecode_producer((DUMPS / "mlp.vhlo.mlirbc").read_bytes()) == "StableHLO_v1.15.0"


def test_a_refusal_of_something_else_names_no_release() -> None:
    assert release_note("expects opcode but sees: }") == ""
    assert release_note("Dialect `check' not found for custom op 'check.expect_eq'") == ""

"""`analyses.compiles` on recorded compilations: grouping, totals and the likely-cause
sentences, from the changes JAX reported."""

from __future__ import annotations

from hloscope.analyses.compiles import analyze_compiles, likely_cause, likely_causes
from hloscope.runs import ArgumentChange, RecordedCompile


def compiled(
    function: str = "step",
    changes: tuple[ArgumentChange, ...] = (),
    cause: str | None = None,
    eager: bool = False,
    signature: str | None = None,
    seconds: float = 0.1,
) -> RecordedCompile:
    return RecordedCompile(
        function=function,
        source="train.py:3" if not eager else None,
        call_site="train.py:10",
        eager=eager,
        signature=signature,
        cause=cause or ("never seen function" if not changes else "different input types"),
        changes=changes,
        started_seconds=0.0,
        trace_seconds=0.01,
        lower_seconds=0.02,
        compile_seconds=seconds,
        ops=5,
        persistent_cache_hit=False,
    )


def shape(path: str, before: str, after: str) -> ArgumentChange:
    return ArgumentChange(path=path, before=before, after=after, kind="type")


def test_grouping_and_totals() -> None:
    compiles = [
        compiled(signature="a"),
        compiled(changes=(shape("x", "f32[4]", "f32[8]"),), signature="b"),
        compiled("sin", eager=True),
        compiled("other", signature="c"),
        compiled(signature="a"),  # one signature compiled again
    ]
    analysis = analyze_compiles(compiles, wall_seconds=2.0)
    summary = analysis.summary
    assert (summary.compiles, summary.functions, summary.eager_compiles) == (4, 2, 1)
    assert summary.recompiled_functions == 1
    step = analysis.functions[0]
    assert (step.function, step.compiles, step.signatures, step.indices) == (
        "step",
        3,
        2,
        (0, 1, 4),
    )
    assert step.causes == ("different input types",)
    assert analysis.eager[0].op == "sin"
    assert abs(summary.compiling_seconds - 5 * 0.13) < 1e-9
    assert abs(summary.compiling_share - 5 * 0.13 / 2.0) < 1e-9


def test_leading_dimension_takes_many_values() -> None:
    compiles = [
        compiled(),
        compiled(changes=(shape("batch['x']", "f32[8,4]", "f32[16,4]"),)),
        compiled(changes=(shape("batch['x']", "f32[8,4]", "f32[24,4]"),)),
    ]
    sentence = likely_cause(compiles)
    assert sentence is not None
    assert "leading dimension of batch['x'] took 3 values (8, 16, 24)" in sentence
    # Two values, or another dimension changing, is no such pattern: a change of shape.
    assert likely_cause(compiles[:2]) == (
        "batch['x'] took 2 shapes ([8,4], [16,4]), and each new one compiles again: pad to "
        "a few fixed shapes"
    )
    other = likely_cause([compiled(changes=(shape("x", "f32[8,4]", "f32[8,5]"),))] * 3)
    assert other is not None and other.startswith("x took 2 shapes ([8,4], [8,5])")


def test_every_distinct_cause_most_frequent_first() -> None:
    weak = shape("s", "f32[]{weak_type=True}", "f32[]{weak_type=False}")
    compiles = [
        compiled(),
        compiled(changes=(shape("x", "f32[4]", "bf16[4]"),)),
        compiled(changes=(weak,)),
        compiled(changes=(shape("x", "f32[4]", "f16[4]"), weak)),
    ]
    causes = likely_causes(compiles)
    assert [c.split(" ", 2)[:2] for c in causes] == [["x", "took"], ["s", "is"]]
    assert causes[0].startswith("x took 3 dtypes (f32, bf16, f16)")
    assert analyze_compiles(compiles, 1.0).functions[0].likely_causes == causes


def test_weak_type_flip() -> None:
    change = shape("lr", "f32[]{weak_type=True}", "f32[]{weak_type=False}")
    sentence = likely_cause([compiled(), compiled(changes=(change,))])
    assert sentence is not None and sentence.startswith("lr is a Python scalar (weak type)")


def test_static_argument_changing_every_call() -> None:
    def static(before: str, after: str) -> ArgumentChange:
        return ArgumentChange(path="n", before=before, after=after, kind="static")

    compiles = [
        compiled(),
        compiled(changes=(static("1", "2"),)),
        compiled(changes=(static("1", "3"),)),
    ]
    sentence = likely_cause(compiles)
    assert (
        sentence is not None
        and "static argument n took a new value at every call (1, 2, 3)" in sentence
    )


def test_function_redefined_at_every_call() -> None:
    cause = (
        "never seen function but seen another function defined on the same line; maybe the "
        "function is being re-defined repeatedly, preventing caching?"
    )
    sentence = likely_cause([compiled(), compiled(cause=cause)])
    assert sentence is not None and "defined (and jitted) again at every call" in sentence

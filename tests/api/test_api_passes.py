"""`Inspection.passes()`: XLA's pipeline pass by pass from the Python API."""

from __future__ import annotations

import hloscope
from samples.compute_on import example_args, host_inside_jit


def test_a_function_in_hand_is_compiled_with_per_pass_dumps() -> None:
    insp = hloscope.inspect(host_inside_jit, *example_args())
    report = insp.passes(find="_xla_compute_type", diff="fusion")
    assert report.folder is None and report.table.steps
    assert report.find is not None
    assert [c.pass_name for c in report.find.changes] == ["fusion"]
    assert report.diff is not None and not report.diff.same
    doc = report.to_json()  # type: ignore[attr-defined]
    assert doc["command"] == "passes" and doc["find"]["changes"][0]["pass"] == "fusion"
    assert "fusion" in str(report)


def test_an_entrypoint_string_gives_the_same_pipeline() -> None:
    from_object = hloscope.inspect(host_inside_jit, *example_args()).passes()
    from_target = hloscope.inspect(
        "samples/compute_on.py:host_inside_jit", *example_args()
    ).passes()
    assert [(s.pass_name, s.ops) for s in from_object.table.steps] == [
        (s.pass_name, s.ops) for s in from_target.table.steps
    ]

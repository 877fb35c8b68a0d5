"""`diff` of optimized modules read in XLA's own form (`HLOSCOPE_HLO_FORM=xla`, the form
LLM-scale TPU compiles arrive in): what only renumbers (channel ids, the instruction an
`async_collective_name` names) is no change, as it is none in the converted form; a
fusion is an `hlo.fusion` whose fused computation holds its ops, and one added or
removed names itself, its kind and its ops, in JSON and in text.

The modules are XLA's own: a sharded step compiled for 8 CPU devices
(tests/fixtures/diff_xla_form.py)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from conftest import FIXTURES, run_cli
from forms_support import form, normalized


def _fixture_module() -> Any:
    import importlib.util

    spec = importlib.util.spec_from_file_location("diff_xla_form", FIXTURES / "diff_xla_form.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """XLA's optimized text of the step, and of the step that also returns its
    gradient's norm, as files."""
    module = _fixture_module()
    folder = tmp_path_factory.mktemp("xla_form")
    paths = {}
    for name in ("step", "step_with_norm"):
        path = folder / f"{name}.hlo"
        path.write_text(module.optimized_text(getattr(module, name)))
        paths[name] = path
    return paths


@pytest.fixture(scope="module")
def loops(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """XLA's optimized text of a loop whose body reduces with an addition, and of the
    same loop reducing with a maximum, as files."""
    module = _fixture_module()
    folder = tmp_path_factory.mktemp("xla_loops")
    paths = {}
    for name in ("loop_sum", "loop_max"):
        path = folder / f"{name}.hlo"
        path.write_text(module.optimized_text(getattr(module, name), module.loop_args))
        paths[name] = path
    return paths


@pytest.fixture(autouse=True)
def _xla_form(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HLOSCOPE_HLO_FORM", "xla")


def _shift_channels(text: str, by: int) -> str:
    shifted = re.sub(r"channel_id=(\d+)", lambda m: f"channel_id={int(m[1]) + by}", text)
    assert shifted != text, "XLA wrote no channel id: the case tests nothing"
    return shifted


def test_channel_ids_are_no_change(compiled: dict[str, Path], tmp_path: Path) -> None:
    text = compiled["step"].read_text()
    shifted = tmp_path / "shifted.hlo"
    shifted.write_text(_shift_channels(text, 10))
    run = run_cli("diff", str(compiled["step"]), str(shifted), "--json")
    report = run.json()
    assert run.code == 0, report["changes"]
    assert report["verdict"] == "same"
    assert report["summary"]["changed"] == 0
    assert report["changes"] == []
    assert "HLOSCOPE_HLO_FORM=xla" in " ".join(report["notes"])  # read in XLA's form


def test_async_collective_names_are_no_change(compiled: dict[str, Path], tmp_path: Path) -> None:
    """The TPU names the async collective a synchronous one was made from
    (`async_collective_name="all-gather-start.12"`): another compile numbers it
    otherwise."""
    text = compiled["step"].read_text()
    named = [0]

    def name(match: re.Match[str], offset: int) -> str:
        named[0] += 1
        collective = f"all-reduce-start.{named[0] + offset}"
        return f'{match[0]}, frontend_attributes={{async_collective_name="{collective}"}}'

    a, b = tmp_path / "a.hlo", tmp_path / "b.hlo"
    a.write_text(re.sub(r"channel_id=\d+", lambda m: name(m, 0), text))
    named[0] = 0
    b.write_text(_shift_channels(re.sub(r"channel_id=\d+", lambda m: name(m, 7), text), 3))
    assert "async_collective_name" in a.read_text()
    run = run_cli("diff", str(a), str(b), "--json")
    report = run.json()
    assert run.code == 0, report["changes"]
    assert report["summary"]["changed"] == 0


def test_an_added_fusion_names_itself_its_kind_and_its_ops(compiled: dict[str, Path]) -> None:
    a, b = str(compiled["step"]), str(compiled["step_with_norm"])
    report = run_cli("diff", a, b, "--json").json()
    fusions = report["fusions"]["changes"]
    added = [f for f in fusions if f["status"] == "added"]
    assert added, fusions
    for fusion in added:
        assert fusion["b_name"] and fusion["b_kind"] and fusion["b_ops"], fusion
        assert fusion["a_name"] is None and fusion["a_kind"] is None and fusion["a_ops"] == []
    by_name = {f["b_name"]: f for f in added}
    # XLA's own names, kinds and fused ops (the norm's reduction and its square root).
    assert by_name["wrapped_reduce"]["b_kind"] == "kLoop"
    assert "reduce" in by_name["wrapped_reduce"]["b_ops"]
    assert by_name["wrapped_sqrt"]["b_ops"] == ["sqrt"]
    # Every fusion on both sides reads with its kind; none is empty.
    assert all((f["a_kind"] or f["b_kind"]) and (f["a_ops"] or f["b_ops"]) for f in fusions)
    # The fusions of A are B's too: only B's new ones are added, none removed.
    assert not [f for f in fusions if f["status"] == "removed"], fusions

    text = run_cli("diff", a, b).stdout
    table = text[text.index("Fusions (") :]
    for line in table.splitlines():
        if line.strip().startswith("added"):
            assert re.search(r"added\s+\S+\s+k[A-Z]\w+\s+\S", line), line
    assert "wrapped_sqrt" in table and "kLoop" in table


def _rows(report: dict[str, Any]) -> list[tuple[Any, ...]]:
    """A diff's changes, where each is left out (the converted form names an
    instruction by its position, `%12`, XLA's form by its name)."""
    return [
        (c["kind"], c["function"], c["op"], c["detail"], c["count"])
        for c in normalized(report["changes"])
    ]


def test_held_computations_are_regions_of_their_op(loops: dict[str, Path]) -> None:
    """XLA's own form names a reducer and a loop's condition and body as computations of
    their own, and passes the loop's values in tuples; the diff reads them as the
    converted form holds them: regions of the op, their ops counted in main, no
    function of their own, no tuple an op."""
    text = loops["loop_sum"].read_text()
    assert "to_apply=" in text and "body=" in text and "condition=" in text, text
    same = str(loops["loop_sum"])
    report = run_cli("diff", same, same, "--json").json()
    with form(xla=False):
        converted = run_cli("diff", same, same, "--json").json()
    assert "HLOSCOPE_HLO_FORM=xla" in " ".join(report["notes"])  # read in XLA's form
    assert [f["a"] for f in report["functions"]] == ["main"], report["functions"]
    assert report["functions"] == converted["functions"]
    assert report["summary"] == converted["summary"]
    assert report["a"]["ops"] == converted["a"]["ops"]


def test_a_changed_reducer_reads_as_converted(loops: dict[str, Path]) -> None:
    """A loop body's reducer changed (an addition made a maximum): the change is in
    main, where the reduction runs, and reads as it does converted."""
    a, b = str(loops["loop_sum"]), str(loops["loop_max"])
    run = run_cli("diff", a, b, "--json")
    report = run.json()
    with form(xla=False):
        converted = run_cli("diff", a, b, "--json").json()
    assert run.code == 1 and report["verdict"] == "different"
    assert [f["a"] for f in report["functions"]] == ["main"], report["functions"]
    assert {c["function"] for c in report["changes"]} == {"main"}
    assert any(c["op"] == "hlo.maximum" for c in report["changes"]), report["changes"]
    assert report["functions"] == converted["functions"]
    assert report["summary"] == converted["summary"]
    assert _rows(report) == _rows(converted)

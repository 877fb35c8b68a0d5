"""`hloscope passes` on the command line: the JSON contract, the text, and bad input."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import Run, run_cli, sample
from hloscope.sources import loader


@pytest.fixture(scope="module")
def dump(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("passes")
    options = loader.LoadOptions(
        args_factory="samples/compute_on.py:example_args",
        optimized=True,
        compiler_options=(("xla_dump_to", str(folder)), ("xla_dump_hlo_pass_re", ".*")),
    )
    loader.load("samples/compute_on.py:host_inside_jit", options)
    return folder


def test_json_has_the_required_keys(dump: Path) -> None:
    run = run_cli("passes", str(dump), "--find", "fusion", "--diff", "fusion", "--json")
    assert run.code == 0, run.stderr
    doc = run.json()
    assert doc["schema_version"] == 1 and doc["target"] == str(dump)
    assert doc["passes"]
    for entry in doc["passes"]:
        assert {"index", "pipeline", "pass", "file", "ops", "ops_delta", "changed_kinds"} <= set(
            entry
        )
        assert (dump / entry["file"]).is_file()
    assert [e["index"] for e in doc["passes"]] == list(range(len(doc["passes"])))
    fused = next(e for e in doc["passes"] if e["pass"] == "fusion")
    assert fused["changed_kinds"]["fusion"] == 1
    find = doc["find"]
    assert {"pattern", "first_seen", "gone_at", "changes"} <= set(find)
    assert find["first_seen"] == {"index": fused["index"], "pass": "fusion"}
    assert {"index", "pass", "before", "after"} <= set(find["changes"][0])
    assert doc["diff"]["index"] == fused["index"] and doc["diff"]["verdict"] == "different"


def test_text_lists_the_passes(dump: Path) -> None:
    run = run_cli("passes", str(dump), "--print")
    assert run.code == 0, run.stderr
    assert ".jit_host_inside_jit" in run.stdout
    assert "+fusion 1" in run.stdout


def test_an_entrypoint_is_compiled_with_per_pass_dumps() -> None:
    run = run_cli("passes", *sample("compute_on", "host_inside_jit"), "--json")
    assert run.code == 0, run.stderr
    doc = run.json()
    assert doc["folder"] is None and any(e["pass"] == "fusion" for e in doc["passes"])


def _one_line_error(run: Run) -> str:
    assert run.code == 2 and run.stdout == ""
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1, run.stderr
    return lines[0]


def test_a_folder_without_per_pass_files_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "module_0000.jit_f.before_optimizations.txt").write_text(
        Path("samples/dumps/mlp.before_optimizations.hlo").read_text()
    )
    line = _one_line_error(run_cli("passes", str(tmp_path)))
    assert "--xla_dump_hlo_pass_re=.*" in line


def test_an_unknown_pass_is_one_line(dump: Path) -> None:
    line = _one_line_error(run_cli("passes", str(dump), "--diff", "no-such-pass"))
    assert "no-such-pass" in line
    line = _one_line_error(run_cli("passes", str(dump), "--diff", "999"))
    assert "999" in line


def test_an_optimized_module_is_refused(dump: Path) -> None:
    (after,) = dump.glob("*cpu_after_optimizations.txt")
    line = _one_line_error(run_cli("passes", str(after)))
    assert "already optimized" in line

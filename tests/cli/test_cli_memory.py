"""`hloscope memory` through the command layer: the JSON contract, the same answer
from an entrypoint and from a dump folder of the same compilation, the text report,
and one line (exit 2) for folders without XLA's files and for files it cannot read."""

from __future__ import annotations

import importlib.util
import shutil

import pytest

from conftest import DUMPS, SAMPLES, sample

BUFFER_KEYS = {"name", "bytes", "shape", "kind", "instruction", "fusion", "op_name", "sources"}
TOTAL_KEYS = {"argument_bytes", "output_bytes", "temp_bytes", "alias_bytes", "generated_code_bytes"}


def assert_contract(doc):
    assert doc["schema_version"] == 1
    assert doc["command"] == "memory"
    assert isinstance(doc["target"], str)
    assert doc["totals"].keys() >= TOTAL_KEYS
    assert isinstance(doc["peak_bytes"], int)
    assert doc["peak_at"].keys() >= {"index", "instruction"}
    assert all(p.keys() >= {"index", "bytes"} for p in doc["profile"])
    sizes = [b["bytes"] for b in doc["buffers_at_peak"]]
    assert sizes == sorted(sizes, reverse=True)
    assert sum(sizes) == doc["peak_bytes"]
    for buffer in doc["buffers_at_peak"]:
        assert buffer.keys() >= BUFFER_KEYS


@pytest.fixture(scope="module")
def dump_folder(tmp_path_factory):
    """The sample compiled by JAX with XLA dumping into a folder."""
    spec = importlib.util.spec_from_file_location("memory_peak_cli", SAMPLES / "memory_peak.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    folder = tmp_path_factory.mktemp("xla_dump")
    lowered = module.rank_scores.lower(*module.example_args())
    lowered.compile(compiler_options={"xla_dump_to": str(folder)})
    return folder


def _answer(doc):
    return (
        doc["peak_bytes"],
        doc["peak_at"],
        doc["profile"],
        [
            (b["name"], b["bytes"], b["shape"], b["kind"], b["fusion"], b["op_name"], b["sources"])
            for b in doc["buffers_at_peak"]
        ],
        # A dump folder holds no lowered module: JAX's names of the results are unknown.
        [{**a, "result_name": None} for a in doc["aliases"]],
    )


def test_json_of_an_entrypoint_and_of_its_dump_folder(cli, dump_folder):
    run = cli("memory", *sample("memory_peak", "rank_scores"), "--json")
    assert run.code == 0, run.stderr
    entry = run.json()
    assert_contract(entry)
    assert entry["source"]["kind"] == "entrypoint"
    assert entry["totals"]["temp_bytes"] == 2 * 1024 * 1024 * 4
    assert entry["files"] == []
    assert [a["path"] for a in entry["aliases"]] == ["logits"]

    run = cli("memory", str(dump_folder), "--json")
    assert run.code == 0, run.stderr
    dumped = run.json()
    assert_contract(dumped)
    assert dumped["source"]["kind"] == "dump"
    assert all(value is None for value in dumped["totals"].values())
    assert len(dumped["files"]) == 2
    assert _answer(dumped) == _answer(entry)


def test_text_report(cli):
    run = cli("memory", *sample("memory_peak", "rank_scores"))
    assert run.code == 0, run.stderr
    out = run.stdout
    assert "peak       8.0 MiB (8,388,612 bytes) at position 5 of 7 (sort.0)" in out
    assert "▲ peak at 5" in out
    assert "Buffers live at the peak (3)" in out
    assert "ranked = jnp.sort(scores, axis=-1)" in out
    assert "logits (4.0 KiB)" in out
    assert "temperature.1 (temperature)" in out


def test_a_folder_without_the_files_names_the_flags(cli, dump_folder, tmp_path):
    for path in dump_folder.glob("*optimizations.txt"):
        shutil.copy(path, tmp_path / path.name)
    run = cli("memory", str(tmp_path))
    assert run.code == 2
    assert run.stdout == ""
    assert len(run.stderr.strip().splitlines()) == 1
    assert "--xla_dump_to" in run.stderr and "no buffer assignment" in run.stderr


def test_a_malformed_file_is_refused_with_its_line(cli, dump_folder, tmp_path):
    for path in dump_folder.glob("*"):
        if path.is_file():
            shutil.copy(path, tmp_path / path.name)
    [live] = tmp_path.glob("*-live-range.txt")
    lines = live.read_text().splitlines()
    lines[3] = "    1 temperature.1"
    live.write_text("\n".join(lines) + "\n")
    run = cli("memory", str(tmp_path))
    assert run.code == 2
    assert len(run.stderr.strip().splitlines()) == 1
    assert f"{live.name}:4:" in run.stderr


def test_an_optimized_module_file_is_refused(cli, dump_folder):
    [after] = dump_folder.glob("*cpu_after_optimizations.txt")
    run = cli("memory", str(after))
    assert run.code == 2
    assert "cannot compile again" in run.stderr
    assert len(run.stderr.strip().splitlines()) == 1


def test_a_before_optimization_dump_is_compiled(cli, dump_folder):
    [before] = dump_folder.glob("*before_optimizations.txt")
    run = cli("memory", str(before), "--json")
    assert run.code == 0, run.stderr
    doc = run.json()
    assert_contract(doc)
    assert doc["peak_bytes"] >= 2 * 1024 * 1024 * 4
    assert doc["totals"]["temp_bytes"] is not None


def test_a_jax_dump_folder_is_compiled(cli, tmp_path):
    shutil.copy(DUMPS / "mlp.stablehlo.mlir", tmp_path / "jax_ir0001_jit_mlp_compile.mlir")
    run = cli("memory", str(tmp_path), "--json")
    assert run.code == 0, run.stderr
    doc = run.json()
    assert_contract(doc)
    assert doc["module"] == "jit_mlp"
    assert doc["totals"]["argument_bytes"] is not None
    assert doc["files"] == []

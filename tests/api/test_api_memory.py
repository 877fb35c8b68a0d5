"""`insp.memory()`: the `memory` report from the Python API, for a function in hand,
a target string and a dump folder, shown as the command prints it and agreeing with
its JSON."""

from __future__ import annotations

import importlib.util

import pytest

import hloscope
from conftest import SAMPLES, run_cli, sample
from hloscope import HloscopeError


def _sample():
    spec = importlib.util.spec_from_file_location("memory_peak_api", SAMPLES / "memory_peak.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_memory_of_a_function_in_hand_agrees_with_the_command():
    module = _sample()
    insp = hloscope.inspect(module.rank_scores, *module.example_args())
    report = insp.memory()
    assert insp.memory() is report  # compiled once
    assert report.analysis.peak_instruction == "sort.0"
    assert "Buffers live at the peak" in str(report)
    doc = report.to_json()
    command = run_cli("memory", *sample("memory_peak", "rank_scores"), "--json").json()
    for key in ("peak_bytes", "peak_at", "profile", "totals", "aliases"):
        assert doc[key] == command[key], key
    assert [b["name"] for b in doc["buffers_at_peak"]] == [
        b["name"] for b in command["buffers_at_peak"]
    ]


def test_memory_of_a_dump_folder(tmp_path):
    module = _sample()
    module.rank_scores.lower(*module.example_args()).compile(
        compiler_options={"xla_dump_to": str(tmp_path)}
    )
    report = hloscope.inspect(tmp_path).memory()
    assert report.analysis.totals is None
    assert report.analysis.peak_bytes == 2 * 4 * 1024 * 1024 + 4


def test_memory_of_a_compiled_object_says_why_not():
    module = _sample()
    compiled = module.rank_scores.lower(*module.example_args()).compile()
    with pytest.raises(HloscopeError, match="already compiled"):
        hloscope.inspect(compiled).memory()

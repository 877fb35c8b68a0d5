"""What is live at the memory peak: the sample whose peak is a sort's input and output,
with XLA's own numbers (the peak of its live-range dump, `memory_analysis()`'s
totals) read independently here and compared."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

from conftest import SAMPLES, line_of
from hloscope import reports
from hloscope.sources.loader import LoadOptions

SAMPLE = SAMPLES / "memory_peak.py"
OPTIONS = LoadOptions(args_factory="samples/memory_peak.py:example_args")


def _sample_module():
    spec = importlib.util.spec_from_file_location("memory_peak_sample", SAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def report() -> reports.MemoryReport:
    return reports.memory_report("samples/memory_peak.py:rank_scores", OPTIONS)


@pytest.fixture(scope="module")
def xla(tmp_path_factory):
    """The sample compiled by JAX here, with XLA dumping into a folder: the
    compiled object and the folder."""
    sample = _sample_module()
    folder = tmp_path_factory.mktemp("dump")
    lowered = sample.rank_scores.lower(*sample.example_args())
    compiled = lowered.compile(compiler_options={"xla_dump_to": str(folder)})
    return compiled, folder


def test_the_sorts_input_and_output_are_the_buffers_at_the_peak(report):
    first, second, *rest = report.analysis.buffers_at_peak
    scores_line = f"samples/memory_peak.py:{line_of(SAMPLE, 'scores = jnp.exp(')}"
    sort_line = f"samples/memory_peak.py:{line_of(SAMPLE, 'ranked = jnp.sort(')}"
    by_line = {b.sources: b for b in (first, second)}
    scores = by_line[(scores_line,)]
    ranked = by_line[(sort_line,)]
    assert scores.kind == ranked.kind == "temporary"
    assert scores.bytes == ranked.bytes == 1024 * 1024 * 4
    assert scores.shape.startswith("f32[1024,1024]")
    assert scores.fusion == scores.instruction and scores.opcode == "fusion"
    assert ranked.opcode == "sort" and ranked.fusion is None
    assert ranked.op_name is not None and ranked.op_name.endswith("sort")
    assert all(b.bytes < scores.bytes for b in rest)
    assert report.line_texts[sort_line] == "ranked = jnp.sort(scores, axis=-1)"


def test_the_peak_is_xlas(report, xla):
    _, folder = xla
    [live_range] = Path(folder).glob("*jit_rank_scores*-live-range.txt")
    text = live_range.read_text()
    peak = re.search(r"Live ranges at (\d+) \(peak\):", text)
    totals = re.findall(r"\(cumulative: (\d+) bytes\)", text)
    assert peak is not None and totals
    analysis = report.analysis
    assert analysis.peak_index == int(peak[1])
    assert analysis.peak_bytes == int(totals[-1])
    # The profile counts what XLA lists at its peak there.
    at_peak = [p for p in analysis.profile if p.index == analysis.peak_index]
    assert at_peak[0].bytes == analysis.peak_bytes
    assert analysis.peak_instruction == "sort.0"


def test_the_totals_are_memory_analysis(report, xla):
    compiled, _ = xla
    stats = compiled.memory_analysis()
    totals = report.analysis.totals
    assert totals is not None
    assert totals["argument_bytes"] == stats.argument_size_in_bytes
    assert totals["output_bytes"] == stats.output_size_in_bytes
    assert totals["temp_bytes"] == stats.temp_size_in_bytes
    assert totals["alias_bytes"] == stats.alias_size_in_bytes
    assert totals["generated_code_bytes"] == stats.generated_code_size_in_bytes


def test_a_donated_argument_is_an_alias(report):
    [donated] = report.analysis.donated
    assert donated.path == "logits" and donated.parameter == 0
    assert donated.bytes == 1024 * 4
    assert donated.holds  # the result XLA writes into the donated buffer
    temperature = next(b for b in report.analysis.buffers_at_peak if b.kind == "parameter")
    assert temperature.path == "temperature" and temperature.parameter == 1

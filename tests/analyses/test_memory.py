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
from hloscope.sources.memory import loaded_memory_dumps, memory_dumps

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
    return reports.memory_report(memory_dumps("samples/memory_peak.py:rank_scores", OPTIONS))


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


def test_a_donated_buffer_reused_at_the_peak_is_an_alias():
    import jax
    import jax.numpy as jnp

    from hloscope.sources.loader import Call, load_object

    def f(x, y):
        ordered = jnp.sort(jnp.sin(x) * 2, axis=0)
        return ordered + y, jnp.cos(y)

    x = jax.ShapeDtypeStruct((512, 128), jnp.float32)
    jitted = jax.jit(f, donate_argnums=(1,))
    report = reports.memory_report(
        loaded_memory_dumps(load_object(jitted, "test:f", call=Call((x, x))))
    )
    analysis = report.analysis
    [donated] = analysis.donated
    assert donated.parameter == 1 and donated.path == "y"
    held = {name.partition("{")[0] for name in donated.holds}
    assert held and not any(name.startswith("y.") for name in held)  # not y itself
    # What XLA writes into the donated buffer is an alias, live at the peak here.
    aliases = [b for b in analysis.buffers_at_peak if b.kind == "alias"]
    assert aliases and {b.instruction for b in aliases} <= held
    assert aliases and all(b.path == "y" and b.parameter == 1 for b in aliases)
    assert sum(b.bytes for b in analysis.buffers_at_peak) == analysis.peak_bytes


def test_buffers_per_memory_space(report):
    from hloscope.analyses.memory import analyze_memory
    from hloscope.ir.xla_buffers import parse_buffer_assignment, parse_live_ranges
    from hloscope.sources.loader import load

    fixture = Path(__file__).resolve().parent.parent / "fixtures" / "xla_memory"
    [assignment_file] = fixture.glob("*-buffer-assignment.txt")
    [live_file] = fixture.glob("*-live-range.txt")
    # The scalar parameter moved to memory space 5 (as a host buffer is on a GPU or TPU).
    text = assignment_file.read_text().replace(
        "parameter 1, shape |f32[]|", "color 5, parameter 1, shape |f32[]|"
    )
    text = text.replace("<41 temperature.1 @0>", "<41 temperature.1 @5>")
    loaded = load("samples/memory_peak.py:rank_scores", OPTIONS).optimized()
    analysis = analyze_memory(
        parse_buffer_assignment(text, "ba"),
        parse_live_ranges(live_file.read_text(), "lr"),
        loaded.module,
        {0: "logits", 1: "temperature"},
        None,
    )
    spaces = {s.color: (s.bytes, s.buffers) for s in analysis.memory_spaces}
    assert spaces == {0: (2 * 4 * 1024 * 1024, 2), 5: (4, 1)}
    temperature = next(b for b in analysis.buffers_at_peak if b.path == "temperature")
    assert temperature.memory_space == 5
    # One space: no per-space entries.
    assert report.analysis.memory_spaces == ()


def test_where_xlas_live_ranges_hold_more_than_its_peak(report):
    analysis = report.analysis
    busiest = analysis.busiest
    assert busiest is not None
    # XLA's peak search reports position 5; its live ranges hold more at 6, where the
    # result starts in the donated buffer while the sort's buffers are still live.
    assert busiest.index == 6 and busiest.instruction == "ynn_fusion"
    assert busiest.bytes == next(p.bytes for p in analysis.profile if p.index == 6)
    assert busiest.bytes == sum(b.bytes for b in busiest.buffers) > analysis.peak_bytes
    result = next(b for b in busiest.buffers if b.instruction == "ynn_fusion")
    assert result.kind == "alias" and result.path == "logits"
    assert result.sources == (f"samples/memory_peak.py:{line_of(SAMPLE, '.sum(axis=-1)')}",)


def test_a_long_schedule_is_bucketed_and_keeps_its_highest_point():
    import jax
    import jax.numpy as jnp

    from hloscope.analyses.memory import PROFILE_POINTS
    from hloscope.sources.loader import Call, load_object

    @jax.jit
    def many(x):
        outs = []
        for i in range(150):
            x = jnp.sort(jnp.sin(x) * (i + 1), axis=0)
            outs.append(x[:1])
        return x, jnp.concatenate(outs)

    x = jax.ShapeDtypeStruct((64, 64), jnp.float32)
    analysis = reports.memory_report(
        loaded_memory_dumps(load_object(many, "test:many", call=Call((x,))))
    ).analysis
    assert analysis.schedule_length > PROFILE_POINTS
    assert analysis.profile_bucket > 1 and len(analysis.profile) <= PROFILE_POINTS
    assert [p.index for p in analysis.profile] == list(
        range(0, analysis.schedule_length, analysis.profile_bucket)
    )
    highest = max(p.bytes for p in analysis.profile)
    assert highest == (analysis.busiest.bytes if analysis.busiest else analysis.peak_bytes)


def test_a_busier_position_that_is_memory_analysis_peak_is_said_so():
    # A donating step with dict params: XLA's live-range dump marks its peak at 5, and
    # memory_analysis() reports the bytes of 6 (the output tuple's 16-byte table of
    # pointers more). The note names memory_analysis()'s peak as the larger, not
    # "more than the peak XLA reports".
    from fixtures import check_models  # type: ignore[import-not-found]

    options = LoadOptions(args_factory="tests/fixtures/check_models.py:update_args")
    found = reports.memory_report(
        memory_dumps("tests/fixtures/check_models.py:update_donated", options)
    ).analysis
    compiled = check_models.update_donated.lower(*check_models.update_args()).compile()
    reported = compiled.memory_analysis().peak_memory_in_bytes
    assert found.busiest is not None and found.busiest.bytes == reported > found.peak_bytes
    (note,) = [n for n in found.notes if "live-range dump marks its peak" in n]
    assert f"holds the {reported:,} bytes memory_analysis() reports as the peak" in note
    assert f"at {found.peak_index} ({found.peak_bytes:,} bytes)" in note

"""The reader of XLA's buffer-assignment and live-range dumps: on files XLA wrote
(made here by compiling with `xla_dump_to`, and a checked-in pair), and strict on
what it does not know: refused with the file and line, never guessed at."""

from __future__ import annotations

import re
from pathlib import Path

import jax
import jax.numpy as jnp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import FIXTURES
from hloscope.errors import HloscopeError
from hloscope.ir.xla_buffers import (
    embedded_live_ranges,
    parse_buffer_assignment,
    parse_live_ranges,
    parse_memory_usage_report,
)
from hloscope.sources import dumps

FIXTURE = FIXTURES / "xla_memory"
ASSIGNMENT = FIXTURE / "module_0000.jit_rank_scores.cpu_after_optimizations-buffer-assignment.txt"
LIVE = FIXTURE / "module_0000.jit_rank_scores.cpu_after_optimizations-live-range.txt"


def _dump(folder: Path) -> dumps.MemoryFiles:
    def f(x, y):
        ordered = jnp.sort(jnp.sin(x) * 2, axis=0)
        return ordered + y, jnp.cos(y)

    x = jax.ShapeDtypeStruct((512, 128), jnp.float32)
    lowered = jax.jit(f, donate_argnums=(1,)).lower(x, x)
    lowered.compile(compiler_options={"xla_dump_to": str(folder)})
    files = dumps.memory_files(folder, name="jit_f")
    assert files is not None
    # The XLA of jaxlib 0.8 and 0.9 writes the live ranges into the buffer assignment.
    embedded = embedded_live_ranges(files.buffer_assignment.read_text())
    assert (files.live_range is None) == (embedded is not None)
    return files


def test_a_dump_xla_writes_here(tmp_path):
    files = _dump(tmp_path)
    text = files.buffer_assignment.read_text()
    assignment = parse_buffer_assignment(text, "ba")
    # Every allocation and value line of the file is read.
    assert len(assignment.allocations) == len(re.findall(r"^allocation \d+:", text, re.M))
    values = [v for a in assignment.allocations for v in a.values]
    assert len(values) == len(re.findall(r"^ value: ", text, re.M))
    donated = next(a for a in assignment.allocations if a.parameter == 1)
    assert donated.maybe_live_out and donated.parameter_index == "{}"
    assert donated.values[0].shape == "f32[512,128]{1,0}" or any(
        v.instruction.startswith("y") for v in donated.values
    )
    output = next(a for a in assignment.allocations if a.output_shape is not None)
    assert output.output_shape == "(f32[512,128], f32[512,128])"
    assert any(a.preallocated_temp for a in assignment.allocations)
    assert any(a.thread_local for a in assignment.allocations)

    if files.live_range is not None:
        live_text = files.live_range.read_text()
    else:
        live_text = embedded_live_ranges(text) or ""
    live = parse_live_ranges(live_text, "lr")
    peak = re.search(r"Live ranges at (\d+) \(peak\):", live_text)
    assert peak is not None and live.peak_index == int(peak[1])
    totals = re.findall(r"cumulative: (\d+) bytes", live_text)
    assert live.peak_bytes == int(totals[-1])
    assert live.schedule_end == int(re.search(r"max (\d+)", live_text)[1])  # type: ignore[index]
    assert len(live.ranges) == len(re.findall(r"^    \S+\{[\d,]*\}:\d+-\d+$", live_text, re.M))
    assert "sort.0" in live.sequence or any(s.startswith("sort") for s in live.sequence)


def test_the_memory_usage_report_xla_writes_here(tmp_path):
    # XLA names its memory spaces there, and sums each one's allocations.
    files = _dump(tmp_path)
    assert files.memory_usage_report is not None
    text = files.memory_usage_report.read_text()
    spaces = parse_memory_usage_report(text, "usage")
    assignment = parse_buffer_assignment(files.buffer_assignment.read_text(), "ba")
    older = re.match(r"Total bytes used: (\d+)", text)
    if older is not None:
        # jaxlib 0.8's XLA: every allocation in one list, no memory space named.
        assert spaces == ()
        assert int(older[1]) == sum(a.size for a in assignment.allocations)
        return
    assert [(s.color, s.name) for s in spaces] == [
        (int(m[2]), m[1]) for m in re.finditer(r"^Memory Space: (\S+) \(color=(\d+)\)", text, re.M)
    ]
    assert {s.color: s.total_bytes for s in spaces} == {
        color: sum(a.size for a in assignment.allocations if a.color == color)
        for color in {a.color for a in assignment.allocations}
    }
    lines = text.splitlines()
    lines.insert(3, "  something XLA never writes")
    with pytest.raises(HloscopeError) as refused:
        parse_memory_usage_report("\n".join(lines), "usage")
    assert refused.value.where == "usage:4"
    with pytest.raises(HloscopeError, match="names no memory space"):
        parse_memory_usage_report("", "usage")


def test_the_checked_in_dump():
    assignment = parse_buffer_assignment(ASSIGNMENT.read_text(), "ba")
    temp = next(a for a in assignment.allocations if a.preallocated_temp)
    assert {"multiply_exponential_fusion", "sort.0"} <= {v.instruction for v in temp.values}
    assert temp.size == 8388608
    logits = next(a for a in assignment.allocations if a.parameter == 0)
    assert logits.maybe_live_out and logits.output_shape == "f32[1024]"
    assert [v.name for v in logits.values] == ["logits.1{}", "ynn_fusion{}"]
    live = parse_live_ranges(LIVE.read_text(), "lr")
    assert live.peak_index == 5
    assert live.sequence[5] == "sort.0"
    assert live.peak_bytes == 8388612
    assert [p.name for p in live.peak_values] == [
        "multiply_exponential_fusion{}",
        "sort.0{}",
        "temperature.1{}",
    ]


def test_live_ranges_in_the_buffer_assignment_of_jaxlib_0_9():
    # What jaxlib 0.9.2's XLA dumped for samples/memory_peak.py:rank_scores: one file,
    # the live ranges after the `Used values` listing (refused as 'not an allocation
    # or value line' before).
    path = FIXTURES / "xla_memory_jaxlib_0.9"
    [file] = path.glob("*-buffer-assignment.txt")
    text = file.read_text()
    assignment = parse_buffer_assignment(text, "ba")
    assert len(assignment.allocations) == len(re.findall(r"^allocation \d+:", text, re.M))
    assert assignment.total_bytes is not None
    embedded = embedded_live_ranges(text)
    assert embedded is not None
    live = parse_live_ranges(embedded, "ba")
    assert live.schedule_end == 8 and live.peak_index == 6
    assert live.sequence[6] == "wrapped_reduce-window"
    assert live.peak_bytes == 4325384
    assert [p.name for p in live.peak_values][:2] == [
        "wrapped_multiply{}",
        "wrapped_reduce-window{}",
    ]
    # An error in the live ranges names its line in the file.
    broken = text.replace("    sort.0{}:4-5", "    sort.0{}:four")
    with pytest.raises(HloscopeError) as raised:
        parse_live_ranges(embedded_live_ranges(broken) or "", "ba")
    assert raised.value.where == f"ba:{text.splitlines().index('    sort.0{}:4-5') + 1}"
    # The newer layout, two files, holds none in the buffer assignment.
    assert embedded_live_ranges(ASSIGNMENT.read_text()) is None


def test_tuple_indices_colors_and_older_sections():
    text = (
        "BufferAssignment:\n"
        "allocation 0: size 16, color 5, output shape is |(f32[2], f32[2])|, maybe-live-out:\n"
        " value: <7 tuple{} @5> (size=16,offset=0): (f32[2]{0}, f32[2]{0})\n"
        " value: <8 while{1} (phi) @5> (size=8,offset=8): f32[2]{0}\n"
        "allocation 1: size 4, constant:\n"
        " value: <2 constant.1> (size=4,offset=0): f32[]\n"
        "\nTotal bytes used: 20 (20B)\n"
        "\nUsed values:\n"
        "<2 constant.1>\n"
        " positions:\n"
        "  constant.1\n"
        " uses:\n"
        "  add, operand 1\n"
        " from instruction: %constant.1 = f32[] constant(0)\n"
    )
    assignment = parse_buffer_assignment(text, "ba")
    first, second = assignment.allocations
    assert first.color == 5 and first.maybe_live_out
    assert [v.name for v in first.values] == ["tuple{}", "while{1}"]
    assert first.values[1].color == 5
    assert second.constant and second.values[0].color == 0
    assert assignment.total_bytes == 20


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        ("allocation 0: size 4:\n", 1, "expected 'BufferAssignment:'"),
        ("BufferAssignment:\n value: <1 a @0> (size=4,offset=0): f32[]\n", 2, "before any"),
        ("BufferAssignment:\nallocation 0: size 4, on-the-moon:\n", 2, "on-the-moon"),
        (
            "BufferAssignment:\nallocation 0: size 4:\n"
            " value: <1 a @0> (size=four,offset=0): f32[]\n",
            3,
            "not an allocation or value line",
        ),
        ("BufferAssignment:\nallocation 0: size 4:\nsomething else\n", 3, "something else"),
    ],
)
def test_malformed_buffer_assignments_are_refused(text, line, message):
    with pytest.raises(HloscopeError, match=re.escape(message)) as raised:
        parse_buffer_assignment(text, "dump/x-buffer-assignment.txt")
    assert raised.value.where == f"dump/x-buffer-assignment.txt:{line}"


def test_an_empty_buffer_assignment_is_refused():
    with pytest.raises(HloscopeError, match="no allocations"):
        parse_buffer_assignment("BufferAssignment:\n", "ba")


def _live_lines() -> list[str]:
    return LIVE.read_text().splitlines()


@pytest.mark.parametrize(
    ("edit", "line", "message"),
    [
        (lambda ls: ["HloLiveRange (max seven):", *ls[1:]], 1, "expected 'HloLiveRange"),
        (lambda ls: [*ls[:3], "    9:constant.6", *ls[4:]], 4, "out of order"),
        (lambda ls: [*ls[:10], "    x.1:0-3", *ls[11:]], 11, "not a line"),
        (lambda ls: [*ls[:18], "    sort.0{}: many bytes", *ls[19:]], 19, "not a line"),
    ],
)
def test_malformed_live_ranges_are_refused(edit, line, message):
    text = "\n".join(edit(_live_lines()))
    with pytest.raises(HloscopeError, match=re.escape(message)) as raised:
        parse_live_ranges(text, "lr.txt")
    assert raised.value.where == f"lr.txt:{line}"


def test_live_ranges_without_a_peak_or_with_a_wrong_total_are_refused():
    lines = _live_lines()
    peak_at = next(i for i, line in enumerate(lines) if "(peak)" in line)
    with pytest.raises(HloscopeError, match="no 'Live ranges at N"):
        parse_live_ranges("\n".join(lines[:peak_at]), "lr.txt")
    wrong = [line.replace("cumulative: 8388608", "cumulative: 8388609") for line in lines]
    with pytest.raises(HloscopeError, match="running total"):
        parse_live_ranges("\n".join(wrong), "lr.txt")
    with pytest.raises(HloscopeError, match="XLA wrote no live ranges"):
        parse_live_ranges("HloLiveRange not available (finalized or constructed from proto)", "l")


def test_memory_files_of_any_backend_and_module(tmp_path):
    names = [
        "module_0004.jit_f.sm_8.0_gpu_after_optimizations-buffer-assignment.txt",
        "module_0004.jit_f.sm_8.0_gpu_after_optimizations-live-range.txt",
        "module_0004.jit_f.sm_8.0_gpu_after_optimizations.txt",
        "module_0007.jit_g.tpu_after_optimizations-buffer-assignment.txt",
        "module_0009.jit_f.cpu_after_optimizations-buffer-assignment.txt",
        "module_0009.jit_f.cpu_after_optimizations-buffer-assignment-values.txt",
    ]
    for name in names:
        (tmp_path / name).write_text("x")
    gpu = dumps.memory_files(tmp_path, key="module_0004.jit_f")
    assert gpu is not None and gpu.buffer_assignment.name == names[0]
    assert gpu.live_range is not None and gpu.live_range.name == names[1]
    tpu = dumps.memory_files(tmp_path, name="jit_g")
    assert tpu is not None and tpu.live_range is None
    # The last module of a name, and the last of all when no name matches.
    last = dumps.memory_files(tmp_path, name="jit_f")
    assert last is not None and last.buffer_assignment.name == names[4]
    assert dumps.memory_files(tmp_path, name="jit_h") == last
    assert dumps.memory_files(tmp_path, key="module_0001.jit_f") is None
    # The files are not modules of the folder.
    assert [m.key for m in dumps.list_folder(tmp_path).modules] == ["module_0004.jit_f"]


_EDITS = st.sampled_from(["delete", "duplicate", "truncate", "digits", "spaces", "garble"])


@settings(max_examples=150, derandomize=True, deadline=None)
@given(st.data())
def test_mutated_dumps_are_read_or_refused_with_one_line(data):
    # Whatever the text, the reader returns a result or raises HloscopeError naming
    # the file: never another exception.
    path = data.draw(st.sampled_from([ASSIGNMENT, LIVE]))
    lines = path.read_text().splitlines()
    for _ in range(data.draw(st.integers(1, 3))):
        if not lines:
            break
        at = data.draw(st.integers(0, len(lines) - 1))
        edit = data.draw(_EDITS)
        if edit == "delete":
            del lines[at]
        elif edit == "duplicate":
            lines.insert(at, lines[at])
        elif edit == "truncate":
            lines[at] = lines[at][: data.draw(st.integers(0, len(lines[at])))]
        elif edit == "digits":
            lines[at] = re.sub(r"\d+", lambda m: str(int(m[0]) * 7 + 1), lines[at], count=1)
        elif edit == "spaces":
            lines[at] = " " + lines[at]
        else:
            lines[at] = data.draw(st.text(max_size=30))
    text = "\n".join(lines)
    parse = parse_buffer_assignment if path == ASSIGNMENT else parse_live_ranges
    try:
        parse(text, "dump.txt")
    except HloscopeError as exc:
        assert str(exc).startswith("dump.txt")
        assert "\n" not in exc.message

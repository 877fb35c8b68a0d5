"""`hloscope memory --for tpu:...` on a step that uses the TPU's second memory space
(`S(1)`: the core's on-chip VMEM, where XLA's memory-space assignment places values),
against what JAX compiles for that TPU itself, in a process of its own, with XLA
dumping: `compiled.memory_analysis()`, and XLA's buffer assignment, live ranges and
memory-usage report, read here on their own with a few patterns of their lines.

Each memory space is its own picture: its peak the most its own values hold at any
position (each byte of an allocation once), its buffers those live there, its name and
allocated bytes XLA's; no byte of one space is added to another's.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from conftest import ROOT
from hloscope.units import human_bytes
from schema_support import validate

pytestmark = pytest.mark.slow

STEP = "samples/llm_step.py"
SPEC = "tpu:v5e:2x4"
ARGS = (f"{STEP}:train_step", "--args", f"{STEP}:example_args", "--for", SPEC)

# The sample's step compiled by JAX for the v5e:2x4 slice, over the mesh the slice
# would build, with XLA dumping into the folder given.
JAX_TRUTH = """
import json, sys
sys.path.insert(0, "samples")
import jax
from jax.experimental import topologies
from jax.sharding import AxisType
import llm_step as step

devices = list(topologies.get_topology_desc("v5e:2x4", "tpu").devices)
step.make_mesh = lambda: jax.make_mesh(
    (len(devices) // step.MODEL, step.MODEL), ("data", "model"),
    axis_types=(AxisType.Auto, AxisType.Auto), devices=devices,
)
compiled = step.train_step.lower(*step.example_args()).compile({"xla_dump_to": sys.argv[1]})
stats = compiled.memory_analysis()
print(json.dumps({k: int(getattr(stats, k)) for k in dir(stats) if k.endswith("_in_bytes")}))
"""


def _child_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    env["ALLOW_MULTIPLE_LIBTPU_LOAD"] = "1"
    env["COLUMNS"] = "160"
    return env


def _child(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=_child_env(),
        stdin=subprocess.DEVNULL,
        timeout=900,
        check=False,
    )


def _needs_libtpu() -> None:
    try:
        present = importlib.util.find_spec("libtpu") is not None
    except (ImportError, ValueError):
        present = False
    if not present:
        pytest.skip(f"libtpu is not installed: --for {SPEC} cannot compile here")


class Xla:
    """XLA's own answers for the step: `memory_analysis()` and its dump files."""

    def __init__(self, stats: dict[str, int], folder: Path):
        self.stats = stats
        [assignment] = folder.glob("*after_optimizations-buffer-assignment.txt")
        [live] = folder.glob("*after_optimizations-live-range.txt")
        [usage] = folder.glob("*after_optimizations-memory-usage-report.txt")
        # name -> (allocation, offset, size, color)
        self.slices: dict[str, tuple[int, int, int, int]] = {}
        self.colors: dict[int, int] = {}
        allocation = -1
        for line in assignment.read_text().splitlines():
            if header := re.match(r"allocation (\d+): .*?size \d+(.*):$", line):
                allocation = int(header[1])
                color = re.search(r", color (\d+)", header[2])
                self.colors[allocation] = int(color[1]) if color else 0
            elif value := re.match(
                r" value: <\d+ (\S+?)(\{[\d,]*\})?(?: \(phi\))?(?: @\d+)?> "
                r"\(size=(\d+),offset=(\d+)\)",
                line,
            ):
                name = value[1] + (value[2] or "{}")
                size, offset = int(value[3]), int(value[4])
                self.slices[name] = (allocation, offset, size, self.colors[allocation])
        text = live.read_text()
        self.ranges = {
            m[1]: (int(m[2]), int(m[3]))
            for m in re.finditer(r"^ {4}(\S+\{[\d,]*\}):(-?\d+)-(-?\d+)$", text, re.M)
        }
        self.length = int(re.search(r"HloLiveRange \(max (\d+)\)", text)[1])
        self.peak_listed = [
            m[1] for m in re.finditer(r"^ {4}(\S+\{[\d,]*\}): \d+ bytes \(cumulative", text, re.M)
        ]
        # color -> (name, total bytes), as XLA's memory-usage report says them.
        self.spaces = {
            int(m[2]): (m[1], int(m[3]))
            for m in re.finditer(
                r"^Memory Space: (\S+) \(color=(\d+)\)\nTotal bytes: (\d+)",
                usage.read_text(),
                re.M,
            )
        }

    def bytes_of(self, names) -> int:
        """The bytes of values, each byte of an allocation once."""
        spans: dict[int, list[tuple[int, int]]] = defaultdict(list)
        for name in names:
            allocation, offset, size, _ = self.slices[name]
            spans[allocation].append((offset, offset + size))
        total = 0
        for intervals in spans.values():
            end = 0
            for start, stop in sorted(intervals):
                total += max(stop - max(start, end), 0)
                end = max(end, stop)
        return total

    def live_at(self, position: int, color: int) -> list[str]:
        return [
            n
            for n, (a, b) in self.ranges.items()
            if a <= position <= b and n in self.slices and self.slices[n][3] == color
        ]

    def curve(self, color: int) -> list[int]:
        """The live bytes of one space at each position of the schedule."""
        return [self.bytes_of(self.live_at(i, color)) for i in range(self.length)]


@pytest.fixture(scope="module")
def xla(tmp_path_factory) -> Xla:
    _needs_libtpu()
    folder = tmp_path_factory.mktemp("tpu_dump")
    run = _child("-c", JAX_TRUTH, str(folder))
    assert run.returncode == 0, run.stderr[-4000:]
    return Xla(json.loads(run.stdout.strip().splitlines()[-1]), folder)


@pytest.fixture(scope="module")
def memory() -> dict:
    _needs_libtpu()
    run = _child("-m", "hloscope", "memory", *ARGS, "--json")
    assert run.returncode == 0, run.stderr[-4000:]
    document = json.loads(run.stdout)
    validate(document, "hloscope memory --json")
    return document


@pytest.fixture(scope="module")
def text() -> str:
    _needs_libtpu()
    run = _child("-m", "hloscope", "memory", *ARGS)
    assert run.returncode == 0, run.stderr[-4000:]
    return run.stdout


def test_the_step_uses_the_tpus_second_memory_space(xla):
    assert 1 in xla.spaces and xla.spaces[1][0] == "vmem"
    assert any(s[3] == 1 for s in xla.slices.values())


def test_each_space_is_named_and_sized_as_xla_reports_it(xla, memory):
    spaces = {s["memory_space"]: (s["name"], s["allocated_bytes"]) for s in memory["memory_spaces"]}
    assert spaces == xla.spaces


def test_each_spaces_peak_is_the_most_its_own_values_hold(xla, memory):
    for space in memory["memory_spaces"]:
        curve = xla.curve(space["memory_space"])
        highest = max(curve)
        assert space["peak_bytes"] == highest
        assert space["peak_at"]["index"] == curve.index(highest)
        assert max(p["bytes"] for p in space["profile"]) == highest
        names = sorted(b["name"] for b in space["buffers"])
        assert names == sorted(xla.live_at(curve.index(highest), space["memory_space"]))
        # Each byte once: the buffers that share another's bytes add none.
        assert sum(b["bytes"] for b in space["buffers"] if b["shares"] is None) == highest


def test_a_spaces_buffers_are_in_its_layout_space(memory):
    for space in memory["memory_spaces"]:
        for buffer in space["buffers"]:
            assert buffer["memory_space"] == space["memory_space"]
            if space["memory_space"] and "(" not in buffer["shape"]:
                assert f"S({space['memory_space']})" in buffer["shape"], buffer
            elif not space["memory_space"]:
                assert "S(" not in buffer["shape"] or buffer["shape"].startswith("("), buffer


def test_the_spaces_at_xlas_dump_peak_add_up_to_it_each_byte_once(xla, memory):
    spaces = memory["memory_spaces"]
    assert sum(s["bytes_at_peak"] for s in spaces) == memory["peak_bytes"]
    vmem = next(s for s in spaces if s["memory_space"] == 1)
    listed = [n for n in xla.peak_listed if n in xla.slices and xla.slices[n][3] == 1]
    assert sorted(vmem["buffers_at_peak"]) == sorted(listed)
    assert vmem["bytes_at_peak"] == xla.bytes_of(listed)


def test_the_figures_are_memory_analysis(xla, memory):
    s = xla.stats
    assert memory["reported_peak_bytes"] == s["peak_memory_in_bytes"]
    assert memory["totals"]["temp_bytes"] == s["temp_size_in_bytes"]
    assert memory["fit"]["required_bytes"] == (
        s["argument_size_in_bytes"]
        + s["output_size_in_bytes"]
        + s["temp_size_in_bytes"]
        + s["generated_code_size_in_bytes"]
        - s["alias_size_in_bytes"]
    )
    # The TPU's peak_memory_in_bytes counts more than the default space holds at all.
    assert s["peak_memory_in_bytes"] > xla.spaces[0][1]


def test_the_text_draws_the_default_space_to_its_own_peak(memory, text):
    default = next(s for s in memory["memory_spaces"] if s["memory_space"] == 0)
    lines = text.splitlines()
    [marker] = [line.strip() for line in lines if "▲ peak at" in line][:1]
    assert marker == f"▲ peak at {default['peak_at']['index']}"
    chart = lines.index("Live bytes of default (space 0) over the schedule")
    assert lines[chart + 1].startswith(human_bytes(default["peak_bytes"]) + "▕")
    [peak] = [line for line in lines if line.startswith("peak ")]
    assert f"({default['peak_bytes']:,} bytes) at position {default['peak_at']['index']}" in peak
    assert any(line.startswith("vmem (space 1) ") for line in lines), text
    assert not any(line.startswith("memory spaces") for line in lines), text
    # No position is said to hold memory_analysis()'s peak where it does not.
    assert "reports as the peak" not in text

"""`make bench`'s memory column is each command's own peak, whatever the bench holds
(issue 41).

On Linux a child starts from its parent's memory high-water mark, and `exec` keeps it,
so `ru_maxrss` from `wait4` on a command the bench spawned read at least the bench's
own peak: with the generated 1M-op modules in the bench's memory, every RSS ratio came
out 1.00x. Here two commands of known peak (a Python that fills 50 MB, one that fills
500 MB) are measured through the bench's own `measure_command` while this process
holds a gigabyte; each says what its own peak was (`VmHWM`, the high-water mark of
its own address space, which `exec` starts afresh).
"""

from __future__ import annotations

import importlib.util
import os
import re
import sys
from pathlib import Path

import pytest

from conftest import ROOT

pytestmark = pytest.mark.skipif(
    not Path("/proc/self/status").exists(), reason="reads VmHWM from Linux's /proc"
)

# Filled with bytes other than zero, so that every page is touched and resident.
FILL_AND_REPORT = (
    "import re; data = b'\\x01' * ({megabytes} << 20); "
    "print(re.search(r'VmHWM:\\s*(\\d+) kB', open('/proc/self/status').read())[1])"
)


def bench_measure():
    spec = importlib.util.spec_from_file_location("bench_measure", ROOT / "bench" / "measure.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    # Its dataclass looks its own module up by name.
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def own_peak_kb() -> int:
    status = Path("/proc/self/status").read_text()
    return int(re.search(r"VmHWM:\s*(\d+) kB", status)[1])  # type: ignore[index]


def test_each_command_is_measured_at_its_own_peak_while_the_bench_holds_a_gigabyte():
    measure_command = bench_measure().measure_command
    ballast = b"\x01" * (1 << 30)
    assert own_peak_kb() >= 1 << 20
    small, large = (
        measure_command(
            [sys.executable, "-c", FILL_AND_REPORT.format(megabytes=megabytes)],
            cwd=ROOT,
            env=dict(os.environ),
        )
        for megabytes in (50, 500)
    )
    del ballast
    small_truth, large_truth = int(small.stdout), int(large.stdout)
    # The commands peak where they were written to: 450 MB apart.
    assert large_truth - small_truth == pytest.approx(450 << 10, rel=0.05)
    assert large.max_rss_kb / small.max_rss_kb == pytest.approx(large_truth / small_truth, rel=0.1)
    assert small.max_rss_kb == pytest.approx(small_truth, rel=0.1)
    assert large.max_rss_kb == pytest.approx(large_truth, rel=0.1)

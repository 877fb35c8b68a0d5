"""How the bench measures one command: its wall time, its peak resident memory and
its stdout."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import tempfile
import time
from pathlib import Path


@dataclasses.dataclass
class Measurement:
    seconds: float
    max_rss_kb: int
    stdout: str


def measure_command(command: list[str], *, cwd: Path, env: dict[str, str]) -> Measurement:
    """Wall time and peak RSS (the process and the children it waited for)."""
    with tempfile.TemporaryFile() as out:
        start = time.perf_counter()
        process = subprocess.Popen(
            command,
            stdout=out,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env=env,
        )
        _, status, usage = os.wait4(process.pid, 0)
        elapsed = time.perf_counter() - start
        stderr = process.stderr.read().decode(errors="replace") if process.stderr else ""
        out.seek(0)
        stdout = out.read().decode(errors="replace")
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 1):
        raise RuntimeError(f"{' '.join(command)} failed ({code}): {stderr[-500:]}")
    return Measurement(elapsed, int(usage.ru_maxrss), stdout)

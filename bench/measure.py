"""How the bench measures one command: its wall time, its own peak resident memory
and its stdout.

Each command runs under `bench/launcher.py`, a bare Python spawned for it: on Linux a
child starts from its parent's memory high-water mark and `exec` keeps it, so the
`ru_maxrss` of a command the bench spawned itself was at least the bench's own peak
(which holds JAX and, once generated, the 1M-op modules), and every memory ratio read
1.00x (issue 41). The launcher's children start from the launcher's few megabytes.
"""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import tempfile
from pathlib import Path

LAUNCHER = Path(__file__).resolve().parent / "launcher.py"


@dataclasses.dataclass
class Measurement:
    seconds: float
    max_rss_kb: int
    """The command's own peak and its waited-for children's, as `/usr/bin/time`'s %M."""
    stdout: str
    cpu_seconds: float = 0.0
    """User and system CPU time of the command and its waited-for children: a child
    process the command leaves running or kills without waiting for it (a kept reader
    process) is not counted, so compare CPU times only where both sides wait for
    theirs, or run in one process (StableHLO text)."""


def measure_command(
    command: list[str], *, cwd: Path, env: dict[str, str] | None = None
) -> Measurement:
    """Run `command` to its end. Exit status 0, or 1 (a command that found a
    difference); any other raises RuntimeError with the end of its stderr."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryDirectory() as folder:
        report = Path(folder) / "report"
        run = subprocess.run(
            [sys.executable, "-I", "-S", str(LAUNCHER), str(report), *command],
            stdout=out,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env=env,
            check=False,
        )
        out.seek(0)
        stdout = out.read().decode(errors="replace")
        measured = report.read_text().split() if report.exists() else []
    stderr = run.stderr.decode(errors="replace")
    if run.returncode not in (0, 1) or not measured:
        raise RuntimeError(f"{' '.join(command)} failed ({run.returncode}): {stderr[-500:]}")
    seconds, max_rss_kb, *cpu = measured
    return Measurement(float(seconds), int(max_rss_kb), stdout, float(cpu[0]) if cpu else 0.0)

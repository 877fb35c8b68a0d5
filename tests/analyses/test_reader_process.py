"""The reader process that reads untrusted IR is ended when hloscope exits: a child
left running is reported by Python on stderr (a `ResourceWarning`), after the one
line a command prints."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_reader_child_is_ended_at_exit():
    dump = ROOT / "samples" / "dumps" / "mlp.after_optimizations.hlo"
    code = (
        "import pathlib\n"
        "from hloscope.ir import reader\n"
        f"reply = reader.request('text', pathlib.Path({str(dump)!r}).read_bytes())\n"
        "assert reply.frames and reply.died is None\n"
    )
    run = subprocess.run(
        [sys.executable, "-W", "always::ResourceWarning", "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    assert "ResourceWarning" not in run.stderr, run.stderr

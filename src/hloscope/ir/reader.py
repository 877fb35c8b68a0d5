"""The reader process: untrusted IR is read by jaxlib's native readers in a child
process first, kept for reuse.

XLA's HLO-to-MLIR converter segfaults on some modules its parser accepts, and
MLIR's bytecode reader and StableHLO's deserializer segfault, abort or hang on
malformed bytes; in a child, that costs the child, not hloscope. This module is
the parent's side: it starts the child (`hloscope.ir.reader_child`), sends it
requests and collects its replies. It has a lock of its own, so a slow read of
untrusted input does not hold up native work in this process (the browser
printing a module, say).

Requests and replies are frames: a JSON header line with a `size`, then that many
bytes. A reply is a sequence of frames, one per stage the child reached (the
`STAGE_*` names), ending with `done`.
"""

from __future__ import annotations

import atexit
import dataclasses
import json
import os
import queue
import signal
import subprocess
import sys
import threading
from contextlib import suppress
from pathlib import Path
from typing import Any, Literal

from hloscope.errors import HloscopeError

RequestKind = Literal["mlir", "portable", "text", "proto"]
"""What a request holds: MLIR text or bytecode, a portable artifact, HLO text, an HLO
proto."""

# The stages of a reply, in the order the child reaches them.
STAGE_ERROR = "error"
"""The input did not parse; the header has the `message` (and an MLIR `location`)."""
STAGE_PARSED = "parsed"
"""It parsed; for HLO, the body is its module proto, the header its `entry_layout`."""
STAGE_UNREADABLE = "unreadable"
"""MLIR that parsed but whose names jaxlib's bindings cannot read (they raised)."""
STAGE_BUILT = "built"
"""MLIR whose names were read (`build.read_names`): the model can be built."""
STAGE_CONVERT_ERROR = "convert-error"
"""HLO whose conversion to MLIR raised."""
STAGE_CONVERTED = "converted"
"""HLO converted to MLIR; the body is the MLIR bytecode."""
STAGE_NAMES = "names"
"""The HLO names of the converted ops (JSON body, see `hloscope.ir.hlo_names`)."""
STAGE_DONE = "done"
"""The last frame, with what native code `log`ged."""

# Untrusted input gets this long per megabyte (and at least READ_TIMEOUT_SECONDS)
# in the child process before it is declared hung.
READ_TIMEOUT_SECONDS = 60.0


READ_SECONDS_PER_MB = 2.0


def read_timeout(size: int) -> float:
    """How long the child may take over `size` bytes of input (`HLOSCOPE_READ_TIMEOUT`
    overrides it, in seconds)."""
    override = os.environ.get("HLOSCOPE_READ_TIMEOUT")
    if override:
        try:
            return max(0.1, float(override))
        except ValueError:
            pass
    return READ_TIMEOUT_SECONDS + READ_SECONDS_PER_MB * size / 1e6


Frame = tuple[dict[str, Any], bytes]


@dataclasses.dataclass
class Reply:
    """What the child process answered to one request."""

    frames: list[Frame]
    died: int | None
    """The child's exit code when it died before finishing (negative: a signal)."""
    timed_out: float | None
    """The time limit it exceeded, when it hung."""

    @property
    def stages(self) -> dict[str, Frame]:
        return {str(header.get("stage")): (header, body) for header, body in self.frames}

    def failure(self) -> str:
        """`crashed (SIGSEGV)`, `did not finish within 60 s`, ... for a message."""
        if self.timed_out is not None:
            return f"did not finish within {self.timed_out:.0f} s"
        if self.died is not None and self.died < 0:
            try:
                return f"crashed ({signal.Signals(-self.died).name})"
            except ValueError:
                return f"crashed (signal {-self.died})"
        return f"failed (exit {self.died})"


class _NativeReader:
    """A child process that reads untrusted IR with jaxlib's native readers, kept for
    reuse.

    XLA's HLO-to-MLIR converter segfaults on some modules its parser accepts (a
    typed-FFI custom call with a non-dictionary backend_config, in the corpus); MLIR's
    bytecode reader and StableHLO's deserializer segfault, abort (invalid UTF-8 in a
    diagnostic) or hang on malformed bytes. So untrusted HLO and bytecode are read
    here first. When the child dies or hangs, the request is answered from what it
    sent before, and the next request starts a new child.
    """

    def __init__(self) -> None:
        self._process: Any = None
        # Its own lock, not the native one: a slow read in the child must not hold up
        # native work in this process (printing a module in the browser, say).
        self._lock = threading.Lock()

    def _start(self) -> Any:
        env = dict(os.environ)
        package_root = str(Path(__file__).resolve().parent.parent.parent)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
        try:
            return subprocess.Popen(
                [sys.executable, "-m", "hloscope.ir.reader_child"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env=env,
            )
        except OSError as exc:
            raise HloscopeError(f"cannot start the IR reader process: {exc}") from exc

    def request(self, kind: RequestKind, payload: bytes, timeout: float | None = None) -> Reply:
        """Send one request and collect the reply frames until `done`, the child's death,
        or `timeout` seconds."""
        with self._lock:
            if self._process is None or self._process.poll() is not None:
                self._process = self._start()
            process = self._process
            frames: list[Frame] = []
            incoming: queue.Queue[Frame | None] = queue.Queue()

            def receive() -> None:
                try:
                    while True:
                        frame = read_frame(process.stdout)
                        incoming.put(frame)
                        if frame is None or frame[0].get("stage") == STAGE_DONE:
                            return
                except (OSError, ValueError):
                    incoming.put(None)

            timed_out: float | None = None
            try:
                with suppress(OSError):  # a child that died reading it answers with EOF
                    write_frame(process.stdin, {"kind": kind}, payload)
                threading.Thread(target=receive, daemon=True).start()
                while True:
                    try:
                        frame = incoming.get(timeout=timeout)
                    except queue.Empty:
                        timed_out = timeout
                        process.kill()
                        break
                    if frame is None:
                        break
                    frames.append(frame)
                    if frame[0].get("stage") == STAGE_DONE:
                        return Reply(frames, None, None)
            except BaseException:
                # Interrupted (ctrl-c, --timeout) mid-request: the rest of this reply
                # would answer the next request, so this child goes.
                process.kill()
                process.wait()
                self._process = None
                raise
            code: int = process.wait()
            self._process = None
            return Reply(frames, None if timed_out is not None else code, timed_out)

    def close(self) -> None:
        """End the child kept for reuse (at exit: a child still running when Python
        exits is reported on stderr as a `ResourceWarning`, after hloscope's one line)."""
        process, self._process = self._process, None
        if process is None:
            return
        with suppress(OSError):
            process.stdin.close()
        if process.poll() is None:
            process.kill()
        process.wait()
        with suppress(OSError):
            process.stdout.close()


def write_frame(stream: Any, header: dict[str, Any], body: bytes = b"") -> None:
    stream.write(json.dumps({**header, "size": len(body)}).encode() + b"\n" + body)
    stream.flush()


def read_frame(stream: Any) -> Frame | None:
    line = stream.readline()
    if not line.endswith(b"\n"):
        return None
    header = json.loads(line)
    size = int(header.get("size", 0))
    body = stream.read(size) if size else b""
    if len(body) != size:
        return None
    return header, body


_reader = _NativeReader()
atexit.register(_reader.close)


def request(kind: RequestKind, payload: bytes, timeout: float | None = None) -> Reply:
    """Have the reader process read `payload` (see `_NativeReader.request`)."""
    return _reader.request(kind, payload, timeout)

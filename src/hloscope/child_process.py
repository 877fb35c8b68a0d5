"""A child process kept for reuse, for native work that may crash or hang on what it
is given: in a child, an abort, a segfault or a hang costs the child, and the parent
says so in one line.

Requests and replies are frames: a JSON header line with a `size`, then that many
bytes. A reply is a sequence of frames, one per stage the child reached, ending with a
frame whose `stage` is `done`, so that when the child dies the parent knows how far
it got. Used by the IR reader (`hloscope.ir.reader`) and by the module runner
(`hloscope.sources.jax.module_run`), each with a child of its own.
"""

from __future__ import annotations

import dataclasses
import json
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from contextlib import suppress
from pathlib import Path
from typing import Any

from hloscope.errors import HloscopeError

STAGE_DONE = "done"
"""The last frame of a reply."""

Frame = tuple[dict[str, Any], bytes]

PARENT_PID_VARIABLE = "HLOSCOPE_PARENT_PID"
"""Set in a child's environment: the process that started it (`exit_with_parent`)."""
PARENT_POLL_SECONDS = 0.5

STACK_TRACE_HEADER = "*** Check failure stack trace: ***"
"""What XLA writes after a failed check's message, before the stack's frames."""


@dataclasses.dataclass
class Reply:
    """What the child process answered to one request."""

    frames: list[Frame]
    died: int | None
    """The child's exit code when it died before finishing (negative: a signal)."""
    timed_out: float | None
    """The time limit it exceeded, when it hung."""
    stderr: list[str] = dataclasses.field(default_factory=list)
    """What the child wrote on its stderr during the request, for a child whose
    stderr is kept (`ChildProcess(keep_stderr=True)`)."""

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

    def last_message(self) -> str | None:
        """The last line native code wrote before the child died (a failed check's
        message, not its stack trace's frames), without glog's prefix
        (`F1125 23:18:42.265112 28098 file.cc:269] `)."""
        lines = [line.strip() for line in self.stderr if line.strip()]
        if STACK_TRACE_HEADER in lines:
            lines = lines[: lines.index(STACK_TRACE_HEADER)]
        lines = [line for line in lines if not line.startswith("@")]
        if not lines:
            return None
        return lines[-1].partition("] ")[2] or lines[-1]


class ChildProcess:
    """`python -m MODULE`, started at the first request and kept for the next ones.

    When the child dies or hangs, the request is answered from what it sent before,
    and the next request starts a new child. `keep_stderr`: the child's stderr goes to
    a temporary file, and each reply carries what the child wrote there during its
    request (else it is discarded). `env`: variables set in the child's environment
    over this process's (a configuration's, read by the program when imported)."""

    def __init__(
        self, module: str, *, keep_stderr: bool = False, env: Mapping[str, str] | None = None
    ) -> None:
        self.module = module
        self.keep_stderr = keep_stderr
        self.env = dict(env or {})
        self._process: Any = None
        self._stderr: Any = None
        # Its own lock, not the native one: a slow request in the child must not hold
        # up native work in this process (printing a module in the browser, say).
        self._lock = threading.Lock()

    def _start(self) -> Any:
        env = {**os.environ, **self.env}
        package_root = str(Path(__file__).resolve().parent.parent)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
        env[PARENT_PID_VARIABLE] = str(os.getpid())
        if self.keep_stderr and self._stderr is None:
            # Kept open across requests; closed with the child (`close`).
            self._stderr = tempfile.TemporaryFile()  # noqa: SIM115
        try:
            return subprocess.Popen(
                [sys.executable, "-m", self.module],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self._stderr if self.keep_stderr else subprocess.DEVNULL,
                env=env,
            )
        except OSError as exc:
            raise HloscopeError(f"cannot start a child process ({self.module}): {exc}") from exc

    def start(self) -> None:
        """Start the child now, if it is not running, without waiting for it: it gets
        ready (imports, a backend) while this process does other work."""
        with self._lock:
            if self._process is None or self._process.poll() is not None:
                self._process = self._start()

    def request(
        self,
        header: dict[str, Any],
        payload: bytes = b"",
        timeout: float | None = None,
        limit_after: Callable[[Frame], float | None] | None = None,
    ) -> Reply:
        """Send one request and collect the reply frames until `done`, the child's death,
        or `timeout` seconds without a frame. `limit_after(frame)`: the limit for the
        next frame once `frame` came (a stage the child says it is starting gets a
        limit of its own), instead of `timeout`."""
        with self._lock:
            if self._process is None or self._process.poll() is not None:
                self._process = self._start()
            process = self._process
            frames: list[Frame] = []
            incoming: queue.Queue[Frame | None] = queue.Queue()
            stderr_start = self._stderr.seek(0, os.SEEK_END) if self._stderr is not None else 0

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
                    write_frame(process.stdin, header, payload)
                threading.Thread(target=receive, daemon=True).start()
                limit = timeout
                while True:
                    try:
                        frame = incoming.get(timeout=limit)
                    except queue.Empty:
                        timed_out = limit
                        process.kill()
                        break
                    if frame is None:
                        break
                    frames.append(frame)
                    if limit_after is not None:
                        limit = limit_after(frame)
                    if frame[0].get("stage") == STAGE_DONE:
                        return Reply(frames, None, None, self._stderr_since(stderr_start))
            except BaseException:
                # Interrupted (ctrl-c, --timeout) mid-request: the rest of this reply
                # would answer the next request, so this child goes.
                process.kill()
                process.wait()
                self._process = None
                raise
            code: int = process.wait()
            self._process = None
            died = None if timed_out is not None else code
            return Reply(frames, died, timed_out, self._stderr_since(stderr_start))

    def _stderr_since(self, start: int) -> list[str]:
        if self._stderr is None:
            return []
        self._stderr.seek(start)
        # The tail is what names a crash; a long log keeps its last megabyte.
        size = self._stderr.seek(0, os.SEEK_END) - start
        self._stderr.seek(max(start, start + size - (1 << 20)))
        written: bytes = self._stderr.read()
        return written.decode("utf-8", "replace").splitlines()

    def kill(self) -> None:
        """End the running child now, from any thread: a request waiting on it answers
        that the child died."""
        process = self._process
        if process is not None and process.poll() is None:
            with suppress(OSError):
                process.kill()

    def close(self) -> None:
        """End the child kept for reuse (at exit: a child still running when Python
        exits is reported on stderr as a `ResourceWarning`, after hloscope's one line)."""
        process, self._process = self._process, None
        if process is not None:
            with suppress(OSError):
                process.stdin.close()
            if process.poll() is None:
                process.kill()
            process.wait()
            with suppress(OSError):
                process.stdout.close()
        stderr, self._stderr = self._stderr, None
        if stderr is not None:
            stderr.close()


def exit_with_parent() -> None:
    """In a child: end this process when the hloscope that started it ends, even
    killed (SIGKILL, as a CI job's time limit does), when no one closes the pipes: a
    child running a module that never finishes would stay behind, stuck, for ever.

    A thread watches `os.getppid()`: when the parent dies, the child is handed to
    another process (init, a subreaper). Linux's `PR_SET_PDEATHSIG` would say so
    sooner, but it follows the parent's thread that started the child, not the
    process: the browser starts children from worker threads that end before it
    does."""
    expected = os.environ.get(PARENT_PID_VARIABLE)
    if not expected or not expected.isdigit():
        return
    parent = int(expected)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_POLL_SECONDS)
        os._exit(1)

    threading.Thread(target=watch, name="hloscope-parent-watch", daemon=True).start()


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

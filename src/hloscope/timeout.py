"""`--timeout`: end a command that runs too long, with one line on stderr.

Process-wide while it runs: a `SIGALRM` handler in the main thread, and a watchdog
thread that ends the process (`os._exit`) when the code does not stop when asked.
Only the command line sets it up, around building a report (`hloscope.cli.emit`).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Iterator
from types import FrameType

from hloscope.errors import (
    PACKAGE_DIR,
    ExitCode,
    HloscopeError,
    TimeLimitExceeded,
    display_path,
    is_library_file,
    one_line,
)

# After the time limit, how long the command has to unwind before it is ended.
TIME_LIMIT_GRACE_SECONDS = 3.0
# How soon to try again when the limit falls inside hloscope's own bookkeeping.
_RETRY_SECONDS = 0.05
_CONTEXTLIB_FILE = contextlib.__file__


@contextlib.contextmanager
def time_limit(seconds: float | None, what: str | None = None) -> Iterator[None]:
    """End the block with one line on stderr (and exit code 2) after `seconds`.

    Two mechanisms, because user code can be stuck in Python or in native code. In
    the main thread, a `SIGALRM` raises `TimeLimitExceeded` where the code is (in the
    user's code, a library's, never inside hloscope's own bookkeeping, such as the
    restoring of file descriptor 2, where it waits a moment); `command_edge` turns it
    into the line. A watchdog thread ends the process `TIME_LIMIT_GRACE_SECONDS`
    later if the block still has not finished (a native call that never returns to
    Python, code that catches `BaseException` and carries on), writing the line to
    the stderr the command started with. Only one of the two ends the command: the
    first to claim `ending`, so that stderr holds one line.
    """
    if seconds is None:
        yield
        return
    if not seconds > 0:
        raise HloscopeError(f"--timeout {seconds:g}: give a number of seconds above 0")
    prefix = f"{what}: " if what else ""
    message = f"{prefix}stopped after {seconds:g} s (--timeout {seconds:g})"
    finished = threading.Event()
    ending = threading.Lock()
    in_main_thread = threading.current_thread() is threading.main_thread()
    previous: object = None

    def on_alarm(signum: int, frame: FrameType | None) -> None:
        if finished.is_set() or ending.locked():
            return
        if frame is not None and _in_bookkeeping(frame):
            signal.setitimer(signal.ITIMER_REAL, _RETRY_SECONDS)
            return
        running = _running_user_line(frame)
        raise TimeLimitExceeded(f"{message}, while running {running}" if running else message)

    if in_main_thread:
        previous = signal.signal(signal.SIGALRM, on_alarm)
        signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        saved_stderr: int | None = os.dup(sys.__stderr__.fileno() if sys.__stderr__ else 2)
    except (OSError, ValueError, AttributeError):
        saved_stderr = None

    def watchdog() -> None:
        # The alarm is the main thread's: where the main thread blocks it (code that
        # masks SIGALRM), the kernel must not hand it to this thread instead, whose
        # handler would then interrupt the main thread after all.
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
        if finished.wait(seconds + TIME_LIMIT_GRACE_SECONDS) or not ending.acquire(False):
            return
        ended = (
            f"{prefix}ended {seconds + TIME_LIMIT_GRACE_SECONDS:g} s after it started "
            f"(--timeout {seconds:g}): its code did not stop when asked (native code, or "
            "code that catches BaseException)"
        )
        line = f"hloscope: error: {one_line(ended, 2000)}\n"
        if saved_stderr is not None:
            with contextlib.suppress(OSError):
                os.write(saved_stderr, line.encode("utf-8", "replace"))
        os._exit(ExitCode.ERROR)

    threading.Thread(target=watchdog, name="hloscope-timeout", daemon=True).start()
    try:
        yield
    finally:
        finished.set()
        if not ending.acquire(False):
            # The watchdog is writing its line and ending the process: add no other.
            threading.Event().wait()
        if in_main_thread:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous if previous is not None else signal.SIG_DFL)  # type: ignore[arg-type]
        if saved_stderr is not None:
            os.close(saved_stderr)


def _in_bookkeeping(frame: FrameType) -> bool:
    """Whether `frame` is hloscope's own code or a context manager's plumbing, where
    an exception could leave state half changed (file descriptor 2 redirected, a lock
    held, a reader process mid-request)."""
    filename = frame.f_code.co_filename
    return filename.startswith(PACKAGE_DIR) or filename == _CONTEXTLIB_FILE


def _running_user_line(frame: FrameType | None) -> str | None:
    """`file:line` of the innermost frame of the user's own code on the stack, up to
    the hloscope code that called it."""
    while frame is not None:
        filename = frame.f_code.co_filename
        if filename.startswith(PACKAGE_DIR):
            return None
        if not is_library_file(filename):
            return f"{display_path(filename)}:{frame.f_lineno}"
        frame = frame.f_back
    return None

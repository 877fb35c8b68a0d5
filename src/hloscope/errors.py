"""Errors, stderr and exit codes: the one module that owns them.

stdout is data (reports and JSON); stderr carries at most one line per failure.
Every failure the user can fix is a `HloscopeError`; the command-line edge turns
it into that line and exit code 2. Native libraries (XLA, MLIR) print warnings
straight to file descriptor 2, so calls into them run inside
`native_stderr_captured`, which keeps those lines for error messages instead.
"""

from __future__ import annotations

import contextlib
import enum
import os
import signal
import sys
import tempfile
import threading
import traceback
from collections.abc import Iterator
from pathlib import Path
from types import FrameType


class ExitCode(enum.IntEnum):
    """Exit codes of every command: part of the contract scripts rely on."""

    OK = 0
    """Done; for `aot-check` and `diff`: the two sides are the same."""
    DIFFERENT = 1
    """The check found a difference."""
    ERROR = 2
    """The input or the command line is wrong."""
    INTERRUPTED = 130


class HloscopeError(Exception):
    """A failure the user can act on: bad input, bad target, bad option.

    `where` names the file (and line, column) the problem is in, when known.
    """

    def __init__(self, message: str, *, where: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.where = where

    def __str__(self) -> str:
        return f"{self.where}: {self.message}" if self.where else self.message


class TimeLimitExceeded(BaseException):
    """The command ran past its `--timeout`. Not an `Exception`, so that user code
    (`except Exception:` around a call) does not swallow it on its way out."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


def one_line(text: str, limit: int = 400) -> str:
    """Collapse a (possibly multi-line) message into one line of bounded length."""
    flat = " ".join(part.strip() for part in text.strip().splitlines() if part.strip())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


# Frames from these places are not the user's code.
_PACKAGE_DIR = str(Path(__file__).resolve().parent) + os.sep
_LIBRARY_MARKERS = (
    f"{os.sep}site-packages{os.sep}",
    f"{os.sep}dist-packages{os.sep}",
    "<frozen ",
    f"{os.sep}lib{os.sep}python3",
)


def user_frame(exc: BaseException) -> str | None:
    """`file:line` of the deepest traceback frame in the user's own code."""
    found: str | None = None
    for frame in traceback.extract_tb(exc.__traceback__):
        filename = frame.filename
        if filename.startswith(_PACKAGE_DIR) or any(m in filename for m in _LIBRARY_MARKERS):
            continue
        found = f"{display_path(filename)}:{frame.lineno}"
    return found


def display_path(path: str | os.PathLike[str]) -> str:
    """A path relative to the working directory when it lies below it."""
    try:
        return str(Path(path).resolve().relative_to(Path.cwd().resolve()))
    except (ValueError, OSError, RuntimeError):  # RuntimeError: a symbolic link loop
        return str(path)


def describe_exception(exc: BaseException) -> str:
    """`TypeError: message (at file.py:12)` for an exception raised by user code."""
    message = one_line(str(exc), limit=300)
    text = f"{type(exc).__name__}: {message}" if message else type(exc).__name__
    frame = user_frame(exc)
    return f"{text} (at {frame})" if frame else text


_capture_lock = threading.Lock()


@contextlib.contextmanager
def native_stderr_captured() -> Iterator[list[str]]:
    """Redirect file descriptor 2 while native code runs; yield the lines it wrote.

    XLA and MLIR log warnings (`W1122 ... hlo_module.cc] ...`) directly to fd 2,
    which would break the "one line on stderr" contract. The yielded list is
    filled when the block exits.
    """
    lines: list[str] = []
    try:
        stderr_fd = sys.__stderr__.fileno() if sys.__stderr__ is not None else 2
    except (AttributeError, OSError, ValueError):
        stderr_fd = 2
    if not _capture_lock.acquire(blocking=False):
        # Another thread is capturing already; its redirect covers us too.
        yield lines
        return
    try:
        with tempfile.TemporaryFile() as sink:
            with contextlib.suppress(Exception):
                sys.stderr.flush()
            saved = os.dup(stderr_fd)
            os.dup2(sink.fileno(), stderr_fd)
            try:
                yield lines
            finally:
                with contextlib.suppress(Exception):
                    sys.stderr.flush()
                os.dup2(saved, stderr_fd)
                os.close(saved)
                sink.seek(0)
                lines.extend(sink.read().decode("utf-8", "replace").splitlines())
    finally:
        _capture_lock.release()


def print_error(message: str) -> None:
    """The one line on stderr."""
    sys.stderr.write(f"hloscope: error: {one_line(message, limit=2000)}\n")
    sys.stderr.flush()


@contextlib.contextmanager
def command_edge(debug: bool = False) -> Iterator[None]:
    """Turn any failure inside a command into one stderr line and exit code 2.

    With `debug`, the traceback is printed as well.
    """
    try:
        yield
    except HloscopeError as exc:
        if debug:
            traceback.print_exc()
        print_error(str(exc))
        raise SystemExit(ExitCode.ERROR) from None
    except TimeLimitExceeded as exc:
        if debug:
            traceback.print_exc()
        print_error(str(exc))
        raise SystemExit(ExitCode.ERROR) from None
    except KeyboardInterrupt:
        print_error("interrupted")
        raise SystemExit(ExitCode.INTERRUPTED) from None
    except RecursionError as exc:
        if debug:
            traceback.print_exc()
        print_error(f"the input nests too deeply to process ({exc})")
        raise SystemExit(ExitCode.ERROR) from None
    except MemoryError:
        print_error("out of memory while processing the input")
        raise SystemExit(ExitCode.ERROR) from None
    except (SystemExit, GeneratorExit):
        raise
    except BaseException as exc:
        if debug:
            traceback.print_exc()
        print_error(
            f"internal error: {type(exc).__name__}: {one_line(str(exc), 300)} "
            "(rerun with --debug for the traceback, and please report it)"
        )
        raise SystemExit(ExitCode.ERROR) from None


# --------------------------------------------------------------------------- --timeout

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
    return filename.startswith(_PACKAGE_DIR) or filename == _CONTEXTLIB_FILE


def _running_user_line(frame: FrameType | None) -> str | None:
    """`file:line` of the innermost frame of the user's own code on the stack, up to
    the hloscope code that called it."""
    while frame is not None:
        filename = frame.f_code.co_filename
        if filename.startswith(_PACKAGE_DIR):
            return None
        if not any(m in filename for m in _LIBRARY_MARKERS):
            return f"{display_path(filename)}:{frame.f_lineno}"
        frame = frame.f_back
    return None

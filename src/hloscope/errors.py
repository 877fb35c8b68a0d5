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
import sys
import tempfile
import threading
import traceback
from collections.abc import Iterator
from pathlib import Path


class ExitCode(enum.IntEnum):
    """Exit codes of every command (DESIGN.md)."""

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
    except (ValueError, OSError):
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

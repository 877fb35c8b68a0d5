"""Errors and exit codes: the error types, their one-line messages, and the edge
that turns them into that line.

stdout is data (reports and JSON); stderr carries at most one line per failure.
Every failure the user can fix is a `HloscopeError`; the command-line edge
(`command_edge`) turns it into that line and exit code 2. A message names the
user's file and line (`user_frame`, `display_path`), not hloscope's or a library's.
What writes to stderr besides: native libraries, whose lines
`hloscope.native_stderr` keeps off it; the end of `--timeout`, in `hloscope.timeout`.
"""

from __future__ import annotations

import contextlib
import enum
import os
import sys
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

if TYPE_CHECKING:
    from hloscope.stages import CompiledFor


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


class DoesNotFit(HloscopeError):
    """XLA refused to compile the program for a device whose memory it does not fit
    (`RESOURCE_EXHAUSTED`). `memory` still reads what XLA dumped before refusing; every
    other view stops here, in one line naming `memory`."""

    def __init__(
        self,
        xla_message: str,
        spec: str,
        *,
        where: str | None = None,
        compiled_for: CompiledFor | None = None,
    ) -> None:
        super().__init__(
            f"does not fit {spec}: {xla_message} (hloscope memory with the same target and "
            f"--for {spec} shows what is live at the peak, and which lines put it there)",
            where=where,
        )
        self.xla_message = xla_message
        self.spec = spec
        self.compiled_for = compiled_for
        """What it was compiled for, where known."""


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


# hloscope's own files; with the libraries', not the user's code.
PACKAGE_DIR = str(Path(__file__).resolve().parent) + os.sep
_LIBRARY_MARKERS = (
    f"{os.sep}site-packages{os.sep}",
    f"{os.sep}dist-packages{os.sep}",
    "<frozen ",
    f"{os.sep}lib{os.sep}python3",
)


def is_library_file(filename: str) -> bool:
    """Whether `filename` is an installed library's or Python's own, not the user's."""
    return any(marker in filename for marker in _LIBRARY_MARKERS)


def user_frame(exc: BaseException) -> str | None:
    """`file:line` of the deepest traceback frame in the user's own code."""
    found: str | None = None
    for frame in traceback.extract_tb(exc.__traceback__):
        filename = frame.filename
        if filename.startswith(PACKAGE_DIR) or is_library_file(filename):
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


def print_error(message: str) -> None:
    """The one line on stderr."""
    sys.stderr.write(f"hloscope: error: {one_line(message, limit=2000)}\n")
    sys.stderr.flush()


def reader_gone() -> NoReturn:
    """End quietly with exit 0 when whoever reads stdout has gone (`hloscope ... | head
    -1`), as `git log | head` does: what is still buffered goes nowhere, not into a
    second error at exit."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    raise SystemExit(ExitCode.OK)


# Where hloscope reads JAX's private APIs (sources/jax/private.py).
_PRIVATE_JAX_FILE = os.path.join(PACKAGE_DIR, "sources", "jax", "private.py")


def moved_jax_internals(exc: BaseException) -> str | None:
    """On a JAX release hloscope is not tested with, the one line for a failure raised
    where hloscope reads JAX's internals (an attribute or module of `jax._src` that is
    not where it was): the view needs a part of JAX that moved in that release. None
    on a tested release (there it is hloscope's bug) or for any other failure. The
    release is the imported JAX's own (`jax.__version__`): such a failure comes from it."""
    from hloscope.jax_releases import jax_release_tested, tested_releases_text

    version = getattr(sys.modules.get("jax"), "__version__", None)
    if not isinstance(version, str) or jax_release_tested(version):
        return None
    if not isinstance(exc, (AttributeError, ImportError, TypeError)):
        return None
    frames = traceback.extract_tb(exc.__traceback__)
    in_private = any(os.path.realpath(frame.filename) == _PRIVATE_JAX_FILE for frame in frames)
    missing_module = isinstance(exc, ImportError) and (exc.name or "").startswith(
        ("jax._src", "jaxlib")
    )
    if not (in_private or missing_module):
        return None
    return (
        f"this view needs a part of JAX that is not where hloscope looks for it in jax "
        f"{version} (hloscope is tested with JAX {tested_releases_text()}): "
        f"{type(exc).__name__}: {one_line(str(exc), 200)} (--debug shows the traceback)"
    )


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
    except BrokenPipeError:
        reader_gone()
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
        moved = moved_jax_internals(exc)
        if moved is not None:
            print_error(moved)
            raise SystemExit(ExitCode.ERROR) from None
        print_error(
            f"internal error: {type(exc).__name__}: {one_line(str(exc), 300)} "
            "(rerun with --debug for the traceback, and please report it)"
        )
        raise SystemExit(ExitCode.ERROR) from None

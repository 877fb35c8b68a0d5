"""The stderr guard: native libraries' lines kept off the user's stderr.

XLA and MLIR log warnings (`W1122 ... hlo_module.cc] ...`) straight to file
descriptor 2, below Python's `sys.stderr`, which would break the "one line on
stderr" contract. Calls into them run inside `native_stderr_captured`, which points
descriptor 2 at a file for the block and hands back what was written there (the
model keeps XLA's warnings as notes). Descriptor 2 is the process's: the browser
draws on a descriptor of its own (`hloscope.tui.app.terminal_output`).
"""

from __future__ import annotations

import contextlib
import importlib.machinery
import os
import sys
import tempfile
import threading
import types
from collections.abc import Iterator, Sequence

_capture_lock = threading.Lock()


@contextlib.contextmanager
def native_stderr_captured() -> Iterator[list[str]]:
    """Redirect file descriptor 2 while native code runs; yield the lines it wrote,
    a list filled when the block exits."""
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


@contextlib.contextmanager
def native_stderr_kept() -> Iterator[None]:
    """Leave native code's lines on file descriptor 2 while the block runs: in a child
    process whose stderr the parent reads, the last line XLA wrote before aborting is
    what the parent's one line names. (Capturing inside the block finds the lock taken
    and leaves descriptor 2 as it is.)"""
    with _capture_lock:
        yield


class _QuietJaxImport:
    """A `sys.meta_path` finder that imports the `jax` package with descriptor 2
    redirected, once. With JAX's CUDA plugin installed, importing JAX loads its GPU
    modules, which log `Could not find cuda drivers` to the native stderr of a machine
    without a GPU, whoever imports it first (hloscope, or the user's module)."""

    def find_spec(
        self,
        name: str,
        path: Sequence[str] | None = None,
        target: types.ModuleType | None = None,
        /,
    ) -> importlib.machinery.ModuleSpec | None:
        if name != "jax":
            return None
        sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        loader = spec.loader
        exec_module = loader.exec_module

        def quietly(module: types.ModuleType) -> None:
            with native_stderr_captured():
                exec_module(module)

        loader.exec_module = quietly  # type: ignore[method-assign]
        return spec


def quiet_jax_import() -> None:
    """Import JAX with its native lines kept off stderr when it is first imported in
    this process (`_QuietJaxImport`); nothing when it is imported already."""
    if "jax" in sys.modules or any(isinstance(f, _QuietJaxImport) for f in sys.meta_path):
        return
    sys.meta_path.insert(0, _QuietJaxImport())

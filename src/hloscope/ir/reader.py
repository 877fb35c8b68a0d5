"""The reader process: untrusted IR is read by jaxlib's native readers in a child
process first, kept for reuse.

XLA's HLO-to-MLIR converter segfaults on some modules its parser accepts, and
MLIR's bytecode reader and StableHLO's deserializer segfault, abort or hang on
malformed bytes; in a child, that costs the child, not hloscope. This module is
the parent's side: it starts the child (`hloscope.ir.reader_child`), sends it
requests and collects its replies. It has a lock of its own, so a slow read of
untrusted input does not hold up native work in this process (the browser
printing a module, say).

Requests and replies are the frames of `hloscope.child_process`; a reply has one per
stage the child reached (the `STAGE_*` names), ending with `done`.
"""

from __future__ import annotations

import atexit
import os
from typing import Literal

from hloscope.child_process import STAGE_DONE, ChildProcess, Reply, read_frame, write_frame

__all__ = ["STAGE_DONE", "Reply", "read_frame", "request", "write_frame"]

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
# STAGE_DONE (`done`): the last frame, with what native code `log`ged.

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


class _NativeReader(ChildProcess):
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
        super().__init__("hloscope.ir.reader_child")


_reader = _NativeReader()
atexit.register(_reader.close)


def request(kind: RequestKind, payload: bytes, timeout: float | None = None) -> Reply:
    """Have the reader process read `payload` (see `_NativeReader.request`)."""
    return _reader.request({"kind": kind}, payload, timeout)

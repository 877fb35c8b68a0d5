"""`XLA_FLAGS` and `LIBTPU_INIT_ARGS`, read by XLA and libtpu themselves before they
read them in this process.

Both abort the process on a flag they do not know (`Unknown flag in XLA_FLAGS:
--xla_bogus_flag=1`), and with file descriptor 2 captured while native code runs
(`hloscope.native_stderr`) that was exit 1 and no word. So, when either is set, a
forked copy of this process reads them first, as XLA reads `XLA_FLAGS` (making a
compilation's options) and libtpu its arguments (loading and starting its plugin);
the copy's death is one line naming the flag, with XLA's or libtpu's own words. A
fork costs milliseconds and nothing is started here; the values read are remembered,
so a later check (after the user's module, which may set them, is imported) forks
again only when they changed.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import time
import warnings
from collections.abc import Callable
from typing import Any

from hloscope.errors import HloscopeError, one_line

FLAG_VARIABLES = ("XLA_FLAGS", "LIBTPU_INIT_ARGS")
READ_SECONDS = 60.0
"""How long the copy may take: past it, it is ended and the flags are left to XLA."""
_XLA_READ = b"\nhloscope: XLA_FLAGS read\n"
"""What the copy writes once XLA has read XLA_FLAGS (libtpu reads its own next)."""

_accepted: set[tuple[tuple[str, str], ...]] = set()
"""The values checks found accepted (with whether libtpu read them too)."""


def xla_flags_checked(read_libtpu: Callable[[], None] | None = None) -> None:
    """Refuse, in one line naming it, a flag of `XLA_FLAGS` that XLA does not know, or,
    with `read_libtpu` (what starts libtpu as JAX starts it, for it to read its
    arguments), one of `LIBTPU_INIT_ARGS` that libtpu does not know; nothing when
    neither is set or they are as a check found them accepted before."""
    values = {name: os.environ.get(name, "") for name in FLAG_VARIABLES}
    libtpu = read_libtpu if values["LIBTPU_INIT_ARGS"] else None
    key = (*values.items(), ("libtpu", "read" if libtpu is not None else ""))
    if not any(values.values()) or key in _accepted or not hasattr(os, "fork"):
        return
    died, output = _read_in_a_copy(libtpu)
    if not died:
        _accepted.add(key)
        return
    name = "LIBTPU_INIT_ARGS" if _XLA_READ in output else "XLA_FLAGS"
    reader = "libtpu" if name == "LIBTPU_INIT_ARGS" else "XLA"
    lines = [line.strip() for line in output.decode("utf-8", "replace").splitlines()]
    said = [line for line in lines if line and not line.startswith("hloscope:")]
    last = (said[-1].partition("] ")[2] or said[-1]) if said else "it ended the process"
    raise HloscopeError(
        f"{name}={values[name]}: {reader} does not accept it: {one_line(last, 300)}"
    )


def _read_in_a_copy(read_libtpu: Callable[[], None] | None) -> tuple[bool, bytes]:
    """Whether a forked copy of this process died reading the flags, and what it wrote."""
    from jaxlib import xla_client

    read_end, write_end = os.pipe()
    with warnings.catch_warnings():
        # Python 3.12+ warns when a process with threads forks, and JAX once its backends
        # started (XLA has read its flags then): the copy only reads them, and exits.
        warnings.simplefilter("ignore")
        pid = os.fork()
    if pid == 0:  # the copy: read them, and end without running Python's exit
        try:
            os.dup2(write_end, 1)
            os.dup2(write_end, 2)
            xla_client.CompileOptions()  # XLA reads XLA_FLAGS for a compilation's options
            os.write(write_end, _XLA_READ)
            if read_libtpu is not None:
                read_libtpu()
        except BaseException:
            pass  # not the flags: whatever it is, the command meets it itself
        os._exit(0)
    os.close(write_end)
    output, finished = _drained(read_end, pid)
    _, status = os.waitpid(pid, 0)
    return finished and os.waitstatus_to_exitcode(status) != 0, output


def _drained(read_end: int, pid: int) -> tuple[bytes, bool]:
    """What the copy writes until it ends, and whether it ended by itself (it is ended
    after `READ_SECONDS`: not a refusal of the flags)."""
    chunks: list[bytes] = []
    deadline = time.monotonic() + READ_SECONDS
    with os.fdopen(read_end, "rb", buffering=0) as pipe:
        while True:
            left = deadline - time.monotonic()
            ready: Any = select.select([pipe], [], [], max(left, 0))[0] if left > 0 else []
            if not ready:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
                return b"".join(chunks), False
            chunk = pipe.read(65536)
            if not chunk:
                return b"".join(chunks), True
            chunks.append(chunk)

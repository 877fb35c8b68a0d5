"""JAX's default backend, for `hloscope --version` and the `environment` of reports."""

from __future__ import annotations

from typing import Any

import jax
import jax.extend

from hloscope.errors import one_line
from hloscope.ir.xla_flags import xla_flags_checked
from hloscope.native_stderr import native_stderr_captured
from hloscope.sources.jax.private import (
    private_accelerators_here,
    private_backends_started,
    private_load_plugins,
)


def flags_checked() -> None:
    """Before JAX's backends start: a flag of `XLA_FLAGS` or `LIBTPU_INIT_ARGS` that XLA
    or libtpu does not know refused in one line (`ir.xla_flags`; libtpu started there as
    JAX starts it). Once they started, XLA and libtpu have read them already."""
    if not private_backends_started():
        xla_flags_checked(private_load_plugins)


def default_backend(*, start: bool) -> str | None:
    """The platform of JAX's default backend (`cpu`, `gpu`, `tpu`, ...). With `start`
    False, None unless this process has started JAX's backends already (starting them
    takes a TPU's lock and a GPU's memory). A backend that fails to start is described
    in one line (`unavailable: ...`)."""
    if not start and not private_backends_started():
        return None
    flags_checked()
    try:
        # Quietly: starting the backends loads the installed plugins, and libtpu and
        # the CUDA plugin log their start-up on a machine without their device.
        with native_stderr_captured():
            return str(jax.default_backend())
    except Exception as exc:
        return f"unavailable: {one_line(str(exc), 200)}"


def local_backend() -> Any:
    """JAX's default backend, started here if it was not: quietly, since starting it
    logs the device count to the native stderr (pjrt_client.cc). Starting it also
    registers JAX's custom calls (LAPACK, callbacks) with XLA."""
    flags_checked()
    with native_stderr_captured():
        return jax.extend.backend.get_backend()


def local_devices() -> tuple[str, str, int]:
    """(platform, device kind, device count) of JAX's default backend: what a program
    compiled here is compiled for (`hloscope check` compares only on the same)."""
    backend = local_backend()
    devices = backend.devices()
    return str(backend.platform), str(devices[0].device_kind), len(devices)


def plugins_loaded_quietly() -> None:
    """On a machine with neither a TPU nor a GPU, load JAX's plugins (libtpu, the CUDA
    plugin: `hloscope[tpu]`, `hloscope[cuda12]`) now, with their native lines kept off
    stderr, before a script hloscope runs starts JAX's backends: they would print a
    dozen lines about the TPU and the CUDA drivers this machine does not have. No
    backend is started (the script may still configure JAX); on a machine with a TPU or
    a GPU, nothing is done (a script may set LIBTPU_INIT_ARGS before its backend
    starts)."""
    flags_checked()
    try:
        if private_accelerators_here():
            return
        with native_stderr_captured():
            private_load_plugins()
    except Exception:
        return  # JAX reports the plugin's trouble itself when the script starts it


def cpu_client() -> Any:
    """JAX's CPU client: what XLA's cost analysis of a module is asked through
    (`profile --for`; the analysis counts an HLO module's flops and bytes, it runs
    nothing)."""
    flags_checked()
    with native_stderr_captured():
        return jax.extend.backend.get_backend("cpu")

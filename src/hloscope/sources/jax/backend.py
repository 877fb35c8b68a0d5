"""JAX's default backend, for `hloscope --version` and the `environment` of reports."""

from __future__ import annotations

import jax

from hloscope.errors import one_line
from hloscope.native_stderr import native_stderr_captured
from hloscope.sources.jax.private import private_backends_started


def default_backend(*, start: bool) -> str | None:
    """The platform of JAX's default backend (`cpu`, `gpu`, `tpu`, ...). With `start`
    False, None unless this process has started JAX's backends already (starting them
    takes a TPU's lock and a GPU's memory). A backend that fails to start is described
    in one line (`unavailable: ...`)."""
    if not start and not private_backends_started():
        return None
    try:
        return str(jax.default_backend())
    except Exception as exc:
        return f"unavailable: {one_line(str(exc), 200)}"


def local_devices() -> tuple[str, str, int]:
    """(platform, device kind, device count) of JAX's default backend: what a program
    compiled here is compiled for (`hloscope check` compares only on the same)."""
    with native_stderr_captured():
        # Starting the backend logs the device count to stderr (pjrt_client.cc).
        devices = jax.devices()
    return str(jax.default_backend()), str(devices[0].device_kind), len(devices)

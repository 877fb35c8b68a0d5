"""The JAX releases hloscope is tested with, and the words for one it is not.

pyproject.toml sets a lower bound only (`jax>=0.8`), so that installing hloscope never
replaces a project's newer JAX. On a release outside these, hloscope says once that it
is untested (`hloscope --version`, the JSON `environment`'s `jax_tested`), and a view
whose JAX internals moved fails in one line naming the release
(`errors.command_edge`). It imports nothing of hloscope's: both of those read it.
"""

from __future__ import annotations

TESTED_JAX_RELEASES = ("0.8", "0.9", "0.10")
"""The JAX release series CI runs hloscope on (the full suite on the newest, `make
smoke-jax` on the others)."""


def jax_release_tested(version: str) -> bool:
    """Whether JAX `version` (`0.10.2`, `0.12.0.dev20261101`) belongs to a release
    series in `TESTED_JAX_RELEASES`."""
    series = ".".join(version.split(".")[:2])
    return series in TESTED_JAX_RELEASES


def tested_releases_text() -> str:
    """`0.8 to 0.10`: the tested JAX series, for messages."""
    return f"{TESTED_JAX_RELEASES[0]} to {TESTED_JAX_RELEASES[-1]}"

"""What hloscope runs with: its version, JAX's and jaxlib's, whether that JAX is a
release hloscope is tested with, and JAX's default backend (`hloscope --version`, and the
`environment` of every JSON report).

The versions are read from the installed packages' metadata (hloscope's too: the
`hloscope` package imports what imports this module), which imports neither JAX nor
jaxlib; the backend is asked of JAX only where JAX runs (`hloscope.sources.jax`).
Every JSON report names them, so they are read the short way where it applies (see
`package_version`).
"""

from __future__ import annotations

import dataclasses
import os
import platform
import sys
from typing import Any

from hloscope.jax_releases import jax_release_tested, tested_releases_text


@dataclasses.dataclass(frozen=True)
class Environment:
    """The versions a report was made with."""

    hloscope: str
    """hloscope's version."""
    jax: str | None
    """The installed JAX's version (None when JAX is not installed)."""
    jax_tested: bool | None
    """Whether that JAX is of a release series hloscope is tested with
    (`jax_releases.TESTED_JAX_RELEASES`); None when JAX is not installed. On an untested (newer)
    release hloscope works as far as it can; a view that needs JAX internals that moved
    fails in one line naming the release."""
    jaxlib: str | None
    """The installed jaxlib's version: its MLIR bindings and XLA parse and compile."""
    python: str
    """The Python running hloscope."""
    backend: str | None
    """The platform of JAX's default backend (`cpu`, `gpu`, `tpu`), or None where the
    command did not start JAX's backends (reading a dump starts none)."""


def package_version(name: str) -> str | None:
    """The installed version of distribution `name`, as `importlib.metadata.version`
    gives it. The `Version` of the first `NAME-VERSION.dist-info` folder on `sys.path`
    (where importlib.metadata finds a wheel's install) is read directly: importing
    importlib.metadata costs each command 20 to 30 ms, for email's parser and more.
    Anything else (an egg, a zip) is asked of importlib.metadata
    (tests/cli/test_startup.py compares the two)."""
    version = _dist_info_version(name)
    if version is not None:
        return version
    from importlib import metadata

    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def _dist_info_version(name: str) -> str | None:
    wanted = _normalized(name)
    for entry in sys.path:
        folder = entry or "."
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        for candidate in names:
            stem, _, suffix = candidate.rpartition(".")
            if suffix != "dist-info" or _normalized(stem.partition("-")[0]) != wanted:
                continue
            version = _metadata_version(os.path.join(folder, candidate, "METADATA"))
            if version is not None:
                return version
    return None


def _normalized(name: str) -> str:
    # PEP 503's normalization (runs of `-`, `_` and `.` are one), with `_` as wheels
    # spell folder names.
    parts = name.lower().replace("-", "_").replace(".", "_").split("_")
    return "_".join(part for part in parts if part)


def _metadata_version(path: str) -> str | None:
    """The `Version` header of a METADATA file (its headers end at the first blank
    line)."""
    try:
        with open(path, encoding="utf-8") as lines:
            for line in lines:
                if line.startswith("Version:"):
                    return line[len("Version:") :].strip()
                if not line.strip():
                    return None
    except (OSError, UnicodeDecodeError):
        return None
    return None


def xla_of_jaxlib() -> str:
    """`XLA (jaxlib 0.9.2)`: which XLA a compile error comes from, since what XLA
    compiles differs by release."""
    return f"XLA (jaxlib {package_version('jaxlib') or 'unknown'})"


_child_backend: str | None = None
"""The platform of the backend a child process of this one compiled on, if any."""


def note_child_backend(platform: str) -> None:
    """Record that a child process (the module runner, compiling a dump) started JAX's
    backend on `platform`: the command did start one, in its child."""
    global _child_backend
    _child_backend = platform


def environment(*, start_backend: bool = False) -> Environment:
    """The environment of this process. `start_backend`: start JAX's backends to name
    the default one (`--version`); otherwise it is named only where this process (or
    its module runner, `note_child_backend`) started them already."""
    backend = None
    if start_backend or "jax" in sys.modules:
        from hloscope.sources.jax.backend import default_backend

        backend = default_backend(start=start_backend)
    if backend is None:
        backend = _child_backend
    jax = package_version("jax")
    return Environment(
        hloscope=package_version("hloscope") or "unknown",
        jax=jax,
        jax_tested=None if jax is None else jax_release_tested(jax),
        jaxlib=package_version("jaxlib"),
        python=platform.python_version(),
        backend=backend,
    )


def environment_json(env: Environment | None = None) -> dict[str, Any]:
    """The `environment` of a JSON report."""
    return dataclasses.asdict(env if env is not None else environment())


def version_text(env: Environment) -> str:
    """What `hloscope --version` prints."""
    untested = (
        f" (untested: hloscope is tested with JAX {tested_releases_text()}; a view that "
        "needs JAX internals that moved says so)"
        if env.jax_tested is False
        else ""
    )
    return (
        f"hloscope {env.hloscope}\n"
        f"jax {env.jax or 'not installed'}{untested}\n"
        f"jaxlib {env.jaxlib or 'not installed'}\n"
        f"backend {env.backend or 'none'}\n"
        f"python {env.python}\n"
    )

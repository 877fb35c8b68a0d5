"""A baseline as it is stored: a JSON document meant to be committed, read by people
in a diff (one fact per line, sorted), and the backend it was measured on."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from hloscope.analyses.baseline.facts import (
    ArgumentState,
    FactValue,
    Measurement,
    PeakBuffer,
    line_site,
)
from hloscope.errors import HloscopeError

FORMAT_VERSION = 1
"""`hloscope_baseline` in the file: the format's version."""


COMPARISON_PLATFORM = "compare"
"""The platform of a comparison's baseline (`compare --baseline`): its rows' specs are
its `compiled_for`."""


@dataclasses.dataclass(frozen=True)
class Backend:
    """Where a program was compiled: what a baseline is only comparable on."""

    platform: str
    """JAX's platform: `cpu`, `gpu`, `tpu`."""
    device_kind: str
    """`cpu`, `NVIDIA H100 80GB HBM3`, `TPU v5 lite`."""
    device_count: int
    jax: str | None
    jaxlib: str | None
    compiled_for: str | None = None
    """`--for`'s spec (`tpu:v5e:2x4`) when compiled for it without the device; None
    for the local backend."""
    compiler: str | None = None
    """What compiled it for `compiled_for`: `libtpu`, `jax-cuda12-plugin`."""
    compiler_version: str | None = None
    deviceless: bool = False

    def words(self) -> str:
        if self.platform == COMPARISON_PLATFORM:
            return f"a comparison on {self.compiled_for}, jax {self.jax}, jaxlib {self.jaxlib}"
        where = self.platform
        if self.compiled_for is not None:
            where = f"{self.compiled_for}, compiled without the device"
            where += f" by {self.compiler} {self.compiler_version}"
        return (
            f"{where} ({self.device_kind}, {self.device_count} "
            f"device{'s' if self.device_count != 1 else ''}), jax {self.jax}, jaxlib {self.jaxlib}"
        )

    @property
    def compared_on(self) -> str:
        """What a baseline compares like with like on: the platform, and for `--for`
        the spec it was compiled for."""
        return self.compiled_for or self.platform


@dataclasses.dataclass(frozen=True)
class Baseline:
    """A program's facts as recorded."""

    target: str
    """What was measured, as the user named it."""
    backend: Backend
    measurement: Measurement


def baseline_json(baseline: Baseline) -> dict[str, Any]:
    """The document stored for `baseline`."""
    measurement = baseline.measurement
    return {
        "hloscope_baseline": FORMAT_VERSION,
        "target": baseline.target,
        # The --for fields only where set: a local backend's baseline reads as before.
        "backend": {
            k: v
            for k, v in dataclasses.asdict(baseline.backend).items()
            if v not in (None, False) or k in _ALWAYS
        },
        "facts": dict(measurement.facts),
        "sites": {fact: dict(sites) for fact, sites in measurement.sites.items()},
        "peak_buffers": [dataclasses.asdict(b) for b in measurement.peak_buffers],
        "arguments": [dataclasses.asdict(a) for a in measurement.arguments],
    }


_ALWAYS = frozenset(("platform", "device_kind", "device_count", "jax", "jaxlib"))
"""The backend's keys every baseline writes (the rest only where set)."""


def read_baseline(document: Any, where: str) -> Baseline:
    """The baseline a stored document holds; one line naming what is wrong otherwise."""
    if not isinstance(document, dict) or "hloscope_baseline" not in document:
        raise HloscopeError("not an hloscope baseline (no 'hloscope_baseline' key)", where=where)
    version = document["hloscope_baseline"]
    if version != FORMAT_VERSION:
        raise HloscopeError(
            f"a baseline of format {version!r}, and this hloscope reads format "
            f"{FORMAT_VERSION}: record it again with --update",
            where=where,
        )
    try:
        backend = Backend(**document["backend"])
        facts = _facts(document["facts"])
        sites = {
            str(fact): MappingProxyType(_line_counts(counts))
            for fact, counts in document.get("sites", {}).items()
        }
        peak = tuple(PeakBuffer(**b) for b in document.get("peak_buffers", []))
        arguments = tuple(ArgumentState(**a) for a in document.get("arguments", []))
        target = str(document["target"])
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise HloscopeError(
            f"the baseline is damaged ({type(exc).__name__}: {exc}): record it again with --update",
            where=where,
        ) from None
    return Baseline(
        target=target,
        backend=backend,
        measurement=Measurement(
            facts=MappingProxyType(facts),
            sites=MappingProxyType(sites),
            peak_buffers=peak,
            arguments=arguments,
        ),
    )


def _line_counts(counts: Mapping[str, Any]) -> dict[str, int]:
    """A fact's count per site, the sites that are no line (`line_site`) together."""
    lines: dict[str, int] = {}
    for site, count in counts.items():
        where = line_site(str(site))
        lines[where] = lines.get(where, 0) + int(count)
    return lines


def _facts(raw: Mapping[str, Any]) -> dict[str, FactValue]:
    facts: dict[str, FactValue] = {}
    for name, value in raw.items():
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError(f"fact {name!r} is {value!r}, not a number")
        facts[str(name)] = value
    return facts

"""`hloscope platforms`: what `--for` accepts, as text or JSON."""

from __future__ import annotations

from hloscope.compile_for import COMPILERS, PlatformRow, compiler_installed
from hloscope.units import human_bytes


def _installed(platform: str) -> bool | None:
    """Whether the package compiling for `platform` is installed (None for the local
    backend)."""
    return compiler_installed(platform) if platform in COMPILERS else None


def _platform(row: PlatformRow) -> str:
    return row.spec.partition(":")[0]


def platforms_text(rows: tuple[PlatformRow, ...]) -> str:
    """One line per form of `--for`, then which extras are installed."""
    width = max(len(r.spec) for r in rows) + 3
    device_width = max(len(r.device) for r in rows) + 3
    lines = [f"{'--for':<{width}}{'device':<{device_width}}memory per device"]
    for row in rows:
        memory = human_bytes(row.memory_bytes) if row.memory_bytes else "-"
        note = f"   {row.notes}" if row.notes else ""
        lines.append(f"{row.spec:<{width}}{row.device:<{device_width}}{memory}{note}")
    lines.append("")
    for platform, compiler in COMPILERS.items():
        state = (
            "installed"
            if _installed(platform)
            else f"not installed: pip install 'hloscope[{compiler.extra}]'"
        )
        lines.append(f"{platform}: {state}")
    return "\n".join(lines) + "\n"


def platforms_json(rows: tuple[PlatformRow, ...]) -> str:
    """The same as one JSON object."""
    from hloscope.environment import environment_json
    from hloscope.render.json import document, dumps

    body = {
        "platforms": [
            {
                "spec": r.spec,
                "platform": _platform(r),
                "device": r.device,
                "memory_bytes": r.memory_bytes,
                "notes": r.notes,
                "compiler_installed": _installed(_platform(r)),
            }
            for r in rows
        ],
    }
    return dumps({**document("platforms", "", body), "environment": environment_json()}) + "\n"

"""Numbers for people: sizes in bytes and large counts, as every report writes them.

The analyses write sizes into their warnings and the renderers into their tables;
both use these, so a size reads the same wherever it appears.
"""

from __future__ import annotations


def human_bytes(value: float | None) -> str:
    """`4.0 KiB`, `512 B`; `?` when unknown."""
    if value is None:
        return "?"
    size = float(value)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(size) < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} TiB"


def human_count(value: float) -> str:
    """1234 -> 1.23k, 5e9 -> 5.00G."""
    for unit, size in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(value) >= size:
            return f"{value / size:.2f}{unit}"
    return f"{value:g}"

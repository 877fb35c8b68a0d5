"""Numbers for people: sizes in bytes, large counts and a count with its noun, as
every report and message writes them (and the article a message puts before a
type's name).

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


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """`1 reachable function`, `3 reachable functions`: a count with its noun."""
    return f"{count:,} {noun if count == 1 else plural or noun + 's'}"


def with_article(word: str) -> str:
    """`an int`, `a float`, `an ArrayImpl`: a word (a type's name) after `a` or `an`,
    by its first letter (names of types are read letter by letter: `a uint8`)."""
    article = "an" if word[:1].lower() in "aeio" else "a"
    return f"{article} {word}"

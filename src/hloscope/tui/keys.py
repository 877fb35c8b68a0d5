"""The key reference, read from the widgets' `BINDINGS` so that it cannot drift:
the help screen and the docs' key tables both come from here."""

from __future__ import annotations

import dataclasses

from textual.binding import Binding
from textual.dom import DOMNode
from textual.keys import format_key


@dataclasses.dataclass(frozen=True)
class KeyRow:
    keys: tuple[str, ...]
    """Every key doing it: `down`, `j`."""
    description: str


def bindings_of(cls: type[DOMNode]) -> list[Binding]:
    """The bindings in force on `cls`: its own and those it inherits, a subclass's
    binding replacing an inherited one for the same key (as textual merges them)."""
    by_key: dict[str, Binding] = {}
    for base in reversed(cls.__mro__):
        if not (isinstance(base, type) and issubclass(base, DOMNode)):
            continue
        if not base.__dict__.get("_inherit_bindings", True):
            by_key.clear()
        for binding in Binding.make_bindings(base.__dict__.get("BINDINGS", [])):
            by_key[binding.key] = binding
    return list(by_key.values())


def key_label(key: str) -> str:
    """A key as the user types it: `?` for `question_mark`; names for the others
    (`enter`, `backspace`, `ctrl+o`, `space`)."""
    shown = format_key(key)
    return (
        shown
        if len(shown) == 1 and shown.isascii() and shown.isprintable() and shown != " "
        else key
    )


def key_rows(cls: type[DOMNode]) -> list[KeyRow]:
    """`cls`'s keys with descriptions, keys doing the same thing together (described
    by the first of them), in the order they are declared."""
    rows: dict[str, tuple[str, list[str]]] = {}
    for binding in bindings_of(cls):
        if binding.system or not binding.description:
            continue
        description = binding.tooltip or binding.description
        rows.setdefault(binding.action, (description, []))[1].append(key_label(binding.key))
    return [KeyRow(tuple(keys), description) for description, keys in rows.values()]


def markdown_table(sections: list[tuple[str, type[DOMNode]]]) -> str:
    """The key reference as the docs' table (tests keep docs/ equal to it)."""
    lines = ["| keys | what they do |", "| --- | --- |"]
    for title, cls in sections:
        lines.append(f"| **{title}** | |")
        for row in key_rows(cls):
            keys = ", ".join(f"`{key}`" for key in row.keys)
            lines.append(f"| {keys} | {row.description} |")
    return "\n".join(lines)

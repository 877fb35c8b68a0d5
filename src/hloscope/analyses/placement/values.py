"""How the placement report measures and names values: their bytes together, a
value's HLO type, and the distinct names or source lines of a group in order."""

from __future__ import annotations

from collections.abc import Iterable

from hloscope.ir.model import Module


def sum_bytes(module: Module, values: Iterable[int]) -> int | None:
    total = 0
    for value in values:
        size = module.nbytes(value)
        if size is None:
            return None
        total += size
    return total


def unique(items: Iterable[str | None]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(item for item in items if item))


def hlo_type(module: Module, value: int) -> str:
    types = module.arrays(value)
    if len(types) == 1:
        return types[0].hlo
    return module.value_types[value]

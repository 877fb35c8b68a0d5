"""The entry function's parameters and results: paired across the two modules (by
name, position or type), and what changed in each pair (type, sharding, memory kind,
donation), or which were added or removed."""

from __future__ import annotations

import difflib
import re

from hloscope.analyses.diff.aspects import aspect_of, type_change
from hloscope.analyses.diff.names import short
from hloscope.analyses.diff.report import (
    ADDED,
    CHANGED,
    REMOVED,
    SAME,
    Change,
    ParameterPair,
)
from hloscope.ir.model import Argument, Function, Module, Result

_GENERATED_NAME = re.compile(r"^(?:%?arg\d+|param(?:eter)?[._]?\d*(?:\.\d+)*|Arg_\d+(?:\.\d+)*)$")


def _argument_name(function: Function, index: int) -> str | None:
    argument = function.arguments[index]
    name = argument.location.name
    if name is None or _GENERATED_NAME.match(name):
        return None
    return name


def pair_parameters(a: Function | None, b: Function | None) -> list[tuple[int | None, int | None]]:
    """Pair the entry functions' parameters: by name when both sides name them (JAX's
    pytree paths), else by position when the counts agree, else by aligning their
    types (a pruned parameter in the middle shifts the rest)."""
    if a is None or b is None:
        return (
            [(i, None) for i in range(len(a.arguments))]
            if a is not None
            else ([(None, j) for j in range(len(b.arguments))] if b is not None else [])
        )
    count_a, count_b = len(a.arguments), len(b.arguments)
    names_a = [_argument_name(a, i) for i in range(count_a)]
    names_b = [_argument_name(b, j) for j in range(count_b)]
    pairs: list[tuple[int | None, int | None]] = []
    if all(names_a) and all(names_b) and len(set(names_a)) == count_a:
        index_b = {name: j for j, name in enumerate(names_b)}
        shared = sum(1 for name in names_a if name in index_b)
        if shared * 2 >= max(count_a, count_b):
            used: set[int] = set()
            for i, name in enumerate(names_a):
                j = index_b.get(name or "")
                if j is not None and j not in used:
                    pairs.append((i, j))
                    used.add(j)
            unpaired_a = [i for i in range(count_a) if i not in {p[0] for p in pairs}]
            unpaired_b = [j for j in range(count_b) if j not in used]
            return _merge_pairs(pairs, _align_types(a, b, unpaired_a, unpaired_b))
    if count_a == count_b:
        return [(i, i) for i in range(count_a)]
    return _align_types(a, b, list(range(count_a)), list(range(count_b)))


def _align_types(
    a: Function, b: Function, indices_a: list[int], indices_b: list[int]
) -> list[tuple[int | None, int | None]]:
    types_a = [a.arguments[i].type for i in indices_a]
    types_b = [b.arguments[j].type for j in indices_b]
    pairs: list[tuple[int | None, int | None]] = []
    for i, j in _align(types_a, types_b):
        pairs.append(
            (indices_a[i] if i is not None else None, indices_b[j] if j is not None else None)
        )
    return pairs


def _align(types_a: list[str], types_b: list[str]) -> list[tuple[int | None, int | None]]:
    """Positions of two type lists paired: the common prefix and suffix in place (a
    weight appended for a layer added pairs the others with themselves, where
    several equal types leave the choice open), the middle by difflib; a replaced
    run of equal length pairs too."""
    prefix = 0
    while prefix < min(len(types_a), len(types_b)) and types_a[prefix] == types_b[prefix]:
        prefix += 1
    suffix = 0
    while (
        suffix < min(len(types_a), len(types_b)) - prefix
        and types_a[-1 - suffix] == types_b[-1 - suffix]
    ):
        suffix += 1
    pairs: list[tuple[int | None, int | None]] = [(k, k) for k in range(prefix)]
    middle_a = types_a[prefix : len(types_a) - suffix]
    middle_b = types_b[prefix : len(types_b) - suffix]
    matcher = difflib.SequenceMatcher(a=middle_a, b=middle_b, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal" or (tag == "replace" and i2 - i1 == j2 - j1):
            pairs.extend((prefix + i1 + k, prefix + j1 + k) for k in range(i2 - i1))
        else:
            pairs.extend((prefix + i, None) for i in range(i1, i2))
            pairs.extend((None, prefix + j) for j in range(j1, j2))
    tail_a, tail_b = len(types_a) - suffix, len(types_b) - suffix
    pairs.extend((tail_a + k, tail_b + k) for k in range(suffix))
    return pairs


def _merge_pairs(
    first: list[tuple[int | None, int | None]], rest: list[tuple[int | None, int | None]]
) -> list[tuple[int | None, int | None]]:
    merged = first + rest
    return sorted(merged, key=lambda p: (p[0] if p[0] is not None else 1 << 30, p[1] or 0))


def pair_results(a: Function | None, b: Function | None) -> list[tuple[int, int]]:
    if a is None or b is None:
        return []
    if len(a.results) == len(b.results):
        return [(i, i) for i in range(len(a.results))]
    aligned = _align([r.type for r in a.results], [r.type for r in b.results])
    return [(i, j) for i, j in aligned if i is not None and j is not None]


_PARAMETER_KEYS = {
    "mhlo.sharding": "sharding",
    "sdy.sharding": "sharding",
    "mhlo.memory_kind": "memory_kind",
    "jax.buffer_donor": "donation",
    "tf.aliasing_output": "donation",
    "mhlo.layout_mode": "layout",
}


def _argument_differences(
    a: Argument | Result, b: Argument | Result, module_a: Module, module_b: Module
) -> list[tuple[str, str]]:
    attrs_a, attrs_b = a.attributes, b.attributes
    out: list[tuple[str, str]] = []
    change = type_change((a.type,), (b.type,), module_a, module_b)
    if change is not None:
        out.append(change)
    for key in sorted(attrs_a.keys() | attrs_b.keys()):
        if key in ("jax.result_info",):
            continue
        value_a, value_b = attrs_a.get(key), attrs_b.get(key)
        if value_a == value_b:
            continue
        aspect = _PARAMETER_KEYS.get(key, "attributes")
        label = key
        if key == "mhlo.frontend_attributes":
            entries_a, entries_b = a.frontend_attributes, b.frontend_attributes
            for entry in sorted(entries_a.keys() | entries_b.keys()):
                if entries_a.get(entry) != entries_b.get(entry):
                    out.append(
                        (
                            aspect_of("frontend." + entry),
                            f"{entry} {entries_a.get(entry, '-')} → {entries_b.get(entry, '-')}",
                        )
                    )
            continue
        out.append((aspect, f"{label} {short(value_a or '-')} → {short(value_b or '-')}"))
    return out


def parameter_changes(
    module_a: Module,
    module_b: Module,
    entry_a: Function | None,
    entry_b: Function | None,
    pairs: list[tuple[int | None, int | None]],
) -> tuple[tuple[ParameterPair, ...], list[Change]]:
    """The entry parameters' pairs and their changes. Details leave the index out (it
    is in `a_where`/`b_where`), so equal changes to several parameters group."""
    report: list[ParameterPair] = []
    changes: list[Change] = []
    function = entry_a.name if entry_a is not None else (entry_b.name if entry_b else "")
    for i, j in pairs:
        name_a = _argument_name(entry_a, i) if entry_a is not None and i is not None else None
        name_b = _argument_name(entry_b, j) if entry_b is not None and j is not None else None
        where_a = _argument_where(entry_a, i)
        where_b = _argument_where(entry_b, j)
        if i is not None and j is not None and entry_a is not None and entry_b is not None:
            arg_a, arg_b = entry_a.arguments[i], entry_b.arguments[j]
            found = _argument_differences(arg_a, arg_b, module_a, module_b)
            detail = "; ".join(text for _, text in found)
            report.append(ParameterPair(i, j, name_a, name_b, CHANGED if found else SAME, detail))
            if found:
                aspects = ("parameter", *dict.fromkeys(aspect for aspect, _ in found))
                changes.append(
                    Change(
                        CHANGED,
                        function,
                        "parameter",
                        detail,
                        aspects,
                        None,
                        None,
                        where_a,
                        where_b,
                    )
                )
        elif i is not None and entry_a is not None:
            detail = entry_a.arguments[i].shape
            report.append(ParameterPair(i, None, name_a, None, REMOVED, detail))
            changes.append(
                Change(
                    REMOVED,
                    function,
                    "parameter",
                    detail,
                    ("parameter",),
                    None,
                    None,
                    where_a,
                    None,
                )
            )
        elif j is not None and entry_b is not None:
            detail = entry_b.arguments[j].shape
            report.append(ParameterPair(None, j, None, name_b, ADDED, detail))
            changes.append(
                Change(
                    ADDED,
                    entry_b.name,
                    "parameter",
                    detail,
                    ("parameter",),
                    None,
                    None,
                    None,
                    where_b,
                )
            )
    return tuple(report), changes


def _argument_where(function: Function | None, index: int | None) -> str | None:
    if function is None or index is None:
        return None
    name = _argument_name(function, index)
    return f"{function.name} %arg{index}" + (f" ({name})" if name else "")


def result_changes(
    module_a: Module, module_b: Module, entry_a: Function | None, entry_b: Function | None
) -> list[Change]:
    if entry_a is None or entry_b is None:
        return []
    changes = []
    pairs = pair_results(entry_a, entry_b)
    for i, j in pairs:
        result_a, result_b = entry_a.results[i], entry_b.results[j]
        found = _argument_differences(result_a, result_b, module_a, module_b)
        if found:
            changes.append(
                Change(
                    CHANGED,
                    entry_a.name,
                    "result",
                    "; ".join(text for _, text in found),
                    ("result", *dict.fromkeys(aspect for aspect, _ in found)),
                    None,
                    None,
                    f"{entry_a.name} result {i}",
                    f"{entry_b.name} result {j}",
                )
            )
    paired_a = {i for i, _ in pairs}
    paired_b = {j for _, j in pairs}
    for i, result in enumerate(entry_a.results):
        if i not in paired_a:
            changes.append(
                Change(
                    REMOVED,
                    entry_a.name,
                    "result",
                    result.shape,
                    ("result",),
                    None,
                    None,
                    f"{entry_a.name} result {i}",
                    None,
                )
            )
    for j, result in enumerate(entry_b.results):
        if j not in paired_b:
            changes.append(
                Change(
                    ADDED,
                    entry_b.name,
                    "result",
                    result.shape,
                    ("result",),
                    None,
                    None,
                    None,
                    f"{entry_b.name} result {j}",
                )
            )
    return changes

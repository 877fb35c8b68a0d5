"""The diff of two modules from end to end: pair the entry parameters, build both
graphs (inlining calls unless they are too many), match, compare each matched pair,
lay out the rows (A's ops in order, B's unmatched ones among them), count, and gather
the changes into a `ModuleDiff`."""

from __future__ import annotations

import gc
from collections import Counter, defaultdict
from itertools import compress

from hloscope.analyses.diff.changes import fusion_changes, group, module_changes, op_change
from hloscope.analyses.diff.compare import Comparer
from hloscope.analyses.diff.functions import correspond, renames
from hloscope.analyses.diff.graph import FUSION_KIND, Graph
from hloscope.analyses.diff.matcher import WHILE_KIND, Matcher
from hloscope.analyses.diff.names import normalize_function_name
from hloscope.analyses.diff.parameters import (
    pair_parameters,
    pair_results,
    parameter_changes,
    result_changes,
)
from hloscope.analyses.diff.report import (
    ADDED,
    CHANGED,
    NORMALIZED,
    REMOVED,
    SAME,
    Change,
    FunctionPair,
    ModuleDiff,
    Rename,
    Row,
    RowStatus,
    Side,
    Summary,
)
from hloscope.analyses.diff.signatures import CALLS, Signatures
from hloscope.ir.model import Function, Module

# A module whose calls inline to more ops than this is diffed with calls as opaque
# nodes (its called functions compared on their own).
INLINE_LIMIT = 2_000_000


def diff_modules(a: Module, b: Module) -> ModuleDiff:
    """The structural diff of `a` (before) and `b` (after)."""
    # The graphs, the matching and the rows are a few objects per op, none of them in
    # a reference cycle: the cyclic collector would only walk both models again, and
    # again (0.8 s of 1.9 s at 100k ops, in the browser and the Python API; a command
    # has it paused already).
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _diff_modules(a, b)
    finally:
        if was_enabled:
            gc.enable()


def _diff_modules(a: Module, b: Module) -> ModuleDiff:
    notes: list[str] = []
    entry_a, entry_b = a.entry, b.entry
    parameter_pairs = pair_parameters(entry_a, entry_b)
    tokens_a = [0] * (len(entry_a.arguments) if entry_a else 0)
    tokens_b = [0] * (len(entry_b.arguments) if entry_b else 0)
    for number, (i, j) in enumerate(parameter_pairs):
        token = hash(("param", number))
        if i is not None:
            tokens_a[i] = token if j is not None else hash(("param-a", i))
        if j is not None:
            tokens_b[j] = token if i is not None else hash(("param-b", j))
    inline = _inlined_size(a) <= INLINE_LIMIT and _inlined_size(b) <= INLINE_LIMIT
    if not inline:
        notes.append("calls are too many to inline; called functions were compared on their own")
    signatures = Signatures()
    graph_a = Graph(a, tokens_a, inline, signatures)
    graph_b = Graph(b, tokens_b, inline, signatures)
    matched_pairs = [(i, j) for i, j in parameter_pairs if i is not None and j is not None]
    matcher = Matcher(graph_a, graph_b, matched_pairs)
    matcher.run(_root_pairs(graph_a, graph_b, entry_a, entry_b))
    functions = correspond(matcher)
    comparer = Comparer(matcher, functions)

    statuses_a: list[RowStatus] = [SAME] * len(graph_a.op)
    fusions = fusion_changes(matcher)
    fusion_details = {(f.a, f.b): f.detail for f in fusions if f.status == CHANGED and f.detail}
    found_by_pair: dict[int, list[tuple[str, str]]] = {}
    duplicates_a = _duplicates(graph_a, matcher.ma)
    duplicates_b = _duplicates(graph_b, matcher.mb)
    unchanged = comparer.unchanged
    sub_a, sub_b, kind_a = graph_a.sub, graph_b.sub, graph_a.kind
    references_a, references_b = graph_a.references, graph_b.references
    for node_a, node_b in enumerate(matcher.ma):
        if node_b < 0:
            statuses_a[node_a] = NORMALIZED if node_a in duplicates_a else REMOVED
            continue
        if (
            sub_a[node_a] == sub_b[node_b]
            and node_a not in references_a
            and node_b not in references_b
            and kind_a[node_a] != WHILE_KIND
        ) or unchanged(node_a, node_b):
            # Identical subgraphs (what `unchanged` says first), or the same op.
            found = []
        else:
            found = comparer.differences(node_a, node_b)
        if fusion_details:
            detail_extra = fusion_details.get((node_a, node_b))
            if detail_extra:
                found.append(("fusion", detail_extra))
        if found:
            statuses_a[node_a] = CHANGED
            found_by_pair[node_a] = found
    statuses_b: list[RowStatus] = [
        (NORMALIZED if node in duplicates_b else ADDED) if partner < 0 else SAME
        for node, partner in enumerate(matcher.mb)
    ]

    changes: list[Change] = []
    counts = {ADDED: 0, REMOVED: 0, CHANGED: 0, SAME: 0, NORMALIZED: 0}
    rows = _align(graph_a, graph_b, matcher, statuses_a, statuses_b)
    counted_a, counted_b = graph_a.counted, graph_b.counted
    for row in rows:
        status = row.status
        node_a = row.a
        if not (counted_a[node_a] if node_a >= 0 else counted_b[row.b]):
            continue
        counts[status] += 1
        if status in (SAME, NORMALIZED):
            continue
        changes.append(op_change(row, graph_a, graph_b, found_by_pair.get(node_a, []), functions))
    # Then what is not an op: the module's attributes and symbols, parameters, results.
    changes.extend(module_changes(a, b))
    parameter_report, changed_parameters = parameter_changes(
        a, b, entry_a, entry_b, parameter_pairs
    )
    changes.extend(changed_parameters)
    changes.extend(result_changes(a, b, entry_a, entry_b))

    groups = group(changes)
    summary = Summary(
        added=counts[ADDED],
        removed=counts[REMOVED],
        changed=counts[CHANGED],
        unchanged=counts[SAME],
        normalized=counts[NORMALIZED],
    )
    if a.name != b.name and a.name and b.name:
        notes.append(f"module names differ: {a.name} → {b.name} (not a change)")
    renamed = renames(functions, a)
    if renamed:
        notes.append(_renames_note(renamed))
    unlocated = [side for side, module in (("A", a), ("B", b)) if not _has_source_lines(module)]
    if changes and unlocated:
        which = (
            "neither module's ops carry"
            if len(unlocated) == 2
            else f"{unlocated[0]}'s ops carry no"
        )
        notes.append(
            f"no source lines: {which} source locations, so changes are placed by "
            "function and value only"
        )
    return ModuleDiff(
        verdict="different" if changes else "same",
        summary=summary,
        groups=groups,
        changes=tuple(changes),
        a=_side(a, graph_a),
        b=_side(b, graph_b),
        rows=tuple(rows),
        parameters=parameter_report,
        fusions=tuple(fusions),
        functions=_function_pairs(matcher),
        renames=renamed,
        notes=tuple(notes),
    )


def _has_source_lines(module: Module) -> bool:
    return any(op.location.source for op in module.ops)


# Renames named in the note; every one is in `ModuleDiff.renames`.
NOTE_RENAMES = 6


def _renames_note(renamed: tuple[Rename, ...]) -> str:
    shown = ", ".join(f"{r.a} → {r.b}" for r in renamed[:NOTE_RENAMES])
    more = f" and {len(renamed) - NOTE_RENAMES} more" if len(renamed) > NOTE_RENAMES else ""
    if len(renamed) == 1:
        return f"1 function renamed, matched by what it computes (not a change): {shown}"
    return (
        f"{len(renamed)} functions renamed, matched by what they compute (not a change): "
        f"{shown}{more}"
    )


def _duplicates(graph: Graph, matched: list[int]) -> set[int]:
    """Unmatched nodes that are no change: unit-dimension reshapes, and copies of a
    subexpression that is matched elsewhere on the same side (one printer merged
    equal constants and broadcasts, the other did not)."""
    unmatched = [
        node for node, partner in enumerate(matched) if partner < 0 and not graph.is_container[node]
    ]
    if not unmatched:
        return set()  # the common case: each op has its counterpart
    kept = {graph.sub[node] for node, partner in enumerate(matched) if partner >= 0}
    return {node for node in unmatched if graph.unit_reshape[node] or graph.sub[node] in kept}


def _inlined_size(module: Module) -> int:
    """Ops once calls are inlined, capped: a cheap count over the call graph."""
    sizes: dict[str, int] = {}

    def size(name: str, active: frozenset[str]) -> int:
        if name in sizes:
            return sizes[name]
        function = module.functions.get(name)
        if function is None or function.is_declaration:
            return 0
        ops = module.function_ops(function)
        # Its own ops, then its callees': past the limit, the count stops (only whether
        # it is past the limit matters).
        total = len(ops)
        for op in [op for op in ops if op.name in CALLS] if total <= INLINE_LIMIT else []:
            # A `func.call`'s callee, XLA's own form's `call`'s `to_apply`.
            key = "callee" if "callee" in op.attributes else "to_apply"
            if key in op.attributes:
                refs = op.references(key)
                if refs and refs[0] not in active:
                    total += size(refs[0], active | {refs[0]})
            if total > INLINE_LIMIT:
                break
        sizes[name] = total
        return total

    entry = module.entry
    return size(entry.name, frozenset({entry.name})) if entry is not None else 0


def _root_pairs(
    graph_a: Graph, graph_b: Graph, entry_a: Function | None, entry_b: Function | None
) -> list[tuple[int, int]]:
    """Pairs of output values to start the top-down pass from: the entry functions'
    results, then other roots (functions that are not inlined) paired by what they
    compute (the fingerprints of their outputs), else by (normalised) name."""
    pairs: list[tuple[int, int]] = []
    others_b = graph_b.roots[1:]
    by_outputs: dict[tuple[int, ...], list[int]] = defaultdict(list)
    by_name: dict[str, list[int]] = defaultdict(list)
    for index, (name, outputs) in enumerate(others_b):
        by_outputs[tuple(graph_b.value_hash(v) for v in outputs)].append(index)
        by_name[normalize_function_name(name)].append(index)
    used: set[int] = set()
    for index, (name, outputs_a) in enumerate(graph_a.roots):
        if index == 0 and graph_b.roots:
            outputs_b = graph_b.roots[0][1]
            for i, j in pair_results(entry_a, entry_b):
                if i < len(outputs_a) and j < len(outputs_b):
                    pairs.append((outputs_a[i], outputs_b[j]))
            continue
        fingerprint = tuple(graph_a.value_hash(v) for v in outputs_a)
        named = by_name.get(normalize_function_name(name), [])
        candidates = [c for c in by_outputs.get(fingerprint, []) + named if c not in used]
        if candidates:
            used.add(candidates[0])
            pairs.extend(zip(outputs_a, others_b[candidates[0]][1], strict=False))
    return pairs


def _align(
    graph_a: Graph,
    graph_b: Graph,
    matcher: Matcher,
    statuses_a: list[RowStatus],
    statuses_b: list[RowStatus],
) -> list[Row]:
    """A's nodes in order; B's unmatched nodes go before the first matched node that
    follows them in B."""
    rows: list[Row] = []
    next_b = 0
    mb = matcher.mb
    count_b = len(graph_b.op)
    for node_a, node_b in enumerate(matcher.ma):
        if node_b < 0:
            rows.append(Row(node_a, -1, statuses_a[node_a]))
            continue
        while next_b < node_b:
            if mb[next_b] < 0:
                rows.append(Row(-1, next_b, statuses_b[next_b]))
            next_b += 1
        if next_b == node_b:
            next_b += 1
        rows.append(Row(node_a, node_b, statuses_a[node_a]))
    while next_b < count_b:
        if mb[next_b] < 0:
            rows.append(Row(-1, next_b, statuses_b[next_b]))
        next_b += 1
    return rows


def _side(module: Module, graph: Graph) -> Side:
    return Side(
        module=module.name,
        entry=module.entry.name if module.entry is not None else None,
        ops=tuple(graph.op),
        calls=tuple(map(graph.contexts.__getitem__, graph.ctx)),
        counted=tuple(graph.counted),
        fusions=graph.kind.count(FUSION_KIND),
    )


def _function_pairs(matcher: Matcher) -> tuple[FunctionPair, ...]:
    """Each function of A with the function of B most of its ops matched into, and B's
    functions that nothing matched."""
    a, b = matcher.a, matcher.b
    # Counted in bulk (Counter keeps the order in which each function first comes).
    sizes_a = Counter(compress(a.function, a.counted))
    sizes_b = Counter(compress(b.function, b.counted))
    functions_b = b.function
    votes: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for (name_a, name_b), count in Counter(
        [
            (name_a, functions_b[partner])
            for name_a, partner, counted in zip(a.function, matcher.ma, a.counted, strict=True)
            if counted and partner >= 0
        ]
    ).items():
        votes[name_a][name_b] += count
    pairs = []
    seen_b: set[str] = set()
    for name, size in sizes_a.items():
        counted = votes.get(name)
        if counted:
            best = max(counted.items(), key=lambda kv: kv[1])
            pairs.append(FunctionPair(name, best[0], size, sizes_b.get(best[0], 0), best[1]))
            seen_b.add(best[0])
        else:
            pairs.append(FunctionPair(name, None, size, 0, 0))
    for name, size in sizes_b.items():
        if name not in seen_b:
            pairs.append(FunctionPair(None, name, 0, size, 0))
    return tuple(pairs)

"""A structural diff of two modules: which ops were added, removed or changed, and how.

Text diffs of IR drown in noise: SSA values are renumbered, independent ops move,
locations change, and another printer (XLA's HLO, converted to MLIR) spells the
same program differently. This diff matches structure instead, in the way XLA's
`hlo_diff` does:

1. Both modules become dataflow graphs. Calls (`func.call`) are inlined, because
   nested jits, `compute_on` wrappers and XLA's own inlining move call boundaries
   without changing the computation; `mhlo.fusion` regions are transparent too, so
   ops are matched across fusion boundaries. A call or a fusion stays a node of its
   own, matched afterwards by where its contents went.
2. Every op gets a fingerprint of what it is (op kind, result types, attributes
   without locations) and a Merkle-style subgraph fingerprint (its fingerprint and
   those of its operands and nested regions). The entry functions' parameters are
   paired first (by name, else by position, else by aligning their types), so a
   paired parameter hashes the same on both sides.
3. Ops are matched in passes: identical subgraphs, tallest first, each match mapping
   its whole subgraph (equal small leaves, the many `constant 0`, are left to their
   users first); top-down from matched users to their operands, starting from the
   paired results; bottom-up from matched operands to users of the same kind, by
   similarity; ops of another kind reading the same operands (a kind change); what
   is left by equal fingerprints within matched regions. Calls and fusions are
   matched last, by where most of their contents went.
4. Each matched pair is compared: op kind, result types (shape or dtype),
   attributes (with compute type, sharding and memory kind named as such),
   operands (wired to the counterpart of the operand or not), call targets, and for
   fusions the set of ops fused. Unmatched ops are added or removed. Changes with
   the same description are grouped (the same change in 40 layers is one line with
   a count).

What is normalised, so that StableHLO, its HLO round trip (XLA's printer, converted
back to MLIR), VHLO and Exported artifacts compare equal: `mhlo.`, `hlo.` and
`stablehlo.` op names are one namespace; `stablehlo.dot` is the `dot_general` it
abbreviates; function names lose XLA's `.N` suffixes; reshapes and broadcasts that only
add or drop unit dimensions are transparent (the round trip writes `broadcast_in_dim
64 -> 1x64` as reshapes), and a broadcast's dimensions are read for the operand's
non-unit dimensions; equal subexpressions that one printer merged (CSE) are one; a
`while` loop's carried values may come in another order; commutative ops' operands
may be swapped; the default precision, implied comparison types, channel ids and
XLA's `xla_shape` attribute are ignored. Unmatched ops that these rules explain are
counted as `normalized`, not as changes. Not normalised: other rewrites (algebraic
simplification, constant folding, XLA's optimizations).

Matching is linear in the number of ops but for bounded candidate lists (the
bottom-up pass looks at a few users of each operand) and sorting.
"""

from __future__ import annotations

import re
from collections import defaultdict

from hloscope.analyses.diff.aspects import SHARDING_KEYS
from hloscope.analyses.diff.compare import Comparer
from hloscope.analyses.diff.graph import (
    CALL_OP,
    FUSION_KIND,
    Graph,
)
from hloscope.analyses.diff.matcher import Matcher
from hloscope.analyses.diff.names import (
    normalize_function_name,
    normalize_kind,
    short,
)
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
    ChangeGroup,
    FunctionPair,
    FusionChange,
    ModuleDiff,
    ParameterPair,
    Row,
    Side,
    Summary,
)
from hloscope.ir.model import (
    Function,
    Module,
    Op,
    parse_type,
    string_attribute,
    symbol_references,
)

__all__ = [
    "ADDED",
    "CHANGED",
    "NORMALIZED",
    "REMOVED",
    "SAME",
    "Change",
    "ChangeGroup",
    "FunctionPair",
    "FusionChange",
    "ModuleDiff",
    "ParameterPair",
    "Row",
    "Side",
    "Summary",
    "diff_modules",
    "normalize_function_name",
    "normalize_kind",
    "pair_parameters",
]

# A module whose calls inline to more ops than this is diffed with calls as opaque
# nodes (its called functions compared on their own).
INLINE_LIMIT = 2_000_000


# --------------------------------------------------------------------------- the diff


def _where(graph: Graph, node: int) -> str:
    module = graph.module
    op = module.ops[graph.op[node]]
    text = graph.function[node] or "(module)"
    if op.results:
        text += " " + module.value_name(op.results[0])
    source = op.location.source
    if source:
        text += f" ({source})"
    return text


def _fused_kind(graph: Graph, node: int) -> str:
    text = dict(graph.attrs[node]).get("fusion_kind", "")
    match = re.search(r"\bk[A-Z]\w*", text)
    return match.group(0) if match else text


def _brief(kind: str) -> str:
    return kind.removeprefix("stablehlo.")


def diff_modules(a: Module, b: Module) -> ModuleDiff:
    """The structural diff of `a` (before) and `b` (after)."""
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
    graph_a = Graph(a, tokens_a, inline)
    graph_b = Graph(b, tokens_b, inline)
    matched_pairs = [(i, j) for i, j in parameter_pairs if i is not None and j is not None]
    matcher = Matcher(graph_a, graph_b, matched_pairs)
    matcher.run(_root_pairs(graph_a, graph_b, entry_a, entry_b))
    comparer = Comparer(matcher)

    statuses_a = [SAME] * len(graph_a.op)
    fusion_changes = _fusion_changes(matcher)
    fusion_details = {
        (f.a, f.b): f.detail for f in fusion_changes if f.status == CHANGED and f.detail
    }
    found_by_pair: dict[int, list[tuple[str, str]]] = {}
    duplicates_a = _duplicates(graph_a, matcher.ma)
    duplicates_b = _duplicates(graph_b, matcher.mb)
    for node_a, node_b in enumerate(matcher.ma):
        if node_b < 0:
            statuses_a[node_a] = NORMALIZED if node_a in duplicates_a else REMOVED
            continue
        found = comparer.differences(node_a, node_b)
        detail_extra = fusion_details.get((node_a, node_b))
        if detail_extra:
            found.append(("fusion", detail_extra))
        if found:
            statuses_a[node_a] = CHANGED
            found_by_pair[node_a] = found
    statuses_b = [
        (NORMALIZED if node in duplicates_b else ADDED) if partner < 0 else SAME
        for node, partner in enumerate(matcher.mb)
    ]

    changes: list[Change] = []
    counts = {ADDED: 0, REMOVED: 0, CHANGED: 0, SAME: 0, NORMALIZED: 0}
    rows = _align(graph_a, graph_b, matcher, statuses_a, statuses_b)
    for row in rows:
        counted = graph_a.counted[row.a] if row.a >= 0 else graph_b.counted[row.b]
        if not counted:
            continue
        counts[row.status] += 1
        if row.status in (SAME, NORMALIZED):
            continue
        changes.append(_op_change(row, graph_a, graph_b, found_by_pair.get(row.a, [])))
    # Then what is not an op: the module's attributes and symbols, parameters, results.
    changes.extend(_module_changes(a, b))
    parameter_report, changed_parameters = parameter_changes(entry_a, entry_b, parameter_pairs)
    changes.extend(changed_parameters)
    changes.extend(result_changes(entry_a, entry_b))

    groups = _group(changes)
    summary = Summary(
        added=counts[ADDED],
        removed=counts[REMOVED],
        changed=counts[CHANGED],
        unchanged=counts[SAME],
        normalized=counts[NORMALIZED],
    )
    if a.name != b.name and a.name and b.name:
        notes.append(f"module names differ: {a.name} → {b.name} (not a change)")
    return ModuleDiff(
        verdict="different" if changes else "same",
        summary=summary,
        groups=groups,
        changes=tuple(changes),
        a=_side(a, graph_a),
        b=_side(b, graph_b),
        rows=tuple(rows),
        parameters=parameter_report,
        fusions=tuple(fusion_changes),
        functions=_function_pairs(matcher),
        notes=tuple(notes),
    )


def _duplicates(graph: Graph, matched: list[int]) -> set[int]:
    """Unmatched nodes that are no change: unit-dimension reshapes, and copies of a
    subexpression that is matched elsewhere on the same side (one printer merged
    equal constants and broadcasts, the other did not)."""
    kept = {graph.sub[node] for node, partner in enumerate(matched) if partner >= 0}
    return {
        node
        for node, partner in enumerate(matched)
        if partner < 0
        and not graph.is_container[node]
        and (graph.unit_reshape[node] or graph.sub[node] in kept)
    }


def _inlined_size(module: Module) -> int:
    """Ops once calls are inlined, capped: a cheap count over the call graph."""
    sizes: dict[str, int] = {}

    def size(name: str, active: frozenset[str]) -> int:
        if name in sizes:
            return sizes[name]
        function = module.functions.get(name)
        if function is None or function.is_declaration:
            return 0
        total = 0
        for op in module.function_ops(function):
            total += 1
            if op.name == CALL_OP and "callee" in op.attributes:
                refs = symbol_references(op.attributes["callee"])
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
    results, then other roots paired by (normalised) name."""
    pairs: list[tuple[int, int]] = []
    roots_b = {normalize_function_name(name): outputs for name, outputs in graph_b.roots[1:]}
    for index, (name, outputs_a) in enumerate(graph_a.roots):
        if index == 0 and graph_b.roots:
            outputs_b = graph_b.roots[0][1]
            for i, j in pair_results(entry_a, entry_b):
                if i < len(outputs_a) and j < len(outputs_b):
                    pairs.append((outputs_a[i], outputs_b[j]))
            continue
        found = roots_b.get(normalize_function_name(name))
        if found is not None:
            pairs.extend(zip(outputs_a, found, strict=False))
    return pairs


def _op_change(row: Row, graph_a: Graph, graph_b: Graph, found: list[tuple[str, str]]) -> Change:
    if row.status == CHANGED:
        aspects = tuple(dict.fromkeys(aspect for aspect, _ in found))
        name_a, name_b = graph_a.kind[row.a], graph_b.kind[row.b]
        op_a = graph_a.module.ops[graph_a.op[row.a]].name
        return Change(
            kind=CHANGED,
            function=_function_label(graph_a.function[row.a], graph_b.function[row.b]),
            op=op_a
            if name_a == name_b
            else f"{op_a} → {graph_b.module.ops[graph_b.op[row.b]].name}",
            detail="; ".join(text for _, text in found),
            aspects=aspects,
            a=row.a,
            b=row.b,
            a_where=_where(graph_a, row.a),
            b_where=_where(graph_b, row.b),
        )
    graph, node = (graph_b, row.b) if row.status == ADDED else (graph_a, row.a)
    return Change(
        kind=row.status,
        function=graph.function[node],
        op=graph.module.ops[graph.op[node]].name,
        detail=_node_summary(graph, node),
        aspects=(),
        a=row.a if row.a >= 0 else None,
        b=row.b if row.b >= 0 else None,
        a_where=_where(graph_a, row.a) if row.a >= 0 else None,
        b_where=_where(graph_b, row.b) if row.b >= 0 else None,
    )


def _function_label(name_a: str, name_b: str) -> str:
    if name_a == name_b or normalize_function_name(name_a) == normalize_function_name(name_b):
        return name_a
    return f"{name_a} → {name_b}"


def _node_summary(graph: Graph, node: int) -> str:
    """An added or removed op in a few words: its result type and what matters."""
    parts = []
    types = [str(t) for text in graph.types[node] for t in parse_type(text)]
    if types:
        parts.append(", ".join(types))
    attrs = dict(graph.attrs[node])
    if "callee" in attrs:
        parts.append(f"calls {attrs['callee']}")
    if graph.kind[node] == FUSION_KIND:
        fused = sorted(
            {
                _brief(graph.kind[n])
                for n in range(len(graph.op))
                if graph.container[n] == node and graph.counted[n]
            }
        )
        parts.append(f"{_fused_kind(graph, node)} fusion of {', '.join(fused)}")
    if "call_target_name" in attrs:
        parts.append(string_attribute(attrs["call_target_name"]))
    if "frontend._xla_compute_type" in attrs:
        parts.append(f"compute type {attrs['frontend._xla_compute_type']}")
    for key in SHARDING_KEYS:
        if key in attrs:
            parts.append(f"sharding {short(attrs[key])}")
    return "; ".join(parts)


def _group(changes: list[Change]) -> tuple[ChangeGroup, ...]:
    grouped: dict[tuple[str, str, str, str], list[Change]] = {}
    for change in changes:
        key = (change.kind, normalize_function_name(change.function), change.op, change.detail)
        grouped.setdefault(key, []).append(change)
    return tuple(
        ChangeGroup(
            kind=members[0].kind,
            function=members[0].function,
            op=members[0].op,
            detail=members[0].detail,
            aspects=members[0].aspects,
            count=len(members),
            changes=tuple(members),
        )
        for members in grouped.values()
    )


def _align(
    graph_a: Graph,
    graph_b: Graph,
    matcher: Matcher,
    statuses_a: list[str],
    statuses_b: list[str],
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


def _fusion_changes(matcher: Matcher) -> list[FusionChange]:
    a, b = matcher.a, matcher.b
    members_a: dict[int, list[int]] = defaultdict(list)
    members_b: dict[int, list[int]] = defaultdict(list)
    for graph, members in ((a, members_a), (b, members_b)):
        for node in range(len(graph.op)):
            outer = graph.container[node]
            if outer >= 0 and graph.kind[outer] == FUSION_KIND and graph.counted[node]:
                members[outer].append(node)
    out: list[FusionChange] = []
    for node in range(len(a.op)):
        if a.kind[node] != FUSION_KIND:
            continue
        partner = matcher.ma[node]
        ops_a = tuple(_brief(a.kind[n]) for n in members_a[node])
        if partner < 0:
            out.append(
                FusionChange(REMOVED, node, None, _fused_kind(a, node), None, ops_a, (), (), (), "")
            )
            continue
        ops_b = tuple(_brief(b.kind[n]) for n in members_b[partner])
        moved_out = tuple(
            _brief(a.kind[n])
            for n in members_a[node]
            if matcher.ma[n] >= 0 and b.container[matcher.ma[n]] != partner
        )
        moved_in = tuple(
            _brief(b.kind[n])
            for n in members_b[partner]
            if matcher.mb[n] >= 0 and a.container[matcher.mb[n]] != node
        )
        kind_a, kind_b = _fused_kind(a, node), _fused_kind(b, partner)
        if not moved_in and not moved_out and sorted(ops_a) == sorted(ops_b) and kind_a == kind_b:
            continue
        parts = []
        if moved_in:
            parts.append("fused in: " + ", ".join(moved_in))
        if moved_out:
            parts.append("moved out: " + ", ".join(moved_out))
        only_a = [k for k, n in zip(ops_a, members_a[node], strict=True) if matcher.ma[n] < 0]
        only_b = [k for k, n in zip(ops_b, members_b[partner], strict=True) if matcher.mb[n] < 0]
        if only_a:
            parts.append("removed ops: " + ", ".join(only_a))
        if only_b:
            parts.append("added ops: " + ", ".join(only_b))
        out.append(
            FusionChange(
                CHANGED,
                node,
                partner,
                kind_a,
                kind_b,
                ops_a,
                ops_b,
                moved_in,
                moved_out,
                "; ".join(parts),
            )
        )
    for node in range(len(b.op)):
        if b.kind[node] == FUSION_KIND and matcher.mb[node] < 0:
            ops_b = tuple(_brief(b.kind[n]) for n in members_b[node])
            out.append(
                FusionChange(ADDED, None, node, None, _fused_kind(b, node), (), ops_b, (), (), "")
            )
    return out


_MODULE_KEYS = ("mhlo.num_partitions", "mhlo.num_replicas")


def _module_changes(a: Module, b: Module) -> list[Change]:
    changes = []
    for key in _MODULE_KEYS:
        value_a, value_b = a.attributes.get(key), b.attributes.get(key)
        if value_a is not None and value_b is not None and value_a != value_b:
            changes.append(
                Change(
                    CHANGED,
                    "",
                    "module",
                    f"{key} {value_a} → {value_b}",
                    ("module",),
                    None,
                    None,
                    None,
                    None,
                )
            )
    # Meshes and other symbols at the top level, by name.
    symbols_a = {_symbol(op): op for op in a.body if op.name != "func.func"}
    symbols_b = {_symbol(op): op for op in b.body if op.name != "func.func"}
    for key in sorted(symbols_a.keys() | symbols_b.keys()):
        op_a, op_b = symbols_a.get(key), symbols_b.get(key)
        if op_a is not None and op_b is not None:
            attrs_a = {k: v for k, v in op_a.attributes.items() if k != "sym_name"}
            attrs_b = {k: v for k, v in op_b.attributes.items() if k != "sym_name"}
            if attrs_a != attrs_b:
                changes.append(
                    Change(
                        CHANGED,
                        "",
                        op_a.name,
                        f"{key}: " + short(str(attrs_a)) + " → " + short(str(attrs_b)),
                        ("module",),
                        None,
                        None,
                        None,
                        None,
                    )
                )
        elif op_a is not None:
            changes.append(Change(REMOVED, "", op_a.name, key, ("module",), None, None, None, None))
        elif op_b is not None:
            changes.append(Change(ADDED, "", op_b.name, key, ("module",), None, None, None, None))
    return changes


def _symbol(op: Op) -> str:
    return f"{op.name} {string_attribute(op.attributes.get('sym_name', ''))}".strip()


def _side(module: Module, graph: Graph) -> Side:
    return Side(
        module=module.name,
        entry=module.entry.name if module.entry is not None else None,
        ops=tuple(graph.op),
        calls=tuple(graph.contexts[c] for c in graph.ctx),
        counted=tuple(graph.counted),
        fusions=sum(1 for kind in graph.kind if kind == FUSION_KIND),
    )


def _function_pairs(matcher: Matcher) -> tuple[FunctionPair, ...]:
    """Each function of A with the function of B most of its ops matched into, and B's
    functions that nothing matched."""
    a, b = matcher.a, matcher.b
    sizes_a: dict[str, int] = defaultdict(int)
    sizes_b: dict[str, int] = defaultdict(int)
    votes: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for node in range(len(a.op)):
        if not a.counted[node]:
            continue
        sizes_a[a.function[node]] += 1
        partner = matcher.ma[node]
        if partner >= 0:
            votes[a.function[node]][b.function[partner]] += 1
    for node in range(len(b.op)):
        if b.counted[node]:
            sizes_b[b.function[node]] += 1
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

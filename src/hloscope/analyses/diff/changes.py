"""What changed, in words: a `Change` for each op added, removed or changed (where it
is, and a few words on an added or removed op), the fusions whose fused ops changed,
the module's attributes and top-level symbols, and equal changes grouped into one."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from typing import cast

from hloscope.analyses.diff.aspects import SHARDING_KEYS
from hloscope.analyses.diff.functions import function_label
from hloscope.analyses.diff.graph import FUSION_KIND, Graph
from hloscope.analyses.diff.matcher import Matcher
from hloscope.analyses.diff.names import normalize_function_name, short
from hloscope.analyses.diff.report import (
    ADDED,
    CHANGED,
    REMOVED,
    Change,
    ChangeGroup,
    ChangeKind,
    FusionChange,
    Place,
    Row,
)
from hloscope.ir.model import Module, Op


def _where(graph: Graph, node: int) -> str:
    module = graph.module
    op = module.ops[graph.op[node]]
    text = graph.function[node] or "(module)"
    if op.hlo_name and op.name.startswith("hlo."):
        text += " " + op.hlo_name  # XLA's own form: the instruction by XLA's name
    elif op.results:
        text += " " + module.value_name(op.results[0])
    source = op.location.source
    if source:
        text += f" ({source})"
    return text


def _fused_kind(graph: Graph, node: int) -> str:
    """A fusion's kind: `fusion_kind` in the converted form, `kind` in XLA's own."""
    return graph.module.ops[graph.op[node]].fusion_kind or ""


def _fusion_name(graph: Graph, node: int) -> str | None:
    """A fusion by XLA's name for it (`broadcast_add_fusion`), else by its value."""
    module = graph.module
    op = module.ops[graph.op[node]]
    if op.hlo_name:
        return op.hlo_name
    return module.value_name(op.results[0]) if op.results else None


def _brief(kind: str) -> str:
    return kind.removeprefix("stablehlo.")


def op_change(
    row: Row,
    graph_a: Graph,
    graph_b: Graph,
    found: list[tuple[str, str]],
    functions: Mapping[str, str],
) -> Change:
    if row.status == CHANGED:
        aspects = tuple(dict.fromkeys(aspect for aspect, _ in found))
        name_a, name_b = graph_a.kind[row.a], graph_b.kind[row.b]
        op_a = graph_a.module.ops[graph_a.op[row.a]].name
        return Change(
            kind=CHANGED,
            function=function_label(functions, graph_a.function[row.a], graph_b.function[row.b]),
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
        kind=cast("ChangeKind", row.status),  # only rows of added or removed ops come here
        function=graph.function[node],
        op=graph.module.ops[graph.op[node]].name,
        detail=_node_summary(graph, node),
        aspects=(),
        a=row.a if row.a >= 0 else None,
        b=row.b if row.b >= 0 else None,
        a_where=_where(graph_a, row.a) if row.a >= 0 else None,
        b_where=_where(graph_b, row.b) if row.b >= 0 else None,
    )


def _node_summary(graph: Graph, node: int) -> str:
    """An added or removed op in a few words: its result type and what matters."""
    parts = []
    types = [str(t) for text in graph.types[node] for t in graph.module.type_arrays(text)]
    if types:
        parts.append(", ".join(types))
    attrs = dict(graph.attrs[node])
    callee = dict(graph.references.get(node, ())).get("callee")
    if callee:
        parts.append(f"calls @{normalize_function_name(callee[0])}")
    if graph.kind[node] == FUSION_KIND:
        fused = sorted(
            {
                _brief(graph.kind[n])
                for n in range(len(graph.op))
                if graph.container[n] == node and graph.counted[n]
            }
        )
        parts.append(f"{_fused_kind(graph, node)} fusion of {', '.join(fused)}")
    target = graph.module.ops[graph.op[node]].custom_call_target
    if target:  # `call_target_name` converted, `custom_call_target` in XLA's form
        parts.append(target)
    if "frontend._xla_compute_type" in attrs:
        parts.append(f"compute type {attrs['frontend._xla_compute_type']}")
    for key in SHARDING_KEYS:
        if key in attrs:
            parts.append(f"sharding {short(attrs[key])}")
    return "; ".join(parts)


def group(changes: list[Change]) -> tuple[ChangeGroup, ...]:
    """Equal changes as one, by what changed (kind, op, detail), not by where: the
    same change in every clone of a function, every layer or every call site."""
    grouped: dict[tuple[str, str, str], list[Change]] = {}
    for change in changes:
        grouped.setdefault((change.kind, change.op, change.detail), []).append(change)
    return tuple(_group(members) for members in grouped.values())


def _group(members: list[Change]) -> ChangeGroup:
    places: dict[str, int] = {}
    for change in members:
        places[change.function] = places.get(change.function, 0) + 1
    families = dict.fromkeys(normalize_function_name(name) for name in places)
    first = members[0]
    return ChangeGroup(
        kind=first.kind,
        function=first.function if len(families) == 1 else _functions_label(list(families)),
        op=first.op,
        detail=first.detail,
        aspects=first.aspects,
        count=len(members),
        changes=tuple(members),
        places=tuple(Place(name, count) for name, count in places.items()),
    )


# Functions named in a group's `function` (every one is in its places).
MAX_GROUP_FUNCTIONS = 3


def _functions_label(families: list[str]) -> str:
    shown = ", ".join(families[:MAX_GROUP_FUNCTIONS])
    more = len(families) - MAX_GROUP_FUNCTIONS
    return shown + (f" and {more} more" if more > 0 else "")


def fusion_changes(matcher: Matcher) -> list[FusionChange]:
    a, b = matcher.a, matcher.b
    if FUSION_KIND not in a.kind and FUSION_KIND not in b.kind:
        return []  # lowered modules: no fusions
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
                FusionChange(
                    REMOVED,
                    node,
                    None,
                    _fused_kind(a, node),
                    None,
                    ops_a,
                    (),
                    (),
                    (),
                    "",
                    _fusion_name(a, node),
                    None,
                )
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
                _fusion_name(a, node),
                _fusion_name(b, partner),
            )
        )
    for node in range(len(b.op)):
        if b.kind[node] == FUSION_KIND and matcher.mb[node] < 0:
            ops_b = tuple(_brief(b.kind[n]) for n in members_b[node])
            out.append(
                FusionChange(
                    ADDED,
                    None,
                    node,
                    None,
                    _fused_kind(b, node),
                    (),
                    ops_b,
                    (),
                    (),
                    "",
                    None,
                    _fusion_name(b, node),
                )
            )
    return out


_MODULE_KEYS = ("mhlo.num_partitions", "mhlo.num_replicas")


def module_changes(a: Module, b: Module) -> list[Change]:
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
                meshes = [
                    next((m for m in module.meshes if m.name == op.symbol_name), None)
                    for module, op in ((a, op_a), (b, op_b))
                ]
                if op_a.name == "sdy.mesh" and None not in meshes:
                    # One change with its axes: `data=8 → data=4 × model=2`.
                    detail = f"mesh @{op_a.symbol_name}: " + " → ".join(
                        " × ".join(f"{n}={size}" for n, size in m.axes) or "maximal"
                        for m in meshes
                        if m is not None
                    )
                else:
                    detail = f"{key}: " + short(str(attrs_a)) + " → " + short(str(attrs_b))
                changes.append(
                    Change(
                        CHANGED,
                        "(module)",
                        op_a.name,
                        detail,
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
    return f"{op.name} {op.symbol_name}".strip()

"""How a matched pair of ops differs: op kind, result types (shape, dtype or layout),
attributes (compute type, sharding and memory kind named as such) and operands (wired
to the counterpart of the operand, or not)."""

from __future__ import annotations

from collections.abc import Mapping

from hloscope.analyses.diff.aspects import aspect_of, type_change
from hloscope.analyses.diff.functions import same_function
from hloscope.analyses.diff.graph import Graph
from hloscope.analyses.diff.matcher import CONVERT_KIND, WHILE_KIND, Matcher
from hloscope.analyses.diff.names import short


class Comparer:
    """How a matched pair of ops differs: kind, result types, attributes, operands."""

    def __init__(self, matcher: Matcher, functions: Mapping[str, str]) -> None:
        self.m = matcher
        self.a = matcher.a
        self.b = matcher.b
        self.functions = functions
        """A's function -> its counterpart in B: a call of the counterpart is no
        change, whatever its name."""

    def reference_differences(self, node_a: int, node_b: int) -> list[tuple[str, str]]:
        """The functions an op names (callee, called computations) that are not the
        counterparts of A's."""
        refs_a = dict(self.a.references.get(node_a, ()))
        refs_b = dict(self.b.references.get(node_b, ()))
        out: list[tuple[str, str]] = []
        for key in sorted(refs_a.keys() | refs_b.keys()):
            names_a, names_b = refs_a.get(key, ()), refs_b.get(key, ())
            mapped = tuple(self.functions.get(name, name) for name in names_a)
            if mapped == names_b or self._same_functions(names_a, names_b):
                continue
            was = ", ".join("@" + name for name in names_a) or "-"
            now = ", ".join("@" + name for name in names_b) or "-"
            out.append((aspect_of(key), f"{key} {short(was)} → {short(now)}"))
        return out

    def _same_functions(self, names_a: tuple[str, ...], names_b: tuple[str, ...]) -> bool:
        """Whether each function B names computes what A's computes, though it is not
        its counterpart (XLA numbers equal reduction computations per compile, and
        pairs them one to one with others)."""
        return len(names_a) == len(names_b) and all(
            same_function(self.a.module, x, self.b.module, y)
            for x, y in zip(names_a, names_b, strict=True)
        )

    def same_operand(self, value_a: int, value_b: int) -> bool:
        """Whether B's operand is the counterpart of A's, or an identical subgraph."""
        if self.m.counterpart_value(value_a) == value_b:
            return True
        return self.a.value_hash(value_a) == self.b.value_hash(value_b)

    def _converted(self, value_a: int, value_b: int) -> str | None:
        """How B's operand is A's behind an op that only passes it on, added or removed:
        `converted to bf16` (a `convert`), `through an added optimization_barrier`
        (`jax.checkpoint`'s); `no longer converted` and the like the other way round.
        None when it is not."""
        a, b = self.a, self.b
        producer_b = b.g_node[value_b]
        if producer_b >= 0 and self.m.mb[producer_b] < 0:
            inner = _passed_on(b, value_b)
            if inner is not None and self.same_operand(value_a, inner):
                if b.kind[producer_b] == CONVERT_KIND:
                    parsed = b.module.type_arrays(b.g_type[value_b])
                    return f"converted to {parsed[0].dtype}" if parsed else "converted"
                return f"through an added {b.kind[producer_b].removeprefix('stablehlo.')}"
        producer_a = a.g_node[value_a]
        if producer_a >= 0 and self.m.ma[producer_a] < 0:
            inner = _passed_on(a, value_a)
            if inner is not None and self.same_operand(inner, value_b):
                if a.kind[producer_a] == CONVERT_KIND:
                    return "no longer converted"
                return f"no longer through {a.kind[producer_a].removeprefix('stablehlo.')}"
        return None

    def describe_value(self, graph: Graph, value: int, matched: list[int]) -> str:
        producer = graph.g_node[value]
        if producer >= 0:
            text = graph.kind[producer].removeprefix("stablehlo.")
            if graph.results[producer] and len(graph.results[producer]) > 1:
                text += f"#{graph.g_index[value]}"
            if matched[producer] < 0:
                text += " (added)" if graph is self.b else " (removed)"
            return text
        if value in graph.parameters:
            text = f"parameter {graph.parameters.index(value)}"
            paired = self.m.leaf_pairs if graph is self.a else self.m.paired_b
            return (
                text
                if value in paired
                else text + (" (added)" if graph is self.b else " (removed)")
            )
        return self._region_argument(graph, value)

    def _region_argument(self, graph: Graph, value: int) -> str:
        """`region argument 3`, `(added)` or `(removed)` where it is a value one loop
        carries and its counterpart does not (the loop gained or lost a carried value)."""
        _, index = graph.g_slot[value]
        text = f"region argument {index}"
        owner = graph.g_owner[value]
        if owner < 0:
            return text
        in_a = graph is self.a
        partner = (self.m.ma if in_a else self.m.mb)[owner]
        if partner < 0:
            return text
        node_a, node_b = (owner, partner) if in_a else (partner, owner)
        count_a, count_b = len(self.a.operands[node_a]), len(self.b.operands[node_b])
        if self.a.kind[node_a] != WHILE_KIND or count_a == count_b:
            return text
        permutation = self.m.permutation(node_a, node_b) or list(range(min(count_a, count_b)))
        if in_a and (index >= len(permutation) or permutation[index] < 0):
            return text + " (removed)"
        if not in_a and index not in permutation:
            return text + " (added)"
        return text

    def unchanged(self, node_a: int, node_b: int) -> bool:
        """Whether `differences` would find nothing, the common case, told quickly: no
        functions named, not a `while` (whose carried values may be permuted), and
        either identical subgraphs or the same kind, types and attributes with each
        operand wired to the counterpart of A's. False when unsure: `differences`
        then looks in full."""
        a, b = self.a, self.b
        if node_a in a.references or node_b in b.references or a.kind[node_a] == WHILE_KIND:
            return False
        if a.sub[node_a] == b.sub[node_b]:
            return True
        if (
            a.kind[node_a] != b.kind[node_b]
            or a.types[node_a] != b.types[node_b]
            or a.attrs[node_a] != b.attrs[node_b]
        ):
            return False
        if a.is_container[node_a]:
            return True
        operands_b = b.operands[node_b]
        operands_a = a.operands[node_a]
        if len(operands_a) != len(operands_b):
            return False
        producer_of = a.g_node
        ma = self.m.ma
        results_b = b.results
        for value_a, value_b in zip(operands_a, operands_b, strict=True):
            producer = producer_of[value_a]
            partner = ma[producer] if producer >= 0 else -1
            if partner >= 0 and len(results_b[partner]) == 1:
                # `counterpart_value` of a single result
                if a.g_index[value_a] != 0 or results_b[partner][0] != value_b:
                    return False
            elif self.m.counterpart_value(value_a) != value_b:
                return False
        # Each operand is its counterpart: a commutative op's are not swapped either.
        return True

    def differences(self, node_a: int, node_b: int) -> list[tuple[str, str]]:
        """(aspect, text) for each way the pair differs; empty when the same."""
        a, b = self.a, self.b
        out: list[tuple[str, str]] = []
        if node_a in a.references or node_b in b.references:
            # Not in the fingerprints: a call's fingerprint is its operands'.
            out.extend(self.reference_differences(node_a, node_b))
        if a.sub[node_a] == b.sub[node_b] and self.m.permutation(node_a, node_b) is None:
            return out  # identical subgraphs
        if a.kind[node_a] != b.kind[node_b]:
            out.append(("kind", f"{a.kind[node_a]} → {b.kind[node_b]}"))
        types_b = b.types[node_b]
        permutation = self.m.permutation(node_a, node_b)
        if permutation is not None and len(types_b) == len(permutation):
            types_b = tuple(types_b[j] for j in permutation)
        changed_type = type_change(a.types[node_a], types_b, a.module, b.module)
        if changed_type is not None:
            out.append(changed_type)
        if a.attrs[node_a] != b.attrs[node_b]:
            attrs_a, attrs_b = dict(a.attrs[node_a]), dict(b.attrs[node_b])
            raw_a = a.module.ops[a.op[node_a]].attributes
            raw_b = b.module.ops[b.op[node_b]].attributes
            for key in sorted(attrs_a.keys() | attrs_b.keys()):
                value_a, value_b = attrs_a.get(key), attrs_b.get(key)
                if value_a == value_b:
                    continue
                # Compared in normal form, shown as printed; device groups as the
                # devices they hold, which the printed mesh axes do not show.
                if key != "replica_groups":
                    value_a = raw_a.get(key, value_a) if value_a is not None else None
                    value_b = raw_b.get(key, value_b) if value_b is not None else None
                aspect = aspect_of(key)
                label = key.removeprefix("frontend.")
                if aspect == "compute_type":
                    text = f"compute type {value_a or 'device'} → {value_b or 'device'}"
                elif aspect == "memory_kind":
                    text = f"memory {value_a or 'device'} → {value_b or 'device'}"
                elif value_a is None:
                    text = f"{label} added: {short(value_b or '')}"
                elif value_b is None:
                    text = f"{label} removed (was {short(value_a)})"
                else:
                    text = f"{label} {short(value_a)} → {short(value_b)}"
                out.append((aspect, text))
        operands_a, operands_b = a.operands[node_a], b.operands[node_b]
        if a.is_container[node_a]:
            # Values flow through calls and fusions: the ops inside that read them
            # report a rewiring.
            return out
        if len(operands_a) != len(operands_b):
            out.append(("operands", f"{len(operands_a)} operands → {len(operands_b)}"))
        else:
            for position, (operand_a, operand_b) in enumerate(self.m.operand_pairs(node_a, node_b)):
                if not self.same_operand(operand_a, operand_b):
                    converted = self._converted(operand_a, operand_b)
                    if converted is not None:
                        out.append(("operands", f"operand {position} {converted}"))
                        continue
                    was = self.describe_value(a, operand_a, self.m.ma)
                    now = self.describe_value(b, operand_b, self.m.mb)
                    if now == was:
                        # Not the counterpart, though described alike.
                        now = f"another {now}"
                    out.append(("operands", f"operand {position}: {was} → {now}"))
        return out


# Ops whose result is an operand passed on: the operand behind each result.
PASS_THROUGH_KINDS = frozenset({CONVERT_KIND, "stablehlo.optimization_barrier"})


def _passed_on(graph: Graph, value: int) -> int | None:
    """The operand a pass-through op (`convert`, `optimization_barrier`) hands on as
    `value`, or None."""
    producer = graph.g_node[value]
    if producer < 0 or graph.kind[producer] not in PASS_THROUGH_KINDS:
        return None
    operands = graph.operands[producer]
    if graph.kind[producer] == CONVERT_KIND:
        return operands[0] if len(operands) == 1 else None
    index = graph.g_index[value]
    return operands[index] if index < len(operands) else None

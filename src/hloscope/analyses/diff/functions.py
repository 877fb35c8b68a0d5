"""Which function of B is which function of A: by what they compute, not by name.

A function's counterpart is the function of B that its matched ops went to and whose
call sites are the counterparts of its call sites (one vote for each matched op and
for each matched call site), paired one to one, most votes first; the entry functions
are each other's. Functions that nothing voted for are paired by their contents (equal
ones in order), and by name (XLA's `.N` suffixes dropped) last. A pair whose names
differ beyond XLA's suffixes is a rename: a note, never a change, as XLA's `hlo_diff`
matches computations by structure first and by name last."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Hashable, Mapping

from hloscope.analyses.diff.matcher import Matcher
from hloscope.analyses.diff.names import normalize_function_name, normalize_kind, normalize_value
from hloscope.analyses.diff.report import Rename
from hloscope.ir.model import Module


def correspond(matcher: Matcher) -> dict[str, str]:
    """A's function name -> its counterpart in B, for the functions that have one."""
    a, b = matcher.a, matcher.b
    functions_b = b.function
    votes: dict[tuple[str, str], int] = Counter(
        [
            (name_a, name_b)
            for name_a, partner, counted in zip(a.function, matcher.ma, a.counted, strict=True)
            if partner >= 0 and counted and name_a and (name_b := functions_b[partner])
        ]
    )
    references_b = b.references
    for node, names_a in a.references.items():
        partner = matcher.ma[node]
        names_b = references_b.get(partner) if partner >= 0 else None
        if names_a and names_b:
            by_key = dict(names_b)
            for key, called_a in names_a:
                for x, y in zip(called_a, by_key.get(key, ()), strict=False):
                    votes[(x, y)] += 1
    pairs: dict[str, str] = {}
    taken: set[str] = set()
    entry_a, entry_b = a.module.entry, b.module.entry
    if entry_a is not None and entry_b is not None:
        pairs[entry_a.name] = entry_b.name
        taken.add(entry_b.name)
    for (x, y), _count in sorted(votes.items(), key=lambda kv: (-kv[1], kv[0])):
        if x not in pairs and y not in taken:
            pairs[x] = y
            taken.add(y)
    # Functions nothing voted for (no op of theirs is in the diff: XLA's reduction
    # computations, which the MLIR conversion inlines and leaves behind): by their
    # contents, equal ones in order; names last, when the name (without XLA's
    # suffixes) is one function's on each side.
    # XLA's own form's fused computations are their fusions' contents, not functions.
    left_a = _by_key(a.module, set(pairs) | a.fused_functions, _contents)
    left_b = _by_key(b.module, taken | b.fused_functions, _contents)
    for contents, names in left_a.items():
        for x, y in zip(names, left_b.get(contents, []), strict=False):
            pairs[x] = y
            taken.add(y)
    by_name_a = _by_key(
        a.module, set(pairs) | a.fused_functions, lambda _m, name: normalize_function_name(name)
    )
    by_name_b = _by_key(
        b.module, taken | b.fused_functions, lambda _m, name: normalize_function_name(name)
    )
    for family, names in by_name_a.items():
        same_name = by_name_b.get(family, [])
        if len(names) == 1 and len(same_name) == 1:
            pairs[names[0]] = same_name[0]
    return pairs


def _by_key(
    module: Module, paired: set[str], key: Callable[[Module, str], Hashable]
) -> dict[Hashable, list[str]]:
    found: dict[Hashable, list[str]] = defaultdict(list)
    for name, function in module.functions.items():
        if name not in paired and not function.is_declaration:
            found[key(module, name)].append(name)
    return found


def _contents(module: Module, name: str) -> Hashable:
    """A function's signature and ops in order (kind, result types, which earlier
    result or argument each operand is), names and locations left out."""
    function = module.functions[name]
    position: dict[int, int] = {}
    for index, argument in enumerate(function.arguments):
        position[argument.value] = -1 - index
    ops = []
    for index, op in enumerate(module.function_ops(function)):
        operands = tuple(position.get(value, 0) for value in op.operands)
        for result in op.results:
            position[result] = index
        ops.append(
            (normalize_kind(op.name), tuple(module.value_types[v] for v in op.results), operands)
        )
    signature = (
        tuple(argument.type for argument in function.arguments),
        tuple(result.type for result in function.results),
    )
    return signature, tuple(ops)


def same_function(module_a: Module, name_a: str, module_b: Module, name_b: str) -> bool:
    """Whether two functions compute the same, names aside: their contents and each
    op's attributes (the functions those name without XLA's suffixes). Two equal
    reduction computations that XLA numbered otherwise (`region_0.0`, `region_1.0`)
    are one."""
    function_a, function_b = module_a.functions.get(name_a), module_b.functions.get(name_b)
    if function_a is None or function_b is None:
        return False
    if _contents(module_a, name_a) != _contents(module_b, name_b):
        return False
    return [_normal_attributes(op.attributes) for op in module_a.function_ops(function_a)] == [
        _normal_attributes(op.attributes) for op in module_b.function_ops(function_b)
    ]


def _normal_attributes(attributes: Mapping[str, str]) -> dict[str, str]:
    return {key: normalize_value(value) for key, value in attributes.items()}


def renames(pairs: Mapping[str, str], a: Module) -> tuple[Rename, ...]:
    """The pairs whose names differ beyond XLA's `.N` suffixes, in A's order."""
    order = {name: i for i, name in enumerate(a.functions)}
    return tuple(
        Rename(x, y)
        for x, y in sorted(pairs.items(), key=lambda kv: order.get(kv[0], len(order)))
        if normalize_function_name(x) != normalize_function_name(y)
    )


def function_label(pairs: Mapping[str, str], name_a: str, name_b: str) -> str:
    """Where a changed op is: A's function, or `a → b` when the op moved to a function
    that is not the counterpart of its own (into a `compute_on` call, say)."""
    if pairs.get(name_a) == name_b or normalize_function_name(name_a) == normalize_function_name(
        name_b
    ):
        return name_a
    return f"{name_a} → {name_b}"

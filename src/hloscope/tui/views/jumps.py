"""Where a report tab's rows lead: factories of `Jump`s that find their ops in the
module shown when the row is chosen (the Placement tab and its "why" section)."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from hloscope.analyses.placement import collective_kind
from hloscope.ir.model import Module, Op
from hloscope.tui.widgets.report_list import Jump

JumpFactory = Callable[[], Jump | None]


def ops_jump(ops: Iterable[int], label: str) -> JumpFactory:
    found = tuple(ops)
    return lambda: Jump(found, label) if found else None


def scan_jump(
    module: Module, match: Callable[[Op], bool], label: str, function: str = ""
) -> JumpFactory:
    """The ops `match` accepts (in `function` only, when given), found when chosen."""

    def jump() -> Jump | None:
        scope: Iterable[Op] = module.ops
        if function:
            found = module.functions.get(function)
            if found is None:
                return None
            scope = module.function_ops(found)
        ops = tuple(op.id for op in scope if match(op))
        return Jump(ops, label) if ops else None

    return jump


def defines(module: Module, value: str) -> Callable[[Op], bool]:
    """Whether an op's first result is `value` (`%3`, as the model numbers values)."""
    return lambda op: bool(op.results) and module.value_name(op.results[0]) == value


def is_collective(kind: str) -> Callable[[Op], bool]:
    """Whether an op is a collective of `kind` (`all_reduce`)."""
    return lambda op: (collective_kind(op) or ("",))[0] == kind


def made_at(sources: frozenset[str]) -> Callable[[Op], bool]:
    """Whether an op was made at one of `sources` (`file.py:LINE`)."""
    return lambda op: op.location.source in sources


def result_jump(module: Module, function_name: str, label: str) -> JumpFactory:
    """A function's results: its header, then the op returning them."""

    def jump() -> Jump | None:
        function = module.functions.get(function_name)
        if function is None or function.is_declaration:
            return None
        returns = [op.id for op in module.function_ops(function) if op.parent is function.op][-1:]
        return Jump((function.op.id, *returns), label)

    return jump

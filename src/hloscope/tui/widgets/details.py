"""The selected op in full: types, attributes, compute type, sharding, where it came
from (with the source line when the file is readable), and its operands, users and
callees as links that enter follows."""

from __future__ import annotations

import dataclasses
import linecache
import os
from collections.abc import Mapping
from typing import ClassVar

from rich.text import Text
from textual import on
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from hloscope.analyses.placement import PlacedOp
from hloscope.analyses.structure import CALL_ATTRIBUTES, Structure, function_ops, ops_inside
from hloscope.errors import display_path
from hloscope.ir.model import Module, Op
from hloscope.tui.printed import PrintedModule
from hloscope.tui.widgets.lists import RowList
from hloscope.units import counted

MAX_USERS = 50
MAX_ATTRIBUTE_CHARS = 400
MAX_FRAMES = 4
# Attributes that say where data lives or how it is split: worth a colour.
PLACEMENT_KEYS = ("sharding", "memory_kind", "_xla_compute_type", "buffer_donor", "aliasing")


@dataclasses.dataclass(frozen=True)
class Row:
    """One row of the pane; `target` is the op a link leads to (None: not a link)."""

    text: Text
    target: int | None = None


def _heading(title: str) -> Row:
    return Row(Text(title, style="bold underline"))


def _source_line(file: str, line: int) -> str | None:
    """The text of `file`'s line `line`, when the file is here to read."""
    if line <= 0 or not os.path.isfile(file):
        return None
    text = linecache.getline(file, line)
    return text.rstrip() or None


def op_summary(module: Module, printed: PrintedModule, op: Op) -> Text:
    """`%3 = stablehlo.add` (`@f` for a function)."""
    if op.name == "func.func" and op.parent is None:
        name = op.attributes.get("sym_name", '""').strip('"')
        return Text.assemble(("func.func ", "bold"), (f"@{name}", "yellow"))
    text = Text()
    if op.results:
        names = [printed.value_name(module, value) for value in op.results[:3]]
        text.append(", ".join(names) + (", …" if len(op.results) > 3 else ""), style="cyan")
        text.append(" = ")
    text.append(op.name, style="bold")
    callee = op.attributes.get("callee")
    if callee is not None:
        text.append(f" {callee}", style="yellow")
    return text


# How an op got its compute type, in words (`PlacedOp.via`).
VIA = {
    "mark": "marked on the op",
    "region": "from the op around it",
    "call": "through a call",
    "thread": "its function's execution thread",
}


def detail_rows(
    module: Module,
    printed: PrintedModule,
    structure: Structure | None,
    op_id: int,
    placed: Mapping[int, PlacedOp] | None = None,
    argument_paths: Mapping[int, str] | None = None,
) -> list[Row]:
    """What the pane shows for `op_id`, row by row; `placed` holds the ops the
    placement analysis puts elsewhere than the device; `argument_paths` the user's
    pytree path of each of the entry function's arguments, by index (the `params`
    analysis's: `model.blocks[0].linear.bias` where JAX's location names the state
    JAX was handed, `model.states[0][0]`)."""
    if not 0 <= op_id < len(module.ops):
        return [Row(Text("No op on this line.", style="dim"))]
    op = module.ops[op_id]
    rows: list[Row] = []
    title = op_summary(module, printed, op)
    rows.append(Row(title))
    where = Text(f"op #{op.id}", style="dim")
    if op.function is not None:
        where.append(f" · in @{op.function}", style="dim")
    line = printed.op_line[op.id]
    if line >= 0:
        where.append(f" · line {line + 1}", style="dim")
        if not printed.own_line[op.id]:
            where.append(" (printed inside its parent's line)", style="dim")
    else:
        where.append(" · not in the printed text", style="dim")
    rows.append(Row(where))
    placement = placed.get(op.id) if placed is not None else None
    if placement is not None:
        how = VIA.get(placement.via, placement.via)
        rows.append(
            Row(Text(f"compute type: {placement.compute_type} ({how})", style="bold magenta"))
        )

    # Where it came from first: the source line is what users look for.
    rows.extend(_location_rows(op))
    function = None
    if op.name == "func.func" and op.parent is None:
        function = module.functions.get(op.attributes.get("sym_name", '""').strip('"'))
    if function is not None:
        rows.extend(_function_rows(module, structure, function.name, argument_paths))
    if op.results:
        rows.append(_heading("results"))
        for value in op.results:
            rows.append(
                Row(
                    Text.assemble(
                        (printed.value_name(module, value), "cyan"),
                        f" : {module.hlo_shape(value)}",
                    )
                )
            )
    if op.operands:
        rows.append(_heading("operands"))
        for value in op.operands:
            rows.append(_operand_row(module, printed, value, argument_paths))
    users = [user for value in op.results for user in module.users(value)]
    if users:
        rows.append(_heading(f"users ({len(users):,})"))
        for user_id in users[:MAX_USERS]:
            user = module.ops[user_id]
            text = Text("→ ") + op_summary(module, printed, user)
            if user.function != op.function and user.function is not None:
                text.append(f"  in @{user.function}", style="dim")
            rows.append(Row(text, user_id))
        if len(users) > MAX_USERS:
            rows.append(Row(Text(f"… {len(users) - MAX_USERS:,} more", style="dim")))
    called = callees(module, op)
    if called:
        rows.append(_heading("calls"))
        for name in called:
            callee = module.functions[name]
            count = callee.op.end - callee.op.id - 1
            rows.append(
                Row(
                    Text.assemble(
                        ("→ ", ""), (f"@{name}", "yellow"), (f"  {counted(count, 'op')}", "dim")
                    ),
                    callee.op.id,
                )
            )
    attributes = {k: v for k, v in op.attributes.items() if function is None or k != "sym_name"}
    if attributes:
        rows.append(_heading("attributes"))
        for key, printed_value in attributes.items():
            rows.append(Row(_attribute_text(key, printed_value)))
    return rows


def _attribute_text(key: str, value: str) -> Text:
    shown = value if len(value) <= MAX_ATTRIBUTE_CHARS else value[:MAX_ATTRIBUTE_CHARS] + " …"
    placement = any(word in key for word in PLACEMENT_KEYS) or "_xla_compute_type" in value
    return Text.assemble(
        (key, "bold magenta" if placement else "bold"),
        " = ",
        (shown, "magenta" if placement else ""),
    )


def _argument_name(
    module: Module, function: str, index: int, argument_paths: Mapping[int, str] | None
) -> str | None:
    """What to call an argument: the user's path for the entry function's (one name in
    every view, the Parameters tab's), else the name its location gives."""
    entry = module.entry
    if argument_paths is not None and entry is not None and entry.name == function:
        path = argument_paths.get(index)
        if path is not None:
            return path
    argument = module.functions[function].arguments[index]
    return argument.location.name


def _operand_row(
    module: Module,
    printed: PrintedModule,
    value: int,
    argument_paths: Mapping[int, str] | None = None,
) -> Row:
    if value < 0:
        return Row(Text("(a value defined outside this module)", style="dim"))
    text = Text.assemble(
        (printed.value_name(module, value), "cyan"), f" : {module.hlo_shape(value)}"
    )
    defining = module.defining_op(value)
    if defining is not None:
        text.append("  ← ")
        text.append_text(op_summary(module, printed, defining))
        return Row(text, defining.id)
    owner_id = module.value_owner[value]
    owner = module.ops[owner_id] if owner_id >= 0 else None
    if owner is None:
        return Row(text)
    if owner.name == "func.func" and owner.parent is None:
        name = owner.attributes.get("sym_name", '""').strip('"')
        function = module.functions.get(name)
        argument = (
            next((a for a in function.arguments if a.value == value), None) if function else None
        )
        if argument is not None:
            text.append(f"  ← argument {argument.index} of @{name}", style="dim")
            called = _argument_name(module, name, argument.index, argument_paths)
            if called:
                text.append(f" ({called})", style="dim")
            return Row(text, owner.id)
    text.append("  ← block argument of ", style="dim")
    text.append_text(op_summary(module, printed, owner))
    return Row(text, owner.id)


def callees(module: Module, op: Op) -> list[str]:
    names: list[str] = []
    for key in CALL_ATTRIBUTES:
        text = op.attributes.get(key)
        if text is None or "@" not in text:
            continue
        for name in op.references(key):
            if name in module.functions and name not in names:
                names.append(name)
    return names


def _function_rows(
    module: Module,
    structure: Structure | None,
    name: str,
    argument_paths: Mapping[int, str] | None = None,
) -> list[Row]:
    function = module.functions[name]
    total = function_ops(module, name)
    held = total - ops_inside(module, function.op)
    # In XLA's own form a fusion's, reducer's or loop's ops live in computations of
    # their own: counted here as in the Overview and `inspect`, and said.
    where = f" ({counted(held, 'op')} in computations its instructions hold)" if held else ""
    rows = [
        Row(Text(f"{function.visibility} function · {counted(total, 'op')}{where}", style="dim"))
    ]
    if function.arguments:
        rows.append(_heading(f"arguments ({len(function.arguments)})"))
        for argument in function.arguments:
            text = Text.assemble((f"%arg{argument.index}", "cyan"), f" : {argument.shape}")
            called = _argument_name(module, name, argument.index, argument_paths)
            if called:
                text.append(f"  {called}", style="green")
            for key, value in argument.attributes.items():
                text.append("\n    ")
                text.append_text(_attribute_text(key, value))
            rows.append(Row(text))
    if function.results:
        rows.append(_heading(f"results ({len(function.results)})"))
        for result in function.results:
            text = Text(f"#{result.index} : {result.shape}")
            for key, value in result.attributes.items():
                text.append("\n    ")
                text.append_text(_attribute_text(key, value))
            rows.append(Row(text))
    info = structure.function(name) if structure is not None else None
    if info is not None and info.called_by:
        rows.append(_heading("called by"))
        for caller in info.called_by:
            target = module.functions.get(caller)
            rows.append(
                Row(
                    Text.assemble(("← ", ""), (f"@{caller}", "yellow")),
                    target.op.id if target else None,
                )
            )
    return rows


def _location_rows(op: Op) -> list[Row]:
    location = op.location
    if location.is_unknown:
        return []
    rows = [_heading("location")]
    for name in location.names:
        rows.append(Row(Text(name, style="green")))
    for frame in location.frames[:MAX_FRAMES]:
        text = Text(f"{display_path(frame.file)}:{frame.line}:{frame.column}")
        if frame.function:
            text.append(f" in {frame.function}", style="dim")
        source = _source_line(frame.file, frame.line)
        if source is not None:
            text.append(f"\n  {frame.line:>5} │ ", style="dim")
            text.append(source.strip(), style="italic")
        rows.append(Row(text))
    if len(location.frames) > MAX_FRAMES:
        rows.append(Row(Text(f"… {len(location.frames) - MAX_FRAMES} more frames", style="dim")))
    return rows


class OpDetails(RowList):
    """The detail pane: rows of facts, with links as the selectable rows."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "select", "Follow the link", show=False),
    ]

    class Follow(Message):
        """A link to `op_id` was chosen."""

        def __init__(self, op_id: int) -> None:
            self.op_id = op_id
            super().__init__()

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.targets: list[int | None] = []
        """The op each row links to (None: not a link), by row."""

    def show_rows(self, rows: list[Row]) -> None:
        self.targets = [row.target for row in rows]
        self.set_options(Option(row.text, disabled=row.target is None) for row in rows)
        self.highlighted = next(
            (index for index, row in enumerate(rows) if row.target is not None), None
        )
        self.scroll_home(animate=False)

    @on(OptionList.OptionSelected)
    def _chosen(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        target = self.targets[event.option_index]
        if target is not None:
            self.post_message(self.Follow(target))

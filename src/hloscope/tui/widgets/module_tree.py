"""The module as a tree: functions, their ops, and ops with regions (`mhlo.fusion`,
`stablehlo.while`, ...) as groups, all expanded lazily.

A node's children are made when it is first expanded, and at most `PAGE` of them
at a time: a function with 100,000 ops shows a window of them between "earlier"
and "later" nodes, so no keystroke builds more than a page of nodes.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable, Sequence
from typing import ClassVar

from rich.style import Style
from rich.text import Text
from textual.binding import Binding, BindingType
from textual.widgets import Tree
from textual.widgets.tree import TreeNode, UnknownNodeID

from hloscope.analyses.structure import function_groups, function_ops, ops_inside
from hloscope.ir.model import Module, Op
from hloscope.tui.printed import PrintedModule
from hloscope.units import counted

PAGE = 200


@dataclasses.dataclass(frozen=True)
class OpNode:
    """A node showing an op (a function's node shows its `func.func`)."""

    op_id: int


@dataclasses.dataclass(frozen=True)
class RegionNode:
    """A group of one region's ops, for ops with several regions (`while`: cond, do)."""

    op_id: int
    region: int


@dataclasses.dataclass(frozen=True)
class PageNode:
    """`… N earlier` or `… N later`: selecting it shows the window starting at `start`."""

    start: int


@dataclasses.dataclass(frozen=True)
class CloneGroupNode:
    """Functions XLA cloned from one (`analyses.structure.function_groups`), folded
    under one node as the Overview groups them; its members are made with it."""

    name: str


NodeData = OpNode | RegionNode | PageNode | CloneGroupNode

CLONES_FOLDED = 3
"""Clones of one function shown under a node of their own from this many on (two sit
as well side by side)."""


class ModuleTree(Tree[NodeData]):
    """Functions, then ops; nested regions expand on demand."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "enter",
            "select_cursor",
            "Expand or collapse; on '… earlier' or '… later', show those ops",
            show=False,
        ),
        Binding("j", "cursor_down", "Down", show=False),
        Binding("k", "cursor_up", "Up", show=False),
        Binding("right,l", "expand", "Expand", show=False),
        Binding("left,h", "collapse", "Collapse, or go to the parent", show=False),
        Binding("g", "scroll_home", "First node", show=False),
        Binding("G", "scroll_end", "Last node", show=False),
        # Tree's own shift+space expands every loaded node; one level is enough here.
        Binding("shift+space", "toggle_node", "Expand or collapse", show=False),
    ]

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("module", id=id)
        self.module: Module | None = None
        self.printed: PrintedModule | None = None
        self.op_style: Callable[[int], Style | None] = lambda _op_id: None
        self.nodes: dict[int, TreeNode[NodeData]] = {}
        """Nodes made so far, by op id (what `reveal` can move to without paging)."""
        self._windows: dict[int, int] = {}
        """Where each filled node's window of children starts, by node id."""
        self.guide_depth = 2

    def show_module(
        self,
        module: Module,
        printed: PrintedModule,
        op_style: Callable[[int], Style | None],
    ) -> None:
        self.module = module
        self.printed = printed
        self.op_style = op_style
        self.nodes = {}
        self._windows = {}
        self.clear()
        self.root.set_label(Text(f"module @{module.name}" if module.name else "module"))
        self.root.data = None
        folded = {
            member: group
            for group in function_groups(module)
            if len(group.functions) >= CLONES_FOLDED
            for member in group.functions
        }
        group_nodes: dict[str, TreeNode[NodeData]] = {}
        for name, function in module.functions.items():
            parent = self.root
            group = folded.get(name)
            if group is not None:
                if group.name not in group_nodes:
                    label = Text(group.name, style="bold")
                    label.append(
                        f"  ×{len(group.functions)} clones · "
                        f"{counted(function_ops(module, function.name), 'op')} each",
                        style="dim",
                    )
                    group_nodes[group.name] = self.root.add(label, CloneGroupNode(group.name))
                parent = group_nodes[group.name]
            label = Text(name, style="bold")
            ops = function_ops(module, function.name)
            label.append(f"  {function.visibility} · {counted(ops, 'op')}", style="dim")
            inside = function.op.end - function.op.id - 1  # its return too
            node = parent.add(label, OpNode(function.op.id), allow_expand=inside > 0)
            self.nodes[function.op.id] = node
        self.root.expand()
        entry = module.entry
        if entry is not None and entry.op.id in self.nodes:
            self.fill(self.nodes[entry.op.id])
            self.nodes[entry.op.id].expand()

    # -- children -----------------------------------------------------------------

    def _region_ops(self, data: NodeData | None) -> Sequence[Op]:
        """The ops a node groups: a function's or an op's region ops (all regions,
        or one)."""
        if self.module is None or data is None or isinstance(data, PageNode | CloneGroupNode):
            return ()
        op = self.module.ops[data.op_id]
        regions = op.regions
        if isinstance(data, RegionNode):
            regions = regions[data.region : data.region + 1]
        elif len(regions) > 1:
            return ()
        out: list[Op] = []
        for region in regions:
            for block in region.blocks:
                out.extend(block.ops)
        return out

    def fill(self, node: TreeNode[NodeData], start: int = 0) -> None:
        """Make `node`'s children: its window of ops starting at `start`."""
        data = node.data
        if self.module is None or data is None or isinstance(data, PageNode | CloneGroupNode):
            return
        if self._windows.get(node.id) == start:
            return
        for old in list(node.children):
            if isinstance(old.data, OpNode):
                self.nodes.pop(old.data.op_id, None)
        node.remove_children()
        self._windows[node.id] = start
        op = self.module.ops[data.op_id]
        if isinstance(data, OpNode) and len(op.regions) > 1:
            for index, region in enumerate(op.regions):
                count = sum(len(block.ops) for block in region.blocks)
                label = Text(f"region {index}", style="italic")
                label.append(f"  {counted(count, 'op')}", style="dim")
                node.add(label, RegionNode(op.id, index), allow_expand=count > 0)
            return
        children = self._region_ops(data)
        if start > 0:
            earlier = max(0, start - PAGE)
            node.add_leaf(Text(f"… {start:,} earlier", style="dim italic"), PageNode(earlier))
        for child in children[start : start + PAGE]:
            added = node.add(self.label(child), OpNode(child.id), allow_expand=bool(child.regions))
            self.nodes[child.id] = added
        rest = len(children) - start - PAGE
        if rest > 0:
            node.add_leaf(Text(f"… {rest:,} later", style="dim italic"), PageNode(start + PAGE))

    def label(self, op: Op) -> Text:
        assert self.module is not None and self.printed is not None
        text = Text()
        if op.results:
            names = [self.printed.value_name(self.module, value) for value in op.results[:3]]
            text.append(", ".join(names) + (", …" if len(op.results) > 3 else ""), style="cyan")
            text.append(" = ")
        text.append(op.name, style=self.op_style(op.id) or "")
        callee = op.attributes.get("callee")
        if callee is not None:
            text.append(f" {callee}", style="yellow")
        kind = op.attributes.get("fusion_kind")
        if kind is not None:
            text.append(f" {kind.rsplit(' ', 1)[-1].rstrip('>')}", style="magenta")
        if op.regions:
            text.append(f"  {counted(ops_inside(self.module, op), 'op')}", style="dim")
        if "sym_name" in op.attributes and op.name != "func.func":
            text.append(f" @{op.symbol_name}", style="yellow")
        return text

    def relabel(self) -> None:
        """Redraw the op nodes made so far (their colours changed: filters arrived)."""
        if self.module is None:
            return
        for op_id, node in self.nodes.items():
            op = self.module.ops[op_id]
            if op.parent is not None:
                node.set_label(self.label(op))

    def action_expand(self) -> None:
        node = self.cursor_node
        if node is not None and node.allow_expand:
            node.expand()

    def action_collapse(self) -> None:
        node = self.cursor_node
        if node is None:
            return
        if node.is_expanded:
            node.collapse()
        elif node.parent is not None and node.parent is not self.root:
            self.move_cursor(node.parent)

    def on_tree_node_expanded(self, event: Tree.NodeExpanded[NodeData]) -> None:
        if event.node.id not in self._windows:
            self.fill(event.node)

    def page(self, node: TreeNode[NodeData]) -> None:
        """Show the window a `PageNode` points to."""
        data = node.data
        parent = node.parent
        if isinstance(data, PageNode) and parent is not None:
            self.fill(parent, data.start)
            first = next(
                (child for child in parent.children if isinstance(child.data, OpNode)), None
            )
            if first is not None:
                self._move_to(first)

    # -- following the selection --------------------------------------------------

    def reveal(self, op_id: int, *, centre: bool = False) -> None:
        """Move the cursor to `op_id`'s node, expanding its ancestors and moving their
        windows as needed; with `centre`, scroll it to the middle of the pane (a jump,
        as the IR pane centres its line), else just into view."""
        if self.module is None:
            return
        node = self.nodes.get(op_id)
        if node is None:
            chain: list[Op] = []
            op: Op | None = self.module.ops[op_id]
            while op is not None:
                chain.append(op)
                op = op.parent
            chain.reverse()
            parent_node = self.nodes.get(chain[0].id)
            if parent_node is None:
                return
            for parent, child in itertools.pairwise(chain):
                group = parent_node
                if len(parent.regions) > 1:
                    region = next(
                        (
                            i
                            for i, r in enumerate(parent.regions)
                            if any(child in block.ops for block in r.blocks)
                        ),
                        0,
                    )
                    self.fill(parent_node)
                    group = next(
                        (
                            n
                            for n in parent_node.children
                            if isinstance(n.data, RegionNode) and n.data.region == region
                        ),
                        parent_node,
                    )
                    parent_node.expand()
                siblings = self._region_ops(group.data)
                index = _index_of(siblings, child)
                self.fill(group, (index // PAGE) * PAGE)
                group.expand()
                found = self.nodes.get(child.id)
                if found is None:
                    return
                parent_node = found
            node = parent_node
        self._move_to(node, centre=centre)

    def _move_to(self, node: TreeNode[NodeData], *, centre: bool = False) -> None:
        """Put the cursor on `node` once the tree has laid out its (new) lines, its
        ancestors expanded (a clone's group is)."""
        ancestor = node.parent
        while ancestor is not None and ancestor is not self.root:
            if not ancestor.is_expanded:
                ancestor.expand()
            ancestor = ancestor.parent

        def move() -> None:
            try:
                self.get_node_by_id(node.id)
            except UnknownNodeID:
                return  # replaced meanwhile (another window was filled)
            self.move_cursor(node)
            if centre and node.line >= 0:
                middle = self.scrollable_content_region.height // 2
                self.scroll_to(y=max(0, node.line - middle), animate=False)
            else:
                self.scroll_to_node(node, animate=False)

        self.call_after_refresh(move)


def _index_of(siblings: Sequence[Op], op: Op) -> int:
    """Position of `op` among `siblings` (pre-order ids are increasing, so bisect)."""
    low, high = 0, len(siblings)
    while low < high:
        middle = (low + high) // 2
        if siblings[middle].id < op.id:
            low = middle + 1
        else:
            high = middle
    return low

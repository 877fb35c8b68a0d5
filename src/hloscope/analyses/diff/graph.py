"""A module as the diff sees it: a dataflow graph of nodes (ops, with calls inlined
and fusions transparent: `mhlo.fusion` regions, and in XLA's own form the computation
an `hlo.fusion` calls) and values, each node with a fingerprint of what it is and a
Merkle-style fingerprint of its subgraph, and its attributes in the normal form in
which printers agree (implied comparison types, the default precision and `xla_shape`
left out, per-compile numbering dropped; unit-dimension reshapes transparent).

In XLA's own form a computation an instruction holds (a reducer, a loop's condition and
body, a conditional's branches: `structure.held_computations`) is walked as a region of
that instruction, as the converted form holds it, not as a function of its own."""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

from hloscope.analyses.diff.signatures import (
    CALL_OP,
    CALLS,
    XLA_CALL,
    XLA_FUSION,
    Signatures,
    operand_key,
)
from hloscope.ir.model import (
    Block,
    Function,
    Module,
    Op,
)

FUSION_KIND = "stablehlo.fusion"
# A region's terminator, uncounted; XLA's own form's held computation, which returns
# its ROOT, ends in one too, so that its regions read as the converted form's.
RETURN_KIND = "stablehlo.return"
_RETURN_LOCAL = hash((RETURN_KIND, (), (), 0))
# XLA's own form's instructions that are no nodes: a parameter is its argument, a tuple
# its elements, a get-tuple-element the element it names (the converted form has none:
# block arguments, several operands and results).
_XLA_PLUMBING = frozenset({"hlo.parameter", "hlo.tuple", "hlo.get-tuple-element"})

# A value as an op sees it: a graph value, or in XLA's own form a tuple's elements.
Element = int | tuple["Element", ...]


def _flat(elements: Sequence[Element]) -> list[int]:
    """The graph values of `elements`, tuples' elements in order."""
    out: list[int] = []
    for element in elements:
        if isinstance(element, int):
            out.append(element)
        else:
            out.extend(_flat(element))
    return out


# Ops whose operands can be swapped without changing the result (printers do swap them).
COMMUTATIVE_KINDS = frozenset(
    "stablehlo." + name for name in ("add", "multiply", "maximum", "minimum", "and", "or", "xor")
)


class Graph:
    """One module as a dataflow graph of nodes (ops in a call context) and values.

    Arrays indexed by node or value id, for speed. A value is a result of a node, or
    a leaf: an entry parameter, a region argument, a parameter of a function that is
    not inlined.

    Built in one walk, calls inlined, fingerprints included: a node's subgraph
    fingerprint (`sub`) is worked out when the node and everything inside it have been
    walked (post-order), from the fingerprints of its operands (`vhash`: the producer's
    fingerprint and the result's index, or a leaf's token) and of its regions' nodes.
    The arrays that are mostly one value (`counted`, `is_container`, `unit_reshape`,
    `children`, `block_args`, and the leaves' `g_token`, `g_owner`, `g_slot`) are
    filled in at the end from what the walk noted.
    """

    def __init__(
        self,
        module: Module,
        parameter_tokens: Sequence[int],
        inline: bool,
        signatures: Signatures | None = None,
    ) -> None:
        self.module = module
        self._signatures = signatures if signatures is not None else Signatures()
        self.inline = inline
        # nodes
        self.op: list[int] = []
        self.ctx: list[int] = []
        self.kind: list[str] = []
        self.local: list[int] = []
        self.attrs: list[tuple[tuple[str, str], ...]] = []
        self.types: list[tuple[str, ...]] = []
        self.operands: list[tuple[int, ...]] = []
        self.results: list[tuple[int, ...]] = []
        self.container: list[int] = []
        self.parent: list[int] = []
        self.children: list[list[list[int]] | None] = []
        self.block_args: list[list[list[int]] | None] = []
        self.counted: list[bool] = []
        self.is_container: list[bool] = []
        self.unit_reshape: list[bool] = []
        self.function: list[str] = []
        # The functions a node names (a call's callee, a custom call's called
        # computations), by attribute: kept out of `attrs` so that a renamed function
        # is no change; compared through the functions' correspondence instead.
        self.references: dict[int, tuple[tuple[str, tuple[str, ...]], ...]] = {}
        # fingerprints: of each node's subgraph, and the height of that subgraph
        self.sub: list[int] = []
        self.height: list[int] = []
        # values
        self.g_node: list[int] = []
        self.g_index: list[int] = []
        self.g_token: list[int] = []
        self.g_type: list[str] = []
        # For a region argument: the op owning the region (else -1), and its
        # (region, argument) index.
        self.g_owner: list[int] = []
        self.g_slot: list[tuple[int, int]] = []
        # Each value's fingerprint as its users see it, and its producer's height.
        self.vhash: list[int] = []
        self.vheight: list[int] = []
        # contexts: call ops (ids) a node was inlined through
        self.contexts: list[tuple[int, ...]] = [()]
        # roots: (function name, outputs)
        self.roots: list[tuple[str, list[int]]] = []
        self.parameters: list[int] = []
        self._root_queue: list[Function] = []
        self._rooted: set[str] = set()
        self.fused_functions: set[str] = set()
        """XLA's own form's fused computations walked in place of their fusions: no
        functions of their own to the diff (the converted form's are regions)."""
        self._held_in: str | None = None
        """While XLA's own form's fused or held computation is walked: the function of
        the op that holds it, where its ops are."""
        self._value_types = module.value_types
        self._functions = module.functions
        self._tuples: dict[int, tuple[Element, ...]] = {}
        self._element_types: dict[str, tuple[str, ...] | None] = {}
        """XLA's own form: a tuple value's elements (`_pass_tuple`)."""
        # What the walk notes for the arrays filled in at the end.
        self._uncounted: list[int] = []
        self.container_nodes: list[int] = []
        """The calls and fusions (nodes whose contents are nodes of their own), in order."""
        self._unit_reshapes: list[int] = []
        self._regions: dict[int, tuple[list[list[int]], list[list[int]]]] = {}
        self._leaves: dict[int, tuple[int, int, tuple[int, int]]] = {}
        self._indexes: dict[int, int] = {}

        entry = module.entry
        if entry is not None and not entry.is_declaration:
            args = []
            for index, argument in enumerate(entry.arguments):
                token = parameter_tokens[index] if index < len(parameter_tokens) else 0
                value = self._leaf(argument.type, token or hash(("param?", index, argument.type)))
                args.append(value)
            self.parameters = args
            self._root(entry, args)
        for function in module.functions.values():
            if function.visibility == "public" and function is not entry:
                self._queue_root(function.name)
        while self._root_queue:
            function = self._root_queue.pop(0)
            args = [
                self._leaf(a.type, hash(("fparam", i, a.type)))
                for i, a in enumerate(function.arguments)
            ]
            self._root(function, args)
        self._fill()

    def _fill(self) -> None:
        nodes, values = len(self.op), len(self.g_node)
        self.counted = [True] * nodes
        for node in self._uncounted:
            self.counted[node] = False
        self.is_container = [False] * nodes
        for node in self.container_nodes:
            self.is_container[node] = True
        self.unit_reshape = [False] * nodes
        for node in self._unit_reshapes:
            self.unit_reshape[node] = True
        self.children = [None] * nodes
        self.block_args = [None] * nodes
        for node, (regions, arguments) in self._regions.items():
            self.children[node] = regions
            self.block_args[node] = arguments
        self.g_index = [0] * values
        for value, index in self._indexes.items():
            self.g_index[value] = index
        self.g_token = [0] * values
        self.g_owner = [-1] * values
        self.g_slot = [(0, 0)] * values
        for value, (token, owner, slot) in self._leaves.items():
            self.g_token[value] = token
            self.g_owner[value] = owner
            self.g_slot[value] = slot

    # -- building ----------------------------------------------------------------

    def _leaf(
        self, mlir_type: str, token: int, owner: int = -1, slot: tuple[int, int] = (0, 0)
    ) -> int:
        value = len(self.g_node)
        self.g_node.append(-1)
        self.g_type.append(mlir_type)
        self.vhash.append(token)
        self.vheight.append(0)
        self._leaves[value] = (token, owner, slot)
        return value

    def _queue_root(self, name: str) -> None:
        function = self._functions.get(name)
        if function is None or function.is_declaration or name in self._rooted:
            return
        self._rooted.add(name)
        self._root_queue.append(function)

    def _root(self, function: Function, args: list[int]) -> None:
        self._rooted.add(function.name)
        outputs = self._walk_function(function, args, 0, -1, -1, frozenset({function.name}), [])
        self.roots.append((function.name, outputs))

    def _walk_function(
        self,
        function: Function,
        args: Sequence[Element],
        ctx: int,
        container: int,
        parent: int,
        active: frozenset[str],
        children: list[int],
    ) -> list[int]:
        env: dict[int, int] = {}
        region = function.op.regions[0]
        for block_argument, value in zip(region.blocks[0].arguments, args, strict=False):
            if isinstance(value, int):
                env[block_argument] = value
        for argument in function.arguments:
            # HLO's own form: parameters are ops whose results are the arguments.
            if argument.value >= 0 and argument.value not in env and argument.index < len(args):
                value = args[argument.index]
                if isinstance(value, int):
                    env[argument.value] = value
                else:
                    self._tuples[argument.value] = value
        outputs: list[int] = []
        for block in region.blocks:
            returned = self._walk_block(block, env, ctx, container, parent, active, children, True)
            if returned is not None:
                outputs = returned
        if not outputs and region.blocks and region.blocks[-1].ops:
            # XLA's own form: no return op; a computation returns its ROOT, its last op
            # (a tuple's elements, as the converted form returns several values).
            root = region.blocks[-1].ops[-1]
            if not root.is_terminator:
                outputs = _flat([self._element(env, value) for value in root.results])
        return outputs

    def _walk_block(
        self,
        block: Block,
        env: dict[int, int],
        ctx: int,
        container: int,
        parent: int,
        active: frozenset[str],
        children: list[int],
        returns_out: bool,
    ) -> list[int] | None:
        """Walk a block's ops. `returns_out`: the block's terminator hands values out
        of a function or a transparent region (no node); otherwise it is a node.

        The common op (not a call, a fusion or a terminator) is added here, inline,
        its fingerprint too when it has no regions: this loop runs once per op of
        both modules. What an op is (its kind, normal attributes, own fingerprint)
        comes from `Signatures`, worked out once per distinct op."""
        returned: list[int] | None = None
        value_types = self._value_types
        type_of = value_types.__getitem__
        signatures = self._signatures
        known = signatures.known.get
        name_info = signatures.names
        get = env.get
        # Inside XLA's own form's fused or held computation: its holder's function.
        held_in = self._held_in
        tuples = self._tuples
        tuple_types_of = self._tuple_types
        # The arrays, bound once.
        op_ids, contexts, kinds, attrs_of, types_of = (
            self.op,
            self.ctx,
            self.kind,
            self.attrs,
            self.types,
        )
        locals_, operands_of, results_of, containers, parents = (
            self.local,
            self.operands,
            self.results,
            self.container,
            self.parent,
        )
        functions, references_of, subs, heights = (
            self.function,
            self.references,
            self.sub,
            self.height,
        )
        g_node, g_type, vhash, vheight = self.g_node, self.g_type, self.vhash, self.vheight
        hash_of, height_of = vhash.__getitem__, vheight.__getitem__
        # In program order (a scheduled module's schedule, in either form), so the
        # rows follow the program as the other reports list it.
        for op in self.module.program_order(block.ops):
            name = op.name
            info = name_info.get(name)
            if info is None:
                info = signatures.name_info(op)
            if info[0]:  # a terminator
                outs = [self._resolve(env, v) for v in op.operands]
                if not returns_out:
                    node = self._node(op, tuple(outs), ctx, container, parent, counted=False)
                    children.append(node)
                    self._seal(node, True)
                returned = outs
                continue
            model_results = op.results
            tuple_types: tuple[str, ...] | None = None
            if info[3]:  # XLA's own form
                if name in _XLA_PLUMBING:
                    if name != "hlo.parameter":
                        if self._pass_tuple(op, env):
                            continue
                    elif model_results and (model_results[0] in env or model_results[0] in tuples):
                        continue  # the parameter op stands for the argument
                if len(model_results) == 1:
                    # A tuple result is its elements, as converted.
                    tuple_types = tuple_types_of(model_results[0])
            tupled_result = tuple_types is not None
            model_operands = op.operands
            # Each operand's value (most ops have one or two operands).
            operands: tuple[int, ...] | None = None
            arity = len(model_operands)
            # XLA's own form: an operand that is a tuple is its elements.
            tupled = bool(tuples) and not tuples.keys().isdisjoint(model_operands)
            if tupled:
                operands = tuple(_flat([self._element(env, v) for v in model_operands]))
            elif arity == 2:
                first_operand, second_operand = get(model_operands[0]), get(model_operands[1])
                if first_operand is not None and second_operand is not None:
                    operands = (first_operand, second_operand)
            elif arity == 1:
                first_operand = get(model_operands[0])
                if first_operand is not None:
                    operands = (first_operand,)
            else:
                found_operands = tuple(map(get, model_operands))
                if None not in found_operands:
                    operands = cast("tuple[int, ...]", found_operands)
            if operands is None:
                # Defined later or elsewhere: leaves.
                operands = tuple(
                    [
                        found if (found := get(v)) is not None else self._resolve(env, v)
                        for v in model_operands
                    ]
                )
            if info[1]:  # a call or a transparent op: perhaps a container
                if name in CALLS or name == XLA_FUSION:
                    contents = self._contents(op)
                    if contents is not None and self.inline and contents.name not in active:
                        node = self._node(op, operands, ctx, container, parent, is_container=True)
                        children.append(node)
                        if name != XLA_FUSION:
                            # A call's ops are its callee's, in a context of their own.
                            inner_ctx, contents_in = len(self.contexts), None
                            self.contexts.append((*self.contexts[ctx], op.id))
                        else:
                            # A fusion's are the ops of the function it is in.
                            inner_ctx, contents_in = ctx, functions[node]
                            self.fused_functions.add(contents.name)
                        args: Sequence[Element] = operands
                        if tupled:
                            args = [self._element(env, v) for v in model_operands]
                        outs = self._walk_held(
                            contents, args, inner_ctx, node, parent, active, children, contents_in
                        )
                        if tupled_result:
                            tuples[model_results[0]] = tuple(outs)
                        else:
                            for value, out in zip(model_results, outs, strict=False):
                                env[value] = out
                        results_of[node] = tuple(outs)
                        self._seal(node, False)
                        continue
                    if contents is not None:
                        self._queue_root(contents.name)
                elif op.regions and op.regions[0].blocks:
                    node = self._node(op, operands, ctx, container, parent, is_container=True)
                    children.append(node)
                    inner = op.regions[0].blocks[0]
                    for argument, value in zip(inner.arguments, operands, strict=False):
                        env[argument] = value
                    outs = (
                        self._walk_block(inner, env, ctx, node, parent, active, children, True)
                        or []
                    )
                    for value, out in zip(model_results, outs, strict=False):
                        env[value] = out
                    results_of[node] = tuple(outs)
                    self._seal(node, False)
                    continue
            # An op of its own: a node, and a value for each result.
            count = len(model_results)
            if tuple_types is not None:
                types: tuple[str, ...] = tuple_types
                count = len(types)
            elif count == 1:
                types = (value_types[model_results[0]],)
            else:
                types = tuple(map(type_of, model_results))
            regions = op.regions
            attributes = op.attributes
            key: tuple[object, ...] = (
                name,
                types,
                tuple(attributes.items()) if attributes else (),
                len(regions),
            )
            if info[2]:  # what it is depends on its first operand's type (`operand_key`)
                if arity:
                    first_value = model_operands[0]
                    key += (arity, value_types[first_value] if first_value >= 0 else None)
                else:
                    key += (0, None)
            signature = known(key)
            if signature is None:
                signature = signatures.of(key, op, types, self.module)
            kind, _attrs, _types, unit, local, references, named, held = signature
            node = len(op_ids)
            op_ids.append(op.id)
            contexts.append(ctx)
            kinds.append(kind)
            attrs_of.append(signature[1])
            types_of.append(signature[2])
            locals_.append(local)
            operands_of.append(operands)
            containers.append(container)
            parents.append(parent)
            functions.append(held_in if held_in is not None else (op.function or ""))
            if references:
                references_of[node] = references
            children.append(node)
            if regions or held:
                # Sealed once its regions are walked.
                fingerprint = height = 0
            else:
                arity = len(operands)
                if arity == 2:
                    first_operand, second_operand = operands
                    first_hash, second_hash = vhash[first_operand], vhash[second_operand]
                    if first_hash > second_hash and kind in COMMUTATIVE_KINDS:
                        hashes: tuple[int, ...] = (second_hash, first_hash)
                    else:
                        hashes = (first_hash, second_hash)
                    first_height, second_height = vheight[first_operand], vheight[second_operand]
                    height = (first_height if first_height > second_height else second_height) + 1
                elif arity == 1:
                    first_operand = operands[0]
                    hashes = (vhash[first_operand],)
                    height = vheight[first_operand] + 1
                elif arity == 0:
                    hashes = ()
                    height = 1
                else:
                    hashes = tuple(map(hash_of, operands))
                    height = max(map(height_of, operands), default=0) + 1
                    if kind in COMMUTATIVE_KINDS:
                        hashes = tuple(sorted(hashes))
                fingerprint = hash((local, hashes, ()))
            subs.append(fingerprint)
            heights.append(height)
            if unit:
                # Only unit dimensions change: users see the operand itself.
                self._unit_reshapes.append(node)
                results: tuple[int, ...] = operands
                for value, out in zip(model_results, results, strict=True):
                    env[value] = out
            else:
                first = len(g_node)
                if count == 1 and not tupled_result:
                    g_node.append(node)
                    g_type.append(types[0])
                    vhash.append(fingerprint)
                    vheight.append(height)
                    results = (first,)
                    env[model_results[0]] = first
                else:
                    g_node.extend([node] * count)
                    g_type.extend(types)
                    vhash.extend([fingerprint ^ i for i in range(count)])
                    vheight.extend([height] * count)
                    results = tuple(range(first, first + count))
                    for i in range(1, count):
                        self._indexes[first + i] = i
                    if tupled_result:
                        tuples[model_results[0]] = results
                    else:
                        for value, out in zip(model_results, results, strict=True):
                            env[value] = out
            results_of.append(results)
            if regions or held:
                self._walk_regions(op, held, node, env, ctx, container, active)
                self._seal(node, not unit)
            if named:
                for callee_name in named:
                    self._queue_root(callee_name)
        return returned

    def _walk_regions(
        self,
        op: Op,
        held: tuple[str, ...],
        node: int,
        env: dict[int, int],
        ctx: int,
        container: int,
        active: frozenset[str],
    ) -> None:
        """The regions of an op that is a node (a reduction's body, a loop's): each
        region's arguments become leaves, its ops the node's children. In XLA's own form
        the computations it holds (`held`) are its regions: their parameters leaves,
        their ops its children, and a return of their ROOT last, as a region ends."""
        value_types = self._value_types
        regions: list[list[int]] = []
        region_args: list[list[int]] = []
        local = self.local[node]

        def leaf(r: int, a: int, mlir_type: str) -> int:
            token = hash(("blockarg", local, r, a, mlir_type))
            return self._leaf(mlir_type, token, node, (r, a))

        for r, region in enumerate(op.regions):
            inner_children: list[int] = []
            arguments: list[int] = []
            for block in region.blocks:
                for value in block.arguments:
                    env[value] = leaf(r, len(arguments), value_types[value])
                    arguments.append(env[value])
                self._walk_block(block, env, ctx, container, node, active, inner_children, False)
            regions.append(inner_children)
            region_args.append(arguments)
        for r, name in enumerate(held, len(regions)):
            function = self._functions[name]
            inner_children = []
            arguments = []
            # Each parameter a leaf; a tuple's elements each one, as converted.
            elements: list[Element] = []
            for argument in function.arguments:
                element_types = self._tuple_types(argument.value) if argument.value >= 0 else None
                if element_types is not None:
                    parts = [leaf(r, len(arguments) + i, t) for i, t in enumerate(element_types)]
                    arguments.extend(parts)
                    elements.append(tuple(parts))
                else:
                    arguments.append(leaf(r, len(arguments), argument.type))
                    elements.append(arguments[-1])
            outs = (
                self._walk_held(
                    function,
                    elements,
                    ctx,
                    container,
                    node,
                    active,
                    inner_children,
                    self.function[node],
                )
                if name not in active
                else []
            )
            inner_children.append(self._region_return(function, outs, ctx, container, node))
            regions.append(inner_children)
            region_args.append(arguments)
        self._regions[node] = (regions, region_args)

    def _walk_held(
        self,
        function: Function,
        args: Sequence[Element],
        ctx: int,
        container: int,
        parent: int,
        active: frozenset[str],
        children: list[int],
        held_in: str | None,
    ) -> list[int]:
        """The ops of a function walked in place of the op whose contents they are (a
        call's callee, a fusion's fused computation, a held computation), as ops of
        `held_in` (None: of their own function); its outputs."""
        outer = self._held_in
        self._held_in = held_in
        try:
            return self._walk_function(
                function, args, ctx, container, parent, active | {function.name}, children
            )
        finally:
            self._held_in = outer

    def _seal(self, node: int, owns_results: bool) -> None:
        """A node's subgraph fingerprint and height, once it and everything inside it
        have been walked; its own results' fingerprints with them."""
        sub, height, vhash, vheight = self.sub, self.height, self.vhash, self.vheight
        operand_hashes = []
        tallest = 0
        for value in self.operands[node]:
            operand_hashes.append(vhash[value])
            if vheight[value] > tallest:
                tallest = vheight[value]
        found = self._regions.get(node)
        region_hashes: tuple[tuple[int, ...], ...] = ()
        if found is not None:
            regions = found[0]
            region_hashes = tuple(tuple(sorted(sub[c] for c in region)) for region in regions)
            for region in regions:
                for child in region:
                    if height[child] > tallest:
                        tallest = height[child]
        if self.kind[node] in COMMUTATIVE_KINDS:
            operand_hashes.sort()
        fingerprint = sub[node] = hash((self.local[node], tuple(operand_hashes), region_hashes))
        height[node] = tallest + 1
        if not owns_results:
            return  # its results are other nodes' values (a call's, a fusion's)
        for index, value in enumerate(self.results[node]):
            vhash[value] = fingerprint ^ index
            vheight[value] = tallest + 1

    def _contents(self, op: Op) -> Function | None:
        """The function whose ops are a container's: a call's callee, the computation
        XLA's own form's fusion calls; None when it names none of the module's."""
        if op.name == CALL_OP:
            names = op.references("callee")
        elif op.name == XLA_CALL:
            names = op.references("to_apply")
        else:
            names = op.hlo_calls
        function = self._functions.get(names[0]) if len(names) == 1 else None
        if function is None or function.is_declaration:
            return None
        return function

    def _pass_tuple(self, op: Op, env: dict[int, int]) -> bool:
        """XLA's own form's `tuple` and `get-tuple-element` read as the converted form
        has them, as no ops: a tuple is its elements, an element the value it names.
        False for an element of a tuple not known here (a tuple-typed leaf's): then it
        is an op of its own."""
        result = op.results[0] if op.results else -1
        if op.name == "hlo.tuple":
            self._tuples[result] = tuple(self._element(env, v) for v in op.operands)
            return True
        elements = self._tuples.get(op.operands[0]) if op.operands else None
        index = op.tuple_index
        if elements is None or index is None or not 0 <= index < len(elements):
            return False
        element = elements[index]
        if isinstance(element, int):
            env[result] = element
        else:
            self._tuples[result] = element
        return True

    def _tuple_types(self, value: int) -> tuple[str, ...] | None:
        """`Module.tuple_types`, asked once per distinct type."""
        mlir_type = self._value_types[value]
        if mlir_type not in self._element_types:
            self._element_types[mlir_type] = self.module.tuple_types(value)
        return self._element_types[mlir_type]

    def _element(self, env: dict[int, int], value: int) -> Element:
        """An operand as the op sees it: its value, or a tuple's elements."""
        found = env.get(value)
        if found is not None:
            return found
        elements = self._tuples.get(value)
        return elements if elements is not None else self._resolve(env, value)

    def _resolve(self, env: dict[int, int], value: int) -> int:
        found = env.get(value)
        if found is not None:
            return found
        mlir_type = self._value_types[value] if value >= 0 else "?"
        leaf = self._leaf(mlir_type, hash(("unknown", mlir_type)))
        if value >= 0:
            env[value] = leaf
        return leaf

    def _node(
        self,
        op: Op,
        operands: tuple[int, ...],
        ctx: int,
        container: int,
        parent: int,
        counted: bool = True,
        is_container: bool = False,
    ) -> int:
        """A node for a call, a fusion or a region's terminator (other ops are added
        by `_walk_block` itself); its fingerprint is worked out by `_seal`."""
        node = len(self.op)
        value_types = self._value_types
        types = tuple(value_types[v] for v in op.results)
        attributes = op.attributes
        key: tuple[object, ...] = (
            op.name,
            types,
            tuple(attributes.items()) if attributes else (),
            len(op.regions),
        )
        info = self._signatures.names.get(op.name) or self._signatures.name_info(op)
        if info[2]:
            key += operand_key(op.operands, value_types)
        kind, attrs, types, unit_reshape, local, references, _named, _held = self._signatures.of(
            key, op, types, self.module
        )
        held_in = self._held_in
        function = held_in if held_in is not None else (op.function or "")
        self._add_node(op.id, kind, attrs, types, local, operands, ctx, container, parent, function)
        if not counted:
            self._uncounted.append(node)
        if is_container:
            self.container_nodes.append(node)
        if unit_reshape:
            self._unit_reshapes.append(node)
        if references:
            self.references[node] = references
        return node

    def _region_return(
        self, function: Function, outs: Sequence[int], ctx: int, container: int, parent: int
    ) -> int:
        """The return that ends XLA's own form's held computation walked as a region
        (its ROOT's values), uncounted as a region's terminator is; its op the
        computation's own."""
        node = len(self.op)
        self._add_node(
            function.op.id,
            RETURN_KIND,
            (),
            (),
            _RETURN_LOCAL,
            tuple(outs),
            ctx,
            container,
            parent,
            self.function[parent],
        )
        self._uncounted.append(node)
        self._seal(node, True)
        return node

    def _add_node(
        self,
        op_id: int,
        kind: str,
        attrs: tuple[tuple[str, str], ...],
        types: tuple[str, ...],
        local: int,
        operands: tuple[int, ...],
        ctx: int,
        container: int,
        parent: int,
        function: str,
    ) -> None:
        self.op.append(op_id)
        self.ctx.append(ctx)
        self.kind.append(kind)
        self.attrs.append(attrs)
        self.types.append(types)
        self.local.append(local)
        self.operands.append(operands)
        self.results.append(())
        self.container.append(container)
        self.parent.append(parent)
        self.function.append(function)
        self.sub.append(0)
        self.height.append(0)

    def value_hash(self, value: int) -> int:
        return self.vhash[value]

    def users(self) -> list[list[int]]:
        users: list[list[int]] = [[] for _ in self.g_node]
        for node, operands in enumerate(self.operands):
            if self.is_container[node]:
                continue
            for value in operands:
                bucket = users[value]
                if not bucket or bucket[-1] != node:
                    bucket.append(node)
        return users

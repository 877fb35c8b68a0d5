"""Which op of A is which op of B: the matching passes over the two graphs.

Identical subgraphs, tallest first; top-down from matched users to their operands,
starting from the paired results; bottom-up from matched operands to users of the same
kind, by similarity; ops of another kind reading the same operands (a kind change);
what is left by equal fingerprints within matched regions; calls and fusions last, by
where most of their contents went. Linear in the number of ops but for bounded
candidate lists and sorting."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from itertools import compress

from hloscope.analyses.diff.graph import COMMUTATIVE_KINDS, Graph

CONVERT_KIND = "stablehlo.convert"
WHILE_KIND = "stablehlo.while"
# Ops whose operands are paired otherwise than side by side (`operand_pairs`).
_PERMUTED_OR_SWAPPED = COMMUTATIVE_KINDS | {WHILE_KIND}
# Bottom-up: users of one value considered as candidates for one op.
CANDIDATES_PER_VALUE = 32


class Matcher:
    """The matching of graph A to graph B: `ma[node]` is the node of B that A's node
    matched (or -1), `mb` the same from B; `run` does the passes."""

    def __init__(self, a: Graph, b: Graph, parameter_pairs: list[tuple[int, int]]) -> None:
        self.a = a
        self.b = b
        self.ma = [-1] * len(a.op)
        self.mb = [-1] * len(b.op)
        self.leaf_pairs: dict[int, int] = {}
        for i, j in parameter_pairs:
            if i < len(a.parameters) and j < len(b.parameters):
                self.leaf_pairs[a.parameters[i]] = b.parameters[j]
        self.paired_b = frozenset(self.leaf_pairs.values())
        """B's entry parameters that have a counterpart."""
        self.work: list[tuple[int, int]] = []
        self._whole = bytearray(len(a.op))
        """A's nodes mapped with a whole identical subgraph (`_map_subgraph`): their
        operands' producers were paired then, so the top-down pass need not."""
        self._permutations: dict[tuple[int, int], list[int] | None] = {}
        self._permutation_tries: dict[tuple[int, int], int] = defaultdict(int)

    def permutation(self, node_a: int, node_b: int) -> list[int] | None:
        """For a matched `while` whose loop-carried values come in another order (the
        HLO round trip moves the counter first), or whose loop carries more or fewer
        values (a scan saving residuals for the backward pass): B's position of each of
        A's operands, results and region arguments, -1 for one B no longer carries.
        None when the order is the same or unknown."""
        key = (node_a, node_b)
        if key in self._permutations:
            return self._permutations[key]
        a, b = self.a, self.b
        operands_a, operands_b = a.operands[node_a], b.operands[node_b]
        if (
            a.kind[node_a] != WHILE_KIND
            or b.kind[node_b] != WHILE_KIND
            or min(len(operands_a), len(operands_b)) < 1
            or max(len(operands_a), len(operands_b)) < 2
        ):
            self._permutations[key] = None
            return None
        found: list[int] = [-1] * len(operands_a)
        used: set[int] = set()
        for i, value_a in enumerate(operands_a):
            partner = self.counterpart_value(value_a)
            fingerprint = a.value_hash(value_a)
            candidates = [
                j
                for j, value_b in enumerate(operands_b)
                if j not in used and (value_b == partner or b.value_hash(value_b) == fingerprint)
            ]
            if candidates:
                j = i if i in candidates else candidates[0]
                found[i] = j
                used.add(j)
        for i, value_a in enumerate(operands_a):
            if found[i] >= 0:
                continue
            same_type = [
                j
                for j, value_b in enumerate(operands_b)
                if j not in used and b.g_type[value_b] == a.g_type[value_a]
            ]
            if len(same_type) == 1:
                found[i] = same_type[0]
                used.add(same_type[0])
        complete = len(used) == min(len(operands_a), len(operands_b))
        # A loop that carries more or fewer values keeps the places found, the others
        # -1; one that carries as many is a permutation only when every place is.
        known = complete if len(operands_a) == len(operands_b) else bool(used)
        result = found if known and found != list(range(len(found))) else None
        self._permutation_tries[key] += 1
        if complete or self._permutation_tries[key] >= 3:
            self._permutations[key] = result
        return result

    def operand_pairs(self, node_a: int, node_b: int) -> list[tuple[int, int]]:
        """A's and B's operands side by side: in B's order for a permuted `while`, swapped
        for a commutative op whose operands the other printer swapped."""
        operands_a, operands_b = self.a.operands[node_a], self.b.operands[node_b]
        permutation = self.permutation(node_a, node_b)
        if permutation is not None:
            return [
                (value, operands_b[j])
                for value, j in zip(operands_a, permutation, strict=True)
                if j >= 0
            ]
        if self.a.kind[node_a] in COMMUTATIVE_KINDS and len(operands_a) == len(operands_b) == 2:
            x0, x1 = operands_a
            y0, y1 = operands_b
            straight = self._affinity(x0, y0) + self._affinity(x1, y1)
            crossed = self._affinity(x0, y1) + self._affinity(x1, y0)
            if crossed > straight:
                return [(x0, y1), (x1, y0)]
        return list(zip(operands_a, operands_b, strict=False))

    def _affinity(self, value_a: int, value_b: int) -> int:
        a, b = self.a, self.b
        if self._counterpart(value_a) == value_b or a.vhash[value_a] == b.vhash[value_b]:
            return 2
        producer_a, producer_b = a.g_node[value_a], b.g_node[value_b]
        if producer_a >= 0 and producer_b >= 0:
            return 1 if a.kind[producer_a] == b.kind[producer_b] else 0
        return 1 if producer_a < 0 and producer_b < 0 else 0

    def run(self, root_pairs: list[tuple[int, int]]) -> None:
        self._exact(defer_ambiguous_leaves=True)
        for value_a, value_b in root_pairs:
            self._seed_values(value_a, value_b)
        # Every matched pair, top-down; but for a pair of identical subgraphs mapped
        # whole, outside any region and without regions of its own, that is nothing to
        # do: its operands were paired when it was mapped.
        whole, parent_a, children_a = self._whole, self.a.parent, self.a.children
        sub_a, sub_b = self.a.sub, self.b.sub
        self.work.extend(
            [
                (node, partner)
                for node, partner in enumerate(self.ma)
                if partner >= 0
                and not (
                    whole[node]
                    and parent_a[node] < 0
                    and children_a[node] is None
                    and sub_a[node] == sub_b[partner]
                )
            ]
        )
        self._drain()
        self._exact(defer_ambiguous_leaves=False)
        # The passes below look at A's ops unmatched so far (each checks again, as the
        # ones before it may match it); a pair that is the same (or nearly) leaves few.
        unmatched = [node for node, partner in enumerate(self.ma) if partner < 0]
        if unmatched:
            users_b = self.b.users()
            self._bottom_up(users_b, unmatched)
            self._other_kinds(users_b, unmatched)
            self._bottom_up(users_b, unmatched)
            self._leftovers(unmatched)
        self._containers()

    def _map(self, node_a: int, node_b: int) -> bool:
        if self.ma[node_a] >= 0 or self.mb[node_b] >= 0:
            return False
        self.ma[node_a] = node_b
        self.mb[node_b] = node_a
        self.work.append((node_a, node_b))
        return True

    # identical subgraphs, tallest first
    def _exact(self, defer_ambiguous_leaves: bool) -> None:
        """Identical subgraphs, tallest first, each mapping its whole subgraph. Equal
        small leaves (the many `constant 0`) are ambiguous: first they are left to
        their users (top-down), then paired in order."""
        a, b = self.a, self.b
        ma, mb = self.ma, self.mb
        sub_a, sub_b = a.sub, b.sub
        # A's unmatched ops, and B's unmatched ops with a fingerprint one of them has:
        # the others are passed over.
        container_a, container_b = a.is_container, b.is_container
        pending = [node for node, partner in enumerate(ma) if partner < 0 and not container_a[node]]
        fingerprints_a = {sub_a[node] for node in pending}
        by_hash: dict[int, list[int]] = defaultdict(list)
        for node in [node for node, partner in enumerate(mb) if partner < 0]:
            if sub_b[node] in fingerprints_a and not container_b[node]:
                by_hash[sub_b[node]].append(node)
        height = a.height
        # How many of A's leaves (height 1) have each fingerprint.
        count_a: Counter[int] = (
            Counter(compress(sub_a, [tall == 1 for tall in height]))
            if defer_ambiguous_leaves
            else Counter()
        )
        cursor: dict[int, int] = {}
        # A's unmatched ops that have an identical subgraph in B, tallest first (and in
        # order among equals: the sort is stable); the others would be passed over.
        order = sorted(
            [node for node in pending if sub_a[node] in by_hash],
            key=height.__getitem__,
            reverse=True,
        )
        for node in order:
            if ma[node] >= 0:
                continue
            fingerprint = sub_a[node]
            candidates = by_hash[fingerprint]
            if (
                defer_ambiguous_leaves
                and height[node] == 1
                and (len(candidates) > 1 or count_a[fingerprint] > 1)
            ):
                continue
            i = cursor.get(fingerprint, 0)
            while i < len(candidates) and mb[candidates[i]] >= 0:
                i += 1
            cursor[fingerprint] = i
            if i < len(candidates):
                self._map_subgraph(node, candidates[i])
        if defer_ambiguous_leaves:
            self.work.clear()
        else:
            self._drain()

    def _map_subgraph(self, root_a: int, root_b: int) -> None:
        a, b = self.a, self.b
        ma, mb, work, whole = self.ma, self.mb, self.work, self._whole
        producer_of_a, producer_of_b = a.g_node, b.g_node
        operands_of_a, operands_of_b = a.operands, b.operands
        stack = [(root_a, root_b)]
        while stack:
            node_a, node_b = stack.pop()
            if ma[node_a] >= 0 or mb[node_b] >= 0:
                continue
            ma[node_a] = node_b
            mb[node_b] = node_a
            work.append((node_a, node_b))
            whole[node_a] = 1
            pairs: Iterable[tuple[int, int]]
            if a.kind[node_a] in COMMUTATIVE_KINDS:
                pairs = self._identical_operand_pairs(node_a, node_b)
            else:
                pairs = zip(operands_of_a[node_a], operands_of_b[node_b])  # noqa: B905
            for value_a, value_b in pairs:
                producer_a, producer_b = producer_of_a[value_a], producer_of_b[value_b]
                if producer_a >= 0 and producer_b >= 0:
                    stack.append((producer_a, producer_b))
            regions_a, regions_b = a.children[node_a], b.children[node_b]
            if regions_a is not None and regions_b is not None:
                for region_a, region_b in zip(regions_a, regions_b, strict=False):
                    stack.extend(self._pair_by_hash(region_a, region_b))

    def _identical_operand_pairs(self, node_a: int, node_b: int) -> Iterable[tuple[int, int]]:
        """Operands of two ops with equal subgraph fingerprints, side by side."""
        a, b = self.a, self.b
        operands_a, operands_b = a.operands[node_a], b.operands[node_b]
        if a.kind[node_a] in COMMUTATIVE_KINDS:
            # Operands perhaps swapped: pair them by fingerprint.
            operands_a = tuple(sorted(operands_a, key=a.vhash.__getitem__))
            operands_b = tuple(sorted(operands_b, key=b.vhash.__getitem__))
        return zip(operands_a, operands_b, strict=False)

    def _pair_by_hash(self, nodes_a: list[int], nodes_b: list[int]) -> list[tuple[int, int]]:
        a, b = self.a, self.b
        waiting: dict[int, list[int]] = defaultdict(list)
        for node in reversed(nodes_b):
            if self.mb[node] < 0 and not b.is_container[node]:
                waiting[b.sub[node]].append(node)
        pairs = []
        for node in nodes_a:
            if self.ma[node] >= 0 or a.is_container[node]:
                continue
            bucket = waiting.get(a.sub[node])
            if bucket:
                pairs.append((node, bucket.pop()))
        return pairs

    def _seed_values(self, value_a: int, value_b: int) -> None:
        producer_a, producer_b = self.a.g_node[value_a], self.b.g_node[value_b]
        if producer_a >= 0 and producer_b >= 0:
            if self.a.kind[producer_a] == self.b.kind[producer_b]:
                self._map(producer_a, producer_b)
            elif self.ma[producer_a] < 0 and self.mb[producer_b] < 0:
                self._through_convert(producer_a, producer_b)

    # top-down: from matched users to their operands, regions and enclosing ops
    def _drain(self) -> None:
        a, b = self.a, self.b
        work = self.work
        ma, mb = self.ma, self.mb
        parent_of_a, parent_of_b = a.parent, b.parent
        kind_a, kind_b = a.kind, b.kind
        sub_a, sub_b = a.sub, b.sub
        operands_of_a, operands_of_b = a.operands, b.operands
        producer_of_a, producer_of_b = a.g_node, b.g_node
        children_a, children_b = a.children, b.children
        whole = self._whole
        while work:
            node_a, node_b = work.pop()
            parent_a, parent_b = parent_of_a[node_a], parent_of_b[node_b]
            if parent_a >= 0 and parent_b >= 0 and kind_a[parent_a] == kind_b[parent_b]:
                self._map(parent_a, parent_b)
            pairs: Iterable[tuple[int, int]]
            if sub_a[node_a] == sub_b[node_b]:
                if whole[node_a]:
                    pairs = ()  # paired when mapped whole
                elif kind_a[node_a] in COMMUTATIVE_KINDS:
                    pairs = self._identical_operand_pairs(node_a, node_b)
                else:
                    pairs = zip(operands_of_a[node_a], operands_of_b[node_b])  # noqa: B905
            elif kind_a[node_a] in _PERMUTED_OR_SWAPPED:
                pairs = self.operand_pairs(node_a, node_b)
            else:
                # Neither permuted nor swapped: side by side.
                pairs = zip(operands_of_a[node_a], operands_of_b[node_b])  # noqa: B905
            for value_a, value_b in pairs:
                producer_a, producer_b = producer_of_a[value_a], producer_of_b[value_b]
                if (
                    producer_a >= 0
                    and producer_b >= 0
                    and ma[producer_a] < 0
                    and mb[producer_b] < 0
                ):
                    if kind_a[producer_a] == kind_b[producer_b]:
                        ma[producer_a] = producer_b
                        mb[producer_b] = producer_a
                        work.append((producer_a, producer_b))
                    else:
                        self._through_convert(producer_a, producer_b)
            regions_a, regions_b = children_a[node_a], children_b[node_b]
            if regions_a is not None and regions_b is not None:
                for region_a, region_b in zip(regions_a, regions_b, strict=False):
                    for pair in self._pair_by_hash(region_a, region_b):
                        self._map(*pair)
                    last_a = region_a[-1] if region_a else -1
                    last_b = region_b[-1] if region_b else -1
                    if (
                        last_a >= 0
                        and last_b >= 0
                        and not a.counted[last_a]
                        and not b.counted[last_b]
                        and kind_a[last_a] == kind_b[last_b]
                    ):
                        self._map(last_a, last_b)

    def _through_convert(self, producer_a: int, producer_b: int) -> None:
        """A `convert` on one side only between a matched user and its operand (a
        matmul made bf16 converts its operands and its result): the op behind it is
        the counterpart of the other side's op."""
        a, b = self.a, self.b
        if b.kind[producer_b] == CONVERT_KIND and len(b.operands[producer_b]) == 1:
            inner = b.g_node[b.operands[producer_b][0]]
            if inner >= 0 and self.mb[inner] < 0 and b.kind[inner] == a.kind[producer_a]:
                self._map(producer_a, inner)
        elif a.kind[producer_a] == CONVERT_KIND and len(a.operands[producer_a]) == 1:
            inner = a.g_node[a.operands[producer_a][0]]
            if inner >= 0 and self.ma[inner] < 0 and a.kind[inner] == b.kind[producer_b]:
                self._map(inner, producer_b)

    def _counterpart(self, value_a: int) -> int:
        """`counterpart_value`, the single result of a matched op told at once."""
        producer = self.a.g_node[value_a]
        if producer >= 0:
            partner = self.ma[producer]
            if partner < 0:
                return -1
            results = self.b.results[partner]
            if len(results) == 1:
                return results[0] if self.a.g_index[value_a] == 0 else -1
        return self.counterpart_value(value_a)

    def counterpart_value(self, value_a: int) -> int:
        """B's value corresponding to A's `value_a`, or -1."""
        a, b = self.a, self.b
        producer = a.g_node[value_a]
        if producer >= 0:
            partner = self.ma[producer]
            if partner < 0:
                return -1
            results = b.results[partner]
            index = a.g_index[value_a]
            permutation = self.permutation(producer, partner) if len(results) > 1 else None
            if permutation is not None and index < len(permutation):
                index = permutation[index]
            return results[index] if 0 <= index < len(results) else -1
        paired = self.leaf_pairs.get(value_a)
        if paired is not None:
            return paired
        owner = a.g_owner[value_a]
        partner = self.ma[owner] if owner >= 0 else -1
        arguments = b.block_args[partner] if partner >= 0 else None
        if arguments is None:
            return -1
        region, index = a.g_slot[value_a]
        if region >= len(arguments):
            return -1
        permutation = self.permutation(owner, partner)
        if permutation is not None and index < len(permutation):
            index = permutation[index]
        return arguments[region][index] if 0 <= index < len(arguments[region]) else -1

    # bottom-up: an unmatched op whose operands are matched, against the users of
    # their counterparts
    def _bottom_up(self, users_b: list[list[int]], unmatched: list[int]) -> None:
        a, b = self.a, self.b
        for node in unmatched:
            if self.ma[node] >= 0 or a.is_container[node] or not a.operands[node]:
                continue
            kind = a.kind[node]
            scores: dict[int, float] = {}
            for position, value in enumerate(a.operands[node]):
                partner_value = self.counterpart_value(value)
                if partner_value < 0:
                    continue
                for user in users_b[partner_value][:CANDIDATES_PER_VALUE]:
                    if self.mb[user] >= 0 or b.kind[user] != kind:
                        continue
                    operands_b = b.operands[user]
                    same_place = (
                        position < len(operands_b) and operands_b[position] == partner_value
                    )
                    scores[user] = scores.get(user, 0.0) + (1.0 if same_place else 0.5)
            if not scores:
                continue
            best = -1
            best_score = 0.0
            for user, score in scores.items():
                score += 0.5 if b.types[user] == a.types[node] else 0.0
                score += 0.5 if b.attrs[user] == a.attrs[node] else 0.0
                score -= 0.25 * abs(len(b.operands[user]) - len(a.operands[node]))
                if score > best_score or (score == best_score and 0 <= user < best):
                    best, best_score = user, score
            if best >= 0 and best_score >= 1.0:
                self._map(node, best)
                self._drain()

    # an op whose kind changed: same operands, same result types, another kind
    def _other_kinds(self, users_b: list[list[int]], unmatched: list[int]) -> None:
        a, b = self.a, self.b
        for node in unmatched:
            operands = a.operands[node]
            if self.ma[node] >= 0 or a.is_container[node] or a.unit_reshape[node] or not operands:
                continue
            candidates: set[int] | None = None
            for position, value in enumerate(operands):
                partner_value = self.counterpart_value(value)
                if partner_value < 0:
                    candidates = None
                    break
                found = {
                    user
                    for user in users_b[partner_value][:CANDIDATES_PER_VALUE]
                    if self.mb[user] < 0
                    and len(b.operands[user]) == len(operands)
                    and b.operands[user][position] == partner_value
                    and b.types[user] == a.types[node]
                    and not b.is_container[user]
                }
                candidates = found if candidates is None else candidates & found
                if not candidates:
                    break
            if candidates and len(candidates) == 1:
                self._map(node, candidates.pop())
                self._drain()

    # what is left: identical fingerprints within matched regions
    def _leftovers(self, unmatched: list[int]) -> None:
        a, b = self.a, self.b
        waiting: dict[tuple[int, int], list[int]] = defaultdict(list)
        # Unit-dimension reshapes match only through their operands (earlier passes).
        mb = self.mb
        for node in range(len(b.op) - 1, -1, -1):
            if mb[node] < 0 and not b.is_container[node] and not b.unit_reshape[node]:
                waiting[(b.local[node], b.parent[node])].append(node)
        for node in unmatched:
            if self.ma[node] >= 0 or a.is_container[node] or a.unit_reshape[node]:
                continue
            parent = a.parent[node]
            parent_b = self.ma[parent] if parent >= 0 else -1
            if parent >= 0 and parent_b < 0:
                continue
            bucket = waiting.get((a.local[node], parent_b))
            while bucket and self.mb[bucket[-1]] >= 0:
                bucket.pop()
            if bucket:
                self._map(node, bucket.pop())
                self._drain()

    # calls and fusions: by where most of their contents went
    def _containers(self) -> None:
        a, b = self.a, self.b
        if not a.container_nodes:
            self.work.clear()
            return  # A has no calls inlined and no fusions: nothing to match
        votes: dict[tuple[int, int], int] = defaultdict(int)
        containers_b = b.container
        for outer, partner, is_container in zip(a.container, self.ma, a.is_container, strict=True):
            if outer < 0 or partner < 0 or is_container:
                continue
            outer_b = containers_b[partner]
            if outer_b >= 0 and a.kind[outer] == b.kind[outer_b]:
                votes[(outer, outer_b)] += 1
        for (outer, outer_b), _count in sorted(votes.items(), key=lambda kv: (-kv[1], kv[0])):
            if self.ma[outer] < 0 and self.mb[outer_b] < 0:
                self._map(outer, outer_b)
        # Containers with nothing matched inside: identical fingerprints in order.
        waiting: dict[int, list[int]] = defaultdict(list)
        for node in reversed(b.container_nodes):
            if self.mb[node] < 0:
                waiting[b.local[node]].append(node)
        for node in a.container_nodes:
            if self.ma[node] < 0:
                bucket = waiting.get(a.local[node])
                while bucket and self.mb[bucket[-1]] >= 0:
                    bucket.pop()
                if bucket:
                    self._map(node, bucket.pop())
        self.work.clear()

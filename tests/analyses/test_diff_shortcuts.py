"""The diff's shortcuts, each against what it stands for: an op's signature worked out
once per distinct op, fingerprints worked out during the graph's walk, pairs of
identical subgraphs mapped whole left out of the top-down pass, the quick test of an
unchanged pair, the count that decides whether calls are inlined. Each must give what
the long way gives."""

from __future__ import annotations

from collections import defaultdict

import jax
import jax.numpy as jnp
import pytest

from conftest import DUMPS
from hloscope.analyses.diff import diff_modules
from hloscope.analyses.diff import module_diff as module_diff_module
from hloscope.analyses.diff.compare import Comparer
from hloscope.analyses.diff.functions import correspond
from hloscope.analyses.diff.graph import COMMUTATIVE_KINDS, Graph
from hloscope.analyses.diff.matcher import Matcher
from hloscope.analyses.diff.module_diff import _root_pairs
from hloscope.analyses.diff.parameters import pair_parameters
from hloscope.analyses.diff.signatures import Signatures
from hloscope.ir import parse
from hloscope.ir.model import Module


def mlir(text: str) -> Module:
    return parse.parse_mlir(text, "test.mlir").model


def hlo(text: str) -> Module:
    return parse.parse_hlo_text(text, "test.hlo").model


# --------------------------------------------------------------------------- modules


def _layer(x, w):
    h = jnp.tanh(x @ w)
    return h / jnp.sqrt((h * h).mean(-1, keepdims=True) + 1e-5) + x


def _scanned(ws, x):
    def body(carry, w):
        return jax.jit(_layer)(carry, w), carry.sum()

    return jax.lax.scan(body, x, ws)


def _unrolled(layers: int, kind: str = "tanh", epsilon: str = "1.000000e-06") -> str:
    """An unrolled model as `bench/generate.py` makes them, small: one `main`, each layer
    a matmul, a reduction (a region of its own), unit-dimension broadcasts and a
    residual add."""
    lines = [
        "module @unrolled {",
        "  func.func public @main(%x: tensor<8x16xf32>, %w: tensor<16x16xf32>)"
        " -> tensor<8x16xf32> {",
        "    %zero = stablehlo.constant dense<0.000000e+00> : tensor<f32>",
        f"    %eps = stablehlo.constant dense<{epsilon}> : tensor<8x1xf32>",
    ]
    last = "%x"
    for i in range(layers):
        op = kind if i == 0 else "tanh"
        lines += [
            f"    %d{i} = stablehlo.dot_general {last}, %w, contracting_dims = [1] x [0]"
            " : (tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<8x16xf32>",
            f"    %t{i} = stablehlo.{op} %d{i} : tensor<8x16xf32>",
            f"    %s{i} = stablehlo.reduce(%t{i} init: %zero) applies stablehlo.add across"
            " dimensions = [1] : (tensor<8x16xf32>, tensor<f32>) -> tensor<8xf32>",
            f"    %b{i} = stablehlo.broadcast_in_dim %s{i}, dims = [0]"
            " : (tensor<8xf32>) -> tensor<8x1xf32>",
            f"    %e{i} = stablehlo.add %b{i}, %eps : tensor<8x1xf32>",
            f"    %r{i} = stablehlo.broadcast_in_dim %e{i}, dims = [0, 1]"
            " : (tensor<8x1xf32>) -> tensor<8x16xf32>",
            f"    %q{i} = stablehlo.divide %t{i}, %r{i} : tensor<8x16xf32>",
            f"    %o{i} = stablehlo.add {last}, %q{i} : tensor<8x16xf32>",
        ]
        last = f"%o{i}"
    lines += [f"    return {last} : tensor<8x16xf32>", "  }", "}"]
    return "\n".join(lines)


@pytest.fixture(scope="module")
def scanned() -> Module:
    """A `while` loop (regions, loop-carried values) whose body calls a nested jit."""
    lowered = jax.jit(_scanned).lower(
        jax.ShapeDtypeStruct((3, 16, 16), jnp.float32), jax.ShapeDtypeStruct((4, 16), jnp.float32)
    )
    return mlir(lowered.as_text())


def modules(scanned: Module) -> list[tuple[str, Module]]:
    return [
        ("stablehlo", mlir((DUMPS / "mlp.stablehlo.mlir").read_text())),
        ("hlo", hlo((DUMPS / "mlp.before_optimizations.hlo").read_text())),
        ("fusions", hlo((DUMPS / "mlp.after_optimizations.hlo").read_text())),
        ("host_call", mlir((DUMPS / "host_call.stablehlo.mlir").read_text())),
        ("scan", scanned),
        ("unrolled", mlir(_unrolled(6))),
    ]


def pairs(scanned: Module) -> list[tuple[str, Module, Module]]:
    """Pairs the same, nearly the same, and another printer's."""
    stablehlo = mlir((DUMPS / "mlp.stablehlo.mlir").read_text())
    before = hlo((DUMPS / "mlp.before_optimizations.hlo").read_text())
    after = hlo((DUMPS / "mlp.after_optimizations.hlo").read_text())
    scan_text = str(jax.jit(_scanned).lower(*_scan_args()).as_text())
    return [
        ("stablehlo against its HLO", stablehlo, before),
        ("before against after optimizations", before, after),
        ("scan against itself", scanned, mlir(scan_text)),
        ("scan, tanh made a sine", scanned, mlir(scan_text.replace("tanh", "sine", 1))),
        (
            "unrolled, first tanh made a logistic",
            mlir(_unrolled(8)),
            mlir(_unrolled(8, "logistic")),
        ),
        (
            "unrolled, a constant changed",
            mlir(_unrolled(8)),
            mlir(_unrolled(8, epsilon="2.000000e-06")),
        ),
        ("a dead reduction", mlir(DEAD_REDUCE_A), mlir(DEAD_REDUCE_B)),
    ]


# A dead reduction (nothing reads it: the top-down pass never reaches it) whose body
# is identical to the second of B's: matched to it through its body's ops, mapped
# whole, which are inside its region; by its kind alone it would be B's first.
DEAD_REDUCE_A = """
module @m {
  func.func public @main(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
    %zero = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %r = stablehlo.reduce(%x init: %zero) applies stablehlo.add across dimensions = [0] : (tensor<4xf32>, tensor<f32>) -> tensor<f32>
    return %y : tensor<4xf32>
  }
}
"""  # noqa: E501
DEAD_REDUCE_B = """
module @m {
  func.func public @main(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
    %one = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %p = stablehlo.reduce(%y init: %one) applies stablehlo.multiply across dimensions = [0] : (tensor<4xf32>, tensor<f32>) -> tensor<f32>
    %s = stablehlo.reduce(%y init: %one) applies stablehlo.add across dimensions = [0] : (tensor<4xf32>, tensor<f32>) -> tensor<f32>
    return %y : tensor<4xf32>
  }
}
"""  # noqa: E501


def _scan_args():
    return (
        jax.ShapeDtypeStruct((3, 16, 16), jnp.float32),
        jax.ShapeDtypeStruct((4, 16), jnp.float32),
    )


def _graphs(a: Module, b: Module) -> tuple[Graph, Graph, list[tuple[int, int]]]:
    assert a.entry is not None and b.entry is not None
    parameter_pairs = pair_parameters(a.entry, b.entry)
    tokens_a = [0] * len(a.entry.arguments)
    tokens_b = [0] * len(b.entry.arguments)
    for number, (i, j) in enumerate(parameter_pairs):
        if i is not None:
            tokens_a[i] = hash(("param", number))
        if j is not None:
            tokens_b[j] = hash(("param", number))
    signatures = Signatures()
    graph_a = Graph(a, tokens_a, True, signatures)
    graph_b = Graph(b, tokens_b, True, signatures)
    matched = [(i, j) for i, j in parameter_pairs if i is not None and j is not None]
    return graph_a, graph_b, matched


def _matcher(a: Module, b: Module, matcher_type: type[Matcher] = Matcher) -> Matcher:
    graph_a, graph_b, matched = _graphs(a, b)
    matcher = matcher_type(graph_a, graph_b, matched)
    matcher.run(_root_pairs(graph_a, graph_b, a.entry, b.entry))
    return matcher


# --------------------------------------------------------------------------- signatures


def test_the_signature_of_a_reshape_reads_its_operand_type():
    """Two reshapes to the same type with the same attributes: one only adds a unit
    dimension (transparent to the diff), the other does not. One signature for both
    would make both transparent, or neither."""
    module = mlir("""
module @m {
  func.func public @main(%a: tensor<64xf32>, %b: tensor<2x32xf32>) -> (tensor<1x64xf32>, tensor<1x64xf32>) {
    %0 = stablehlo.reshape %a : (tensor<64xf32>) -> tensor<1x64xf32>
    %1 = stablehlo.reshape %b : (tensor<2x32xf32>) -> tensor<1x64xf32>
    return %0, %1 : tensor<1x64xf32>, tensor<1x64xf32>
  }
}
""")  # noqa: E501
    graph = Graph(module, [1, 2], True)
    reshapes = [n for n, kind in enumerate(graph.kind) if kind == "stablehlo.reshape"]
    assert [graph.unit_reshape[n] for n in reshapes] == [True, False]


def test_the_signature_of_a_dot_reads_its_left_operand():
    """`dot` contracts the last dimension of its left operand: two dots of one result
    type and no attributes contract other dimensions when their left operands differ
    in rank."""
    module = mlir("""
module @m {
  func.func public @main(%v: tensor<4xf32>, %w: tensor<4x3xf32>, %m: tensor<3x4xf32>, %u: tensor<4xf32>) -> (tensor<3xf32>, tensor<3xf32>) {
    %0 = stablehlo.dot %v, %w : (tensor<4xf32>, tensor<4x3xf32>) -> tensor<3xf32>
    %1 = stablehlo.dot %m, %u : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3xf32>
    return %0, %1 : tensor<3xf32>, tensor<3xf32>
  }
}
""")  # noqa: E501
    graph = Graph(module, [1, 2, 3, 4], True)
    dots = [
        dict(graph.attrs[n]) for n, kind in enumerate(graph.kind) if kind.endswith("dot_general")
    ]
    assert [d["dot_dimension_numbers"] for d in dots] == [
        "#stablehlo.dot<lhs_contracting_dimensions = [0], rhs_contracting_dimensions = [0]>",
        "#stablehlo.dot<lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]>",
    ]


def test_both_sides_share_one_signature_per_distinct_op():
    signatures = Signatures()
    Graph(mlir(_unrolled(5)), [1, 2], True, signatures)
    known = len(signatures.known)
    Graph(mlir(_unrolled(9)), [1, 2], True, signatures)
    assert len(signatures.known) == known  # more layers, no new kind of op


# --------------------------------------------------------------------------- fingerprints


def _fingerprints_in_a_second_pass(graph: Graph) -> tuple[list[int], list[int]]:
    """The fingerprints as a second walk over the finished graph works them out (the
    way the diff did before they were worked out during the first): nodes in
    post-order (each after what it encloses), from the operands' producers' and the
    regions' fingerprints."""
    count = len(graph.op)
    inside: dict[int, list[int]] = defaultdict(list)
    for node in range(count):
        # The innermost node enclosing this one: its region's op or its call/fusion.
        inside[max(graph.parent[node], graph.container[node])].append(node)
    post: list[int] = []
    stack = [(node, False) for node in reversed(inside[-1])]
    while stack:
        node, done = stack.pop()
        if done:
            post.append(node)
            continue
        stack.append((node, True))
        stack.extend((child, False) for child in reversed(inside[node]))
    assert sorted(post) == list(range(count))
    sub, height = [0] * count, [0] * count
    for node in post:
        operand_hashes = []
        tallest = 0
        for value in graph.operands[node]:
            producer = graph.g_node[value]
            if producer >= 0:
                operand_hashes.append(sub[producer] ^ graph.g_index[value])
                tallest = max(tallest, height[producer])
            else:
                operand_hashes.append(graph.g_token[value])
        regions = graph.children[node]
        region_hashes: tuple[tuple[int, ...], ...] = ()
        if regions is not None:
            region_hashes = tuple(tuple(sorted(sub[c] for c in region)) for region in regions)
            tallest = max([tallest] + [height[c] for region in regions for c in region])
        if graph.kind[node] in COMMUTATIVE_KINDS:
            operand_hashes.sort()
        sub[node] = hash((graph.local[node], tuple(operand_hashes), region_hashes))
        height[node] = tallest + 1
    return sub, height


def test_fingerprints_are_those_of_a_second_pass(scanned):
    for name, module in modules(scanned):
        graph = Graph(module, [7] * len(module.entry.arguments), True)
        sub, height = _fingerprints_in_a_second_pass(graph)
        assert graph.sub == sub, name
        assert graph.height == height, name
        for value, producer in enumerate(graph.g_node):
            expected = (
                sub[producer] ^ graph.g_index[value] if producer >= 0 else graph.g_token[value]
            )
            assert graph.value_hash(value) == expected, (name, value)


# --------------------------------------------------------------------------- matching


class _Forgets(bytearray):
    """A `_whole` that forgets: no pair counts as mapped whole."""

    def __setitem__(self, index, value):
        pass


class _TopDownEverywhere(Matcher):
    """The matcher without its shortcut: every matched pair goes through the top-down
    pass, its operands paired again."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._whole = _Forgets(len(self.a.op))


def test_pairs_mapped_whole_need_no_top_down_pass(scanned):
    for name, a, b in pairs(scanned):
        quick, full = _matcher(a, b), _matcher(a, b, _TopDownEverywhere)
        assert any(quick._whole), name  # the shortcut was taken
        assert not any(full._whole), name
        assert quick.ma == full.ma, name
        assert quick.mb == full.mb, name


def test_unchanged_is_what_the_full_comparison_says(scanned):
    took_the_quick_way = 0
    for name, a, b in pairs(scanned):
        matcher = _matcher(a, b)
        comparer = Comparer(matcher, correspond(matcher))
        for node_a, node_b in enumerate(matcher.ma):
            if node_b < 0:
                continue
            quick = comparer.unchanged(node_a, node_b)
            if quick:
                assert comparer.differences(node_a, node_b) == [], (name, node_a, node_b)
                if matcher.a.sub[node_a] != matcher.b.sub[node_b]:
                    took_the_quick_way += 1  # same op, operands the counterparts
    assert took_the_quick_way > 50


def test_a_region_matched_whole_matches_its_op():
    a, b = mlir(DEAD_REDUCE_A), mlir(DEAD_REDUCE_B)
    result = diff_modules(a, b)
    (reduce_a,) = [n for n, op in enumerate(result.a.ops) if a.ops[op].name == "stablehlo.reduce"]
    (row,) = [r for r in result.rows if r.a == reduce_a]
    second = [op.id for op in b.ops if op.name == "stablehlo.reduce"][1]
    assert result.b.ops[row.b] == second


def test_one_change_in_an_unrolled_model_is_one_change():
    """What `make bench` diffs at 100k ops, at 300: everything after the change has
    another subgraph fingerprint, and is matched top-down, not by fingerprint."""
    result = diff_modules(mlir(_unrolled(40)), mlir(_unrolled(40, "logistic")))
    assert [(c.kind, c.op, c.detail) for c in result.changes] == [
        ("changed", "stablehlo.tanh → stablehlo.logistic", "stablehlo.tanh → stablehlo.logistic")
    ]
    assert result.summary.unchanged == len(result.a.ops) - 1 - 40  # reductions' returns
    assert [(r.a, r.b) for r in result.rows] == [(n, n) for n in range(len(result.a.ops))]


# --------------------------------------------------------------------------- inlining


def test_calls_are_inlined_up_to_the_limit(monkeypatch):
    """`main` has 9 ops (its return included) and calls `scale` (4 ops) twice: 17 ops
    once inlined."""
    from test_diff import BASE

    module = mlir(BASE)
    monkeypatch.setattr(module_diff_module, "INLINE_LIMIT", 17)
    assert not any("too many to inline" in n for n in diff_modules(module, module).notes)
    monkeypatch.setattr(module_diff_module, "INLINE_LIMIT", 16)
    assert any("too many to inline" in n for n in diff_modules(module, module).notes)


# --------------------------------------------------------------------------- collector


def test_the_cyclic_collector_is_paused_while_diffing(monkeypatch):
    """In the browser and the Python API the collector is on: it would walk both
    models again and again while the diff allocates its graphs. Paused, then as it
    was."""
    import gc

    seen = []
    original = Graph.__init__

    def recording(self, *args, **kwargs):
        seen.append(gc.isenabled())
        original(self, *args, **kwargs)

    monkeypatch.setattr(Graph, "__init__", recording)
    module = mlir((DUMPS / "mlp.stablehlo.mlir").read_text())
    was = gc.isenabled()
    try:
        gc.enable()
        diff_modules(module, module)
        assert gc.isenabled()
        gc.disable()
        diff_modules(module, module)
        assert not gc.isenabled()
    finally:
        if was:
            gc.enable()
    assert seen == [False] * 4

"""`align_printed`: two printed modules side by side for the diff screen (pure)."""

from __future__ import annotations

import pytest

from conftest import DUMPS, ROOT
from hloscope import reports
from hloscope.analyses.diff import ADDED, CHANGED, SAME, normalize_kind
from hloscope.sources import loader
from hloscope.tui import diff_align as diff_module
from hloscope.tui.diff_align import CHANGE_STATUSES, MOVED, AlignedLines, align_printed
from hloscope.tui.printed import PrintedModule
from hloscope.tui.session import print_module


def load(target: str, factory: str | None = None) -> loader.Loaded:
    return loader.load(target, loader.LoadOptions(args_factory=factory))


def aligned(
    a: loader.Loaded, b: loader.Loaded
) -> tuple[AlignedLines, PrintedModule, PrintedModule]:
    report = reports.diff_loaded(a, b)
    printed_a, printed_b = print_module(a, False), print_module(b, False)
    return align_printed(report.diff, printed_a, printed_b), printed_a, printed_b


def check_invariants(result: AlignedLines, a: PrintedModule, b: PrintedModule) -> None:
    """Every line of each side once in its own place, in order (and copies of lines
    beside their pairs elsewhere); no empty row; a stop at each changed row."""
    assert len(result.a) == len(result.b) == len(result.status_a) == len(result.status_b)
    assert len(result.copy_a) == len(result.copy_b) == len(result.a)
    home_a = [n for n, copy in zip(result.a, result.copy_a, strict=True) if n >= 0 and not copy]
    home_b = [n for n, copy in zip(result.b, result.copy_b, strict=True) if n >= 0 and not copy]
    assert home_a == list(range(len(a.lines)))
    assert home_b == list(range(len(b.lines)))
    # A copy always faces its pair.
    for row, (x, y) in enumerate(zip(result.a, result.b, strict=True)):
        if result.copy_a[row] or result.copy_b[row]:
            assert x >= 0 and y >= 0
    assert all(x >= 0 or y >= 0 for x, y in zip(result.a, result.b, strict=True))
    assert list(result.stops) == [row for row in range(len(result.a)) if result.is_change(row)]


def rows_text(result: AlignedLines, a: PrintedModule, b: PrintedModule) -> list[tuple[str, str]]:
    return [
        (a.lines[x].strip() if x >= 0 else "", b.lines[y].strip() if y >= 0 else "")
        for x, y in zip(result.a, result.b, strict=True)
    ]


def diff_pairs(
    report: reports.DiffReport, a: PrintedModule, b: PrintedModule
) -> set[tuple[int, int]]:
    """The diff's own pairs (matched or changed ops), as the lines of the two ops."""
    diff = report.diff
    out = set()
    for row in diff.rows:
        if row.a < 0 or row.b < 0:
            continue
        op_a, op_b = diff.a.ops[row.a], diff.b.ops[row.b]
        if a.own_line[op_a] and b.own_line[op_b]:
            out.add((a.op_line[op_a], b.op_line[op_b]))
    return out


def changed_pairs(
    report: reports.DiffReport, a: PrintedModule, b: PrintedModule
) -> set[tuple[int, int]]:
    """The lines of the two ops of each `changed` change of the report."""
    diff = report.diff
    return {
        (a.op_line[diff.a.ops[c.a]], b.op_line[diff.b.ops[c.b]])
        for c in diff.changes
        if c.a is not None and c.b is not None
    }


def rows_of_pairs(result: AlignedLines) -> set[tuple[int, int]]:
    return {(x, y) for x, y in zip(result.a, result.b, strict=True) if x >= 0 and y >= 0}


COMPUTE_ON = "samples/compute_on.py:example_args"
PAIRS = "tests/fixtures/diff_pair_targets.py"


def test_compute_on_inside_and_outside_jit_side_by_side():
    a = load("samples/compute_on.py:host_inside_jit", COMPUTE_ON)
    b = load("samples/compute_on.py:host_outside_jit", COMPUTE_ON)
    result, printed_a, printed_b = aligned(a, b)
    check_invariants(result, printed_a, printed_b)
    rows = rows_text(result, printed_a, printed_b)
    # B's wrapper (main calling the host function) faces blank rows: only B has it.
    call = next(
        i for i, (_, right) in enumerate(rows) if right.startswith("%0 = call @host_outside_jit")
    )
    assert rows[call][0] == "" and result.status_b[call] == ADDED
    # The ops of A's main sit beside their counterparts in B's host function.
    tanh = next(i for i, (left, _) in enumerate(rows) if "stablehlo.tanh" in left)
    assert "stablehlo.tanh" in rows[tanh][1]
    assert result.status_a[tanh] == result.status_b[tanh] == CHANGED
    add = next(i for i, (left, _) in enumerate(rows) if "stablehlo.add" in left)
    assert "stablehlo.add" in rows[add][1] and result.status_a[add] == SAME
    # Headers of matched functions share a row: A's main with B's host function.
    header = next(
        i for i, (left, _) in enumerate(rows) if left.startswith("func.func public @main")
    )
    assert rows[header][1].startswith("func.func private @host_outside_jit")
    assert list(result.stops) == [call, tanh]


def test_the_same_module_in_two_printers_lines_up_op_by_op():
    a = load(str(DUMPS.relative_to(ROOT) / "mlp.stablehlo.mlir"))
    b = load(str(DUMPS.relative_to(ROOT) / "mlp.before_optimizations.hlo"))
    result, printed_a, printed_b = aligned(a, b)
    check_invariants(result, printed_a, printed_b)
    assert result.stops == ()
    assert not any(result.is_change(row) for row in range(len(result.a)))
    # Ops side by side are the same op (B prints its functions in another order: the
    # functions that cannot keep their order face blank rows).
    side_by_side = 0
    for x, y in zip(result.a, result.b, strict=True):
        if x < 0 or y < 0:
            continue
        op_a, op_b = printed_a.line_op[x], printed_b.line_op[y]
        if op_a < 0 or op_b < 0 or printed_a.op_line[op_a] != x or printed_b.op_line[op_b] != y:
            continue  # not an op's own line
        name_a, name_b = a.module.ops[op_a].name, b.module.ops[op_b].name
        assert normalize_kind(name_a) == normalize_kind(name_b)
        side_by_side += 1
    assert side_by_side >= 10  # dense and head, with their headers


def mutated(tmp_path, count: int, change_at: int | None) -> str:
    """A chain of `count` sines; the op at `change_at` a cosine instead."""
    lines = ["func.func @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {"]
    previous = "%arg0"
    for i in range(count):
        op = "cosine" if i == change_at else "sine"
        lines.append(f"  %v{i} = stablehlo.{op} {previous} : tensor<4xf32>")
        previous = f"%v{i}"
    lines += [f"  return {previous} : tensor<4xf32>", "}"]
    path = tmp_path / f"chain-{count}-{change_at}.mlir"
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def test_a_changed_op_in_a_long_chain(tmp_path):
    a = load(mutated(tmp_path, 300, None))
    b = load(mutated(tmp_path, 300, 150))
    result, printed_a, printed_b = aligned(a, b)
    check_invariants(result, printed_a, printed_b)
    # Lines match one for one; the sine that became a cosine is one run of changes.
    assert result.a == result.b
    assert len(result.stops) == 1
    row = result.stops[0]
    assert "stablehlo.sine" in printed_a.lines[result.a[row]]
    assert "stablehlo.cosine" in printed_b.lines[result.b[row]]
    assert {result.status_a[row], result.status_b[row]} <= CHANGE_STATUSES


def test_modules_with_nothing_in_common_keep_every_line(tmp_path):
    a = load(str(DUMPS.relative_to(ROOT) / "mlp.stablehlo.mlir"))
    b = load(mutated(tmp_path, 40, 3))
    result, printed_a, printed_b = aligned(a, b)
    check_invariants(result, printed_a, printed_b)


def test_large_gaps_are_paired_in_order(tmp_path, monkeypatch: pytest.MonkeyPatch):
    # Past the size where lines are matched by their text, a gap's lines are paired
    # in order: still every line once, in order.
    monkeypatch.setattr(diff_module, "MAX_GAP_PRODUCT", 0)
    a = load(str(DUMPS.relative_to(ROOT) / "mlp.stablehlo.mlir"))
    b = load(str(DUMPS.relative_to(ROOT) / "mlp.after_optimizations.hlo"))
    result, printed_a, printed_b = aligned(a, b)
    check_invariants(result, printed_a, printed_b)
    assert result.stops


def test_a_pair_across_functions_shares_a_row():
    # A's relu is a function of its own, B's gelu is inlined in main: the diff pairs
    # A's relu constant with one of B's main (issue 49). Every pair of the diff sits
    # on one row; one that crosses the order of the others is shown beside its pair
    # at B's place, a copy of A's line, while A's line keeps its own place too.
    factory = f"{PAIRS}:example_args"
    a = load(f"{PAIRS}:relu_doubled", factory)
    b = load(f"{PAIRS}:gelu_doubled", factory)
    report = reports.diff_loaded(a, b)
    printed_a, printed_b = print_module(a, False), print_module(b, False)
    result = align_printed(report.diff, printed_a, printed_b)
    check_invariants(result, printed_a, printed_b)
    changed = changed_pairs(report, printed_a, printed_b)
    assert len(changed) == 2  # relu's constant, main's multiply
    assert diff_pairs(report, printed_a, printed_b) <= rows_of_pairs(result)
    assert changed <= rows_of_pairs(result)
    rows = rows_text(result, printed_a, printed_b)
    for line_a, line_b in changed:
        row = next(
            r for r in range(len(result.a)) if (result.a[r], result.b[r]) == (line_a, line_b)
        )
        assert result.status_a[row] == result.status_b[row] == CHANGED
    constant = next(
        r
        for r, (left, right) in enumerate(rows)
        if "dense<0.000000e+00>" in left and "dense<4.471500e-02>" in right
    )
    # The pair is on B's place (among B's main), A's line a copy there; at its own
    # place in relu, A's line faces a blank, shown as moved: no change to stop at.
    assert result.copy_a[constant] and not result.copy_b[constant]
    home = next(
        r
        for r, (left, _) in enumerate(rows)
        if "dense<0.000000e+00>" in left and not result.copy_a[r]
    )
    assert home > constant and result.b[home] == -1
    assert result.status_a[home] == MOVED and not result.is_change(home)
    # Every stop of `]` that shows a changed op shows its pair beside it.
    partners_a = dict(changed)
    for row in range(len(result.a)):
        if result.is_change(row) and result.a[row] in partners_a:
            assert result.b[row] == partners_a[result.a[row]]


def mlir_tanh(tmp_path, shape: str) -> str:
    path = tmp_path / f"tanh-{shape}.mlir"
    path.write_text(
        f"func.func @main(%arg0: tensor<{shape}xf32>) -> tensor<{shape}xf32> {{\n"
        f"  %0 = stablehlo.tanh %arg0 : tensor<{shape}xf32>\n"
        f"  return %0 : tensor<{shape}xf32>\n"
        "}\n"
    )
    return str(path)


def test_the_returns_of_matched_functions_share_a_row(tmp_path):
    # The same function compiled for two shapes (a recompilation): its returns read
    # differently but end the same function, so they face each other.
    a = load(mlir_tanh(tmp_path, "2x3"))
    b = load(mlir_tanh(tmp_path, "5x3"))
    result, printed_a, printed_b = aligned(a, b)
    check_invariants(result, printed_a, printed_b)
    rows = rows_text(result, printed_a, printed_b)
    assert ("return %0 : tensor<2x3xf32>", "return %0 : tensor<5x3xf32>") in rows
    assert result.a == result.b


def test_an_op_of_a_function_called_twice_faces_each_of_its_pairs(tmp_path):
    # B calls @f twice where A has its op inline twice: the diff pairs B's one cosine
    # with both of A's sines, so B's line is on two rows, the second a copy.
    inline = tmp_path / "inline.mlir"
    inline.write_text(
        "func.func @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {\n"
        "  %0 = stablehlo.sine %arg0 : tensor<4xf32>\n"
        "  %1 = stablehlo.sine %0 : tensor<4xf32>\n"
        "  return %1 : tensor<4xf32>\n"
        "}\n"
    )
    calls = tmp_path / "calls.mlir"
    calls.write_text(
        "func.func @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {\n"
        "  %0 = call @f(%arg0) : (tensor<4xf32>) -> tensor<4xf32>\n"
        "  %1 = call @f(%0) : (tensor<4xf32>) -> tensor<4xf32>\n"
        "  return %1 : tensor<4xf32>\n"
        "}\n"
        "func.func private @f(%arg0: tensor<4xf32>) -> tensor<4xf32> {\n"
        "  %0 = stablehlo.cosine %arg0 : tensor<4xf32>\n"
        "  return %0 : tensor<4xf32>\n"
        "}\n"
    )
    for first, second in ((inline, calls), (calls, inline)):
        a, b = load(str(first)), load(str(second))
        report = reports.diff_loaded(a, b)
        printed_a, printed_b = print_module(a, False), print_module(b, False)
        result = align_printed(report.diff, printed_a, printed_b)
        check_invariants(result, printed_a, printed_b)
        changed = changed_pairs(report, printed_a, printed_b)
        assert len(changed) == 2
        assert changed <= rows_of_pairs(result)
        assert diff_pairs(report, printed_a, printed_b) <= rows_of_pairs(result)
        for row in range(len(result.a)):
            if (result.a[row], result.b[row]) in changed:
                assert result.is_change(row)

"""The browser's tables follow the text tables' rule (issue 61): what tells rows apart
stays when a cell is too long, and a column no row fills gives way."""

from __future__ import annotations

import hloscope.tui.views  # noqa: F401  (the package the tables are drawn for, imported first)
from hloscope.tui.widgets.report_list import Column, Row, table

LAYERS = [f"opt_state[0].{m}['layers']['{w}']" for m in ("mu", "nu") for w in ("down", "up", "wq")]
FUSIONS = [f"bitcast_dynamic-update-slice_fusion.{n}" for n in (2, 12, 21, 22, 3)]


def _rows(lines):
    return [line.text.plain for line in lines if line.selectable]


def test_paths_and_names_too_long_for_their_column_stay_apart():
    lines = table(
        "Shardings",
        [Column("name", width=24, path=True), Column("fusion", width=20, names=True)],
        [Row([path, name]) for path, name in zip(LAYERS, [*FUSIONS, FUSIONS[0]], strict=True)],
    )
    rows = _rows(lines)
    assert len(set(rows)) == len(rows), rows
    names = [row.split("  ")[-1].strip() for row in rows[:5]]
    assert len(set(names)) == 5 and all(
        n.endswith(f".{k}") for n, k in zip(names, (2, 12, 21, 22, 3), strict=True)
    )
    assert all(len(row.split("  ")[0]) <= 24 for row in rows)


def test_a_column_no_row_fills_gives_way():
    lines = table(
        "Arguments",
        [Column("name"), Column("source", width=40), Column("size", right=True)],
        [Row(["params['w']", "", "4 B"]), Row(["params['b']", " ", "8 B"])],
    )
    header = lines[1].text.plain
    assert "source" not in header and "size" in header
    assert [row.split() for row in _rows(lines)] == [
        ["params['w']", "4", "B"],
        ["params['b']", "8", "B"],
    ]
    # A column some row fills keeps its place.
    kept = table("A", [Column("a"), Column("b")], [Row(["x", ""]), Row(["y", "z"])])
    assert "b" in kept[1].text.plain

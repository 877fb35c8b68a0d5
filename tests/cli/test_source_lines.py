"""Source lines in table cells: a long path loses its middle, a long list loses
whole entries, and a line number is never cut."""

import pytest

from hloscope.render.text.source_lines import elide_source, fit_entries, grouped_sources

LONG = ".venv/lib/python3.11/site-packages/flax/nnx/nn/linear.py:431"


@pytest.mark.parametrize("limit", range(0, len(LONG) + 2))
def test_elide_source_keeps_the_file_name_and_line(limit):
    shown = elide_source(LONG, limit)
    assert shown.endswith("linear.py:431")
    assert len(shown) <= max(limit, len("linear.py:431"))
    if len(shown) < len(LONG) and limit >= len("…/linear.py:431"):
        assert "…/" in shown and LONG.startswith(shown.partition("…")[0])


def test_elide_source_leaves_short_ones_alone():
    assert elide_source("samples/mlp.py:12", 40) == "samples/mlp.py:12"
    assert elide_source("<stdin>:3", 2) == "<stdin>:3"


def test_grouped_sources_by_file_name():
    sources = ["a/x.py:3", "a/x.py:7", "b/y.py:1"]
    assert grouped_sources(sources) == ["x.py:3,7", "y.py:1"]
    assert grouped_sources(["a/x.py:3", "a/x.py:7"], only_file="a/x.py") == ["3,7"]


@pytest.mark.parametrize("width", range(0, 40))
def test_fit_entries_keeps_whole_entries(width):
    entries = ["linear.py:431", "stochastic.py:162,166", "rnglib.py:122"]
    shown = fit_entries(entries, width, separator=" ")
    parts = shown.split(" … ")[0].split(" ")
    assert parts[0] == entries[0]
    assert all(part in entries for part in parts)
    if shown != " ".join(entries):
        assert len(shown) <= width or shown.count(" ") <= 3
        assert shown.endswith(" more")

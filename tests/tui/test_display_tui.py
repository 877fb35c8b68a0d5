"""How the browser's tabs show what they list: long pytree paths keep their end,
XLA's per-call-site clones are grouped, optimized shardings are readable."""

from __future__ import annotations

import re

from hloscope import reports
from hloscope.sources import loader
from hloscope.tui.views.overview import rendered
from hloscope.tui.views.params import params_lines
from hloscope.tui.views.placement import placement_lines

NESTED = "tests/fixtures/display_targets.py:nested_state"
NESTED_ARGS = "tests/fixtures/display_targets.py:example_args"


def test_parameters_tab_keeps_the_distinguishing_end_of_long_paths():
    loaded = loader.load(NESTED, loader.LoadOptions(args_factory=NESTED_ARGS))
    lines = params_lines(reports.params_report(loaded), loaded.module, only_unused=False)
    rows = [line.text.plain for line in lines if line.selectable]
    assert any("state[0]…['layer_3']['attn']['_query_norm']['scale']" in row for row in rows)
    # Every leaf of the tree reads differently.
    paths = [row.split("  ")[1] for row in rows if "state" in row]
    assert len(paths) == len(set(paths)) == 12


def test_placement_tab_reads_optimized_shardings():
    target = "samples/sharded_mlp.py:mlp"
    options = loader.LoadOptions(args_factory="samples/sharded_mlp.py:example_args", optimized=True)
    loaded = loader.load(target, options)
    lines = placement_lines(reports.placement_report(loaded), loaded.module)
    text = "\n".join(line.text.plain for line in lines)
    assert "{devices=" not in text
    assert "tiled [1,2], replicated ×4" in text


def test_overview_groups_xla_clones():
    loaded = loader.load("tests/fixtures/display/clones.hlo", loader.LoadOptions())
    text = rendered(reports.inspect_report(loaded), 120).plain
    assert "remainder_1 ×3" in text
    assert "remainder_1.12" not in text


def test_placement_tab_says_collectives_per_call_inside_a_scan():
    options = loader.LoadOptions(args_factory="samples/scanned_layers.py:example_args")
    loaded = loader.load("samples/scanned_layers.py:deep_mlp", options)
    lines = placement_lines(reports.placement_report(loaded), loaded.module)
    plain = [line.text.plain for line in lines]
    header = next(text for text in plain if text.lstrip().startswith("op") and "per call" in text)
    assert "bytes/call" in header
    assert any(re.match(r"all_reduce +1 +4 +0 +2\.0 KiB +8\.0 KiB", text) for text in plain)

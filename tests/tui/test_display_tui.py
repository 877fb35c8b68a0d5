"""How the browser's tabs show what they list: long pytree paths keep their end,
XLA's per-call-site clones are grouped, optimized shardings are readable."""

from __future__ import annotations

from hloscope import reports
from hloscope.sources import loader
from hloscope.tui.views.params import params_lines

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

"""How the text reports show what they list: every command takes --print, long pytree
paths keep their distinguishing end, XLA's per-call-site clones are grouped, optimized
shardings read like lowered ones, collectives inside loops say per call."""

import io
import re

import pytest
from rich.console import Console

from conftest import DUMPS
from hloscope import reports
from hloscope.render.text.common import elide_path, path_steps
from hloscope.render.text.params import render_params
from hloscope.sources import loader


def without_timings(text):
    return [line for line in text.splitlines() if " ms" not in line and " s " not in line]


PRINTED_ANYWAY = ["params", "placement", "fusions"]


@pytest.mark.parametrize("command", PRINTED_ANYWAY)
def test_commands_that_always_print_accept_print(cli, command):
    target = str(DUMPS / "mlp.after_optimizations.hlo")
    plain = cli(command, target)
    printed = cli(command, target, "--print")
    assert printed.code == 0, printed.stderr
    # The same report, timings aside.
    assert without_timings(printed.stdout) == without_timings(plain.stdout)


def test_aot_check_accepts_print(cli):
    # A bad target still reaches the command's own error, not "No such option".
    run = cli("aot-check", "samples/no_such_module.py:f", "--print")
    assert run.code == 2
    assert "No such option" not in run.stderr


LONG_PATH = "args[1][0][0]['params']['layer_3']['attn']['_query_norm']['scale']"


@pytest.mark.parametrize(
    ("limit", "shown"),
    [
        (80, LONG_PATH),
        (56, "args[1]…['layer_3']['attn']['_query_norm']['scale']"),
        (40, "args[1]…['attn']['_query_norm']['scale']"),
        (16, "…['scale']"),
        (8, "…scale']"),
    ],
)
def test_a_long_path_keeps_its_end(limit, shown):
    assert elide_path(LONG_PATH, limit) == shown
    assert len(shown) <= limit


def test_path_steps_join_back_to_the_path():
    path = "model.blocks[0]['a]b'].kernel"
    assert path_steps(path) == ["model", ".blocks", "[0]", "['a]b']", ".kernel"]


NESTED = [
    "tests/fixtures/display_targets.py:nested_state",
    "--args",
    "tests/fixtures/display_targets.py:example_args",
]


def test_params_text_keeps_the_ends_of_long_paths_in_a_narrow_table():
    loaded = loader.load(NESTED[0], loader.LoadOptions(args_factory=NESTED[2]))
    console = Console(width=80, record=True, file=io.StringIO())
    render_params(reports.params_report(loaded), console)
    text = console.export_text()
    rows = [line for line in text.splitlines() if re.match(r"\s+\d+\s+(state|…)", line)]
    # One line per argument (no path folded over two lines), each naming its leaf and
    # what tells it from the others (its layer), whatever of the root is left out.
    assert len(rows) == 12, text
    assert all(re.search(r"\['(scale|kernel)'\]\s", row) for row in rows), text
    names = [re.split(r"\s{2,}", row.strip())[1] for row in rows]
    assert len(set(names)) == len(names) and all("layer_" in name for name in names), names
    assert LONG_PATH.replace("args[1]", "state") not in text  # it did not fit: elided


def test_params_json_keeps_whole_paths(cli):
    doc = cli("params", *NESTED, "--json").json()
    assert LONG_PATH.replace("args[1]", "state") in [p["path"] for p in doc["parameters"]]


CLONES = "tests/fixtures/display/clones.hlo"


def test_inspect_lists_xla_clones_as_one_function_with_their_count(cli):
    text = cli("inspect", CLONES, "--print").stdout
    assert "Functions (5: 3 once XLA's clones are grouped)" in text
    assert re.search(r"^ remainder_1 ×3 +private", text, re.M), text
    assert "remainder_1.11" not in text and "remainder_1.12" not in text
    # The call list and the call graph merge the calls to the clones.
    assert re.search(r"main .* remainder_1 ×3, remainder_1\.14", text), text
    assert "├── remainder_1 ×3  3 ops" in text


def test_inspect_json_keeps_every_clone_and_names_the_groups(cli):
    doc = cli("inspect", CLONES, "--json").json()
    assert [f["name"] for f in doc["functions"]][:4] == [
        "remainder_1.11",
        "remainder_1.12",
        "remainder_1.13",
        "remainder_1.14",
    ]
    assert doc["function_groups"] == [
        {
            "name": "remainder_1",
            "functions": ["remainder_1.11", "remainder_1.12", "remainder_1.13"],
            "count": 3,
        }
    ]


def test_optimized_shardings_read_like_lowered_ones(cli):
    target = ["samples/sharded_mlp.py:mlp", "--args", "samples/sharded_mlp.py:example_args"]
    run = cli("placement", *target, "--compile")
    assert run.code == 0, run.stderr
    assert "{devices=" not in run.stdout
    assert re.search(r"argument +%arg0 +x +tiled \[4,1\], replicated ×2", run.stdout)
    assert re.search(r"argument +%arg1 +w1 +tiled \[1,2\], replicated ×4", run.stdout)
    # JSON keeps the sharding as XLA wrote it.
    doc = cli("placement", *target, "--compile", "--json").json()
    assert {s["sharding"] for s in doc["shardings"]} >= {
        "{devices=[4,1,2]<=[8] last_tile_dim_replicate}"
    }


def test_xla_shardings_of_a_module_with_a_mesh_are_named_by_its_axes(cli):
    text = cli("placement", "tests/fixtures/display/sharded_mlp.hlo").stdout
    assert re.search(r'argument +%arg1 +w1\.1 +@mesh \[\{\}, \{"model"\}\]', text), text


DEEP = ["samples/scanned_layers.py:deep_mlp", "--args", "samples/scanned_layers.py:example_args"]


@pytest.mark.parametrize("compiled", [[], ["--compile"]], ids=["lowered", "optimized"])
def test_collectives_in_a_scan_say_per_call(cli, compiled):
    text = cli("placement", *DEEP, *compiled).stdout
    assert re.search(r"op +count +per call +async +bytes +bytes/call", text), text
    assert re.search(r"all_reduce +1 +4 +0 +2\.0 KiB +8\.0 KiB", text), text
    doc = cli("placement", *DEEP, *compiled, "--json").json()
    (collective,) = doc["collectives"]
    assert {k: collective[k] for k in ("op", "count", "in_loops", "per_call")} == {
        "op": "all_reduce",
        "count": 1,
        "in_loops": 1,
        "per_call": 4,
    }
    assert collective["bytes_per_call"] == 4 * collective["bytes"]


def test_inspect_says_how_often_a_collective_in_a_loop_runs(cli):
    text = cli("inspect", *DEEP, "--print").stdout
    assert "all_reduce ×1 (4 per call)" in text


def test_collectives_outside_loops_keep_their_table(cli):
    target = ["samples/sharded_mlp.py:mlp", "--args", "samples/sharded_mlp.py:example_args"]
    text = cli("placement", *target, "--compile").stdout
    assert re.search(r"op +count +async +bytes +functions", text), text
    assert "per call" not in text

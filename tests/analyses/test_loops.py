"""Collectives inside loops: counted once in the module, run once per iteration; per
call counts the loops' trip counts, read from XLA or the loop's own constants."""

import pytest

from conftest import SAMPLES, line_of, require_corpus
from hloscope.analyses.placement import analyze_placement
from hloscope.analyses.placement.loops import known_trip_count
from hloscope.ir import parse
from hloscope.sources import loader

DEEP = "samples/scanned_layers.py:deep_mlp"
DEEP_ARGS = "samples/scanned_layers.py:example_args"
LAYERS = 4  # samples/scanned_layers.py


def deep_placement(optimized):
    loaded = loader.load(DEEP, loader.LoadOptions(args_factory=DEEP_ARGS, optimized=optimized))
    return analyze_placement(loaded.module), loaded.module


@pytest.mark.parametrize("optimized", [False, True], ids=["lowered", "optimized"])
def test_a_collective_in_a_scan_runs_once_per_layer(optimized):
    placement, module = deep_placement(optimized)
    (collective,) = placement.collectives
    assert (collective.op, collective.count, collective.in_loops) == ("all_reduce", 1, 1)
    assert collective.per_call == LAYERS
    assert collective.bytes is not None
    assert collective.bytes_per_call == LAYERS * collective.bytes
    line = line_of(SAMPLES / "scanned_layers.py", 'psum(partial, "model")')
    assert any(s.endswith(f"scanned_layers.py:{line}") for s in collective.sources)
    (loop,) = [op for op in module.ops if op.short_name == "while"]
    assert known_trip_count(module, loop) == LAYERS


def test_the_optimized_trip_count_is_xlas_own():
    _placement, module = deep_placement(True)
    (loop,) = [op for op in module.ops if op.short_name == "while"]
    assert loop.hlo_name is not None
    assert '"known_trip_count":{"n":"4"}' in module.backend_configs[loop.hlo_name]


def test_collectives_outside_loops_run_once():
    loaded = loader.load(
        "samples/sharded_mlp.py:mlp",
        loader.LoadOptions(args_factory="samples/sharded_mlp.py:example_args", optimized=True),
    )
    (collective,) = analyze_placement(loaded.module).collectives
    assert (collective.count, collective.in_loops, collective.per_call) == (1, 0, 1)
    assert collective.bytes_per_call == collective.bytes


def corpus_placement(relative):
    path = require_corpus() / relative
    return analyze_placement(parse.parse_hlo_text(path.read_text(), str(path)).model)


@pytest.mark.corpus
def test_two_loops_of_sixteen_trips_each_run_their_all_reduce_32_times():
    placement = corpus_placement(
        "xla-cc-embedded-hlo/xla/service/while_loop_all_reduce_code_motion_test.027.hlo"
    )
    (collective,) = placement.collectives
    assert (collective.count, collective.in_loops, collective.per_call) == (2, 2, 32)


@pytest.mark.corpus
def test_a_loop_of_unknown_trip_count_leaves_per_call_unknown():
    placement = corpus_placement(
        "xla-cc-embedded-hlo/xla/service/while_loop_all_reduce_code_motion_test.022.hlo"
    )
    (collective,) = placement.collectives
    assert collective.in_loops == 1
    assert collective.per_call is None and collective.bytes_per_call is None

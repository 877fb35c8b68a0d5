"""`hloscope placement` and the placement summary of `inspect`, through the command
layer: the JSON contract and the text report."""

import pytest

from conftest import SAMPLES, line_of, require_corpus, sample

PLACEMENT_KEYS = {"summary", "host_regions", "transfers", "collectives", "shardings"}


def assert_placement_contract(doc):
    assert doc["schema_version"] == 1
    assert doc["command"] == "placement"
    assert isinstance(doc["target"], str)
    assert doc.keys() >= PLACEMENT_KEYS
    assert all(isinstance(v, int) for v in doc["summary"].values())
    assert sum(doc["summary"].values()) == doc["total_ops"]
    for region in doc["host_regions"]:
        assert {"function", "ops", "sources"} <= region.keys()
    for transfer in doc["transfers"]:
        assert {"kind", "detail", "sources"} <= transfer.keys()
    for collective in doc["collectives"]:
        assert {"op", "count"} <= collective.keys()
    for sharding in doc["shardings"]:
        assert {"value", "sharding"} <= sharding.keys()


def test_placement_json_of_compute_on_inside_jit(cli):
    run = cli("placement", *sample("compute_on", "host_call_inside_jit"), "--json")
    assert run.code == 0, run.stderr
    doc = run.json()
    assert_placement_contract(doc)
    assert doc["summary"] == {"device": 2, "host": 5}
    (region,) = doc["host_regions"]
    assert region["function"] == "host_helper" and region["ops"] == 5
    line = line_of(SAMPLES / "compute_on.py", "jnp.sin(x) * 3.0")
    assert any(s.endswith(f"samples/compute_on.py:{line}") for s in region["sources"])
    assert {p["function"] for p in doc["placed_ops"]} == {"main", "host_helper"}


def test_placement_json_of_the_sharded_mlp_compiled(cli):
    run = cli("placement", *sample("sharded_mlp", "mlp"), "--compile", "--json")
    assert run.code == 0, run.stderr
    doc = run.json()
    assert_placement_contract(doc)
    assert doc["source"]["stage"] == "optimized"
    assert [(c["op"], c["count"]) for c in doc["collectives"]] == [("all_reduce", 1)]
    assert [s["value"] for s in doc["shardings"]] == ["%arg0", "%arg1", "%arg2", "result 0"]


@pytest.mark.corpus
def test_placement_json_of_a_dump_with_host_memory(cli, corpus):
    path = corpus / "xla-cc-embedded-hlo/xla/hlo/transforms/host_offloader_test.008.hlo"
    run = cli("placement", str(path), "--json")
    assert run.code == 0, run.stderr
    doc = run.json()
    assert_placement_contract(doc)
    assert [(m["value"], m["memory_kind"], m["host"]) for m in doc["memory_kinds"]] == [
        ("%arg0", "S(5)", True)
    ]
    assert {t["kind"] for t in doc["transfers"]} == {"MoveToDevice", "copy"}


def test_placement_text_report(cli):
    run = cli("placement", *sample("memory_kinds", "host_input"))
    assert run.code == 0, run.stderr
    out = run.stdout
    assert "compute  4 ops: device 4" in out
    assert "Memory kinds (2)" in out and "pinned_host" in out
    assert "Warnings (1)" in out and "argument x" in out
    line = line_of(SAMPLES / "memory_kinds.py", "return x * 2.0")
    assert f"samples/memory_kinds.py:{line}" in out


def test_placement_text_of_host_regions_and_collectives(cli):
    run = cli("placement", *sample("compute_on", "host_inside_jit"))
    assert run.code == 0, run.stderr
    assert "Host regions (1)" in run.stdout
    run = cli("placement", *sample("sharded_mlp", "mlp_shard_map"))
    assert run.code == 0, run.stderr
    assert "Manual computations (1)" in run.stdout
    assert "Collectives (1)" in run.stdout and "all_reduce" in run.stdout
    assert "@mesh data=4 × model=2 (8 devices)" in run.stdout


def test_placement_bad_input_is_one_line(cli, tmp_path):
    bad = tmp_path / "bad.mlir"
    bad.write_text("module {\n  func.func @f() {\n    nope\n  }\n}\n")
    run = cli("placement", str(bad), "--json")
    assert run.code == 2
    assert run.stdout == ""
    assert len(run.stderr.strip().splitlines()) == 1


def test_inspect_carries_the_placement_summary(cli):
    run = cli("inspect", *sample("memory_kinds", "host_compute_to_host_memory"), "--json")
    assert run.code == 0, run.stderr
    placement = run.json()["placement"]
    assert PLACEMENT_KEYS - {"shardings"} <= placement.keys()
    assert placement["summary"] == {"device": 1, "host": 5}
    assert [w["kind"] for w in placement["warnings"]] == ["large_host_input"]
    text = cli("inspect", *sample("memory_kinds", "host_compute_to_host_memory"), "--print")
    assert "placement  device 1 · host 5 · 1 host region" in text.stdout
    assert "Warnings (1)" in text.stdout


def test_inspect_of_a_plain_module_has_no_placement_line(cli):
    run = cli("inspect", *sample("nested_jits", "mlp"), "--print")
    assert run.code == 0, run.stderr
    assert "placement" not in run.stdout


@pytest.mark.corpus
def test_corpus_placement_json_never_fails(cli):
    corpus = require_corpus()
    for relative in (
        "xla/xla/backends/cpu/tests/thunk_coverage/host_offload.hlo",
        "jax/export_back_compat_test_data/tpu_Sharding/data_2025_06_30_gspmd.mlir",
        "jax/export_back_compat_test_data/export_with_memory_space/serialization_v12.jax_exported.fb",
        "xla-cc-embedded-hlo/xla/service/gpu/execution_stream_assignment_test.008.hlo",
    ):
        run = cli("placement", str(corpus / relative), "--json")
        assert run.code == 0, (relative, run.stderr)
        assert_placement_contract(run.json())

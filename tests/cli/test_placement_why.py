"""`placement --why` on real sharded programs on 8 CPU devices
(samples/why_collectives.py), its causes compared with Shardy's own dump of the
same programs: the origin attributes (`sdy.sharding_origins`) XLA writes with
`xla_dump_hlo_pass_re=shardy-verbose`, read here from the files, not from what
hloscope printed before. A GSPMD compilation has no origins: exit 0, one note."""

import textwrap

from conftest import ROOT
from why_support import (
    argument_origins,
    compile_in_child,
    hloscope_json,
    shardy_dump,
    source_line,
)

SAMPLE = "samples/why_collectives.py"


def why_json(target, args, cwd=ROOT):
    return hloscope_json("placement", target, "--args", args, "--why", cwd=cwd)


def shardy_dump_of(name, tmp_path):
    """Shardy's after-propagation dump of the sample's `name`, compiled in a child."""
    compile_in_child(SAMPLE, name, f"{name}_args", verbose=tmp_path)
    return shardy_dump(tmp_path)


def line_of(text):
    return source_line(SAMPLE, text)


def only_site(document, op):
    (group,) = [c for c in document["collectives"] if c["op"] == op]
    (site,) = group["sites"]
    return site


def test_constraint_forces_an_all_gather(tmp_path):
    dump = shardy_dump_of("constrained", tmp_path)
    # Shardy: w1 (argument 1) set `model` itself; the constraint is constraint_0.
    assert argument_origins(dump)[1] == {"model": "self"}
    assert 'sdy.sharding_origin_name = "constraint_0"' in dump
    site = only_site(why_json(f"{SAMPLE}:constrained", f"{SAMPLE}:constrained_args"), "all_gather")
    assert site["axes"] == ["model"]
    (cause,) = site["causes"]
    assert [(o["origin"], o["index"], o["argument"]) for o in cause["sharded_by"]] == [
        ("argument", 1, "w1")
    ]
    (asked,) = cause["unsharded_by"]
    assert (asked["origin"], asked["name"]) == ("constraint", "constraint_0")
    assert asked["source"].endswith(line_of("with_sharding_constraint"))
    assert site["meets"].endswith(line_of("h = x @ w1"))
    assert "argument `w1` (P(None, 'model'))" in site["sentence"]


def test_contracting_dimension_all_reduce(tmp_path):
    dump = shardy_dump_of("contracting", tmp_path)
    assert argument_origins(dump) == {0: {"model": "self"}, 1: {"model": "self"}}
    site = only_site(why_json(f"{SAMPLE}:contracting", f"{SAMPLE}:contracting_args"), "all_reduce")
    assert site["axes"] == ["model"]
    (cause,) = site["causes"]
    assert {o["argument"] for o in cause["sharded_by"]} == {"x", "w"}
    assert "reduces a dimension sharded along `model`" in site["sentence"]


def test_replicated_out_shardings_gather_at_the_end(tmp_path):
    dump = shardy_dump_of("replicated_out", tmp_path)
    assert argument_origins(dump)[0] == {"data": "self"}
    document = why_json(f"{SAMPLE}:replicated_out", f"{SAMPLE}:replicated_out_args")
    site = only_site(document, "all_gather")
    assert site["axes"] == ["data"]
    (cause,) = site["causes"]
    assert [o["argument"] for o in cause["sharded_by"]] == ["x"]
    assert [(o["origin"], o["index"]) for o in cause["unsharded_by"]] == [("result", 0)]
    assert site["meets"] == "result 0"
    origins = {(o["origin"], o["index"]): o for o in document["why"]["origins"]}
    assert origins[("argument", 0)]["collectives"] == [site["instruction"]]


def test_gspmd_has_a_note_and_exits_0(tmp_path):
    target = tmp_path / "gspmd.py"
    target.write_text(
        textwrap.dedent(
            f"""
            import importlib.util
            import jax
            jax.config.update("jax_use_shardy_partitioner", False)
            spec = importlib.util.spec_from_file_location("s", {str(ROOT / SAMPLE)!r})
            m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
            constrained, constrained_args = m.constrained, m.constrained_args
            """
        )
    )
    document = why_json(f"{target}:constrained", f"{target}:constrained_args")
    assert document["why"]["available"] is False
    assert "GSPMD" in document["why"]["note"]
    assert any("GSPMD" in note for note in document["notes"])
    (group,) = document["collectives"]
    assert group["sites"] and all(site["note"] for site in group["sites"])

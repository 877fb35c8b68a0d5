"""`placement --why` on real sharded programs on 8 CPU devices
(samples/why_collectives.py), its causes compared with Shardy's own dump of the
same programs: the origin attributes (`sdy.sharding_origins`) XLA writes with
`xla_dump_hlo_pass_re=shardy-verbose`, read here from the files, not from what
hloscope printed before. A GSPMD compilation has no origins: exit 0, one note."""

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

SAMPLE = "samples/why_collectives.py"
ROOT = Path(__file__).resolve().parents[2]


def why_json(target, args, cwd=ROOT):
    done = subprocess.run(
        [sys.executable, "-m", "hloscope", "placement", target, "--args", args, "--why", "--json"],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=300,
        env={**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=8"},
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def shardy_dump(name, tmp_path):
    """Shardy's after-propagation dump of the sample's `name`, compiled in a child."""
    code = textwrap.dedent(
        f"""
        import importlib.util, sys
        spec = importlib.util.spec_from_file_location("s", {SAMPLE!r})
        m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
        m.{name}.lower(*m.{name}_args()).compile(compiler_options={{
            "xla_dump_to": {str(tmp_path)!r}, "xla_dump_hlo_pass_re": "shardy-verbose"}})
        """
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT, timeout=300)
    (path,) = tmp_path.glob("shardy/*/02.after_propagation.mlir")
    return path.read_text()


def line_of(text):
    lines = (ROOT / SAMPLE).read_text().splitlines()
    return f"{SAMPLE}:{next(i for i, line in enumerate(lines, 1) if text in line)}"


def argument_origins(dump):
    """Shardy's `sdy.sharding_origins` of each entry argument: index -> {axis: origin}."""
    main = re.search(r"func\.func @main\((.*?)\) ->", dump).group(1)
    out = {}
    for chunk in main.split("%arg")[1:]:
        index = int(chunk.partition(":")[0])
        origins = re.search(r"sdy\.sharding_origins = \{([^}]*)\}", chunk)
        if origins:
            out[index] = dict(re.findall(r'(\w+) = "([^"]+)"', origins.group(1)))
    return out


def only_site(document, op):
    (group,) = [c for c in document["collectives"] if c["op"] == op]
    (site,) = group["sites"]
    return site


def test_constraint_forces_an_all_gather(tmp_path):
    dump = shardy_dump("constrained", tmp_path)
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
    dump = shardy_dump("contracting", tmp_path)
    assert argument_origins(dump) == {0: {"model": "self"}, 1: {"model": "self"}}
    site = only_site(why_json(f"{SAMPLE}:contracting", f"{SAMPLE}:contracting_args"), "all_reduce")
    assert site["axes"] == ["model"]
    (cause,) = site["causes"]
    assert {o["argument"] for o in cause["sharded_by"]} == {"x", "w"}
    assert "reduces a dimension sharded along `model`" in site["sentence"]


def test_replicated_out_shardings_gather_at_the_end(tmp_path):
    dump = shardy_dump("replicated_out", tmp_path)
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

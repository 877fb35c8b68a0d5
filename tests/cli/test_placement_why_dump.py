"""`placement DUMPDIR --why` on a user's own XLA dump folder: written here, in the
test, by compiling samples/why_collectives.py's `constrained` on 8 CPU devices with
`xla_dump_to` (and `xla_dump_hlo_pass_re=shardy-verbose` for Shardy's files). The
folder's Shardy dump is read for the origins, and its optimized module for the
collectives (nothing is compiled again); the causes are compared with the origin
attributes of that same file. A folder without Shardy's files says so in one note."""

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = "samples/why_collectives.py"
ENV = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=8"}


def dump_folders(tmp_path):
    """`constrained` compiled twice in a child: dumped with Shardy's verbose files
    (`verbose/`), and without them (`plain/`)."""
    verbose, plain = tmp_path / "verbose", tmp_path / "plain"
    code = textwrap.dedent(
        f"""
        import importlib.util
        spec = importlib.util.spec_from_file_location("s", {SAMPLE!r})
        m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
        lowered = m.constrained.lower(*m.constrained_args())
        lowered.compile(compiler_options={{
            "xla_dump_to": {str(verbose)!r}, "xla_dump_hlo_pass_re": "shardy-verbose"}})
        m.constrained.lower(*m.constrained_args()).compile(
            compiler_options={{"xla_dump_to": {str(plain)!r}}})
        """
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT, timeout=300, env=ENV)
    return verbose, plain


def why_json(folder):
    return placement_json(folder, "--why")


def placement_json(target, *options):
    done = subprocess.run(
        [sys.executable, "-m", "hloscope", "placement", str(target), *options, "--json"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
        env=ENV,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_a_dump_folder_with_shardys_files_gives_the_origins(tmp_path):
    verbose, plain = dump_folders(tmp_path)
    (propagated,) = verbose.glob("shardy/*/02.after_propagation.mlir")
    dump = propagated.read_text()
    # Shardy's own record in the folder: argument 1 set `model` itself, and the
    # constraint is `constraint_0`.
    main = re.search(r"func\.func @main\((.*?)\) ->", dump).group(1)
    set_model = [
        int(chunk.partition(":")[0])
        for chunk in main.split("%arg")[1:]
        if re.search(r'sdy\.sharding_origins = \{model = "self"\}', chunk)
    ]
    assert set_model == [1]
    assert 'sdy.sharding_origin_name = "constraint_0"' in dump

    document = why_json(verbose)
    # The folder's optimized module, read as it is (not compiled here).
    assert document["source"]["stage"] == "optimized"
    assert document["source"]["path"].endswith("after_optimizations.txt")
    assert document["why"]["available"] is True
    (group,) = [c for c in document["collectives"] if c["op"] == "all_gather"]
    (site,) = group["sites"]
    assert site["axes"] == ["model"] and site["note"] is None
    (cause,) = site["causes"]
    assert [(o["origin"], o["index"]) for o in cause["sharded_by"]] == [("argument", 1)]
    assert cause["sharded_by"][0]["argument"] == "w1"
    (asked,) = cause["unsharded_by"]
    assert (asked["origin"], asked["name"]) == ("constraint", "constraint_0")
    lines = (ROOT / SAMPLE).read_text().splitlines()
    constraint = next(i for i, line in enumerate(lines, 1) if "with_sharding_constraint" in line)
    assert asked["source"].endswith(f"{SAMPLE}:{constraint}")

    # The same program dumped without Shardy's files: one note, no origins.
    document = why_json(plain)
    assert not list(plain.glob("shardy"))
    assert document["why"]["available"] is False
    note = document["why"]["note"]
    assert "holds no Shardy dump" in note and "shardy-verbose" in note
    assert note in document["notes"]
    (group,) = document["collectives"]
    assert group["sites"] and all(site["note"] == note for site in group["sites"])


def test_a_partitioned_hlo_dump_keeps_its_device_counts(tmp_path):
    """XLA's HLO-to-MLIR conversion drops the header's `num_partitions=8`: the dump's
    module must still be compiled for (and reported on) 8 partitions, as XLA compiled
    it, or its collectives vanish."""
    _, plain = dump_folders(tmp_path)
    (before,) = plain.glob("*.before_optimizations.txt")
    (after,) = plain.glob("*after_optimizations.txt")
    header = before.read_text().split("\n", 1)[0]
    assert "num_partitions=8" in header.split(", ")
    # XLA's own optimized module has the all-gather.
    assert "all-gather(" in after.read_text()

    document = placement_json(before, "--compile")
    assert (document["partitions"], document["replicas"]) == (8, 1)
    assert [c["op"] for c in document["collectives"]] == ["all_gather"]

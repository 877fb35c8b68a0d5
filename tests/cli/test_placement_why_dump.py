"""`placement DUMPDIR --why` on a user's own XLA dump folder: written here, in the
test, by compiling samples/why_collectives.py's `constrained` on 8 CPU devices with
`xla_dump_to` (and `xla_dump_hlo_pass_re=shardy-verbose` for Shardy's files). The
folder's Shardy dump is read for the origins, and its optimized module for the
collectives (nothing is compiled again); the causes are compared with the origin
attributes of that same file. A folder without Shardy's files says so in one note."""

from why_support import (
    argument_origins,
    compile_in_child,
    hloscope_json,
    shardy_dump,
    source_line,
)

SAMPLE = "samples/why_collectives.py"


def dump_folders(tmp_path):
    """`constrained` compiled twice in a child: dumped with Shardy's verbose files
    (`verbose/`), and without them (`plain/`)."""
    verbose, plain = tmp_path / "verbose", tmp_path / "plain"
    compile_in_child(SAMPLE, "constrained", "constrained_args", verbose=verbose, plain=plain)
    return verbose, plain


def why_json(folder):
    return placement_json(folder, "--why")


def placement_json(target, *options):
    return hloscope_json("placement", str(target), *options)


def test_a_dump_folder_with_shardys_files_gives_the_origins(tmp_path):
    verbose, plain = dump_folders(tmp_path)
    dump = shardy_dump(verbose)
    # Shardy's own record in the folder: argument 1 set `model` itself, and the
    # constraint is `constraint_0`.
    set_model = [i for i, axes in argument_origins(dump).items() if axes == {"model": "self"}]
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
    assert asked["source"].endswith(source_line(SAMPLE, "with_sharding_constraint"))

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

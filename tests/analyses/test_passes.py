"""`passes`: XLA's per-pass dumps, listed and searched, checked against the files
themselves (read here with plain text matching, independently of the census)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from hloscope import reports
from hloscope.analyses.passes import census, find_in_passes
from hloscope.errors import HloscopeError
from hloscope.sources import dumps, loader
from hloscope.sources.passes import pass_dumps


def passes_of(
    target: str,
    options: loader.LoadOptions | None = None,
    find: str | None = None,
    diff: str | None = None,
) -> reports.PassesReport:
    with pass_dumps(target, options) as dumped:
        return reports.passes_report(dumped, find, diff)


PASS_FILE = re.compile(r"^module_\d+\..+?\.(\d{4})\..+\.txt$")


def dump_passes(folder: Path, target: str, factory: str) -> Path:
    """Compile `target` here with XLA's per-pass dumping into `folder`."""
    options = loader.LoadOptions(
        args_factory=factory,
        optimized=True,
        compiler_options=(("xla_dump_to", str(folder)), ("xla_dump_hlo_pass_re", ".*")),
    )
    loader.load(target, options)
    return folder


def pass_files(folder: Path) -> list[Path]:
    """The per-pass files, in XLA's step order, found by name alone."""
    found = [(int(m[1]), p) for p in folder.iterdir() if (m := PASS_FILE.match(p.name))]
    return [p for _, p in sorted(found)]


@pytest.fixture(scope="module")
def compute_on_dump(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return dump_passes(
        tmp_path_factory.mktemp("compute_on"),
        "samples/compute_on.py:host_inside_jit",
        "samples/compute_on.py:example_args",
    )


@pytest.fixture(scope="module")
def sharded_dump(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return dump_passes(
        tmp_path_factory.mktemp("sharded"),
        "samples/sharded_mlp.py:mlp",
        "samples/sharded_mlp.py:example_args",
    )


@pytest.fixture(scope="module")
def fusions_dump(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return dump_passes(
        tmp_path_factory.mktemp("fusions"),
        "samples/nested_jits.py:mlp",
        "samples/nested_jits.py:example_args",
    )


HLO = """\
HloModule m, is_scheduled=true

%fused_computation (p: f32[8]) -> f32[8] {
  %p = f32[8]{0} parameter(0)
  %c = f32[] constant(2)
  %b = f32[8]{0} broadcast(%c), dimensions={}
  ROOT %m = f32[8]{0} multiply(%p, %b), frontend_attributes={_xla_compute_type="host"}
}

ENTRY %main.3 (x: f32[8]) -> (f32[8], f32[8]) {
  %x = f32[8]{0} parameter(0)
  %f = f32[8]{0} fusion(%x), kind=kLoop, calls=%fused_computation
  %cc = f32[8]{0} custom-call(%f), custom_call_target="MoveToHost", metadata={SOURCE}
  %ag = f32[8]{0:T(8)S(5)} all-gather(%cc), dimensions={0}
  ROOT %t = (f32[8]{0}, /*index=1*/f32[8]{0}) tuple(%ag, %cc)
}
""".replace("SOURCE", 'source_file="/a/model.py" source_line=42')


def test_census_counts_instructions_by_opcode_and_fused_apart() -> None:
    counted = census(HLO)
    assert counted.ops == 9
    assert dict(counted.kinds) == {
        "parameter": 2,
        "constant": 1,
        "broadcast": 1,
        "multiply": 1,
        "fusion": 1,
        "custom-call": 1,
        "all-gather": 1,
        "tuple": 1,
    }
    assert counted.fused_ops == 4
    assert counted.fused_kinds["multiply"] == 1 and "fusion" not in counted.fused_kinds


def test_census_matches_text_custom_call_targets_and_source_lines() -> None:
    assert census(HLO, "_xla_compute_type").text_matches == 1
    assert census(HLO, "_xla_compute_type").text_matches_fused == 1
    assert census(HLO, "MoveToHost").custom_call_matches == 1
    assert census(HLO, "model.py:42").source_matches == 1
    assert census(HLO, "model.py:43").source_matches == 0
    assert census(HLO, "other.py:42").source_matches == 0


def test_the_listing_matches_the_files(compute_on_dump: Path) -> None:
    folder = dumps.list_folder(compute_on_dump)
    (module,) = [m for m in folder.modules if m.passes]
    assert [f.path for f in module.passes] == pass_files(compute_on_dump)
    report = passes_of(str(compute_on_dump))
    assert report.files == tuple(p.name for p in pass_files(compute_on_dump))
    for step, path in zip(report.table.steps, pass_files(compute_on_dump), strict=True):
        assert f".after_{step.pass_name}" in path.name
        assert f".{step.pipeline}.after_" in path.name
    # Op counts: instruction lines (`name = ...`) in each file.
    instruction = re.compile(r"^\s+(ROOT )?%\S+ = ", re.MULTILINE)
    assert [s.ops for s in report.table.steps] == [
        len(instruction.findall(p.read_text())) for p in pass_files(compute_on_dump)
    ]


def test_find_names_the_pass_that_fuses_the_host_ops(compute_on_dump: Path) -> None:
    report = passes_of(str(compute_on_dump), find="_xla_compute_type")
    found = report.find
    assert found is not None and found.kind == "text"
    files = pass_files(compute_on_dump)
    counts = [p.read_text().count("_xla_compute_type") for p in files]
    assert list(found.counts) == counts
    assert found.first_seen is not None and found.first_seen.pass_name == "before_optimizations"
    # On the CPU the mark survives: the host ops move into a fusion at `fusion`.
    (change,) = found.changes
    assert change.pass_name == "fusion"
    assert (change.fused_before, change.fused_after) == (0, 2)
    fused_at = next(
        i for i, p in enumerate(files) if "_xla_compute_type" in p.read_text().split("ENTRY")[0]
    )
    assert change.index == fused_at


def test_find_names_where_the_partitioner_inserts_the_all_reduce(sharded_dump: Path) -> None:
    report = passes_of(str(sharded_dump), find="all-reduce")
    found = report.find
    assert found is not None and found.kind == "op"
    files = pass_files(sharded_dump)
    first = next(i for i, p in enumerate(files) if " all-reduce(" in p.read_text())
    assert found.first_seen is not None and found.first_seen.index == first
    assert found.changes[0].index == first and found.changes[0].before == 0
    assert found.gone_at is None
    assert "spmd" in report.table.steps[first].pipeline


def test_fusions_appear_where_the_files_say(fusions_dump: Path) -> None:
    report = passes_of(str(fusions_dump), find="fusion")
    files = pass_files(fusions_dump)
    counts = [len(re.findall(r" fusion\(", p.read_text())) for p in files]
    assert [s.fusions for s in report.table.steps] == counts
    assert report.find is not None and list(report.find.counts) == counts
    changed = {c.index for c in report.find.changes}
    assert changed == {i for i in range(1, len(counts)) if counts[i] != counts[i - 1]} | (
        {0} if counts[0] else set()
    )
    made = [s for s in report.table.steps if any(c.kind == "fusion" for c in s.changed_kinds)]
    assert made and all(s.index in changed for s in made)


def test_the_diff_of_a_pass_shows_its_change(compute_on_dump: Path) -> None:
    report = passes_of(str(compute_on_dump), diff="fusion")
    assert report.diff is not None and report.diff_index is not None
    assert report.table.steps[report.diff_index].pass_name == "fusion"
    assert not report.diff.same
    assert any(g.kind == "added" and g.op.endswith("fusion") for g in report.diff.diff.groups)
    quiet = passes_of(str(compute_on_dump), diff=str(report.diff_index - 1))
    assert quiet.diff is not None


def test_the_entrypoint_and_its_folder_give_the_same_pipeline(compute_on_dump: Path) -> None:
    from_folder = passes_of(str(compute_on_dump), find="_xla_compute_type")
    from_entrypoint = passes_of(
        "samples/compute_on.py:host_inside_jit",
        loader.LoadOptions(args_factory="samples/compute_on.py:example_args"),
        find="_xla_compute_type",
    )
    assert from_entrypoint.folder is None and from_entrypoint.compile_seconds is not None

    def rows(report: reports.PassesReport) -> list[tuple[str, str, int, int | None]]:
        return [(s.pipeline, s.pass_name, s.ops, s.ops_delta) for s in report.table.steps]

    assert rows(from_entrypoint) == rows(from_folder)
    assert from_entrypoint.find == from_folder.find


def test_a_before_optimization_dump_is_compiled_with_pass_dumps(compute_on_dump: Path) -> None:
    (before,) = compute_on_dump.glob("*before_optimizations.txt")
    report = passes_of(str(before))
    assert report.table.steps and report.folder is None
    assert any(s.pass_name == "fusion" for s in report.table.steps)


def test_a_folder_without_per_pass_files_names_the_flag(tmp_path: Path) -> None:
    options = loader.LoadOptions(
        args_factory="samples/compute_on.py:example_args",
        optimized=True,
        compiler_options=(("xla_dump_to", str(tmp_path)),),
    )
    loader.load("samples/compute_on.py:host_inside_jit", options)
    with pytest.raises(HloscopeError, match=re.escape("--xla_dump_hlo_pass_re=.*")):
        passes_of(str(tmp_path))


def test_find_reports_where_a_pattern_is_gone() -> None:
    from hloscope.analyses.passes import PassName

    texts = [HLO, HLO.replace("all-gather", "copy"), HLO.replace("all-gather", "copy")]
    names = [PassName(i, "p", f"pass{i}", None, f"f{i}") for i in range(3)]
    found = find_in_passes("all-gather", names, [census(t, "all-gather") for t in texts])
    assert found.first_seen is not None and found.first_seen.index == 0
    assert found.gone_at is not None and found.gone_at.pass_name == "pass1"
    assert [(c.index, c.before, c.after) for c in found.changes] == [(1, 1, 0)]


def test_pass_file_names_parse_generically(tmp_path: Path) -> None:
    names = [
        "module_0012.jit_train_step.0042.spmd-partitioning.after_spmd-partitioner"
        ".before_sharding-remover.txt",
        "module_0012.jit_train_step.0043.copy-insertion.after_adding_copies.txt",
        "module_0003.pjit_f.1.0007.GPU_fusion_pipeline.after_priority-fusion"
        ".before_multi_output_fusion.txt",
        "module_0012.jit_train_step.before_optimizations.txt",
        "module_0012.jit_train_step.sm_9.0_gpu_after_optimizations.txt",
    ]
    for name in names:
        (tmp_path / name).write_text("HloModule m\n")
    parsed = [dumps.parse_pass_file(tmp_path / name) for name in names]
    assert parsed[3] is None and parsed[4] is None
    key, module, first = parsed[0]  # type: ignore[misc]
    assert (key, module, first.step, first.pipeline) == (
        "module_0012.jit_train_step",
        "jit_train_step",
        42,
        "spmd-partitioning",
    )
    assert (first.after, first.before) == ("spmd-partitioner", "sharding-remover")
    during = parsed[1]
    assert during is not None and (during[2].after, during[2].before) == ("adding_copies", None)
    dotted = parsed[2]
    assert dotted is not None and dotted[1] == "pjit_f.1" and dotted[2].after == "priority-fusion"
    folder = dumps.list_folder(tmp_path)
    module_12 = next(m for m in folder.modules if m.key == "module_0012.jit_train_step")
    assert [f.step for f in module_12.passes] == [42, 43]
    assert module_12.before is not None and module_12.after is not None
    only_passes = next(m for m in folder.modules if m.key == "module_0003.pjit_f.1")
    assert only_passes.before is None and [f.step for f in only_passes.passes] == [7]


def test_a_folder_of_only_per_pass_files_loads_its_last_pass(
    compute_on_dump: Path, tmp_path: Path
) -> None:
    for path in pass_files(compute_on_dump):
        (tmp_path / path.name).write_bytes(path.read_bytes())
    loaded = loader.load(str(tmp_path))
    assert loaded.source.stage == "optimized"
    assert loaded.source.path is not None and loaded.source.path.endswith(
        pass_files(compute_on_dump)[-1].name
    )
    assert passes_of(str(tmp_path)).table.input_ops is None


def test_find_names_the_pass_that_strips_the_placement_annotations(tmp_path: Path) -> None:
    loader.load(
        "samples/memory_kinds.py:offload_for_tpu",
        loader.LoadOptions(
            optimized=True,
            compiler_options=(("xla_dump_to", str(tmp_path)), ("xla_dump_hlo_pass_re", ".*")),
        ),
    )
    report = passes_of(str(tmp_path), find="annotate_device_placement")
    found = report.find
    assert found is not None and found.kind == "custom-call"
    target = 'custom_call_target="annotate_device_placement"'
    counts = [p.read_text().count(target) for p in pass_files(tmp_path)]
    assert list(found.counts) == counts
    gone = next(i for i, count in enumerate(counts) if count == 0)
    assert found.gone_at is not None and found.gone_at.index == gone
    assert f".after_{found.gone_at.pass_name}." in pass_files(tmp_path)[gone].name
    assert found.gone_at.pass_name == "strip-memory-placement-annotations"

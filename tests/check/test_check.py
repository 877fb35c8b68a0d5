"""`hloscope check` on real programs: each change a user makes is caught with the
right fact and the line it comes from, and a program that did not change reports
nothing. The expectations are JAX's and XLA's own answers (the collectives XLA
inserted, JAX's donation, XLA's memory analysis), read here directly."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path

import pytest

from conftest import line_of, run_cli
from hloscope.analyses.baseline.facts import UNKNOWN_SITE, FactValue
from hloscope.check_run import check_one
from hloscope.reports.check import CheckReport
from hloscope.sources.loader import LoadOptions

MODELS = "tests/fixtures/check_models.py"
TRAIN = "samples/check/train_step.py"
TRAIN_ARGS = LoadOptions(args_factory=f"{TRAIN}:example_args")


def check(target: str, path: Path, factory: str | None = None, **kwargs) -> CheckReport:
    options = LoadOptions(args_factory=factory) if factory else LoadOptions()
    return check_one(target, path, options=options, **kwargs)


def regressions(report: CheckReport) -> dict[str, tuple[FactValue | None, FactValue | None]]:
    comparison = report.checks[0].comparison
    assert comparison is not None
    return {c.fact: (c.before, c.after) for c in comparison.regressions}


def change(report: CheckReport, fact: str):
    comparison = report.checks[0].comparison
    assert comparison is not None
    return next(c for c in comparison.changes if c.fact == fact)


def test_removing_checkpoint_is_a_memory_regression_from_the_scan(tmp_path: Path) -> None:
    baseline = tmp_path / "step.json"
    recorded = check_one(f"{TRAIN}:step", baseline, options=TRAIN_ARGS, update=True)
    assert recorded.passed and baseline.is_file()
    report = check_one(f"{TRAIN}:step_without_remat", baseline, options=TRAIN_ARGS)
    assert not report.passed
    found = regressions(report)
    before, after = found["memory.peak_bytes"]
    assert before is not None and after is not None and after > 2 * before
    assert "memory.temp_bytes" in found
    # Nothing about parameters, collectives or transfers moved.
    assert not [f for f in found if f.split(".")[0] in ("params", "collectives", "transfers")]
    # The buffers that grew at the peak are the residuals the scan now stacks, made
    # by the scan's line, and the memory change names that line.
    scan_line = f"{TRAIN}:{line_of(Path(TRAIN), 'jax.lax.scan(body')}"
    grown = report.checks[0].comparison.grown_at_peak  # type: ignore[union-attr]
    assert grown[0].site == scan_line
    assert any(shape.startswith("f32[8,2048,512]") for shape in grown[0].shapes)
    assert change(report, "memory.peak_bytes").sources[0] == scan_line


def test_a_weight_split_over_devices_adds_the_all_gather_xla_inserted(tmp_path: Path) -> None:
    baseline = tmp_path / "layer.json"
    check(f"{MODELS}:layer", baseline, f"{MODELS}:replicated_weight", update=True)
    report = check(f"{MODELS}:layer", baseline, f"{MODELS}:split_weight")
    found = regressions(report)
    assert found["collectives.all-gather.count"] == (None, 1)
    assert [f for f in found if f.startswith("collectives.")] == [
        "collectives.all-gather.bytes",
        "collectives.all-gather.bytes_per_call",
        "collectives.all-gather.count",
        "collectives.all-gather.per_call",
    ]
    # XLA's own optimized module holds exactly that all-gather.
    optimized = report.checks[0].measurement.facts
    assert optimized["ops.optimized.stablehlo.all_gather"] == 1
    line = f"{MODELS}:{line_of(Path(MODELS), 'return jnp.tanh(x @ w)')}"
    assert change(report, "collectives.all-gather.count").sources == (line,)
    assert not [f for f in found if f.startswith("params.")]


def test_dropping_donation_loses_the_alias_xla_made(tmp_path: Path) -> None:
    baseline = tmp_path / "update.json"
    recorded = check(f"{MODELS}:update_donated", baseline, f"{MODELS}:update_args", update=True)
    facts = recorded.checks[0].measurement.facts
    assert facts["params.donated"] == 2
    assert {f for f in facts if f.startswith("params.aliases.")} == {
        "params.aliases.params['b']",
        "params.aliases.params['w']",
    }
    report = check(f"{MODELS}:update_not_donated", baseline, f"{MODELS}:update_args")
    found = regressions(report)
    assert found["params.donated"] == (2, 0)
    assert found["params.aliases.params['w']"][1] is None
    assert found["memory.alias_bytes"] == (facts["memory.alias_bytes"], 0)
    assert not [f for f in found if f.startswith(("collectives.", "ops."))]


def test_a_step_moved_to_bf16_donates_as_much_and_passes_fewer_bytes(tmp_path: Path) -> None:
    # Check's rule: fewer bytes passed is not a regression, and a donation regression
    # is an argument that stops being donated, not fewer donated bytes.
    baseline = tmp_path / "update.json"
    recorded = check(f"{MODELS}:update_donated", baseline, f"{MODELS}:update_args", update=True)
    report = check(f"{MODELS}:update_donated", baseline, f"{MODELS}:update_args_bf16")
    # (The CPU computes bf16 in f32: its converts are regressions, and right.)
    assert not [f for f in regressions(report) if f.startswith(("params.", "memory."))]
    facts = recorded.checks[0].measurement.facts
    moved = {c.fact: c for c in report.checks[0].comparison.changes}  # type: ignore[union-attr]
    for fact in ("params.bytes_passed", "params.donated_bytes", "memory.alias_bytes"):
        assert moved[fact].after == facts[fact] // 2 and not moved[fact].regression
    assert moved["params.bytes_passed"].detail.startswith("514.0 KiB -> 257.0 KiB")


def test_a_cast_to_f32_in_a_bf16_model_adds_converts_and_bytes(tmp_path: Path) -> None:
    baseline = tmp_path / "model.json"
    check(f"{MODELS}:bf16_model", baseline, f"{MODELS}:bf16_args", update=True)
    report = check(f"{MODELS}:bf16_model_with_f32_cast", baseline, f"{MODELS}:bf16_args")
    found = regressions(report)
    before, after = found["ops.lowered.stablehlo.convert"]
    assert (before or 0) < (after or 0)
    assert "cost.bytes_accessed" in found
    line = f"{MODELS}:{line_of(Path(MODELS), 'jnp.tanh(x @ w1).astype(jnp.float32)')}"
    assert line in change(report, "ops.lowered.stablehlo.convert").sources
    assert not [f for f in found if f.startswith(("collectives.", "params.", "copies."))]


# NumPy inputs: `jnp.ones` would compile an eager broadcast per new shape, once per
# process, so the count would depend on what the suite ran before.
LOOP = """\
import jax
import jax.numpy as jnp
import numpy as np


@jax.jit
def step(x):
    return jnp.sin(x) * 2


for i in range(4):
    step(np.ones({shape}, np.float32))
"""


def test_an_extra_compilation_in_a_loop_counts_programs(tmp_path: Path) -> None:
    steady, growing = tmp_path / "steady.py", tmp_path / "growing.py"
    steady.write_text(LOOP.format(shape="(8,)"))
    growing.write_text(LOOP.format(shape="(8 + i % 2,)"))
    baseline = tmp_path / "loop.json"
    recorded = check(str(steady), baseline, update=True)
    assert recorded.checks[0].measurement.facts["programs.step.count"] == 1
    report = check(str(growing), baseline)
    found = regressions(report)
    assert found["programs.count"][1] == found["programs.count"][0] + 1  # type: ignore[operator]
    assert found["programs.step.count"] == (1, 2)
    assert set(found) == {"programs.count", "programs.step.count"}


MODEL = """\
import jax
import jax.numpy as jnp


def mlp(w1, w2, x):
    hidden = jnp.tanh(x @ w1)
    return jnp.sum(hidden @ w2)


def example_args():
    return (
        jax.ShapeDtypeStruct((64, 128), jnp.float32),
        jax.ShapeDtypeStruct((128, 8), jnp.float32),
        jax.ShapeDtypeStruct((16, 64), jnp.float32),
    )
"""

# The same program: a local variable renamed, the code moved down and reformatted.
MODEL_EDITED = '''\
"""A docstring that moves every line down."""

import jax
import jax.numpy as jnp


def mlp(w1, w2, x):
    activations = jnp.tanh(
        x @ w1
    )
    return jnp.sum(activations @ w2)


def example_args():
    f32 = jnp.float32
    return (jax.ShapeDtypeStruct((64, 128), f32), jax.ShapeDtypeStruct((128, 8), f32),
            jax.ShapeDtypeStruct((16, 64), f32))
'''


def test_renaming_and_reformatting_change_nothing(tmp_path: Path) -> None:
    before, after = tmp_path / "before.py", tmp_path / "after.py"
    before.write_text(MODEL)
    after.write_text(MODEL_EDITED)
    baseline = tmp_path / "mlp.json"
    check(f"{before}:mlp", baseline, f"{before}:example_args", update=True)
    report = check(f"{after}:mlp", baseline, f"{after}:example_args")
    assert report.passed
    assert report.checks[0].comparison.changes == ()  # type: ignore[union-attr]


def test_an_unchanged_program_gives_the_same_json_twice(tmp_path: Path) -> None:
    baseline = str(tmp_path / "step.json")
    target = [f"{MODELS}:update_donated", "--args", f"{MODELS}:update_args"]
    assert run_cli("check", *target, "--baseline", baseline, "--update").code == 0
    stored = Path(baseline).read_text()
    first = run_cli("check", *target, "--baseline", baseline, "--json")
    second = run_cli("check", *target, "--baseline", baseline, "--json")
    assert first.code == second.code == 0, first.stderr

    def without_timings(document):
        for entry in document["targets"]:
            entry["facts"].pop("compile.seconds")
        return document

    assert without_timings(first.json()) == without_timings(second.json())
    body = first.json()
    assert body["passed"] is True and body["changes"] == []
    assert body["baseline"] == baseline and body["backend"]["platform"] == "cpu"
    assert Path(baseline).read_text() == stored  # checking writes nothing


def test_the_json_contract_of_a_regression(tmp_path: Path) -> None:
    baseline = str(tmp_path / "update.json")
    args = ["--args", f"{MODELS}:update_args", "--baseline", baseline]
    run_cli("check", f"{MODELS}:update_donated", *args, "--update")
    run = run_cli("check", f"{MODELS}:update_not_donated", *args, "--json")
    assert run.code == 1
    body = run.json()
    assert body["command"] == "check" and body["passed"] is False
    for entry in body["changes"]:
        assert set(entry) >= {
            "fact",
            "before",
            "after",
            "tolerance",
            "regression",
            "detail",
            "sources",
        }
    donated = next(c for c in body["changes"] if c["fact"] == "params.donated")
    assert donated["regression"] is True and donated["tolerance"] == "exact"


def test_text_report_names_the_facts_and_the_line(tmp_path: Path) -> None:
    baseline = str(tmp_path / "step.json")
    args = ["--args", f"{TRAIN}:example_args", "--baseline", baseline]
    assert run_cli("check", f"{TRAIN}:step", *args, "--update").code == 0
    run = run_cli("check", f"{TRAIN}:step_without_remat", *args)
    assert run.code == 1
    last = run.stdout.strip().splitlines()[-1]
    assert last.startswith("FAILED: ") and "memory.peak_bytes" in last
    assert "Where they come from" in run.stdout
    assert "x, _ = jax.lax.scan(body, x, params)" in run.stdout


def test_tolerances_let_a_small_growth_pass(tmp_path: Path) -> None:
    baseline = tmp_path / "model.json"
    check(f"{MODELS}:bf16_model", baseline, f"{MODELS}:bf16_args", update=True)
    exact = check(f"{MODELS}:bf16_model_with_f32_cast", baseline, f"{MODELS}:bf16_args")
    assert {"memory.output_bytes", "cost.bytes_accessed"} <= set(regressions(exact))
    # The output doubles (bf16 to f32) and the bytes accessed grow by 3%.
    loose = check(
        f"{MODELS}:bf16_model_with_f32_cast",
        baseline,
        f"{MODELS}:bf16_args",
        tolerances={"memory.*": "100%", "cost.*": "5%"},
    )
    assert not [f for f in regressions(loose) if f.startswith(("memory.", "cost."))]
    assert "ops.lowered.stablehlo.convert" in regressions(loose)
    tight = check(
        f"{MODELS}:bf16_model_with_f32_cast",
        baseline,
        f"{MODELS}:bf16_args",
        tolerances={"memory.*": "50% or 1 KiB", "cost.*": "1%"},
    )
    assert change(tight, "memory.output_bytes").tolerance == "50% or 1 KiB"
    assert change(tight, "cost.bytes_accessed").regression


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "no baseline here: record one with --update"),
        ("{", "not JSON"),
        ('{"a": 1}', "not an hloscope baseline"),
        ('{"hloscope_baseline": 1, "target": "x"}', "the baseline is damaged"),
    ],
)
def test_a_missing_or_broken_baseline_is_one_line_and_exit_2(
    tmp_path: Path, content: str | None, message: str
) -> None:
    baseline = tmp_path / "b.json"
    if content is not None:
        baseline.write_text(content)
    run = run_cli(
        "check",
        f"{MODELS}:update_donated",
        "--args",
        f"{MODELS}:update_args",
        "--baseline",
        str(baseline),
    )
    assert run.code == 2 and run.stdout == ""
    assert message in run.stderr and len(run.stderr.strip().splitlines()) == 1
    assert "Traceback" not in run.stderr


def test_another_backend_is_refused_and_another_jax_is_said(tmp_path: Path) -> None:
    baseline = tmp_path / "b.json"
    args = [
        f"{MODELS}:update_donated",
        "--args",
        f"{MODELS}:update_args",
        "--baseline",
        str(baseline),
    ]
    run_cli("check", *args, "--update")
    document = json.loads(baseline.read_text())
    document["backend"]["jax"] = "0.8.3"
    baseline.write_text(json.dumps(document))
    run = run_cli("check", *args)
    assert run.code == 0
    assert "recorded with jax 0.8.3" in run.stdout
    document["backend"]["platform"] = "gpu"
    baseline.write_text(json.dumps(document))
    run = run_cli("check", *args)
    assert run.code == 2 and "recorded on gpu and this runs on cpu" in run.stderr


def test_a_target_needs_a_baseline_and_none_needs_a_configuration(
    tmp_path: Path, monkeypatch
) -> None:
    run = run_cli("check", f"{MODELS}:update_donated")
    assert run.code == 2 and "--baseline FILE" in run.stderr
    monkeypatch.chdir(tmp_path)
    run = run_cli("check")
    assert run.code == 2 and "nothing to check" in run.stderr


def test_the_configured_targets_are_checked_with_their_baselines(
    tmp_path: Path, monkeypatch
) -> None:
    root = Path.cwd()
    (tmp_path / "pyproject.toml").write_text(
        textwrap.dedent(
            f"""\
            [tool.hloscope.check]
            tolerances = {{ "compile.seconds" = "1000%" }}

            [[tool.hloscope.check.targets]]
            name = "update"
            target = "{root / MODELS}:update_donated"
            args = "{root / MODELS}:update_args"

            [[tool.hloscope.check.targets]]
            target = "{root / MODELS}:bf16_model"
            args = "{root / MODELS}:bf16_args"
            """
        )
    )
    monkeypatch.chdir(tmp_path)
    run = run_cli("check", "--update")
    assert run.code == 0, run.stderr
    assert sorted(p.name for p in (tmp_path / "hloscope-baselines").iterdir()) == [
        "bf16_model.cpu.json",
        "update.cpu.json",
    ]
    run = run_cli("check", "--json")
    assert run.code == 0, run.stderr
    body = run.json()
    assert body["passed"] and [t["name"] for t in body["targets"]] == ["update", "bf16_model"]
    assert body["baseline"] == "hloscope-baselines"


def test_a_dump_is_checked_quietly(tmp_path: Path) -> None:
    # Its own process: starting JAX's backend there logs to the native stderr, which
    # hloscope keeps off the user's terminal.
    baseline = str(tmp_path / "mlp.json")
    dump = "samples/dumps/mlp.after_optimizations.hlo"  # read as it is: nothing compiles
    command = [sys.executable, "-m", "hloscope", "check", dump, "--baseline", baseline]
    recorded = subprocess.run([*command, "--update"], capture_output=True, text=True)
    assert recorded.returncode == 0 and recorded.stderr == ""
    run = subprocess.run([*command, "--json"], capture_output=True, text=True)
    assert run.returncode == 0 and run.stderr == ""
    target = json.loads(run.stdout)["targets"][0]
    facts = target["facts"]
    assert facts["fusions.count"] > 0 and facts["ops.optimized.total"] > 0
    # One HLO file holds no buffer assignment: the report says memory is not checked.
    assert "memory.peak_bytes" not in facts
    assert any("memory.peak_bytes and the buffers" in note for note in target["notes"])


CALLS = """\
import jax
import jax.numpy as jnp


@jax.jit
def step(x, scale):
    return jnp.sin(x) * scale


def same_shapes():
    return [(jnp.ones(8), 2.0), (jnp.ones(8), 3.0)]


def a_new_shape():
    return [(jnp.ones(8), 2.0), (jnp.ones(9), 3.0)]
"""


def test_a_function_on_several_argument_sets_counts_its_programs(tmp_path: Path) -> None:
    # A module of its own per run: in one process, a jitted function imported again
    # keeps the programs it compiled.
    before, after = tmp_path / "before.py", tmp_path / "after.py"
    before.write_text(CALLS)
    after.write_text(CALLS)
    baseline = str(tmp_path / "calls.json")
    recorded = run_cli(
        "check", f"{before}:step", "--calls", f"{before}:same_shapes",
        "--baseline", baseline, "--update",
    )  # fmt: skip
    assert recorded.code == 0, recorded.stderr
    run = run_cli(
        "check", f"{after}:step", "--calls", f"{after}:a_new_shape", "--baseline", baseline,
        "--json",
    )  # fmt: skip
    assert run.code == 1
    regressed = {c["fact"]: (c["before"], c["after"]) for c in run.json()["changes"]}
    assert regressed == {"programs.count": (1, 2), "programs.step.count": (1, 2)}


def test_a_result_moved_to_host_memory_is_a_memory_kind_change(tmp_path: Path) -> None:
    baseline = tmp_path / "scale.json"
    options = LoadOptions(args=("f32[8,128]",))
    check_one("samples/memory_kinds.py:host_output", baseline, options=options, update=True)
    report = check_one("samples/memory_kinds.py:_scale", baseline, options=options)
    found = regressions(report)
    moved = [f for f in found if f.startswith("memory_kinds.")]
    assert moved and all(found[f][1] is None for f in moved)


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ("[tool.hloscope.check]\ntargets = [{ target = 3 }]\n", "each target needs target ="),
        (
            '[tool.hloscope.check]\n[[tool.hloscope.check.targets]]\ntarget = "x.py:f"\nfoo = 1\n',
            "unknown key 'foo'",
        ),
        ("[tool.hloscope.check\n", "pyproject.toml: cannot read it"),
        (
            '[tool.hloscope.check]\ntolerances = { "memory.*" = "lots" }\n'
            '[[tool.hloscope.check.targets]]\ntarget = "x.py:f"\n',
            "cannot read the tolerance 'lots'",
        ),
    ],
)
def test_a_broken_configuration_is_one_line_and_exit_2(
    tmp_path: Path, monkeypatch, config: str, message: str
) -> None:
    (tmp_path / "pyproject.toml").write_text(config)
    monkeypatch.chdir(tmp_path)
    run = run_cli("check")
    assert run.code == 2 and message in run.stderr, run.stderr
    assert len(run.stderr.strip().splitlines()) == 1


def test_a_script_that_raises_is_one_line_and_exit_2(tmp_path: Path) -> None:
    script = tmp_path / "bad.py"
    script.write_text('raise ValueError("boom")\n')
    run = run_cli("check", str(script), "--baseline", str(tmp_path / "b.json"), "--update")
    assert run.code == 2 and "the program failed: ValueError: boom" in run.stderr
    assert not (tmp_path / "b.json").exists()


def test_compile_time_within_a_second_is_noise_whatever_the_tolerance() -> None:
    # A small program's compile time is recorded as 0.0 s: with a relative tolerance
    # alone, a loaded machine's 0.3 s failed the configured targets' test once.
    from types import MappingProxyType

    from hloscope.analyses.baseline.compare import compare
    from hloscope.analyses.baseline.facts import Measurement
    from hloscope.analyses.baseline.tolerance import Tolerances

    def measured(seconds: float) -> Measurement:
        return Measurement(MappingProxyType({"compile.seconds": seconds}), {}, ())

    tolerances = Tolerances.from_specs({"compile.seconds": "50%"})
    assert compare(measured(0.0), measured(0.3), tolerances).changes == ()
    slower = compare(measured(0.0), measured(1.5), tolerances).changes
    assert [(c.fact, c.regression, c.tolerance) for c in slower] == [
        ("compile.seconds", True, "50%")
    ]
    assert compare(measured(30.0), measured(44.0), tolerances).changes == ()
    assert compare(measured(30.0), measured(46.0), tolerances).regressions


CONFIGURES_JAX = """\
import jax
import jax.numpy as jnp

jax.config.update("jax_num_cpu_devices", 8)


def double(x):
    return x * 2


def example_args():
    return (jax.ShapeDtypeStruct((8,), jnp.float32),)
"""


def test_configured_targets_are_imported_before_jax_starts(tmp_path: Path) -> None:
    # A module that configures JAX when imported (8 CPU devices) is imported before
    # anything starts JAX's backend; the backend's platform names the baseline file only
    # then (the configured targets started it first, and the setting was ignored).
    # Its own process: in this one, JAX started long ago.
    (tmp_path / "model.py").write_text(CONFIGURES_JAX)
    (tmp_path / "pyproject.toml").write_text(
        '[[tool.hloscope.check.targets]]\ntarget = "model.py:double"\n'
        'args = "model.py:example_args"\n'
    )
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    env["PYTHONPATH"] = str(Path.cwd() / "src")
    command = [sys.executable, "-m", "hloscope", "check", "--update", "--json"]
    run = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, env=env)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["backend"]["device_count"] == 8
    assert (tmp_path / "hloscope-baselines" / "double.cpu.json").is_file()


def test_a_new_collective_names_its_origin(tmp_path: Path) -> None:
    # The all-gather above, explained as `placement --why` explains it, from Shardy's
    # origins: the argument whose sharding brought it.
    baseline = str(tmp_path / "layer.json")
    target = [f"{MODELS}:layer", "--baseline", baseline]
    assert run_cli("check", *target, "--args", f"{MODELS}:replicated_weight", "--update").code == 0
    split = ["check", *target, "--args", f"{MODELS}:split_weight"]
    run = run_cli(*split, "--json")
    assert run.code == 1, run.stderr
    line = f"{MODELS}:{line_of(Path(MODELS), 'return jnp.tanh(x @ w)')}"
    (entry,) = [c for c in run.json()["changes"] if c["fact"] == "collectives.all-gather.count"]
    assert entry["sources"] == [line]
    (said,) = entry["origins"]
    assert said.startswith("all-gather over `data` at ")
    assert "argument `w` (P('data', None))" in said
    others = [c for c in run.json()["changes"] if not c["fact"].startswith("collectives.")]
    assert all(c["origins"] == [] for c in others)
    assert f"why: {said[:40]}" in " ".join(run_cli(*split).stdout.split())


SCAN = "tests/fixtures/scan_remat_diff"


def test_ops_without_a_source_line_are_under_no_source_line_as_fusions_says(
    tmp_path: Path,
) -> None:
    # Without the checkpoint the backward pass gains fusions whose metadata names no
    # line of the user's code, only JAX's op name (`jit(forward_loss)/jvp(...)`):
    # `fusions` gives them no line, and check must not show the op name as one.
    baseline = tmp_path / "scan.json"
    options = LoadOptions(args_factory=f"{SCAN}/scan.py:example_args")
    check_one(f"{SCAN}/scan.py:step", baseline, options=options, update=True)
    report = check_one(f"{SCAN}/scan_v2.py:step", baseline, options=options)
    comparison = report.checks[0].comparison
    assert comparison is not None and comparison.regressions

    def is_line(site: str) -> bool:
        file, _, line = site.rpartition(":")
        return bool(file) and line.isdigit()

    sites = [s for c in comparison.changes for s, _ in c.site_deltas]
    sites += [g.site for g in comparison.grown_at_peak]
    assert UNKNOWN_SITE in sites
    assert [s for s in sites if not is_line(s) and s != UNKNOWN_SITE] == []
    # Each fusion op is at the line its fusion is at (`fusions`' user_source).
    measured = report.checks[0].measurement.sites
    fusion_lines: Counter[str] = Counter()
    for fact, counts in measured.items():
        if fact.startswith("fusions."):
            fusion_lines.update(counts)
    assert Counter(measured["ops.optimized.mhlo.fusion"]) == fusion_lines


def test_a_baseline_with_op_names_for_sites_reads_them_as_no_source_line() -> None:
    # Baselines recorded before sites were only lines hold JAX's op names as sites.
    from hloscope.analyses.baseline.record import read_baseline

    document = json.loads(Path("samples/check/step.cpu.json").read_text())
    document["sites"]["ops.lowered.stablehlo.constant"] = {
        "(no source line)": 16,
        "samples/check/train_step.py:30": 11,
        "remat2": 9,
        "jit(step)": 5,
    }
    sites = read_baseline(document, "step.cpu.json").measurement.sites
    assert dict(sites["ops.lowered.stablehlo.constant"]) == {
        "(no source line)": 30,
        "samples/check/train_step.py:30": 11,
    }


PROJECT_MODEL = """\
import jax
import jax.numpy as jnp


@jax.jit
def step(x, w):
    h = jnp.tanh(x @ w)
    h = h * 2.0
    return jnp.sum(h)


def example_args():
    return (
        jax.ShapeDtypeStruct((8, 16), jnp.float32),
        jax.ShapeDtypeStruct((16, 16), jnp.float32),
    )
"""


def _check_in(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    # Its own process, in `folder`: where a user runs it.
    env = {**os.environ, "PYTHONPATH": str(Path.cwd() / "src")}
    command = [sys.executable, "-m", "hloscope", "check", *args, "--json"]
    return subprocess.run(command, capture_output=True, text=True, cwd=folder, env=env)


def test_a_project_is_checked_alike_from_any_folder(tmp_path: Path) -> None:
    # The configuration's target and args are the project's files, found from the
    # pyproject's folder; a baseline's sites are relative to the project's root, so a
    # check from a subfolder or from the project's parent names only the line that
    # changed (and names it as that folder sees it).
    project = tmp_path / "proj"
    (project / "tests").mkdir(parents=True)
    model = project / "model.py"
    model.write_text(PROJECT_MODEL)
    (project / "pyproject.toml").write_text(
        '[[tool.hloscope.check.targets]]\ntarget = "model.py:step"\n'
        'args = "model.py:example_args"\n'
    )
    recorded = _check_in(project / "tests", "--update")
    assert recorded.returncode == 0, recorded.stderr
    stored = json.loads((project / "hloscope-baselines" / "step.cpu.json").read_text())
    assert "model.py:7" in json.dumps(stored)  # the project's own path, not ../model.py
    assert _check_in(project / "tests").returncode == 0
    model.write_text(PROJECT_MODEL.replace("h = h * 2.0", "h = jnp.sin(h) * jnp.cos(h)"))
    changed_line = "h = jnp.sin(h) * jnp.cos(h)"
    line = line_of(model, changed_line)
    # As every view names a file: relative to the working directory when below it,
    # else absolute.
    for folder, named in ((project / "tests", str(model)), (tmp_path, "proj/model.py")):
        args = (
            ()
            if folder != tmp_path
            else (
                "proj/model.py:step",
                "--args",
                "proj/model.py:example_args",
                "--baseline",
                "proj/hloscope-baselines/step.cpu.json",
            )
        )
        run = _check_in(folder, *args)
        assert run.returncode == 1, run.stderr
        sources = {s for c in json.loads(run.stdout)["changes"] for s in c["sources"]}
        assert sources == {f"{named}:{line}"}, (folder, sources)

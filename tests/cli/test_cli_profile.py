"""`hloscope profile` on real programs, checked against JAX's own profiler trace (kept
with --trace-dir and read here with `jax.profiler.ProfileData`) and against the
instructions of the executable JAX compiles, not against what the command printed
before."""

from __future__ import annotations

import importlib.util
import re
from collections import defaultdict
from pathlib import Path

import pytest

from conftest import SAMPLES, line_of, sample

OP_KEYS = {"name", "kind", "calls", "seconds", "share", "user_source", "sources"}
LINE_KEYS = {"source", "seconds", "share", "ops"}


def load_sample(name: str):
    spec = importlib.util.spec_from_file_location(f"{name}_profile_test", SAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def assert_contract(doc):
    assert doc["schema_version"] == 1
    assert doc["command"] == "profile"
    assert doc["runs"] >= 1
    times = doc["seconds_per_run"]
    assert times["min"] <= times["median"] <= times["max"]
    for key in ("ops", "lines"):
        seconds = [entry["seconds"] for entry in doc[key]]
        assert seconds == sorted(seconds, reverse=True)
    assert all(op.keys() >= OP_KEYS for op in doc["ops"])
    assert all(line.keys() >= LINE_KEYS for line in doc["lines"])
    assert sum(op["share"] for op in doc["ops"]) == pytest.approx(1.0)
    assert isinstance(doc["coverage"], float)


def trace_times(folder: Path, module: str) -> dict[str, float]:
    """Nanoseconds per instruction of `module` in JAX's own trace, summed over events."""
    import jax

    (trace,) = folder.glob("plugins/profile/*/*.xplane.pb")
    times: dict[str, float] = defaultdict(float)
    for plane in jax.profiler.ProfileData.from_file(str(trace)).planes:
        for line in plane.lines:
            for event in line.events:
                stats = dict(event.stats)
                if stats.get("hlo_module") == module and "hlo_op" in stats:
                    times[stats["hlo_op"]] += event.duration_ns
    return times


def compiled_instructions(function, args) -> set[str]:
    """The instruction names of the executable JAX compiles for `function(*args)`."""
    text = function.lower(*args).compile().as_text()
    return set(re.findall(r"^\s*(?:ROOT\s+)?%?([\w.-]+)\s*=", text, flags=re.MULTILINE))


@pytest.fixture(scope="module")
def step_profile(tmp_path_factory):
    from conftest import run_cli

    folder = tmp_path_factory.mktemp("trace")
    run = run_cli(
        "profile",
        *sample("profile_step", "step"),
        *("--runs", "5", "--trace-dir", str(folder), "--json"),
    )
    assert run.code == 0, run.stderr
    return run.json(), folder


def test_the_line_holding_the_work_comes_first(step_profile):
    doc, _ = step_profile
    assert_contract(doc)
    matmul = line_of(SAMPLES / "profile_step.py", "the matmuls: nearly all")
    first = doc["lines"][0]
    assert first["source"] == f"samples/profile_step.py:{matmul}"
    assert first["share"] > 0.5  # most of it: 99% on jaxlib 0.10, 72% on 0.8
    # The fusion built around the matmuls holds the other lines' ops too: its sources
    # say so, and its time is the matmul's line's.
    assert first["ops"][0] == doc["ops"][0]["name"]


def test_every_op_is_an_instruction_of_the_compiled_module(step_profile):
    doc, _ = step_profile
    module = load_sample("profile_step")
    names = compiled_instructions(module.step, module.example_args())
    assert doc["ops"] and {op["name"] for op in doc["ops"]} <= names
    assert doc["unknown_ops"] == []


def test_the_times_are_jaxs_own_trace(step_profile):
    doc, folder = step_profile
    assert doc["trace_file"] is not None
    times = trace_times(folder, doc["module"])
    # No loops here: an instruction's self time is its events' whole duration.
    for op in doc["ops"]:
        assert op["seconds"] * doc["runs"] == pytest.approx(times[op["name"]] * 1e-9, rel=1e-6)
    assert set(times) == {op["name"] for op in doc["ops"]}


def test_coverage_of_a_step_whose_ops_run_one_after_another(step_profile):
    doc, _ = step_profile
    assert 0.5 <= doc["coverage"] <= 1.05
    assert doc["overhead_seconds"] >= 0


def test_a_loop_on_eight_devices(cli):
    # Layers scanned over 8 CPU devices: the body's instructions run once per layer
    # on each device, and a time is per device.
    module = load_sample("scanned_layers")
    run = cli("profile", *sample("scanned_layers", "deep_mlp"), "--runs", "2", "--json")
    assert run.code == 0, run.stderr
    doc = run.json()
    assert_contract(doc)
    assert doc["devices"] == 8
    loops = [op for op in doc["ops"] if op["kind"] == "while"]
    assert len(loops) == 1 and loops[0]["calls"] == 1
    (all_reduce,) = [op for op in doc["ops"] if op["kind"] == "all_reduce"]
    assert all_reduce["calls"] == module.LAYERS
    assert {op["calls"] for op in doc["ops"]} == {1, module.LAYERS}


def test_a_flax_training_step_is_told_by_the_users_lines(cli):
    run = cli("profile", *sample("flax_nnx", "train_step"), "--runs", "3", "--json")
    assert run.code == 0, run.stderr
    doc = run.json()
    assert_contract(doc)
    mine = [line for line in doc["lines"] if line["source"] is not None]
    assert mine and all(line["source"].startswith("samples/flax_nnx.py:") for line in mine)
    assert doc["lines"][0]["source"] is not None
    # The libraries' lines are beside them, never in their place.
    linear = [op for op in doc["ops"] if any("flax/nnx/nn/linear.py" in s for s in op["sources"])]
    assert linear and all(op["user_source"].startswith("samples/") for op in linear)


def test_the_text_report(cli):
    run = cli("profile", *sample("profile_step", "step"), "--runs", "2")
    assert run.code == 0, run.stderr
    assert "Your lines by time" in run.stdout
    assert "Instructions by time" in run.stdout
    assert "the matmuls: nearly all" in run.stdout


def test_a_step_that_raises_when_it_runs(cli):
    run = cli("profile", *sample("profile_step", "failing_step", "failing_args"))
    assert run.code == 2
    assert run.stdout == ""
    (line,) = run.stderr.splitlines()
    assert "samples/profile_step.py:failing_step" in line
    assert "ValueError: the host check rejects every batch" in line
    assert "Traceback" not in run.stderr


def test_the_profiler_already_active(cli, tmp_path):
    import jax

    jax.profiler.start_trace(str(tmp_path))
    try:
        run = cli("profile", *sample("profile_step", "step"), "--runs", "1")
    finally:
        jax.profiler.stop_trace()
    assert run.code == 2
    (line,) = run.stderr.splitlines()
    assert "JAX's profiler cannot start" in line


@pytest.mark.parametrize(
    ("option", "message"),
    [(["--runs", "0"], "--runs 0"), (["--warmup", "-1"], "--warmup -1")],
)
def test_bad_counts(cli, option, message):
    run = cli("profile", *sample("profile_step", "step"), *option)
    assert run.code == 2
    assert message in run.stderr


@pytest.mark.parametrize(
    ("option", "message"),
    [
        (["--model-flops", "lots"], "'lots' is not a valid float"),
        (["--model-flops", "1.2e12"], "--model-flops gives an estimate's MFU: it needs --for"),
        (["--model-flops", "-1", "--for", "tpu:v5e:2x4"], "--model-flops -1: expected"),
        (["--model-flops", "nan", "--for", "tpu:v5e:2x4"], "--model-flops nan: expected"),
    ],
)
def test_bad_model_flops_is_one_line_before_anything_is_compiled(cli, option, message):
    run = cli("profile", *sample("profile_step", "step"), *option)
    assert run.code == 2
    (line,) = run.stderr.splitlines()
    assert message in line and run.stdout == ""


def test_nothing_is_written_beside_the_users_files(cli, tmp_path):
    before = sorted(p.name for p in SAMPLES.iterdir())
    run = cli("profile", *sample("profile_step", "step"), "--runs", "1", "--json")
    assert run.code == 0
    assert sorted(p.name for p in SAMPLES.iterdir()) == before


def test_a_script_with_question_threes_two_choices(cli):
    # One outer jit against its inner jits called from Python, 5 steps each: the calls
    # and compilations of each jitted function are exact.
    run = cli("profile", "samples/jit_granularity.py", "5", "--json")
    assert run.code == 0, run.stderr
    doc = run.json()
    assert doc["command"] == "profile"
    by_name = {f["function"]: f for f in doc["functions"]}
    assert {name: (f["calls"], f["compiles"]) for name, f in by_name.items()} == {
        "mlp": (5, 1),
        "layer": (10, 1),
        "head": (5, 1),
    }
    # Where Python says the function starts: its decorator's line.
    decorator = line_of(SAMPLES / "jit_granularity.py", "def layer") - 1
    assert by_name["layer"]["source"] == f"samples/jit_granularity.py:{decorator}"
    for f in doc["functions"]:
        assert f["run_seconds"] > 0 and f["compile_seconds"] > 0
        assert f["seconds_per_call"] == pytest.approx(f["run_seconds"] / f["calls"])
    # jnp.tanh outside any jit: one op compiled and run on its own.
    assert doc["eager"]["calls"] == 1 and doc["eager"]["compiles"] == 1
    assert doc["eager"]["seconds"] > 0
    assert doc["exit_code"] == 0 and doc["error"] is None


def test_a_script_that_raises(cli, tmp_path):
    script = tmp_path / "broken.py"
    script.write_text("import jax.numpy as jnp\nprint(jnp.ones(3).sum())\nraise SystemExit(3)\n")
    run = cli("profile", str(script), "--json")
    assert run.code == 3
    assert run.json()["eager"]["calls"] >= 1


def test_check_runtime_passes_unchanged_and_fails_eight_times_the_work(cli, tmp_path):
    baseline = tmp_path / "step.json"
    step = ["check", "samples/profile_step.py:step", "--baseline", str(baseline), "--runtime"]
    recorded = cli(*step, "--args", "samples/profile_step.py:example_args", "--update", "--json")
    assert recorded.code == 0, recorded.stderr
    # Unchanged: passes, twice (the tolerance comes from the runs' own spread).
    for _ in range(2):
        again = cli(*step, "--args", "samples/profile_step.py:example_args", "--json")
        assert again.code == 0, again.stdout
    slower = cli(*step, "--args", "samples/profile_step.py:eight_times_args", "--json")
    assert slower.code == 1
    regressions = {c["fact"]: c for c in slower.json()["changes"] if c["regression"]}
    runtime = regressions["runtime.seconds_per_run"]
    assert runtime["after"] > 2 * runtime["before"]
    assert "from the runs' spread" in runtime["tolerance"]
    matmul = line_of(SAMPLES / "profile_step.py", "the matmuls: nearly all")
    assert f"samples/profile_step.py:{matmul}" in runtime["sources"]


def test_check_runtime_against_a_baseline_without_one_says_so(cli, tmp_path):
    # The baseline was recorded without --runtime: the run time is not compared (and
    # the step eight times the work passes its structure's check), and the report
    # says so, counting only the facts it compared.
    baseline = tmp_path / "step.json"
    step = ["check", "samples/profile_step.py:step", "--baseline", str(baseline)]
    args = ["--args", "samples/profile_step.py:example_args"]
    recorded = cli(*step, *args, "--update", "--json")
    assert recorded.code == 0, recorded.stderr
    held = len(recorded.json()["targets"][0]["facts"])
    checked = cli(*step, *args, "--runtime", "--json")
    assert checked.code == 0, checked.stdout
    (target,) = checked.json()["targets"]
    assert target["not_compared"] == ["runtime.seconds_per_run"]
    assert "runtime.seconds_per_run" in target["facts"]
    assert target["facts_compared"] <= held < len(target["facts"])
    assert any(
        "the baseline has no run time" in n and "--update --runtime" in n for n in target["notes"]
    )
    text = cli(*step, *args, "--runtime")
    assert f"passed: {target['facts_compared']} facts compared" in text.stdout
    assert "the baseline has no run time" in text.stdout


def test_a_dumped_hlo_module_profiled_without_python(cli, tmp_path):
    # The module before optimizations, compiled and run in a child process on seeded
    # random inputs made for its parameters' shapes.
    run = cli(
        "profile",
        "samples/dumps/mlp.before_optimizations.hlo",
        *("--runs", "3", "--trace-dir", str(tmp_path), "--json"),
    )
    assert run.code == 0, run.stderr
    doc = run.json()
    assert_contract(doc)
    assert doc["inputs"] == "generated"
    assert doc["source"]["stage"] == "optimized"
    times = trace_times(tmp_path, doc["module"])
    assert set(times) == {op["name"] for op in doc["ops"]}
    for op in doc["ops"]:
        assert op["seconds"] * doc["runs"] == pytest.approx(times[op["name"]] * 1e-9, rel=1e-6)
    # The dump's metadata still names the lines of the program it came from.
    assert doc["lines"][0]["source"].startswith("samples/nested_jits.py:")


def test_an_optimized_dump_is_refused(cli):
    run = cli("profile", "samples/dumps/mlp.after_optimizations.hlo")
    assert run.code == 2
    (line,) = run.stderr.splitlines()
    assert "before optimization" in line


@pytest.mark.corpus
def test_a_dump_that_aborts_xla_costs_one_line(cli, corpus):
    # A valid module whose compilation fails one of XLA's checks (SIGABRT): the child
    # dies, hloscope says so in one line, naming XLA's message.
    module = corpus / "xla-cc-embedded-hlo/xla/hlo/transforms/bfloat16_propagation_test.014.hlo"
    run = cli("profile", str(module), "--runs", "1")
    assert run.code == 2
    (line,) = run.stderr.splitlines()
    if "XLA aborted" not in line:
        # Older jaxlibs cannot read HLO's scan opcode, or convert it: refused before.
        pytest.skip(f"refused before compiling on this release: {line}")
    assert "Check failed" in line


def test_a_script_that_configures_jax_on_import_runs_as_python_runs_it():
    # Its first import sets jax_num_cpu_devices right after `import jax`, legal before
    # any JAX operation: profile must not start JAX's backends before the script does.
    # A process of its own: this one's backends started long ago.
    import json
    import os
    import subprocess
    import sys

    from conftest import FIXTURES, ROOT

    script = str(FIXTURES / "configures_jax_on_import.py")
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    by_python = subprocess.run(
        [sys.executable, script], capture_output=True, text=True, env=env, check=False
    )
    assert by_python.returncode == 0, by_python.stderr
    profiled = subprocess.run(
        [sys.executable, "-m", "hloscope", "profile", script, "--json"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert profiled.returncode == 0, profiled.stderr
    doc = json.loads(profiled.stdout)
    assert doc["error"] is None
    # What the script printed (sent to stderr with --json) is what python printed.
    assert "devices 8" in by_python.stdout and "devices 8" in profiled.stderr
    (total,) = (f for f in doc["functions"] if f["function"] == "total")
    assert (total["calls"], total["compiles"]) == (2, 1)
    assert total["run_seconds"] > 0


def test_a_dump_that_waits_on_the_host_is_refused_before_it_runs(cli, monkeypatch):
    # Its entry reads an infeed: run on its own, nothing feeds it, and it would wait
    # for ever. The refusal comes from the decoded module, before any child runs it.
    from hloscope.sources.jax import module_run

    def never(*args, **kwargs):
        raise AssertionError("the module was sent to the child to run")

    monkeypatch.setattr(module_run, "run_module", never)
    run = cli("profile", "tests/fixtures/waits_on_infeed.hlo", "--runs", "1")
    assert run.code == 2
    (line,) = run.stderr.splitlines()
    assert "tests/fixtures/waits_on_infeed.hlo" in line
    assert "nothing feeds its infeed" in line


def test_a_dumps_run_that_never_ends_is_ended_naming_the_run(cli, monkeypatch):
    # A loop that never ends: the run's time limit (made short here) ends the child,
    # and the line names the run it was in.
    from hloscope.sources.jax import module_run

    monkeypatch.setattr(module_run, "RUN_TIME_LIMIT_SECONDS", 2.0)
    run = cli("profile", "tests/fixtures/endless_loop.hlo", "--runs", "1")
    assert run.code == 2
    (line,) = run.stderr.splitlines()
    assert "tests/fixtures/endless_loop.hlo" in line
    assert "warm-up run 1 of 1 did not finish within 2 s" in line
    # The next dump gets a child of its own, which runs it.
    again = cli("profile", "samples/dumps/mlp.before_optimizations.hlo", "--runs", "1", "--json")
    assert again.code == 0, again.stderr


def _process_gone(pid: int) -> bool:
    """Whether `pid` has ended (a zombie no one reaped yet counts as ended)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return True
    return "\nState:\tZ" in status


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads processes from /proc")
def test_the_child_running_a_dump_ends_when_hloscope_is_killed(tmp_path):
    # hloscope SIGKILLed (a CI job's time limit) while its child runs a module that
    # never ends: the child must not stay behind.
    import os
    import signal
    import subprocess
    import sys
    import time

    from conftest import ROOT

    parent = tmp_path / "parent.py"
    parent.write_text(
        "import sys\n"
        "from hloscope.sources.jax import module_run\n"
        "limit = module_run._run_limit\n"
        "def announced(frame):\n"
        "    if frame[0].get('stage') == module_run.STAGE_RUNNING:\n"
        "        print(module_run._runner._process.pid, flush=True)\n"
        "    return limit(frame)\n"
        "module_run._run_limit = announced\n"
        "from hloscope.cli import main\n"
        "main(['profile', 'tests/fixtures/endless_loop.hlo', '--runs', '1'])\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    process = subprocess.Popen(
        [sys.executable, str(parent)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    child = None
    try:
        assert process.stdout is not None
        child = int(process.stdout.readline())  # the child has started the run
        assert not _process_gone(child)
        process.send_signal(signal.SIGKILL)
        process.wait()
        deadline = time.monotonic() + 30
        while not _process_gone(child) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _process_gone(child)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        if child is not None and not _process_gone(child):
            os.kill(child, signal.SIGKILL)  # what this test failed on: not left behind


def test_a_dump_with_a_host_callback_is_refused_before_it_runs(cli, tmp_path):
    # JAX's own lowering of a jit holding a pure_callback: the custom call runs a
    # Python function of the process that lowered it, not there in the child (which
    # crashed on it: SIGSEGV).
    import jax
    import jax.numpy as jnp
    import numpy as np

    def on_host(x):
        return np.sin(x)

    @jax.jit
    def f(x):
        return jax.pure_callback(on_host, jax.ShapeDtypeStruct(x.shape, x.dtype), x) * 2

    dump = tmp_path / "callback.mlir"
    dump.write_text(f.lower(jnp.ones(4)).as_text())
    target = "xla_ffi_python_cpu_callback"
    assert target in dump.read_text()
    run = cli("profile", str(dump), "--runs", "1")
    assert run.code == 2
    (line,) = run.stderr.splitlines()
    assert f"its host callback ({target}) has no Python here" in line

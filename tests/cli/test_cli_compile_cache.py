"""Every view of a program and target reads one compile (`hloscope.sources.compile_cache`):
a report from a warm cache is the report from a cold one (wall times aside), the
second run does not compile, and `--no-cache` compiles again. Each test has a cache
folder of its own, cold at its start."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conftest import ROOT, run_cli, sample
from hloscope.sources import compile_cache


def masked(document: Any) -> Any:
    """The document without what differs between two runs of one report: wall times,
    whether the compile was read from the cache, the environment."""
    if isinstance(document, dict):
        return {
            key: "<seconds>" if key.endswith("seconds") else masked(item)
            for key, item in document.items()
            if key not in ("compile_cached", "environment")
        }
    if isinstance(document, list):
        return [masked(item) for item in document]
    return document


@pytest.fixture
def cache_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    from hloscope.sources.jax import module_run

    folder = tmp_path / "compiles"
    monkeypatch.setenv(compile_cache.ENV_FOLDER, str(folder))
    monkeypatch.setattr(compile_cache, "_kept", {})
    # The dump compiler's child takes the folder when it starts.
    module_run._runner.close()
    yield folder
    module_run._runner.close()


def _forget_this_process() -> None:
    """As a second hloscope process would start: nothing kept in memory."""
    compile_cache._kept.clear()


COMPILED = [*sample("sharded_mlp", "mlp"), "--compile"]


def _cold_and_warm(argv: list[str]) -> tuple[dict[str, Any], dict[str, Any], int]:
    cold = run_cli(*argv, "--json")
    assert cold.code == 0, cold.stderr
    _forget_this_process()
    before = compile_cache.compile_count()
    warm = run_cli(*argv, "--json")
    assert warm.code == 0, warm.stderr
    return cold.json(), warm.json(), compile_cache.compile_count() - before


@pytest.mark.parametrize("command", ["inspect", "placement", "params"])
def test_a_warm_report_is_the_cold_one_without_compiling(cache_folder: Path, command: str) -> None:
    cold, warm, compiles = _cold_and_warm([command, *COMPILED])
    assert compiles == 0
    assert masked(warm) == masked(cold)
    if "timings" in cold:
        assert cold["timings"]["compile_cached"] is False
        assert warm["timings"]["compile_cached"] is True
        assert warm["timings"]["compile_seconds"] == cold["timings"]["compile_seconds"]


def test_the_header_says_the_compile_was_cached(cache_folder: Path) -> None:
    run_cli("inspect", *COMPILED, "--print")
    _forget_this_process()
    warm = run_cli("inspect", *COMPILED, "--print")
    (timings,) = [line for line in warm.stdout.splitlines() if line.startswith("timings")]
    assert timings.rstrip().endswith("(cached)")


def test_memory_reads_the_buffer_assignment_of_another_views_compile(cache_folder: Path) -> None:
    memory = sample("memory_peak", "rank_scores")
    reference = run_cli("memory", *memory, "--json", "--no-cache")
    assert reference.code == 0, reference.stderr
    assert run_cli("inspect", *memory, "--compile", "--json").code == 0
    _forget_this_process()
    before = compile_cache.compile_count()
    warm = run_cli("memory", *memory, "--json")
    assert warm.code == 0, warm.stderr
    assert compile_cache.compile_count() == before
    assert masked(warm.json()) == masked(reference.json())


def test_no_cache_compiles_again(cache_folder: Path) -> None:
    run_cli("inspect", *COMPILED, "--json")
    _forget_this_process()
    before = compile_cache.compile_count()
    again = run_cli("inspect", *COMPILED, "--json", "--no-cache")
    assert again.json()["timings"]["compile_cached"] is False
    assert compile_cache.compile_count() == before + 1
    # --no-cache is the command's: the next one reads the cache again.
    assert run_cli("inspect", *COMPILED, "--json").json()["timings"]["compile_cached"] is True


def test_a_dump_compiled_in_the_child_is_cached_too(cache_folder: Path) -> None:
    dump = ["inspect", "samples/dumps/mlp.stablehlo.mlir", "--compile"]
    cold, warm, _ = _cold_and_warm(dump)
    assert cold["timings"]["compile_cached"] is False
    assert warm["timings"]["compile_cached"] is True
    assert masked(warm) == masked(cold)


def test_the_cache_command_shows_and_clears_the_folder(cache_folder: Path) -> None:
    run_cli("inspect", *COMPILED, "--json")
    shown = run_cli("cache")
    assert shown.code == 0
    assert str(cache_folder) in shown.stdout
    assert "1 entry" in shown.stdout
    cleared = run_cli("cache", "--clear")
    assert cleared.code == 0 and "removed 1 entry" in cleared.stdout
    assert not list(cache_folder.glob("*.zip"))


def test_clear_that_cannot_remove_a_file_says_so_and_exits_2(cache_folder: Path) -> None:
    # A read-only folder said "removed 0 entries", exit 0. (A folder named like an
    # entry is a file no one, root included, removes as a file.)
    run_cli("inspect", *COMPILED, "--json")
    (cache_folder / "stuck.zip").mkdir()
    cleared = run_cli("cache", "--clear")
    assert cleared.code == 2 and cleared.stdout == ""
    (error,) = cleared.stderr.splitlines()
    assert error.startswith(
        f"hloscope: error: {cache_folder}: removed 1 entry; 1 file could not be removed "
        "(stuck.zip: "
    )
    assert "Traceback" not in cleared.stderr


@pytest.mark.parametrize("given", ["inf", "1e400", "-5"])
def test_a_cap_that_is_not_a_size_is_one_note(
    cache_folder: Path, monkeypatch: pytest.MonkeyPatch, given: str
) -> None:
    # inf and 1e400 were OverflowError, exit 2, on `cache` and after every compile.
    monkeypatch.setenv(compile_cache.ENV_CAP, given)
    monkeypatch.setattr(compile_cache, "_state", compile_cache._State())
    compiled = run_cli("inspect", *COMPILED, "--json")
    assert compiled.code == 0, compiled.stderr
    shown = run_cli("cache")
    assert shown.code == 0 and "of 2.0 GiB" in shown.stdout and "1 entry" in shown.stdout
    notes = (compiled.stderr + shown.stderr).splitlines()
    assert notes == [
        f"hloscope: note: HLOSCOPE_CACHE_MAX_MB={given} is not a size in MiB (a number, 0 "
        "or more): the compile cache keeps the default, 2.0 GiB"
    ]


# --------------------------------------------------------------------------- --for

TARGETS = "tests/platforms/targets.py"
SHARDED = [f"{TARGETS}:sharded_block", "--args", f"{TARGETS}:sharded_args"]


def _hloscope(folder: Path, *argv: str, xla_flags: str | None = None) -> dict[str, Any]:
    """hloscope in a process of its own (--for gives the program its devices before
    JAX starts), with the cache in `folder` (and `xla_flags` as XLA_FLAGS)."""
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT / "src"),
        compile_cache.ENV_FOLDER: str(folder),
        "COLUMNS": "120",
    }
    env.pop("XLA_FLAGS", None)
    if xla_flags is not None:
        env["XLA_FLAGS"] = xla_flags
    done = subprocess.run(
        [sys.executable, "-m", "hloscope", *argv, "--json"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)  # type: ignore[no-any-return]


@pytest.mark.slow
def test_for_a_tpu_every_view_after_the_first_reads_its_compile(tmp_path: Path) -> None:
    if importlib.util.find_spec("libtpu") is None:
        pytest.skip("libtpu is not installed: --for tpu:... cannot compile here")
    target = [*SHARDED, "--for", "tpu:v5e:2x2"]
    cold_memory = _hloscope(tmp_path / "a", "memory", *target)
    cold_inspect = _hloscope(tmp_path / "b", "inspect", *target)
    assert cold_inspect["timings"]["compile_cached"] is False
    warm_memory = _hloscope(tmp_path / "b", "memory", *target)
    assert masked(warm_memory) == masked(cold_memory)
    warm_inspect = _hloscope(tmp_path / "a", "inspect", *target)
    assert warm_inspect["timings"]["compile_cached"] is True
    assert masked(warm_inspect) == masked(cold_inspect)


@pytest.mark.slow
def test_profile_for_takes_no_cache(tmp_path: Path) -> None:
    # Refused as a script's argument ("a script runs on this machine").
    if importlib.util.find_spec("libtpu") is None:
        pytest.skip("libtpu is not installed: --for tpu:... cannot compile here")
    folder = tmp_path / "compiles"
    estimate = _hloscope(folder, "profile", *SHARDED, "--for", "tpu:v5e:2x2", "--no-cache")
    assert estimate["estimated"] is True
    assert not folder.exists() or not list(folder.iterdir()), "--no-cache kept a compile"


STEP = ["samples/llm_step.py:train_step", "--args", "samples/llm_step.py:example_args"]


@pytest.mark.slow
def test_remat_of_a_step_reads_the_compile_every_other_view_made(tmp_path: Path) -> None:
    # remat traced the step's loss before it lowered the step, and JAX lowered the
    # step from what it kept of that trace (another module, another key): a second
    # compile of the same program, 33.6 s for a 2x4 TPU step.
    folder = tmp_path / "compiles"
    _hloscope(folder, "memory", *STEP)
    _hloscope(folder, "inspect", *STEP, "--compile")
    remat = _hloscope(folder, "remat", *STEP, "--compile")
    assert remat["peak"] is not None
    entries = list(folder.glob("*.zip"))
    assert len(entries) == 1, [e.name for e in entries]


PLAIN_JAX = """
import sys
sys.path.insert(0, "samples")
from memory_peak import example_args, rank_scores
rank_scores.lower(*example_args()).compile()
"""


def _files(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())


@pytest.mark.slow
def test_the_users_xla_dump_flags_are_honoured_with_the_cache_on(tmp_path: Path) -> None:
    # The cache's own dump folder took the place of the user's: XLA wrote its files
    # there, and the user's folder got only JAX's (module.mlir, its options).
    env = {**os.environ, "XLA_FLAGS": f"--xla_dump_to={tmp_path / 'jax'}"}
    subprocess.run([sys.executable, "-c", PLAIN_JAX], cwd=ROOT, env=env, check=True, timeout=300)
    by_jax = _files(tmp_path / "jax")
    assert any("after_optimizations" in name for name in by_jax), by_jax
    target = sample("memory_peak", "rank_scores")
    for run in ("cold", "warm"):
        dumped = tmp_path / run
        _hloscope(
            tmp_path / "compiles",
            "inspect",
            *target,
            "--compile",
            xla_flags=f"--xla_dump_to={dumped}",
        )
        assert _files(dumped) == by_jax, run


def test_the_browsers_memory_tab_reads_the_compile_the_browser_shows(cache_folder: Path) -> None:
    from hloscope.reports import loaded_memory_report
    from hloscope.sources import loader

    options = loader.LoadOptions(args_factory="samples/memory_peak.py:example_args")
    shown = loader.load("samples/memory_peak.py:rank_scores", options).optimized()
    before = compile_cache.compile_count()
    report = loaded_memory_report(shown)  # what the Memory tab builds on enter
    assert compile_cache.compile_count() == before
    assert report.analysis is not None


def test_jaxs_persistent_cache_does_not_take_the_dumps_away(tmp_path: Path) -> None:
    # JAX's cache (its key leaves xla_dump_to out) handed back the first run's
    # executable to the second, and XLA wrote no buffer assignment: "XLA wrote no
    # buffer assignment while compiling it".
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT / "src"),
        "JAX_COMPILATION_CACHE_DIR": str(tmp_path / "jax"),
        "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
        compile_cache.ENV_OFF: "1",
    }
    target = sample("memory_peak", "rank_scores")
    for argv in (["inspect", *target, "--compile"], ["memory", *target]):
        done = subprocess.run(
            [sys.executable, "-m", "hloscope", *argv, "--json"],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr
    assert any((tmp_path / "jax").iterdir()), "JAX's cache was used"


def test_a_folder_the_dump_compiler_cannot_write_is_one_note(
    cache_folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hloscope.sources.jax import module_run

    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv(compile_cache.ENV_FOLDER, str(blocker / "compiles"))
    monkeypatch.setattr(compile_cache, "_state", compile_cache._State())
    module_run._runner.close()  # the child takes the folder when it starts
    for expected in (1, 0):  # the second command says it no more
        done = run_cli("inspect", "samples/dumps/mlp.stablehlo.mlir", "--compile", "--json")
        assert done.code == 0, done.stderr
        notes = [line for line in done.stderr.splitlines() if "compile cache" in line]
        assert len(notes) == expected, done.stderr
    # Not from the folder: the child kept its compile in memory.
    assert not list((blocker.parent).glob("**/*.zip"))

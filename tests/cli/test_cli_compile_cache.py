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


# --------------------------------------------------------------------------- --for

TARGETS = "tests/platforms/targets.py"
SHARDED = [f"{TARGETS}:sharded_block", "--args", f"{TARGETS}:sharded_args"]


def _hloscope(folder: Path, *argv: str) -> dict[str, Any]:
    """hloscope in a process of its own (--for gives the program its devices before
    JAX starts), with the cache in `folder`."""
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT / "src"),
        compile_cache.ENV_FOLDER: str(folder),
        "COLUMNS": "120",
    }
    env.pop("XLA_FLAGS", None)
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

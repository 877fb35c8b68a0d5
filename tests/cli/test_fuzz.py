"""Property-based fuzzing of every loader: mutations of valid modules (truncation,
flipped bytes, deleted and duplicated lines, odd unicode, huge numbers and
dimensions, stray syntax) through hloscope's commands.

The property: every run ends with exit 0 or 2 (1 for `diff`, whose mutant differs
from its seed), one `hloscope: error:` line on stderr when it fails and none when it
succeeds, a JSON document for `--json`, within a time bound. Runs happen in a
worker process (`fuzz_support.FuzzWorker`), so that a native crash or a hang is
observed and reported with the input that caused it, instead of killing or hanging
the test session.

`make test` runs a fixed number of examples per loader, derandomized (the same
inputs every time); `make fuzz` sets `HLOSCOPE_FUZZ_EXAMPLES` (and lets Hypothesis
pick new inputs each run) and adds seeds from the shared corpus.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

import fuzz_support
from conftest import FIXTURES, corpus_if_present

EXAMPLES = int(os.environ.get("HLOSCOPE_FUZZ_EXAMPLES", "60"))
LONG = "HLOSCOPE_FUZZ_EXAMPLES" in os.environ
# A run that takes longer than this is a hang (a real one never ends; the slowest
# mutant of the samples takes a few seconds).
RUN_BOUND_SECONDS = 120.0

# More seeds for `make fuzz`: complex numbers, shardy meshes, host memory, several
# meshes in an Exported, a scheduled GPU module, a VHLO artifact of many ops.
CORPUS_SEEDS = (
    "jax/export_back_compat_test_data/cpu_lu_lapack_getrf/data_2024_05_31_c64.mlirbc",
    "jax/export_back_compat_test_data/export_with_multiple_meshes/serialization_v12.jax_exported.fb",
    "jax/export_back_compat_test_data/annotate_data_placement/data_2026_02_04_rocm_shardy.mlir",
    "xla-cc-embedded-hlo/xla/hlo/transforms/host_offloader_test.051.hlo",
    "xla/xla/tools/hlo_opt/tests/gpu_hlo_backend.hlo",
    "stablehlo/stablehlo/tests/vhlo/stablehlo_legalize_to_vhlo.1_0_0.mlir.bc",
)


def seeds() -> list[tuple[str, Path]]:
    found = [(name, path) for name, path in fuzz_support.SEEDS.items()]
    shared = corpus_if_present()
    if LONG and shared is not None:
        found += [(Path(s).name, shared / s) for s in CORPUS_SEEDS if (shared / s).is_file()]
    return found


@pytest.fixture(scope="module")
def worker():
    runner = fuzz_support.FuzzWorker(timeout=RUN_BOUND_SECONDS)
    yield runner
    runner.close()


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("fuzz")


def commands(path: Path, seed: Path) -> st.SearchStrategy[list[str]]:
    return st.sampled_from(
        [
            ["inspect", str(path), "--json"],
            ["inspect", str(path), "--print"],
            ["params", str(path), "--json"],
            ["placement", str(path), "--json"],
            ["fusions", str(path), "--json"],
            ["diff", str(seed), str(path), "--json"],
        ]
    )


@pytest.mark.slow
@pytest.mark.parametrize(("name", "seed"), seeds(), ids=[name for name, _ in seeds()])
def test_mutated_modules_end_cleanly(worker, workdir, name, seed):
    original = seed.read_bytes()
    text = fuzz_support.is_text(original)
    target = workdir / seed.name

    @settings(
        max_examples=EXAMPLES,
        derandomize=not LONG,
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        print_blob=True,
    )
    @given(data=st.data())
    def property_(data):
        mutations = data.draw(fuzz_support.mutations(text), label="mutations")
        mutated = fuzz_support.apply(original, mutations)
        target.write_bytes(mutated)
        command = data.draw(commands(target, seed), label="command")
        outcome = worker.run(*command)
        note(f"{len(mutated)} bytes; {outcome.status} {outcome.code} in {outcome.seconds:.1f} s")
        problem = outcome.problem((0, 1, 2) if command[0] == "diff" else (0, 2))
        assert problem is None, f"{command[0]} on a mutant of {name}: {problem}"

    property_()


def test_the_worker_survives_a_crash_of_the_reader(worker):
    # MLIR's bytecode reader crashes on this file in hloscope's reader process, which
    # hloscope survives: exit 2, one line.
    crashing = FIXTURES / "malformed" / "bytecode_segfault.mlirbc"
    outcome = worker.run("inspect", str(crashing), "--json")
    assert outcome.problem() is None, outcome
    assert "crashed (SIGSEGV)" in outcome.stderr


def test_the_harness_observes_a_crash_and_a_hang():
    # Only the hang has a short limit: a worker that never answers is hung however
    # fast the machine, while a real run on a loaded machine takes what it takes.
    harness = fuzz_support.FuzzWorker()
    try:
        crashed = harness.run(fuzz_support.ABORT)
        assert crashed.status == "crashed" and crashed.signal == 6
        assert "died (signal 6)" in (crashed.problem() or "")
        hung = harness.run(fuzz_support.HANG, timeout=5)
        assert hung.status == "hung"
        assert "no answer within" in (hung.problem() or "")
        fine = harness.run("inspect", str(fuzz_support.SEEDS["mlir-text"]), "--json")
        assert fine.status == "exited" and fine.problem() is None, fine
        assert harness.started == 3
    finally:
        harness.close()

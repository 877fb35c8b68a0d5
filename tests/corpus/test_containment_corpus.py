"""Containment over the shared corpus: every HLO and MLIR file compiled through the
command line (`hloscope fusions FILE --compile`, a process of its own) and through the
Python API (`hloscope.inspect(FILE).fusions()`, in a worker process), observed from
outside: no death by a signal (an abort in XLA), no hang past `--timeout`, no
traceback or internal error; exit 0 with a JSON document, or exit 2 with one line.

`make test` takes a seeded sample (`HLOSCOPE_CONTAINMENT_SAMPLE`, 4 files by default,
and the modules known to abort XLA); `make fuzz` sets it to `all`: every file, with as
many runs at once as there are cores (about an hour on 2 cores).
"""

from __future__ import annotations

import concurrent.futures
import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import CORPUS, ROOT, every_corpus_file

SAMPLE = os.environ.get("HLOSCOPE_CONTAINMENT_SAMPLE", "4")
SEED = 38
TIMEOUT = 120
"""`--timeout` for each command; a run past it (and a margin for the watchdog and the
process's start) is a hang."""
MARGIN = 60
# Valid modules whose compilation for the CPU fails one of XLA's checks (jaxlib 0.10).
ABORTS_XLA = (
    "xla-cc-embedded-hlo/xla/hlo/transforms/bfloat16_propagation_test.014.hlo",
    "xla-cc-embedded-hlo/xla/service/sharding_propagation_test.244.hlo",
    "xla/xla/hlo/translate/hlo_to_mhlo/tests/import_locs.hlo",
)
SUFFIXES = (".hlo", ".mlir", ".mlirbc", ".bc")


def files() -> list[Path]:
    every = [p for p in every_corpus_file() if p.suffix in SUFFIXES]
    if SAMPLE == "all":
        return every
    picked = random.Random(SEED).sample(every, min(int(SAMPLE), len(every)))
    known = {CORPUS / name for name in ABORTS_XLA if (CORPUS / name).is_file()}
    return sorted({*picked, *known})


def cli_problem(path: Path) -> str | None:
    """Why `hloscope fusions PATH --compile --json` broke containment, or None."""
    command = [sys.executable, "-c", "from hloscope.cli import main; main()"]
    arguments = ["fusions", str(path), "--compile", "--json", "--timeout", str(TIMEOUT)]
    try:
        done = subprocess.run(
            [*command, *arguments],
            capture_output=True,
            text=True,
            cwd=ROOT,
            timeout=TIMEOUT + MARGIN,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return f"hung past --timeout {TIMEOUT}"
    lines = done.stderr.splitlines()
    if done.returncode < 0 or done.returncode > 2:
        return f"exit {done.returncode}: {done.stderr[-300:]!r}"
    if "Traceback" in done.stderr or "internal error" in done.stderr:
        return f"traceback: {done.stderr[-300:]!r}"
    if done.returncode == 2:
        if len(lines) != 1 or not lines[0].startswith("hloscope: error: "):
            return f"exit 2 without one error line: {done.stderr[-300:]!r}"
        return None
    try:
        json.loads(done.stdout)
    except json.JSONDecodeError:
        return f"exit {done.returncode} without a JSON document"
    return None


# The API's worker: one process for many files, restarted after a death. For each
# file it prints `ok`, `refused` (HloscopeError) or `raised TYPE` (anything else).
WORKER = """
import sys
import hloscope
for line in sys.stdin:
    path = line.rstrip("\\n")
    try:
        hloscope.inspect(path).fusions()
        outcome = "ok"
    except hloscope.HloscopeError:
        outcome = "refused"
    except BaseException as exc:
        outcome = f"raised {type(exc).__name__}: {str(exc)[:200]}"
    print(outcome, flush=True)
"""


def api_problems(paths: list[Path]) -> dict[Path, str]:
    """Why `hloscope.inspect(path).fusions()` broke containment, per path."""
    problems: dict[Path, str] = {}
    pending = list(paths)
    while pending:
        worker = subprocess.Popen(
            [sys.executable, "-c", WORKER],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            cwd=ROOT,
        )
        assert worker.stdin is not None and worker.stdout is not None
        try:
            while pending:
                path = pending[0]
                worker.stdin.write(f"{path}\n")
                worker.stdin.flush()
                answer = _answer(worker, TIMEOUT + MARGIN)
                pending.pop(0)
                if answer is None:
                    try:
                        code = worker.wait(timeout=30)
                    except subprocess.TimeoutExpired:
                        problems[path] = "hung"
                    else:
                        problems[path] = f"killed the caller (exit {code})"
                    break
                if answer.startswith("raised"):
                    problems[path] = answer
        finally:
            worker.kill()
            worker.wait()
    return problems


def _answer(worker: subprocess.Popen[str], timeout: float) -> str | None:
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        assert worker.stdout is not None
        future = pool.submit(worker.stdout.readline)
        try:
            line = future.result(timeout=timeout)
        except concurrent.futures.TimeoutError:
            worker.kill()
            return None
    return line.strip() or None


@pytest.mark.corpus
@pytest.mark.slow
def test_compiling_corpus_modules_never_kills_or_hangs_the_caller(corpus):
    paths = files()
    assert paths
    workers = max(1, os.cpu_count() or 1) if SAMPLE == "all" else 1
    failures = []
    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        for path, problem in zip(paths, pool.map(cli_problem, paths), strict=True):
            if problem is not None:
                failures.append(f"cli {path.relative_to(corpus)}: {problem}")
        chunks = [paths[i::workers] for i in range(workers)]
        for found in pool.map(api_problems, chunks):
            failures += [f"api {p.relative_to(corpus)}: {why}" for p, why in found.items()]
    print(f"containment: {len(paths)} files through the CLI and the API, {len(failures)} bad")
    assert not failures, "\n".join(failures[:40])

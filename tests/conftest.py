"""Shared fixtures: the repository's samples, the shared corpus, and a CLI runner."""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import io
import json
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples"
DUMPS = SAMPLES / "dumps"
FIXTURES = Path(__file__).resolve().parent / "fixtures"
CORPUS = (ROOT / ".." / "shared" / "corpus").resolve()
DOCS = ROOT / "docs"


def documentation_files() -> list[Path]:
    """The documentation: the README and every page of the site (docs/, each listed in
    mkdocs.yml's nav). Their `$ hloscope` transcripts and `>>>` examples are tests
    (tests/cli/test_doc_transcripts.py, tests/api/test_doc_examples.py)."""
    return [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]


@dataclasses.dataclass
class Run:
    code: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        return json.loads(self.stdout)


def run_cli(*args: str) -> Run:
    """Run `hloscope ARGS` in process as the console script does (`hloscope.cli.main`,
    its error edge and exit codes included), with stdin empty and stdout and stderr
    captured. Quicker than a process of its own per command, which would import
    everything again."""
    from hloscope.cli import main

    stdout, stderr = io.StringIO(), io.StringIO()
    stdin = sys.stdin
    sys.stdin = io.StringIO()
    try:
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            try:
                main(list(args))
            except SystemExit as exc:
                code = exit_status(exc.code, stderr)
            else:
                raise AssertionError("hloscope.cli.main returned instead of exiting")
    finally:
        sys.stdin = stdin
    run = Run(code, stdout.getvalue(), stderr.getvalue())
    if "--json" in args and run.stdout.strip():
        _validate_json(run, args)
    return run


def _validate_json(run: Run, args: tuple[str, ...]) -> None:
    """Every `--json` document a test produces matches its command's JSON Schema
    (`hloscope schema COMMAND`, in its closed form: tests/schema_support.py)."""
    from schema_support import validate

    try:
        document = run.json()
    except ValueError:
        return  # Not one JSON document: the test that ran it says what is wrong.
    validate(document, "hloscope " + " ".join(args))


def exit_status(code: object, stderr: io.StringIO) -> int:
    """The exit status of a process ended by `SystemExit(code)`, as Python makes it."""
    if code is None:
        return 0
    if isinstance(code, int):
        return int(code)
    stderr.write(f"{code}\n")
    return 1


@pytest.fixture
def cli():
    return run_cli


@pytest.fixture(autouse=True)
def _repo_cwd(monkeypatch: pytest.MonkeyPatch) -> None:
    # Targets in tests are written relative to the repository root.
    monkeypatch.chdir(ROOT)


def require_corpus() -> Path:
    if not CORPUS.is_dir():
        pytest.skip(f"the shared corpus is not at {CORPUS}")
    return CORPUS


@pytest.fixture
def corpus() -> Path:
    return require_corpus()


# The corpus's own files, which are not modules.
CORPUS_NOT_MODULES = frozenset({"LICENSE", "COMMIT", "README.md"})


# `make test` reads every 4th corpus file (the suite's sample, fixed: the same files
# every run); `make corpus` reads all of them.
DEFAULT_CORPUS_SAMPLE = "4"


def corpus_sample_step() -> int:
    """`HLOSCOPE_CORPUS_SAMPLE=N`: the corpus tests read every N-th file in name order:
    4 in `make test` (the default), 8 in the smoke tier on older JAX releases
    (`make smoke-jax`), 1 (every file) in `make corpus`."""
    text = os.environ.get("HLOSCOPE_CORPUS_SAMPLE", DEFAULT_CORPUS_SAMPLE)
    if not text.isdigit() or int(text) < 1:
        raise ValueError(f"HLOSCOPE_CORPUS_SAMPLE={text!r}: expected a whole number >= 1")
    return int(text)


def corpus_files() -> list[Path]:
    """The module files of the shared corpus (none when it is absent): every N-th in
    name order (`corpus_sample_step`)."""
    if not CORPUS.is_dir():
        return []
    return every_corpus_file()[:: corpus_sample_step()]


def every_corpus_file() -> list[Path]:
    """Every module file of the shared corpus, in name order (none when it is absent)."""
    if not CORPUS.is_dir():
        return []
    return sorted(p for p in CORPUS.rglob("*") if p.is_file() and p.name not in CORPUS_NOT_MODULES)


def corpus_if_present() -> Path | None:
    """The shared corpus, or None where it is absent: for tests that run without it
    and only do more with it (fuzzing seeds)."""
    return CORPUS if CORPUS.is_dir() else None


def rename_hlo(text: str) -> tuple[str, dict[str, str]]:
    """HLO text with every instruction and every computation renamed (`tril.450` ->
    `r_tril_450`), definitions and uses alike, and nothing else; and the renaming."""
    defined = set(re.findall(r"^\s*(?:ROOT\s+)?%?([\w.-]+)\s*=", text, flags=re.MULTILINE))
    defined |= set(re.findall(r"^(?:ENTRY\s+)?%?([\w.-]+)\s*[({]", text, flags=re.MULTILINE))
    # Not the numbered entries of the stack frame tables (`1 {file_location_id=1}`).
    renaming = {
        name: "r_" + re.sub(r"[.-]", "_", name)
        for name in defined - {"HloModule"}
        if not name[0].isdigit()
    }
    # A name, not an opcode (`add(`), an attribute's key (`pad=`) or part of a longer
    # name.
    renamed = re.sub(
        r"(?<![\w.%-])(%?)([\w.-]+)(?![\w.(=-])",
        lambda m: m.group(1) + renaming.get(m.group(2), m.group(2)),
        text,
    )
    return renamed, renaming


def sample(name: str, attr: str, factory: str = "example_args") -> list[str]:
    """CLI arguments for a sample entrypoint with its example-argument factory."""
    return [f"samples/{name}.py:{attr}", "--args", f"samples/{name}.py:{factory}"]


os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

# hloscope's compile cache (hloscope.sources.compile_cache) of this test session only,
# set before hloscope runs in this process and inherited by the processes it starts:
# the suite never reads, fills or depends on the user's cache. Tests that compare a
# cold and a warm cache point it at a folder of their own.
_SESSION_CACHE = tempfile.mkdtemp(prefix="hloscope-test-compiles-")
os.environ["HLOSCOPE_CACHE_DIR"] = _SESSION_CACHE
os.environ.pop("HLOSCOPE_NO_CACHE", None)
atexit.register(shutil.rmtree, _SESSION_CACHE, ignore_errors=True)

# How tests/cli/test_golden.py compared its cases: byte for byte ("full"), or, on
# another JAX release than the goldens', by outline or as a feature that release lacks
# (tests/cli/version_dependent.txt). Reported at the end of the run.
GOLDEN_COMPARED = {"full": 0, "outline": 0, "unavailable": 0}


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if GOLDEN_COMPARED["outline"] or GOLDEN_COMPARED["unavailable"]:
        terminalreporter.write_line(
            f"golden outputs: {GOLDEN_COMPARED['full']} compared byte for byte, "
            f"{GOLDEN_COMPARED['outline']} by exit code, stderr and JSON keys, "
            f"{GOLDEN_COMPARED['unavailable']} as features this JAX release lacks "
            "(tests/cli/version_dependent.txt)"
        )


def line_of(path: Path, needle: str) -> int:
    """The 1-based line of `path` that contains `needle` (tests name source lines)."""
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if needle in line:
            return number
    raise AssertionError(f"{needle!r} not in {path}")

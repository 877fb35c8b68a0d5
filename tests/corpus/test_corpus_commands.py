"""Every file of the shared corpus through `params`, `placement`, `diff` (each file
against itself) and, for modules after XLA's optimizations, `fusions`, through the
command layer (`run_cli`, in process): exit codes per the contract, one line on stderr
when a file is refused, a JSON document when it is not, never a traceback or an
internal error. `tests/corpus/test_corpus.py` sweeps `inspect` and checks against jaxlib's
parsers which files must load.

Each file is read once here (`loader.load` is memoised for the sweep): the commands
differ in what they build from the loaded module and how they print it, which is
what this sweep exercises; loading itself is swept by `test_corpus.py`, and
`make fuzz` runs this sweep with every command loading the file itself.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections import Counter
from pathlib import Path

import pytest

from conftest import CORPUS, corpus_files, corpus_sample_step, run_cli

# `make fuzz` sets this: every command loads the file itself.
UNCACHED = os.environ.get("HLOSCOPE_SWEEP_UNCACHED") == "1"
# HLO text that elides large constants (`constant({...})`) is given made-up values by
# XLA's parser, different at each parse (README, known limits): loaded twice, such a
# module differs from itself in those constants only.
ELIDED_CONSTANT = b"({...})"


@dataclasses.dataclass
class Tally:
    tried: int = 0
    loaded: int = 0
    refused: int = 0
    runs: Counter[str] = dataclasses.field(default_factory=Counter)
    problems: list[str] = dataclasses.field(default_factory=list)


def check(run, command: str, allowed: tuple[int, ...] = (0, 2)) -> str | None:
    """Why a run breaks the contract, or None."""
    lines = run.stderr.splitlines()
    if "Traceback" in run.stderr or "internal error" in run.stderr:
        return f"{command}: crashed: {run.stderr[-300:]}"
    if run.code not in allowed:
        return f"{command}: exit {run.code}: {run.stderr[:300]}"
    if run.code == 2:
        if len(lines) != 1 or not lines[0].startswith("hloscope: error: "):
            return f"{command}: exit 2 without one error line: {run.stderr[:300]!r}"
        if run.stdout:
            return f"{command}: exit 2 with output"
        return None
    if lines:
        return f"{command}: exit {run.code} with stderr: {run.stderr[:200]}"
    try:
        doc = json.loads(run.stdout)
    except json.JSONDecodeError:
        return f"{command}: exit {run.code} without a JSON document"
    if doc.get("schema_version") != 1 or doc.get("command") != command:
        return f"{command}: JSON without the contract's keys"
    return None


def only_elided_constants_differ(path: Path, doc: dict) -> bool:
    changes = doc.get("changes", [])
    return (
        ELIDED_CONSTANT in path.read_bytes()
        and bool(changes)
        and all(
            c["kind"] == "changed" and c["op"] in ("stablehlo.constant", "hlo.constant")
            for c in changes
        )
    )


def sweep_file(path: Path, tally: Tally) -> None:
    name = str(path.relative_to(CORPUS))
    tally.tried += 1
    params = run_cli("params", str(path), "--json")
    problem = check(params, "params")
    if problem:
        tally.problems.append(f"{name}: {problem}")
        return
    if params.code == 2:
        tally.refused += 1
        # Refused: every other command must refuse it the same way.
        placement = run_cli("placement", str(path), "--json")
        if placement.code != 2 or placement.stderr != params.stderr:
            tally.problems.append(f"{name}: placement did not refuse it as params did")
        return
    tally.loaded += 1
    stage = params.json()["source"]["stage"]
    runs = [("placement", ["placement", str(path), "--json"], (0,))]
    runs.append(("diff", ["diff", str(path), str(path), "--json"], (0, 1)))
    if stage == "optimized":
        runs.append(("fusions", ["fusions", str(path), "--json"], (0,)))
    for command, args, allowed in runs:
        run = run_cli(*args)
        tally.runs[command] += 1
        problem = check(run, command, allowed)
        if problem is None and command == "diff":
            doc = run.json()
            # Loaded twice (the two sides, or the dump cache's parse against a fresh
            # one), elided constants may differ whether or not `make fuzz` runs.
            if doc["verdict"] != "same" and not only_elided_constants_differ(path, doc):
                problem = f"diff: differs from itself: {doc['changes'][:3]}"
            elif (run.code == 0) != (doc["verdict"] == "same"):
                problem = f"diff: verdict {doc['verdict']} with exit {run.code}"
        if problem:
            tally.problems.append(f"{name}: {problem}")


@pytest.mark.corpus
@pytest.mark.slow
def test_every_command_on_every_corpus_file(monkeypatch):
    files = corpus_files()
    if not files:
        pytest.skip(f"the shared corpus is not at {CORPUS}")
    from hloscope.sources import loader

    loaded: dict[str, loader.Loaded] = {}
    real_load = loader.load

    def load_once(target: str, options: loader.LoadOptions | None = None) -> loader.Loaded:
        # Files of the corpus are single dumps, so the options that matter are none:
        # an after-optimization dump loads the same with or without `optimized` (and
        # `fusions` only runs on those).
        if target not in loaded:
            loaded[target] = real_load(target, options)
        return loaded[target]

    if not UNCACHED:
        monkeypatch.setattr(loader, "load", load_once)
    tally = Tally()
    for path in files:
        sweep_file(path, tally)
        loaded.clear()
    print(
        f"corpus commands: {tally.tried} files, {tally.loaded} loaded, {tally.refused} "
        f"refused; runs {dict(tally.runs)}; {len(tally.problems)} problems"
    )
    assert not tally.problems, "\n".join(tally.problems[:40])
    # About 1,400 of the corpus's files load, 160 of them optimized dumps.
    assert tally.loaded > 1000 // corpus_sample_step()
    assert tally.runs["fusions"] > 120 // corpus_sample_step()

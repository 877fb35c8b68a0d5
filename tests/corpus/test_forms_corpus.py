"""The corpus's optimized HLO modules read converted and in XLA's own form
(`HLOSCOPE_HLO_FORM=xla`): `inspect`, `placement` and `fusions` give the same `--json`
once `forms_support.normalized` has written the representation-only differences one
way (tests/analyses/test_forms_agree.py does the same for the samples).

An optimized module: a file named `*after_optimizations*`, or an HLO file (text or
proto) whose module XLA scheduled (`is_scheduled=true` in its header), as XLA's
optimized modules are. A module that does not convert has one form only: counted,
not compared. `make forms` reads every such file (`HLOSCOPE_FORMS_SAMPLE=all`) and
prints how many agree; the suite reads a seeded sample of a few
(`HLOSCOPE_FORMS_SAMPLE=N`, default 4, the same files each run).
"""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from conftest import CORPUS, every_corpus_file, run_cli
from forms_support import difference, form

pytestmark = [pytest.mark.corpus, pytest.mark.slow]

COMMANDS = ("inspect", "placement", "fusions")
SAMPLE = "HLOSCOPE_FORMS_SAMPLE"
SEED = 59


def is_optimized(path: Path) -> bool:
    if "after_optimizations" in path.name:
        return True
    if not path.name.endswith((".hlo", ".hlo.pb", ".hlo.txt")):
        return False
    head = path.read_bytes()[:4096]
    return b"is_scheduled=true" in head.split(b"\n", 1)[0]


def optimized_files() -> list[Path]:
    """The corpus's optimized modules: all (`HLOSCOPE_FORMS_SAMPLE=all`) or a seeded
    sample of N."""
    files = [p for p in every_corpus_file() if is_optimized(p)]
    wanted = os.environ.get(SAMPLE, "4")
    if wanted == "all":
        return files
    count = int(wanted)
    return sorted(random.Random(SEED).sample(files, min(count, len(files))))


def compare(path: Path) -> tuple[bool, dict[str, str]]:
    """Whether the module converts, and each command's normalized difference."""
    found: dict[str, str] = {}
    for command in COMMANDS:
        with form(xla=False):
            converted = run_cli(command, str(path), "--json")
        if converted.code != 0 or converted.json()["source"]["ir"] != "hlo":
            return False, {}
        with form(xla=True):
            xla = run_cli(command, str(path), "--json")
        if xla.code != 0:
            found[command] = f"exit {xla.code} in XLA's form: {xla.stderr.strip()}"
            continue
        differs = difference(converted.json(), xla.json(), lines=30)
        if differs:
            found[command] = differs
    return True, found


# The modules that still read differently (docs/known-limits.md, "XLA's own form and
# the converted form"): on 43 optimized modules, 36 convert and 34 agree. Named here
# rather than as an expected failure of the whole test, which the suite's sample (none
# of these) would pass: each must still differ where it is read, and no other may.
STILL_DIFFERENT = {
    "xla-cc-embedded-hlo/xla/service/buffer_assignment_test.016.hlo": (
        "a call-start: its called computation held by the instruction in XLA's form, "
        "called through the wrapped computation's func.call converted"
    ),
    "xla-cc-embedded-hlo/xla/service/memory_space_assignment/"
    "memory_space_assignment_test.053.hlo": (
        "a send and its send-done: one stablehlo.send converted, two instructions in XLA's form"
    ),
}


def test_the_corpus_optimized_modules_read_the_same_in_both_forms() -> None:
    if not CORPUS.is_dir():
        pytest.skip(f"the shared corpus is not at {CORPUS}")
    files = optimized_files()
    compared = 0
    disagree: dict[str, dict[str, str]] = {}
    for path in files:
        converts, found = compare(path)
        compared += converts
        if found:
            disagree[str(path.relative_to(CORPUS))] = found
    print(
        f"\n{len(files)} optimized modules: {compared} convert and were compared, "
        f"{compared - len(disagree)} agree, {len(disagree)} differ"
    )
    for name, found in disagree.items():
        print(f"  {name}: {', '.join(found)}")
    read = {str(path.relative_to(CORPUS)) for path in files}
    fixed = sorted(name for name in STILL_DIFFERENT if name in read and name not in disagree)
    assert not fixed, f"these agree now: take them out of STILL_DIFFERENT: {fixed}"
    report = "\n\n".join(
        f"{name} {command}:\n{text}"
        for name, found in disagree.items()
        if name not in STILL_DIFFERENT
        for command, text in found.items()
    )
    assert not report, report[:8000]

"""`make bench`'s compare section (issue 62): `hloscope compare` of N configurations of
samples/llm_step.py's train step for tpu:v5e:2x2 (`LLM_REMAT` varied), each in a child
process of its own.

- against N single views, `profile --for` of each configuration alone (the same
  compiles: the step, and the step saving everything for MFU), each with a cold cache
  of its own, summed; `compare --jobs 1` with a cold cache. Goal: 1.1x.
- the same comparison again (the warm cache) against the first. Goal: 0.25x.
- the parent's own peak memory (`compare` run through the Python API in a process that
  prints its `ru_maxrss`, RUSAGE_SELF: its children are not counted) with N
  configurations against one. Goal: 1.1x (flat in N).

Skipped without libtpu. Run alone: `.venv/bin/python bench/run.py --only compare`.
"""

from __future__ import annotations

import importlib.util
import json
import statistics
import tempfile
from collections.abc import Callable

from bench.measure import Measurement
from bench.table import Row

SPEC = "tpu:v5e:2x2"
REMATS = ("dots", "full", "none")
SAMPLE = "samples/llm_step.py"
TARGET = [f"{SAMPLE}:train_step", "--args", f"{SAMPLE}:example_args"]
PARENT = """
import json, resource, sys
import hloscope
n = int(sys.argv[1])
report = hloscope.compare(
    "samples/llm_step.py:train_step", "tpu:v5e:2x2",
    vary={"LLM_REMAT": ["dots", "full", "none"][:n]},
    args_factory="samples/llm_step.py:example_args", jobs=1,
)
assert report.any_succeeded
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"rows": len(report.rows), "self_rss_kb": peak}))
"""


def compare_rows(
    measure: Callable[..., Measurement], hloscope: list[str], python: str
) -> list[Row]:
    """The section's rows, measured with `measure(command, env=...)` (bench/run.py's)."""
    name = f"compare of {len(REMATS)} configurations (--jobs 1) vs {len(REMATS)} profile --for"
    if importlib.util.find_spec("libtpu") is None:
        print("  compare: skipped, libtpu is not installed", flush=True)
        return [Row("compare", name, None, 1, 1, None, note="skipped: libtpu is not installed")]
    singles = []
    for remat in REMATS:
        with tempfile.TemporaryDirectory(prefix="hloscope-bench-compare-") as folder:
            env = {"LLM_REMAT": remat, "HLOSCOPE_CACHE_DIR": folder, "HLOSCOPE_NO_CACHE": ""}
            view = [*hloscope, "profile", *TARGET, "--for", SPEC, "--json"]
            singles.append(measure(view, env=env))
    vary = ["--vary", "LLM_REMAT=" + ",".join(REMATS)]
    command = [*hloscope, "compare", *TARGET, "--for", SPEC, *vary, "--jobs", "1", "--json"]
    with tempfile.TemporaryDirectory(prefix="hloscope-bench-compare-") as folder:
        env = {"HLOSCOPE_CACHE_DIR": folder, "HLOSCOPE_NO_CACHE": ""}
        first = measure(command, env=env)
        second = measure(command, env=env)
    rows = json.loads(first.stdout)["rows"]
    assert all(r["error"] is None for r in rows), [r["error"] for r in rows]
    assert all(r["compiles"] == 0 for r in json.loads(second.stdout)["rows"]), "compiled again"
    parents = {}
    for n in (1, len(REMATS)):
        with tempfile.TemporaryDirectory(prefix="hloscope-bench-compare-") as folder:
            env = {"HLOSCOPE_CACHE_DIR": folder, "HLOSCOPE_NO_CACHE": ""}
            run = measure([python, "-c", PARENT, str(n)], env=env)
        parents[n] = json.loads(run.stdout.strip().splitlines()[-1])["self_rss_kb"]
    single_seconds = sum(r.seconds for r in singles)
    return [
        Row("compare", name, None, single_seconds, first.seconds, 1.1),
        Row(
            "compare",
            "the same comparison again (warm cache) vs the first",
            None,
            first.seconds,
            second.seconds,
            0.25,
        ),
        Row(
            "compare",
            f"the parent's own peak memory, {len(REMATS)} configurations vs 1",
            None,
            1,
            1,
            None,
            baseline_rss_kb=parents[1],
            rss_kb=parents[len(REMATS)],
            rss_goal=1.1,
            note=f"single views {statistics.median(r.seconds for r in singles):.1f} s each",
        ),
    ]

"""`make bench`: hloscope against its floor, and against another revision of
hloscope (`--against REV`, `make bench`'s default 059e836), measured in the same run.

Every figure is a ratio against a baseline measured here, now, on this machine. With
`--against REV`, every hloscope command also runs from REV's tree (checked out under
bench/cache/trees/, on the same Python and packages: see bench/against.py), its runs
interleaved with this tree's and the floor's, so that the machine's load weighs on
all of them alike; each row then says this tree's time, REV's, their ratio (and the
ratio of their CPU times, steadier on a shared machine), and this tree's ratio to the
floor with its goal.

1. load: `hloscope inspect FILE --json` (load plus every static analysis) against
   `bench/floor.py FILE` (a bare process that parses the file with jaxlib's MLIR
   bindings and walks every op once), on generated modules of about 10k, 100k and
   1M ops in four formats (StableHLO text, MLIR bytecode, a portable VHLO artifact,
   HLO text) and on the corpus' largest real modules. Goals: at most 1.5x the
   floor's time at 100k and 1M ops for text and HLO, 2x for bytecode and portable
   artifacts; time per op flat within 20% from 10k to 1M; peak memory at most 2x
   the floor's (each command's own peak, as bench/measure.py measures it).
   start-up: `hloscope inspect --json` of a 25-op module against a bare
   `import jaxlib.mlir.ir`. Goal: at most 0.10 s over it (issue 39).
2. diff: `hloscope diff A B --json` of a 100k-op module and a mutated copy against
   the floor of parsing both (goal: at most 1.5x, issue 39), and against GNU `diff`
   of their texts (no goal: the scale of a line diff).
3. browser: time to first paint of a 100k-op module (goal: 2 s; the printed module
   is shown while its model is built, so the time until its ops can be selected is
   shown too), search (goal: 200 ms) and median keystroke latency (goal: 50 ms),
   through `App.run_test()`.
4. entrypoint: `hloscope inspect mod:fn --compile --json` against a plain script
   doing `jax.jit(fn).lower(args).compile()` and printing `as_text()`. Goal: 1.3x.
   And `hloscope check mod:fn --json` of the unchanged program against its baseline
   (recorded first, not timed), against the same script. Goal: 1.5x.
5. compiles: `hloscope compiles bench/compiles_workload.py` against
   `python bench/compiles_workload.py`: the program's steady loop (thousands of
   calls of a jitted step, after its compilations) as it times itself. Goal: 1.1x
   (the recording costs nothing outside the compilations). The whole run is shown
   too, without a goal (it adds hloscope's start-up and the recording of each
   compilation).
6. passes: `hloscope passes FOLDER --json` (and with `--find`) on 300 per-pass files
   of the 10k-op entrypoint (XLA's own files, repeated in pipeline order) against a
   plain Python read of the files counting their instruction lines. No goal: what
   matters is seconds rather than minutes; the ratio says what counting costs.

7. profile: `hloscope profile samples/profile_step.py:step --runs 20` against the
   same step compiled and run 20 times by a plain loop timing each call (after one
   warm-up call): the median time per run, as each measures it. Goal: 1.2x (JAX's
   profiler tracing every instruction costs little beside the run itself).
8. placement --why: `hloscope placement samples/why_collectives.py:constrained
   --why --json` against a plain script compiling the same function with Shardy's
   verbose dumps into a temporary folder (`xla_dump_hlo_pass_re=shardy-verbose`),
   each as a whole process. Goal: 1.3x.
9. for: `hloscope fusions ENTRY --for tpu:v5e:2x4 --json` on the 10k-op entrypoint
   against `bench/topology_floor.py`, a plain script doing the same topology compile
   in one process (libtpu's compile-only devices for v5e:2x4, the function lowered
   for `tpu`, compiled through the topology's client, the optimized module printed).
   Goal: 1.3x (issue 46). Skipped, saying so, without libtpu (`pip install
   'jax[tpu]'`, or `hloscope[tpu]`).
10. cache: hloscope's compile cache on samples/llm_step.py's train step at
   LLM_STEP=4,1024,512,16 for tpu:v5e:4x4 (16 chips): the first view (`inspect
   --for`, a cold cache) against bench/llm_topology_floor.py, the same topology
   compile in a plain process, by CPU time (goal 1.3x; RSS 1.2x); and a second view
   (`memory`, a warm cache) against the first (goal: 0.25x). The other rows run with
   HLOSCOPE_NO_CACHE=1: each of their runs measures a compile. Skipped without libtpu.
11. profile --for: `hloscope profile samples/llm_step.py:train_step --for tpu:v5e:2x4
    --json` (the estimate) against `hloscope memory` of the same program and target:
    both compile once; the estimate reads the kernels and XLA's cost of each. Goal:
    1.2x (issue 55). Skipped without libtpu.
12. compare: `hloscope compare` of 3 configurations against 3 single views, the same
    comparison again, and the parent's memory flat in N (bench/compare_bench.py).

Results go to bench/results/latest.md and latest.json.

    .venv/bin/python bench/run.py [--quick] [--against REV] [--only SECTION,...]

--quick skips the 1M-op modules; --only measures some sections (load, startup,
diff, browser, entrypoint, compiles, passes, profile, placement --why, for, cache,
profile --for, compare).
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
RESULTS = BENCH / "results"
CORPUS = (ROOT / ".." / "shared" / "corpus").resolve()
PYTHON = sys.executable
HLOSCOPE = [PYTHON, "-m", "hloscope"]
sys.path.insert(0, str(ROOT))

from bench import generate  # noqa: E402
from bench.against import Tree, checkout, parse_arguments  # noqa: E402
from bench.compare_bench import compare_rows  # noqa: E402
from bench.measure import Measurement, measure_command  # noqa: E402
from bench.table import Row, markdown  # noqa: E402

THIS = Tree("this tree", ROOT)
AGAINST: Tree | None = None
"""The tree of `--against REV`, set by main()."""


def bytecode_cache_env() -> dict[str, str]:
    """Python's compiled-bytecode cache on, kept under bench/cache: what an installed
    hloscope has. Without it (`PYTHONDONTWRITEBYTECODE`, set on some machines) every
    run compiles hloscope's modules from source (about 0.15 s), while jaxlib, whose
    bytecode ships with it, is spared that; the floor gets the same setting."""
    environment = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    environment["PYTHONPYCACHEPREFIX"] = str(BENCH / "cache" / "pycache")
    # Every row but `cache` measures a compile in each run: hloscope's compile cache
    # would serve the repeats (the `cache` rows turn it on, in a folder of their own).
    environment["HLOSCOPE_NO_CACHE"] = "1"
    return environment


def measure(
    command: list[str], tree: Tree = THIS, env: dict[str, str] | None = None
) -> Measurement:
    """Wall time and the command's own peak RSS, run from the repository root with
    the bytecode cache on, and `tree`'s hloscope first on the path (this tree's by
    default: an editable install may point at another checkout); `env` adds to the
    environment."""
    environment = {**bytecode_cache_env(), **(env or {})}
    return measure_command(command, cwd=ROOT, env=tree.env(environment))


def median_of(command: list[str], repeats: int) -> tuple[float, int, str]:
    runs = [measure(command) for _ in range(repeats)]
    return (
        statistics.median(r.seconds for r in runs),
        max(r.max_rss_kb for r in runs),
        runs[-1].stdout,
    )


def trees() -> list[Tree]:
    return [THIS] if AGAINST is None else [THIS, AGAINST]


@dataclasses.dataclass
class Runs:
    """The runs of one row, by who ran: `baseline`, or a tree's label."""

    by: dict[str, list[Measurement]]
    failed: dict[str, str] = dataclasses.field(default_factory=dict)

    def seconds(self, key: str) -> float | None:
        runs = self.by.get(key)
        return statistics.median(r.seconds for r in runs) if runs else None

    def cpu(self, key: str) -> float | None:
        runs = self.by.get(key)
        return statistics.median(r.cpu_seconds for r in runs) if runs else None

    def rss(self, key: str) -> int | None:
        runs = self.by.get(key)
        return max(r.max_rss_kb for r in runs) if runs else None

    def stdout(self, key: str) -> str:
        return self.by[key][-1].stdout


REPEATS = 1
"""`--repeats K`: every measurement runs K times as often; set by main()."""


def interleaved(
    baseline: list[str] | None,
    hloscope_args: list[str],
    repeats: int,
    only: list[Tree] | None = None,
) -> Runs:
    """`repeats` rounds of the baseline (if any), then `hloscope ARGS` from each tree,
    in turn, so that the machine's load weighs on all of them alike. A tree whose run
    fails (REV lacking an option) is dropped from the row, saying why."""
    runs = Runs({})
    for _ in range(repeats * REPEATS):
        if baseline is not None:
            runs.by.setdefault("baseline", []).append(measure(baseline))
        for tree in only if only is not None else trees():
            if tree.label in runs.failed:
                continue
            try:
                run = measure([*HLOSCOPE, *hloscope_args], tree)
            except RuntimeError as error:
                if tree is THIS:
                    raise
                runs.failed[tree.label] = str(error).splitlines()[-1][:120]
                runs.by.pop(tree.label, None)
                continue
            runs.by.setdefault(tree.label, []).append(run)
    return runs


def measure_or_none(command: list[str], tree: Tree) -> Measurement | None:
    """`measure`, except that the `--against` tree's failure (an older hloscope without
    what the command asks) is None: that tree is left out of the row."""
    try:
        return measure(command, tree)
    except RuntimeError:
        if tree is THIS:
            raise
        return None


def with_against(row: Row, runs: Runs) -> Row:
    """`row` with REV's median time and both trees' CPU times from `runs`."""
    row.cpu_seconds = runs.cpu(THIS.label)
    if AGAINST is not None:
        row.against_seconds = runs.seconds(AGAINST.label)
        row.against_cpu_seconds = runs.cpu(AGAINST.label)
        if AGAINST.label in runs.failed:
            row.note = f"{AGAINST.label} failed: {runs.failed[AGAINST.label]}"
    return row


def repeats_for(ops: int) -> int:
    return 5 if ops < 50_000 else 3 if ops < 500_000 else 1


# --------------------------------------------------------------------------- 1. load


def load_rows(sizes: list[str]) -> list[Row]:
    rows = []
    for size in sizes:
        files = generate.generate(size)
        for fmt in ("mlir", "mlirbc", "vhlo", "hlo"):
            path = files[fmt]
            goal = BINARY_GOAL if fmt in ("mlirbc", "vhlo") else TEXT_GOAL
            name = f"generated {size} ({fmt})"
            rows.append(load_row(name, path, goal if size != "10k" else None))
    for relative in (
        "xla/xla/tools/benchmarks/hlo/hlo_mixtral_8x7b_bf16_2x8.hlo",
        "xla/xla/backends/cpu/benchmarks/hlo/gemma2_2b_keras_jax.hlo",
        "gleasonk-stablehlo-exports/exports/pt_bert.mlir",
    ):
        path = CORPUS / relative
        if path.exists():
            rows.append(load_row(f"corpus {path.name}", path, TEXT_GOAL))
    return rows


# The goals for `inspect --json` against the floor: text and HLO text, and
# bytecode (MLIR's or a portable artifact's), which the floor parses faster.
TEXT_GOAL = 1.5
BINARY_GOAL = 2.0


TINY = {
    ".mlir": ROOT / "samples/dumps/mlp.stablehlo.mlir",
    ".mlirbc": ROOT / "samples/dumps/mlp.mlirbc",
    ".hlo": ROOT / "samples/dumps/mlp.before_optimizations.hlo",
}
_startup: dict[str, float] = {}


def startup_seconds(suffix: str) -> float:
    if suffix not in _startup:
        tiny = TINY.get(suffix, TINY[".mlir"])
        _startup[suffix] = median_of([*HLOSCOPE, "inspect", str(tiny), "--json"], 5)[0]
    return _startup[suffix]


def load_row(name: str, path: Path, goal: float | None) -> Row:
    floor = [PYTHON, str(BENCH / "floor.py"), str(path)]
    # Once first, for the op count (and to warm the file into the page cache).
    ops = int(measure(floor).stdout.strip().splitlines()[-1])
    runs = interleaved(floor, ["inspect", str(path), "--json"], repeats_for(ops))
    json.loads(runs.stdout(THIS.label))
    row = Row(
        "load",
        name,
        ops,
        runs.seconds("baseline") or 0.0,
        runs.seconds(THIS.label) or 0.0,
        goal,
        runs.rss("baseline"),
        runs.rss(THIS.label),
        2.0,
        startup_seconds=startup_seconds(path.suffix),
    )
    return with_against(row, runs)


STARTUP_FLOOR = [PYTHON, "-c", "import jaxlib.mlir.ir"]


def startup_rows() -> list[Row]:
    """`inspect --json` of a 25-op module against importing jaxlib's MLIR bindings
    (issue 39: at most 0.10 s over it)."""
    tiny = TINY[".mlir"]
    runs = interleaved(STARTUP_FLOOR, ["inspect", str(tiny), "--json"], 7)
    row = Row(
        "startup",
        f"start-up, a 25-op module ({tiny.name}) vs import jaxlib.mlir.ir",
        None,
        runs.seconds("baseline") or 0.0,
        runs.seconds(THIS.label) or 0.0,
        None,
        goal_over=0.10,
    )
    return [with_against(row, runs)]


# --------------------------------------------------------------------------- 2. diff


def has_command(name: str, tree: Tree = THIS, option: str | None = None) -> bool:
    """Whether `tree`'s hloscope has the command `name` (and its `option`)."""
    run = subprocess.run(
        [*HLOSCOPE, name, "--help"],
        capture_output=True,
        cwd=ROOT,
        env=tree.env(bytecode_cache_env()),
        check=False,
    )
    return run.returncode == 0 and (option is None or option in run.stdout.decode())


def trees_with(name: str, option: str | None = None) -> list[Tree]:
    """This tree, and the `--against` tree if it has the command too."""
    return [t for t in trees() if t is THIS or has_command(name, t, option)]


def mutate(text: str) -> str:
    """A copy with known changes: one op kind swapped, one constant changed."""
    text = text.replace("stablehlo.tanh", "stablehlo.logistic", 1)
    # The RMS norm's epsilon, 1e-6, as MLIR's printer spells it in f32.
    changed = re.sub(r"dense<9\.99999997E-7>", "dense<2.000000e-06>", text, count=1)
    assert changed != text, "the module has no epsilon constant to change"
    return changed


def diff_rows(size: str) -> list[Row]:
    """`hloscope diff` of a module and a mutated copy, against the floor of parsing both
    (goal: 1.5x, issue 39), and, for scale, against GNU diff of their texts (no goal)."""
    if not has_command("diff"):
        return [Row("diff", "100k vs mutated copy", None, 1, 1, None, note="no diff command yet")]
    files = generate.generate(size)
    original = files["mlir"]
    floor = [PYTHON, str(BENCH / "floor.py")]
    with tempfile.TemporaryDirectory() as tmp:
        mutated = Path(tmp) / "mutated.mlir"
        mutated.write_text(mutate(original.read_text()))
        parse_both = []
        runs = Runs({})
        for _ in range(3):
            # Interleaved: parsing both, then each tree's diff.
            parse_both.append(
                measure([*floor, str(original)]).seconds + measure([*floor, str(mutated)]).seconds
            )
            for tree, measured in interleaved(
                None, ["diff", str(original), str(mutated), "--json"], 1
            ).by.items():
                runs.by.setdefault(tree, []).extend(measured)
        gnu, _, _ = median_of(["diff", str(original), str(mutated)], 3)
        json.loads(runs.stdout(THIS.label))
    seconds = runs.seconds(THIS.label) or 0.0
    ops = json.loads(generate.paths(size)["meta"].read_text())["ops"]
    return [
        with_against(
            Row(
                "diff",
                f"generated {size} vs mutated copy (floor: parsing both)",
                ops,
                statistics.median(parse_both),
                seconds,
                1.5,
            ),
            runs,
        ),
        Row("diff", f"generated {size} vs mutated copy (GNU diff)", ops, gnu, seconds, None),
    ]


# --------------------------------------------------------------------------- 3. browser


def browser_rows(size: str) -> list[Row]:
    probe = BENCH / "tui_latency.py"
    if not probe.exists():
        return [Row("browser", "first paint, keystrokes", None, 1, 1, None, note="no browser yet")]
    files = generate.generate(size)
    results: dict[str, dict[str, Any]] = {}
    failed = ""
    for tree in trees():
        # The probe drives the browser through its Python classes: an older tree's may
        # differ, and is then left out of these rows.
        try:
            results[tree.label] = json.loads(
                measure([PYTHON, str(probe), str(files["mlir"])], tree).stdout
            )
        except (RuntimeError, ValueError) as error:
            if tree is THIS:
                raise
            failed = f"{tree.label} failed: {str(error).splitlines()[-1][:120]}"
    result = results[THIS.label]
    other = results.get(AGAINST.label) if AGAINST is not None else None

    def row(name: str, goal_seconds: float, pick: Any, goal: float | None, note: str = "") -> Row:
        return Row(
            "browser",
            name,
            None,
            goal_seconds,
            pick(result),
            goal,
            note=note or failed,
            against_seconds=pick(other) if other is not None else None,
        )

    return [
        row(f"first paint {size} (vs 2 s)", 2.0, lambda r: r["first_paint"], 1.0),
        row(f"model built, ops selectable {size}", 2.0, lambda r: r["ready"], None),
        row(f"search {size} (vs 200 ms)", 0.200, lambda r: r["keys"]["search"], 1.0),
        row(
            f"median keystroke {size} (vs 50 ms)",
            0.050,
            lambda r: r["median_keystroke"],
            1.0,
            note=", ".join(f"{k} {v * 1000:.0f} ms" for k, v in result["keys"].items()),
        ),
    ]


# --------------------------------------------------------------------------- 4. entrypoint

PLAIN_SCRIPT = """
import sys
sys.path.insert(0, {root!r})
import jax
from bench.generate import entrypoint, example_args
print(jax.jit(entrypoint).lower(*example_args()).compile().as_text())
"""


def entrypoint_rows() -> list[Row]:
    plain = [PYTHON, "-c", PLAIN_SCRIPT.format(root=str(ROOT))]
    target = ["bench/generate.py:entrypoint", "--args", "bench/generate.py:example_args"]
    compiled = interleaved(plain, ["inspect", *target, "--compile", "--json"], 3)
    baseline = compiled.seconds("baseline") or 0.0
    lowered = interleaved(None, ["inspect", *target, "--json"], 3)
    rows = []
    with tempfile.TemporaryDirectory(prefix="hloscope-bench-") as folder:
        # A baseline of each tree's own making (their formats may differ).
        def check(tree: Tree) -> list[str]:
            baseline_file = str(Path(folder) / f"entrypoint-{trees().index(tree)}.json")
            return [*HLOSCOPE, "check", *target, "--baseline", baseline_file, "--json"]

        checkers = [
            tree
            for tree in trees_with("check", "--baseline")
            if measure_or_none([*check(tree), "--update"], tree) is not None
        ]
        checked = Runs({})
        for _ in range(3):
            for tree in checkers:
                run = measure_or_none(check(tree), tree)
                if run is not None:
                    checked.by.setdefault(tree.label, []).append(run)
        rows.append(
            with_against(
                Row(
                    "entrypoint",
                    "check (unchanged) vs lower().compile() script",
                    None,
                    baseline,
                    checked.seconds(THIS.label) or 0.0,
                    1.5,
                ),
                checked,
            )
        )
    return [
        *rows,
        with_against(
            Row(
                "entrypoint",
                "inspect --compile vs lower().compile() script",
                None,
                baseline,
                compiled.seconds(THIS.label) or 0.0,
                1.3,
            ),
            compiled,
        ),
        with_against(
            Row(
                "entrypoint",
                "inspect (lowering only) vs the same script",
                None,
                baseline,
                lowered.seconds(THIS.label) or 0.0,
                None,
            ),
            lowered,
        ),
    ]


# --------------------------------------------------------------------------- 5. compiles


def compiles_rows(repeats: int = 5) -> list[Row]:
    workload = str(BENCH / "compiles_workload.py")
    plain_loop, plain_total = [], []
    loops: dict[str, list[float]] = {}
    totals: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as folder:
        timing = str(Path(folder) / "loop.txt")
        for _ in range(repeats):
            # Interleaved, so that the machine's load weighs on all alike.
            plain_total.append(measure([PYTHON, workload, timing]).seconds)
            plain_loop.append(float(Path(timing).read_text()))
            for tree in trees():
                run = measure_or_none([*HLOSCOPE, "compiles", workload, timing, "--json"], tree)
                if run is None:
                    continue
                totals.setdefault(tree.label, []).append(run.seconds)
                loops.setdefault(tree.label, []).append(float(Path(timing).read_text()))
    other = AGAINST.label if AGAINST is not None else ""
    return [
        Row(
            "compiles",
            "steady loop under hloscope compiles vs plain",
            None,
            statistics.median(plain_loop),
            statistics.median(loops[THIS.label]),
            1.1,
            against_seconds=statistics.median(loops[other]) if other in loops else None,
        ),
        Row(
            "compiles",
            "whole run (start-up, compilations recorded) vs plain",
            None,
            statistics.median(plain_total),
            statistics.median(totals[THIS.label]),
            None,
            against_seconds=statistics.median(totals[other]) if other in totals else None,
        ),
    ]


# --------------------------------------------------------------------------- 6. passes

PASS_FILES = 300

PLAIN_READ = """
import sys
from pathlib import Path
ops = [sum(1 for line in open(p) if " = " in line) for p in sorted(Path(sys.argv[1]).iterdir())]
print(len(ops), sum(ops))
"""


def pass_dump_folder() -> Path:
    """Per-pass files of the 10k-op entrypoint, compiled with `xla_dump_hlo_pass_re=.*`
    (cached), repeated in pipeline order up to `PASS_FILES` files (renumbered)."""
    import jax

    folder = generate.CACHE / f"passes-jax{jax.__version__}-g{generate.GENERATOR_VERSION}"
    if folder.is_dir() and len(list(folder.iterdir())) >= PASS_FILES:
        return folder
    shutil.rmtree(folder, ignore_errors=True)
    with tempfile.TemporaryDirectory() as tmp:
        lowered = jax.jit(generate.entrypoint).lower(*generate.example_args())
        lowered.compile(compiler_options={"xla_dump_to": tmp, "xla_dump_hlo_pass_re": ".*"})
        pattern = re.compile(r"^(module_\d+\.[^.]+)\.(\d{4})\.(.+\.txt)$")
        found = sorted(
            (int(m[2]), m[1], m[3]) for p in Path(tmp).iterdir() if (m := pattern.match(p.name))
        )
        folder.mkdir(parents=True)
        step = 0
        while step < PASS_FILES:
            for number, module, rest in found:
                source = Path(tmp) / f"{module}.{number:04d}.{rest}"
                shutil.copyfile(source, folder / f"{module}.{step:04d}.{rest}")
                step += 1
    return folder


def passes_rows() -> list[Row]:
    folder = pass_dump_folder()
    files = len(list(folder.iterdir()))
    passes = interleaved(
        [PYTHON, "-c", PLAIN_READ, str(folder)], ["passes", str(folder), "--json"], 3
    )
    baseline = passes.seconds("baseline") or 0.0
    steps = json.loads(passes.stdout(THIS.label))["passes"]
    found = interleaved(None, ["passes", str(folder), "--find", "fusion", "--json"], 3)
    ops = max(step["ops"] for step in steps)
    name = f"{files} pass files of a 10k-op module vs reading them"
    return [
        with_against(
            Row("passes", name, ops, baseline, passes.seconds(THIS.label) or 0.0, None), passes
        ),
        with_against(
            Row(
                "passes",
                "the same with --find fusion",
                ops,
                baseline,
                found.seconds(THIS.label) or 0.0,
                None,
            ),
            found,
        ),
    ]


# --------------------------------------------------------------------------- report


# --------------------------------------------------------------------------- 7. profile

PROFILE_RUNS = 20

PLAIN_RUNS = """
import statistics, sys, time
sys.path.insert(0, {root!r})
import jax
from samples.profile_step import example_args, step
from hloscope_bench_inputs import concrete
args = concrete(example_args())
jax.block_until_ready(step(*args))
times = []
for _ in range({runs}):
    start = time.perf_counter()
    jax.block_until_ready(step(*args))
    times.append(time.perf_counter() - start)
print(statistics.median(times))
"""

CONCRETE_INPUTS = """
import jax, numpy as np
def concrete(shapes):
    rng = np.random.default_rng(0)
    return tuple(
        jax.device_put(rng.standard_normal(s.shape).astype(s.dtype)) for s in shapes
    )
"""


def profile_rows(repeats: int = 3) -> list[Row]:
    target = ["samples/profile_step.py:step", "--args", "samples/profile_step.py:example_args"]
    command = [*HLOSCOPE, "profile", *target, "--runs", str(PROFILE_RUNS), "--json"]
    plain: list[float] = []
    profiled: dict[str, list[float]] = {}
    profilers = trees_with("profile")
    with tempfile.TemporaryDirectory(prefix="hloscope-bench-") as folder:
        Path(folder, "hloscope_bench_inputs.py").write_text(CONCRETE_INPUTS)
        script = PLAIN_RUNS.format(root=str(ROOT), runs=PROFILE_RUNS)
        plain_command = [PYTHON, "-c", f"import sys; sys.path.insert(0, {folder!r})\n{script}"]
        for _ in range(repeats):
            # Interleaved, so that the machine's load weighs on all alike.
            plain.append(float(measure(plain_command).stdout.strip().splitlines()[-1]))
            for tree in profilers:
                run = measure_or_none(command, tree)
                if run is not None:
                    doc = json.loads(run.stdout)
                    profiled.setdefault(tree.label, []).append(doc["seconds_per_run"]["median"])
    other = profiled.get(AGAINST.label) if AGAINST is not None else None
    return [
        Row(
            "profile",
            "profile's runs (traced) vs the same runs in a plain loop",
            None,
            statistics.median(plain),
            statistics.median(profiled[THIS.label]),
            1.2,
            against_seconds=statistics.median(other) if other else None,
        )
    ]


# --------------------------------------------------------------------------- 8. placement --why

WHY_SCRIPT = """
import importlib.util, sys, tempfile
sys.path.insert(0, {root!r})
spec = importlib.util.spec_from_file_location("why", {root!r} + "/samples/why_collectives.py")
m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
with tempfile.TemporaryDirectory() as folder:
    m.constrained.lower(*m.constrained_args()).compile(compiler_options={{
        "xla_dump_to": folder, "xla_dump_hlo_pass_re": "shardy-verbose"}})
"""


def why_rows(repeats: int = 3) -> list[Row]:
    """`placement --why` against a plain script compiling the same function with
    Shardy's verbose dumps (the compile --why does, with nothing read back)."""
    plain = [PYTHON, "-c", WHY_SCRIPT.format(root=str(ROOT))]
    sample = "samples/why_collectives.py"
    target = [f"{sample}:constrained", "--args", f"{sample}:constrained_args"]
    runs = interleaved(
        plain, ["placement", *target, "--why", "--json"], repeats, trees_with("placement", "--why")
    )
    row = Row(
        "placement --why",
        "placement --why vs lower().compile() with Shardy's dumps",
        None,
        runs.seconds("baseline") or 0.0,
        runs.seconds(THIS.label) or 0.0,
        1.3,
    )
    return [with_against(row, runs)]


# --------------------------------------------------------------------------- 9. for

FOR_SPEC = "tpu:v5e:2x4"


def for_rows(repeats: int = 3) -> list[Row]:
    """`fusions ENTRY --for tpu:v5e:2x4 --json` on the 10k-op entrypoint against
    bench/topology_floor.py, the same topology compile in a plain process (issue 46:
    at most 1.3x). Skipped without libtpu."""
    name = f"fusions --for {FOR_SPEC} vs topology compile script"
    if importlib.util.find_spec("libtpu") is None:
        print("  for: skipped, libtpu is not installed", flush=True)
        return [Row("for", name, None, 1, 1, None, note="skipped: libtpu is not installed")]
    # The script sets ALLOW_MULTIPLE_LIBTPU_LOAD=1 itself before JAX loads libtpu.
    floor = [PYTHON, str(BENCH / "topology_floor.py")]
    target = ["bench/generate.py:entrypoint", "--args", "bench/generate.py:example_args"]
    runs = interleaved(
        floor,
        ["fusions", *target, "--for", FOR_SPEC, "--json"],
        repeats,
        trees_with("fusions", "--for"),
    )
    document = json.loads(runs.stdout(THIS.label))
    assert document["compiled_for"]["spec"] == FOR_SPEC, document["compiled_for"]
    assert runs.stdout("baseline").startswith("HloModule "), "the floor printed no module"
    row = Row(
        "for",
        name,
        None,
        runs.seconds("baseline") or 0.0,
        runs.seconds(THIS.label) or 0.0,
        1.3,
        runs.rss("baseline"),
        runs.rss(THIS.label),
    )
    return [with_against(row, runs)]


# --------------------------------------------------------------------------- 10. cache

CACHE_SPEC = "tpu:v5e:4x4"
CACHE_STEP = "4,1024,512,16"
"""samples/llm_step.py's size (LLM_STEP) for the `cache` rows: 4 layers, d_model
1024, sequence 512, batch 16, over the 16 chips of a v5e 4x4 slice."""


def cache_rows(repeats: int = 1) -> list[Row]:
    """The compile cache (issue 53) on a 16-chip LLM-shaped step: the first view
    (`inspect --for tpu:v5e:4x4`, a cold cache) against bench/llm_topology_floor.py, a
    plain process doing the same topology compile (CPU time; goals 1.3x, RSS 1.2x);
    and a second view of the same program and target (`memory`, the warm cache)
    against the first (goal: at most 25% of it). Skipped without libtpu."""
    first_name = (
        f"first view (cold cache) of the LLM step --for {CACHE_SPEC} vs topology compile "
        "script (CPU)"
    )
    if importlib.util.find_spec("libtpu") is None:
        print("  cache: skipped, libtpu is not installed", flush=True)
        return [Row("cache", first_name, None, 1, 1, None, note="skipped: libtpu is not installed")]
    step = {"LLM_STEP": CACHE_STEP}
    floor = [PYTHON, str(BENCH / "llm_topology_floor.py")]
    sample = "samples/llm_step.py"
    target = [f"{sample}:train_step", "--args", f"{sample}:example_args", "--for", CACHE_SPEC]
    floors, firsts, seconds = [], [], []
    for _ in range(repeats * REPEATS):
        floors.append(measure(floor, env=step))
        with tempfile.TemporaryDirectory(prefix="hloscope-bench-compiles-") as folder:
            cached = {**step, "HLOSCOPE_CACHE_DIR": folder, "HLOSCOPE_NO_CACHE": ""}
            firsts.append(measure([*HLOSCOPE, "inspect", *target, "--json"], env=cached))
            seconds.append(measure([*HLOSCOPE, "memory", *target, "--json"], env=cached))
    first = json.loads(firsts[-1].stdout)
    assert first["compiled_for"]["spec"] == CACHE_SPEC, first["compiled_for"]
    assert first["timings"]["compile_cached"] is False, "the first view compiled"
    assert floors[-1].stdout.startswith("HloModule "), "the floor printed no module"
    assert json.loads(seconds[-1].stdout)["command"] == "memory"

    def cpu(runs: list[Measurement]) -> float:
        return statistics.median(r.cpu_seconds for r in runs)

    return [
        Row(
            "cache",
            first_name,
            None,
            cpu(floors),
            cpu(firsts),
            1.3,
            max(r.max_rss_kb for r in floors),
            max(r.max_rss_kb for r in firsts),
            rss_goal=1.2,
            note=f"wall {statistics.median(r.seconds for r in firsts):.1f} s",
        ),
        Row(
            "cache",
            "second view (memory, warm cache) vs the first view (CPU)",
            None,
            cpu(firsts),
            cpu(seconds),
            0.25,
            note=f"wall {statistics.median(r.seconds for r in seconds):.1f} s",
        ),
    ]


def profile_for_rows(repeats: int = 3) -> list[Row]:
    """`profile STEP --for tpu:v5e:2x4 --json` (the estimate) against `memory` of the
    same program and target: the estimate reads the compiled module it already has and
    compiles nothing twice (issue 55: at most 1.2x). Skipped without libtpu."""
    name = f"profile --for {FOR_SPEC} vs memory --for, the LLM step"
    if importlib.util.find_spec("libtpu") is None:
        print("  profile --for: skipped, libtpu is not installed", flush=True)
        return [
            Row("profile --for", name, None, 1, 1, None, note="skipped: libtpu is not installed")
        ]
    target = ["samples/llm_step.py:train_step", "--args", "samples/llm_step.py:example_args"]
    floor = [*HLOSCOPE, "memory", *target, "--for", FOR_SPEC, "--json"]
    runs = interleaved(
        floor,
        ["profile", *target, "--for", FOR_SPEC, "--json"],
        repeats,
        [THIS],
    )
    document = json.loads(runs.stdout(THIS.label))
    assert document["estimated"] is True, "profile --for gave no estimate"
    row = Row(
        "profile --for",
        name,
        None,
        runs.seconds("baseline") or 0.0,
        runs.seconds(THIS.label) or 0.0,
        1.2,
        runs.rss("baseline"),
        runs.rss(THIS.label),
    )
    return [row]


def machine() -> dict[str, str]:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    import jax

    return {
        "cpu": cpu,
        "load": " ".join(f"{v:.1f}" for v in os.getloadavg()),
        "cores": str(os.cpu_count()),
        "python": platform.python_version(),
        "jax": jax.__version__,
        "date": time.strftime("%Y-%m-%d"),
    }


def main(argv: list[str] | None = None) -> int:
    global AGAINST, REPEATS
    options = parse_arguments(argv)
    REPEATS = options.repeats
    sizes = ["10k", "100k"] if options.quick else ["10k", "100k", "1m"]
    start = time.perf_counter()
    info = machine()
    info["repeats"] = str(REPEATS)
    if options.against:
        print(f"checking out {options.against} ...", flush=True)
        AGAINST = checkout(options.against, ROOT, BENCH / "cache")
        if AGAINST.overlay is not None:
            pins = (AGAINST.overlay / ".installed").read_text().splitlines()
            info["overlay"] = ", ".join(pins)
    for size in sizes:
        print(f"generating {size} ...", flush=True)
        generate.generate(size)
    rows: list[Row] = []
    for section, build in (
        ("load", lambda: load_rows(sizes)),
        ("startup", startup_rows),
        ("diff", lambda: diff_rows("100k")),
        ("browser", lambda: browser_rows("100k")),
        ("entrypoint", entrypoint_rows),
        ("compiles", compiles_rows),
        ("passes", passes_rows),
        ("profile", profile_rows),
        ("placement --why", why_rows),
        ("for", for_rows),
        ("cache", cache_rows),
        ("profile --for", profile_for_rows),
        ("compare", lambda: compare_rows(measure, HLOSCOPE, PYTHON)),
    ):
        if section not in options.sections:
            continue
        print(f"measuring {section} ...", flush=True)
        rows.extend(build())
    against = AGAINST.label if AGAINST is not None else None
    table = markdown(rows, info, against)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "latest.md").write_text(table)
    (RESULTS / "latest.json").write_text(
        json.dumps(
            {
                "machine": info,
                "against": against,
                "rows": [
                    {
                        **dataclasses.asdict(r),
                        "ratio": r.ratio,
                        "against_ratio": r.against_ratio,
                        "against_cpu_ratio": r.against_cpu_ratio,
                        "verdict": r.verdict(),
                    }
                    for r in rows
                ],
            },
            indent=2,
        )
    )
    print()
    print(table)
    print(f"({time.perf_counter() - start:.0f} s; written to {RESULTS.relative_to(ROOT)}/)")
    return 0


if __name__ == "__main__":
    if shutil.which("diff") is None:
        print("GNU diff is needed for the diff baseline", file=sys.stderr)
    raise SystemExit(main())

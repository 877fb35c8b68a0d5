"""`make bench`: hloscope against its floor, measured in the same run.

Every figure is a ratio against a baseline measured here, now, on this machine:

1. load: `hloscope inspect FILE --json` (load plus every static analysis) against
   `bench/floor.py FILE` (a bare process that parses the file with jaxlib's MLIR
   bindings and walks every op once), on generated modules of about 10k, 100k and
   1M ops in four formats (StableHLO text, MLIR bytecode, a portable VHLO artifact,
   HLO text) and on the corpus' largest real modules. Goals: at most 1.5x the
   floor's time at 100k and 1M ops for text and HLO, 2x for bytecode and portable
   artifacts; time per op flat within 20% from 10k to 1M; peak memory at most 2x
   the floor's (each command's own peak, as bench/measure.py measures it).
2. diff: `hloscope diff A B --json` of a 100k-op module and a mutated copy against
   the floor of parsing both (goal: at most 3x), and against GNU `diff` of their
   texts (no goal: the scale of a line diff).
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

Results go to bench/results/latest.md and latest.json.

    .venv/bin/python bench/run.py [--quick]     # --quick: skip the 1M-op modules
"""

from __future__ import annotations

import argparse
import dataclasses
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

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
RESULTS = BENCH / "results"
CORPUS = (ROOT / ".." / "shared" / "corpus").resolve()
PYTHON = sys.executable
HLOSCOPE = [PYTHON, "-m", "hloscope"]
sys.path.insert(0, str(ROOT))

from bench import generate  # noqa: E402
from bench.measure import Measurement, measure_command  # noqa: E402


def bytecode_cache_env() -> dict[str, str]:
    """Python's compiled-bytecode cache on, kept under bench/cache: what an installed
    hloscope has. Without it (`PYTHONDONTWRITEBYTECODE`, set on some machines) every
    run compiles hloscope's modules from source (about 0.15 s), while jaxlib, whose
    bytecode ships with it, is spared that; the floor gets the same setting."""
    environment = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    environment["PYTHONPYCACHEPREFIX"] = str(BENCH / "cache" / "pycache")
    return environment


def measure(command: list[str]) -> Measurement:
    """Wall time and the command's own peak RSS, run from the repository root with
    the bytecode cache on."""
    return measure_command(command, cwd=ROOT, env=bytecode_cache_env())


def median_of(command: list[str], repeats: int) -> tuple[float, int, str]:
    runs = [measure(command) for _ in range(repeats)]
    return (
        statistics.median(r.seconds for r in runs),
        max(r.max_rss_kb for r in runs),
        runs[-1].stdout,
    )


@dataclasses.dataclass
class Row:
    section: str
    name: str
    ops: int | None
    baseline_seconds: float
    seconds: float
    goal: float | None
    baseline_rss_kb: int | None = None
    rss_kb: int | None = None
    rss_goal: float | None = None
    note: str = ""
    startup_seconds: float = 0.0
    """hloscope's time on a tiny module of the same format: the fixed cost."""

    @property
    def ratio(self) -> float:
        return self.seconds / self.baseline_seconds

    @property
    def rss_ratio(self) -> float | None:
        if not self.rss_kb or not self.baseline_rss_kb:
            return None
        return self.rss_kb / self.baseline_rss_kb

    @property
    def us_per_op(self) -> float | None:
        """Time per op once the fixed start-up cost is taken away."""
        if not self.ops:
            return None
        return max(self.seconds - self.startup_seconds, 0.0) / self.ops * 1e6

    def verdict(self) -> str:
        missed = []
        if self.goal is not None and self.ratio > self.goal:
            missed.append("time")
        rss = self.rss_ratio
        if self.rss_goal is not None and rss is not None and rss > self.rss_goal:
            missed.append("memory")
        if self.goal is None and self.rss_goal is None:
            return "-"
        return "ok" if not missed else "MISSED " + ", ".join(missed)


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
# Time per op from 10k to 1M ops: the largest at most this much over the smallest.
FLAT_GOAL = 1.2


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
    floor_seconds, floor_rss, floor_out = median_of([PYTHON, str(BENCH / "floor.py"), str(path)], 1)
    ops = int(floor_out.strip().splitlines()[-1])
    repeats = repeats_for(ops)
    if repeats > 1:
        floor_seconds, floor_rss, _ = median_of(
            [PYTHON, str(BENCH / "floor.py"), str(path)], repeats
        )
    seconds, rss, out = median_of([*HLOSCOPE, "inspect", str(path), "--json"], repeats)
    json.loads(out)
    return Row(
        "load",
        name,
        ops,
        floor_seconds,
        seconds,
        goal,
        floor_rss,
        rss,
        2.0,
        startup_seconds=startup_seconds(path.suffix),
    )


# --------------------------------------------------------------------------- 2. diff


def has_command(name: str) -> bool:
    run = subprocess.run([*HLOSCOPE, name, "--help"], capture_output=True, cwd=ROOT, check=False)
    return run.returncode == 0


def mutate(text: str) -> str:
    """A copy with known changes: one op kind swapped, one constant changed."""
    text = text.replace("stablehlo.tanh", "stablehlo.logistic", 1)
    # The RMS norm's epsilon, 1e-6, as MLIR's printer spells it in f32.
    changed = re.sub(r"dense<9\.99999997E-7>", "dense<2.000000e-06>", text, count=1)
    assert changed != text, "the module has no epsilon constant to change"
    return changed


def diff_rows(size: str) -> list[Row]:
    """`hloscope diff` of a module and a mutated copy, against the floor of parsing both
    (goal: 3x), and, for scale, against GNU diff of their texts (no goal)."""
    if not has_command("diff"):
        return [Row("diff", "100k vs mutated copy", None, 1, 1, None, note="no diff command yet")]
    files = generate.generate(size)
    original = files["mlir"]
    floor = [PYTHON, str(BENCH / "floor.py")]
    with tempfile.TemporaryDirectory() as tmp:
        mutated = Path(tmp) / "mutated.mlir"
        mutated.write_text(mutate(original.read_text()))
        parse_both = [
            measure([*floor, str(original)]).seconds + measure([*floor, str(mutated)]).seconds
            for _ in range(3)
        ]
        gnu, _, _ = median_of(["diff", str(original), str(mutated)], 3)
        seconds, _, out = median_of([*HLOSCOPE, "diff", str(original), str(mutated), "--json"], 3)
        json.loads(out)
    ops = json.loads(generate.paths(size)["meta"].read_text())["ops"]
    return [
        Row(
            "diff",
            f"generated {size} vs mutated copy (floor: parsing both)",
            ops,
            statistics.median(parse_both),
            seconds,
            3.0,
        ),
        Row("diff", f"generated {size} vs mutated copy (GNU diff)", ops, gnu, seconds, None),
    ]


# --------------------------------------------------------------------------- 3. browser


def browser_rows(size: str) -> list[Row]:
    probe = BENCH / "tui_latency.py"
    if not probe.exists():
        return [Row("browser", "first paint, keystrokes", None, 1, 1, None, note="no browser yet")]
    files = generate.generate(size)
    run = measure([PYTHON, str(probe), str(files["mlir"])])
    result = json.loads(run.stdout)
    return [
        Row("browser", f"first paint {size} (vs 2 s)", None, 2.0, result["first_paint"], 1.0),
        Row("browser", f"model built, ops selectable {size}", None, 2.0, result["ready"], None),
        Row("browser", f"search {size} (vs 200 ms)", None, 0.200, result["keys"]["search"], 1.0),
        Row(
            "browser",
            f"median keystroke {size} (vs 50 ms)",
            None,
            0.050,
            result["median_keystroke"],
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
    baseline, _, _ = median_of(plain, 3)
    target = ["bench/generate.py:entrypoint", "--args", "bench/generate.py:example_args"]
    compiled, _, _ = median_of([*HLOSCOPE, "inspect", *target, "--compile", "--json"], 3)
    lowered, _, _ = median_of([*HLOSCOPE, "inspect", *target, "--json"], 3)
    with tempfile.TemporaryDirectory(prefix="hloscope-bench-") as folder:
        baseline_file = str(Path(folder) / "entrypoint.json")
        check = [*HLOSCOPE, "check", *target, "--baseline", baseline_file, "--json"]
        subprocess.run([*check, "--update"], check=True, capture_output=True)
        checked, _, _ = median_of(check, 3)
    return [
        Row(
            "entrypoint",
            "check (unchanged) vs lower().compile() script",
            None,
            baseline,
            checked,
            1.5,
        ),
        Row(
            "entrypoint",
            "inspect --compile vs lower().compile() script",
            None,
            baseline,
            compiled,
            1.3,
        ),
        Row(
            "entrypoint",
            "inspect (lowering only) vs the same script",
            None,
            baseline,
            lowered,
            None,
        ),
    ]


# --------------------------------------------------------------------------- 5. compiles


def compiles_rows(repeats: int = 5) -> list[Row]:
    workload = str(BENCH / "compiles_workload.py")
    plain_loop, plain_total, watched_loop, watched_total = [], [], [], []
    with tempfile.TemporaryDirectory() as folder:
        timing = str(Path(folder) / "loop.txt")
        for _ in range(repeats):
            # Interleaved, so that the machine's load weighs on both alike.
            plain_total.append(measure([PYTHON, workload, timing]).seconds)
            plain_loop.append(float(Path(timing).read_text()))
            watched_total.append(
                measure([*HLOSCOPE, "compiles", workload, timing, "--json"]).seconds
            )
            watched_loop.append(float(Path(timing).read_text()))
    return [
        Row(
            "compiles",
            "steady loop under hloscope compiles vs plain",
            None,
            statistics.median(plain_loop),
            statistics.median(watched_loop),
            1.1,
        ),
        Row(
            "compiles",
            "whole run (start-up, compilations recorded) vs plain",
            None,
            statistics.median(plain_total),
            statistics.median(watched_total),
            None,
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
    baseline, _, _ = median_of([PYTHON, "-c", PLAIN_READ, str(folder)], 3)
    seconds, _, out = median_of([*HLOSCOPE, "passes", str(folder), "--json"], 3)
    steps = json.loads(out)["passes"]
    found, _, _ = median_of([*HLOSCOPE, "passes", str(folder), "--find", "fusion", "--json"], 3)
    ops = max(step["ops"] for step in steps)
    name = f"{files} pass files of a 10k-op module vs reading them"
    return [
        Row("passes", name, ops, baseline, seconds, None),
        Row("passes", "the same with --find fusion", ops, baseline, found, None),
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
    plain, profiled = [], []
    with tempfile.TemporaryDirectory(prefix="hloscope-bench-") as folder:
        Path(folder, "hloscope_bench_inputs.py").write_text(CONCRETE_INPUTS)
        script = PLAIN_RUNS.format(root=str(ROOT), runs=PROFILE_RUNS)
        plain_command = [PYTHON, "-c", f"import sys; sys.path.insert(0, {folder!r})\n{script}"]
        for _ in range(repeats):
            # Interleaved, so that the machine's load weighs on both alike.
            plain.append(float(measure(plain_command).stdout.strip().splitlines()[-1]))
            doc = json.loads(measure(command).stdout)
            profiled.append(doc["seconds_per_run"]["median"])
    return [
        Row(
            "profile",
            "profile's runs (traced) vs the same runs in a plain loop",
            None,
            statistics.median(plain),
            statistics.median(profiled),
            1.2,
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
    command = [*HLOSCOPE, "placement", *target, "--why", "--json"]
    baseline, why = [], []
    for _ in range(repeats):
        # Interleaved, so that the machine's load weighs on both alike.
        baseline.append(measure(plain).seconds)
        why.append(measure(command).seconds)
    return [
        Row(
            "placement --why",
            "placement --why vs lower().compile() with Shardy's dumps",
            None,
            statistics.median(baseline),
            statistics.median(why),
            1.3,
        )
    ]


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
        "cores": str(os.cpu_count()),
        "python": platform.python_version(),
        "jax": jax.__version__,
        "date": time.strftime("%Y-%m-%d"),
    }


def flatness(sizes: dict[str, float]) -> str:
    """` (spread 1.31x, MISSED)`: the largest time per op over the smallest."""
    values = [v for v in sizes.values() if v > 0]
    if len(values) < 2:
        return ""
    spread = max(values) / min(values)
    return f" (spread {spread:.2f}x, {'ok' if spread <= FLAT_GOAL else 'MISSED'})"


def markdown(rows: list[Row], info: dict[str, str]) -> str:
    lines = [
        f"Machine: {info['cpu']}, {info['cores']} cores; Python {info['python']}, "
        f"jax {info['jax']}; {info['date']}.",
        "",
        "| section | case | ops | baseline | hloscope | ratio | goal | µs/op | RSS ratio | verdict"
        " |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for row in rows:
        if row.note and row.goal is None and row.baseline_seconds == row.seconds == 1:
            lines.append(f"| {row.section} | {row.name} | | | | | | | | {row.note} |")
            continue
        rss = row.rss_ratio
        lines.append(
            f"| {row.section} | {row.name} | {row.ops or ''} | {row.baseline_seconds:.3f} s | "
            f"{row.seconds:.3f} s | {row.ratio:.2f}x | "
            f"{'' if row.goal is None else f'{row.goal:g}x'} | "
            f"{'' if row.us_per_op is None else f'{row.us_per_op:.1f}'} | "
            f"{'' if rss is None else f'{rss:.2f}x'} | {row.verdict()}"
            f"{' (' + row.note + ')' if row.note else ''} |"
        )
    flat = [r for r in rows if r.section == "load" and r.name.startswith("generated") and r.ops]
    by_format: dict[str, dict[str, float]] = {}
    for row in flat:
        size, fmt = re.match(r"generated (\S+) \((\w+)\)", row.name).groups()  # type: ignore[union-attr]
        by_format.setdefault(fmt, {})[size] = row.us_per_op or 0
    if by_format:
        lines.append("")
        lines.append(
            f"Time per op (hloscope), 10k -> largest (goal: flat within {FLAT_GOAL - 1:.0%}): "
            + "; ".join(
                f"{fmt}: " + " -> ".join(f"{v:.1f} µs" for v in sizes.values()) + flatness(sizes)
                for fmt, sizes in by_format.items()
            )
        )
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="skip the 1M-op modules")
    options = parser.parse_args()
    sizes = ["10k", "100k"] if options.quick else ["10k", "100k", "1m"]
    start = time.perf_counter()
    for size in sizes:
        print(f"generating {size} ...", flush=True)
        generate.generate(size)
    rows: list[Row] = []
    for section, build in (
        ("load", lambda: load_rows(sizes)),
        ("diff", lambda: diff_rows("100k")),
        ("browser", lambda: browser_rows("100k")),
        ("entrypoint", entrypoint_rows),
        ("compiles", compiles_rows),
        ("passes", passes_rows),
        ("profile", profile_rows),
        ("placement --why", why_rows),
    ):
        print(f"measuring {section} ...", flush=True)
        rows.extend(build())
    info = machine()
    table = markdown(rows, info)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "latest.md").write_text(table)
    (RESULTS / "latest.json").write_text(
        json.dumps(
            {
                "machine": info,
                "rows": [
                    {**dataclasses.asdict(r), "ratio": r.ratio, "verdict": r.verdict()}
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

"""`make device-check`: on a machine with a GPU, what `--for` says of a GPU against the
GPU itself, and what `hloscope profile` measures against JAX's own profiler.

Nothing here imports JAX or hloscope: every step is a child process with a timeout
(JAX's backend is asked in one, each hloscope command runs as `python -m hloscope`
with this tree's `src/` first on the path), and a step that fails, times out or
prints no JSON is a line in the report, never an exception.

1. Is there a GPU? A child asks JAX for its default backend and its devices. When it
   is not `gpu`, one line says so and the script exits 0 (`--dry-run` goes on, below).
2. Compiled for the GPU, and for its deviceless spec: each sample (nested_jits.py:mlp,
   profile_step.py:step, and sharded_mlp.py:mlp where the machine has at least 8 GPUs)
   through `fusions`, `placement --compile` and `memory`, once for the local GPU (no
   --for) and once with `--for SPEC`, the spec of the local device's kind as
   `hloscope platforms` lists it ("NVIDIA H100 80GB HBM3" is gpu:h100, "NVIDIA
   A100-SXM4-80GB" gpu:a100, "NVIDIA L4" gpu:l4; xN for the 8-device sample). A kind
   with no spec is named and this part skipped (`--spec` picks one anyway). The
   fusions (count, kinds, unfused ops), collectives and memory totals of both are
   tabled side by side with whether they agree. They need not: XLA autotunes GEMMs
   on the device and not without it, so GEMM fusions may differ; differences are
   reported, never a failure. The GPU's compiles run one at a time, the deviceless
   ones beside them (`--jobs`).
3. Profiled: `hloscope profile samples/profile_step.py:step` on the GPU, against the
   same step run by a plain child under `jax.profiler.trace` (same runs, after the
   same warm-up), whose `.xplane.pb` is read with `jax.profiler.ProfileData`: the
   device events of the module (`hlo_module`), summed by `hlo_op`, per run. Both
   totals, and the top 5 instructions with both times.
4. The figures as a markdown snippet (date, GPU, driver, JAX's packages, this tree's
   revision), printed and written to bench/cache/device_check.md (`--out`), to be
   pasted into docs/performance.md.

Exit status: 0 when every step ran (differences between the two compiles included),
1 when a step failed (each failure is in the report), 2 for bad arguments.

    .venv/bin/python bench/device_check.py [--dry-run] [--spec SPEC] [--out FILE]
        [--runs N] [--jobs N] [--timeout S] [--deadline S]

--dry-run: run every step without a GPU (here, on the CPU), so that the code is known
  to work: the local backend (the CPU; sharded_mlp.py asks JAX for 8 CPU devices
  itself) against `--for SPEC`, `--spec cpu` by default (the local backend again:
  every fact should agree), or e.g. `--spec tpu:v5e:2x4` (two compilers: the
  differences path). The profile step reads the CPU's host events in place of device
  events. The snippet says it was a dry run.
--spec SPEC: the deviceless spec to compare with (a GPU whose kind hloscope has no spec
  for, an H200 say: `--spec gpu:h100` compares with the nearest).
--timeout S: each child's limit (default 240 s); --deadline S: the whole run's
  (default 480 s): a step not started by then is reported as skipped.

On a machine without this tree's .venv (a device image with its own JAX), run it
with that Python: `PYTHONPATH=src python3 bench/device_check.py`; hloscope's own
requirements (JAX within its supported range, jax-cuda12-plugin for `--for gpu:...`)
still hold there, and what is missing is reported by the step that needs it.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import dataclasses
import json
import os
import platform
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "cache" / "device_check.md"


@dataclasses.dataclass(frozen=True)
class Sample:
    label: str
    target: str
    factory: str
    devices: int = 1

    @property
    def args(self) -> list[str]:
        return [self.target, "--args", self.factory]


NESTED = Sample("nested_jits", "samples/nested_jits.py:mlp", "samples/nested_jits.py:example_args")
SHARDED = Sample(
    "sharded_mlp", "samples/sharded_mlp.py:mlp", "samples/sharded_mlp.py:example_args", 8
)
PROFILED = Sample(
    "profile_step", "samples/profile_step.py:step", "samples/profile_step.py:example_args"
)
SAMPLES = (NESTED, SHARDED, PROFILED)

# hloscope platforms' GPU specs, should `platforms --json` fail: name, the device it is.
KNOWN_GPU_SPECS = {
    "h100": "NVIDIA H100 80GB HBM3 (SXM)",
    "a100": "NVIDIA A100-SXM4-80GB",
    "l4": "NVIDIA L4",
}

GEMM_KIND = re.compile(r"gemm|cublas|cudnn|dot|matmul", re.IGNORECASE)
"""Fusion kinds that autotuning on the device may choose differently."""

PACKAGES = (
    "jax",
    "jaxlib",
    "jax-cuda12-plugin",
    "jax-cuda12-pjrt",
    "jax-cuda13-plugin",
    "jax-cuda13-pjrt",
    "libtpu",
    "nvidia-cuda-nvcc-cu12",
)


# --------------------------------------------------------------------------- children


@dataclasses.dataclass
class Call:
    """One child process: its command, what it printed, and why it failed (if it did)."""

    label: str
    command: list[str]
    seconds: float = 0.0
    stdout: str = ""
    error: str | None = None
    document: Any = None

    @property
    def ok(self) -> bool:
        return self.error is None


class Deadline:
    """The whole run's limit: each child's timeout is clipped to what is left."""

    def __init__(self, seconds: float) -> None:
        self.end = time.monotonic() + seconds

    def left(self) -> float:
        return self.end - time.monotonic()


def child_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """This environment with this tree's `src/` first on the path (hloscope runs from
    here whatever is installed) and `extra` on top."""
    env = dict(os.environ)
    paths = [str(ROOT / "src"), *filter(None, env.get("PYTHONPATH", "").split(os.pathsep))]
    env["PYTHONPATH"] = os.pathsep.join(paths)
    env.update(extra or {})
    return env


def run_child(
    label: str,
    command: list[str],
    *,
    timeout: float,
    deadline: Deadline,
    env: dict[str, str] | None = None,
    parse_json: bool = True,
) -> Call:
    """Run `command` from the repository root in a process group of its own (killed,
    with whatever it started, at its timeout); never raises."""
    call = Call(label, command)
    limit = min(timeout, deadline.left())
    if limit <= 1:
        call.error = "skipped: the run's deadline had passed (--deadline)"
        return call
    start = time.perf_counter()
    try:
        process = subprocess.Popen(
            command,
            cwd=ROOT,
            env=env if env is not None else child_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
    except OSError as error:
        call.error = f"could not start: {error}"
        return call
    try:
        stdout, stderr = process.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        stdout, stderr = process.communicate()
        call.seconds = time.perf_counter() - start
        call.error = f"timed out after {limit:.0f} s"
        return call
    call.seconds = time.perf_counter() - start
    call.stdout = stdout
    if process.returncode != 0:
        call.error = f"exit {process.returncode}: {last_line(stderr) or last_line(stdout)}"
        return call
    if parse_json:
        try:
            call.document = json.loads(stdout)
        except ValueError:
            call.error = f"printed no JSON: {last_line(stdout) or last_line(stderr)}"
    return call


def last_line(text: str) -> str:
    """The last line that says something (hloscope's failures are one line), cut short."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:300] if lines else ""


def hloscope(*args: str) -> list[str]:
    return [sys.executable, "-m", "hloscope", *args]


# --------------------------------------------------------------------------- 1. backend

PROBE = """
import json
import jax
devices = jax.devices()
first = devices[0]
print(json.dumps({
    "backend": jax.default_backend(),
    "platform": first.platform,
    "count": len(devices),
    "device_kind": first.device_kind,
    "compute_capability": getattr(first, "compute_capability", None),
}))
"""

# JAX's GPU client takes 75% of the GPU's memory up front: with several children on
# one GPU at once, the second would run out.
NO_PREALLOCATION = {"XLA_PYTHON_CLIENT_PREALLOCATE": "false"}


def probe_backend(timeout: float, deadline: Deadline) -> Call:
    return run_child(
        "JAX's backend",
        [sys.executable, "-c", PROBE],
        timeout=timeout,
        deadline=deadline,
        env=child_env(NO_PREALLOCATION),
    )


def gpu_specs(timeout: float, deadline: Deadline) -> tuple[dict[str, str], str]:
    """hloscope's GPU specs (name: the device it describes), from `platforms --json`,
    or the names known when this was written (and why) if that fails."""
    call = run_child(
        "platforms", hloscope("platforms", "--json"), timeout=timeout, deadline=deadline
    )
    specs: dict[str, str] = {}
    if call.ok:
        for entry in call.document.get("platforms", []):
            match = re.fullmatch(r"gpu:([a-z0-9_]+)(\[xN\])?", str(entry.get("spec", "")))
            if match and entry.get("platform") == "gpu":
                specs[match[1]] = str(entry.get("device", ""))
    if specs:
        return specs, ""
    return dict(KNOWN_GPU_SPECS), f"hloscope platforms failed ({call.error}); known names used"


def spec_for_kind(device_kind: str, specs: dict[str, str]) -> str | None:
    """The spec whose name is a word of the device's kind: "NVIDIA H100 80GB HBM3" is
    gpu:h100, "NVIDIA A100-SXM4-80GB" gpu:a100; None for a kind with no spec."""
    words = set(re.split(r"[^a-z0-9]+", device_kind.lower()))
    found = [name for name in specs if name in words]
    return f"gpu:{found[0]}" if len(found) == 1 else None


def scaled_spec(spec: str, devices: int) -> str:
    """`spec` for a program over `devices` devices: gpu:h100 -> gpu:h100x8. A TPU
    topology is its own count, and `cpu` the local backend's."""
    if devices <= 1 or not spec.startswith("gpu:"):
        return spec
    if spec.endswith(".txtpb") or ".txtpb," in spec:
        return re.sub(r",gpus=\d+$", "", spec) + f",gpus={devices}"
    return re.sub(r"x\d+$", "", spec) + f"x{devices}"


# --------------------------------------------------------------------------- 2. compiles

COMMANDS = ("fusions", "placement", "memory")


def compile_calls(
    samples: list[Sample],
    spec: str,
    *,
    jobs: int,
    timeout: float,
    deadline: Deadline,
    progress: Callable[[str], None],
) -> dict[tuple[str, str, str], Call]:
    """Every sample through every command, for the local backend (one at a time: one
    device) and for `spec` (`jobs` at a time, beside them). Keyed by (sample, command,
    side), side being `local` or `spec`."""
    env = child_env(NO_PREALLOCATION)

    def one(sample: Sample, command: str, side: str) -> Call:
        # placement reads the lowered module unless told to compile; --for implies
        # it, except `--for cpu` (the local backend, as with no --for): said always.
        extra = ["--compile"] if command == "placement" else []
        if side == "spec":
            extra += ["--for", scaled_spec(spec, sample.devices)]
        label = f"{sample.label} {command} ({side})"
        call = run_child(
            label,
            hloscope(command, *sample.args, *extra, "--json"),
            timeout=timeout,
            deadline=deadline,
            env=env,
        )
        progress(f"  {label}: {'ok' if call.ok else call.error} ({call.seconds:.1f} s)")
        return call

    keys = [(s, c, side) for s in samples for c in COMMANDS for side in ("local", "spec")]
    futures: dict[tuple[str, str, str], concurrent.futures.Future[Call]] = {}
    with (
        concurrent.futures.ThreadPoolExecutor(max_workers=1) as local_lane,
        concurrent.futures.ThreadPoolExecutor(max_workers=max(1, jobs)) as spec_lane,
    ):
        for sample, command, side in keys:
            lane = local_lane if side == "local" else spec_lane
            futures[(sample.label, command, side)] = lane.submit(one, sample, command, side)
    return {key: future.result() for key, future in futures.items()}


@dataclasses.dataclass
class Fact:
    sample: str
    name: str
    local: str
    spec: str
    agree: bool | None
    """None: one side has no figure (its command failed), or a row for information."""
    note: str = ""


def compare_sample(
    sample: Sample, calls: dict[tuple[str, str, str], Call], expect_platform: str
) -> list[Fact]:
    """The facts of both compiles of `sample`, side by side (the local compile's
    platform checked against `expect_platform`)."""
    facts: list[Fact] = []

    def document(command: str, side: str) -> dict[str, Any] | None:
        call = calls[(sample.label, command, side)]
        return call.document if call.ok and isinstance(call.document, dict) else None

    def failed(command: str, side: str) -> str:
        error = calls[(sample.label, command, side)].error or ""
        return f"failed: {error[:100]}{'…' if len(error) > 100 else ''} (below)"

    def add(
        name: str,
        command: str,
        pick: Callable[[dict[str, Any]], Any],
        show: Callable[[Any], str],
        note: Callable[[Any, Any], str] | None = None,
        informative: bool = False,
    ) -> None:
        values, shown = {}, {}
        for side in ("local", "spec"):
            doc = document(command, side)
            if doc is None:
                shown[side] = failed(command, side)
                continue
            try:
                values[side] = pick(doc)
                shown[side] = show(values[side])
            except (KeyError, TypeError, ValueError, AttributeError) as error:
                shown[side] = f"unreadable: {type(error).__name__} {error}"
        both = len(values) == 2
        agree = None if informative or not both else values["local"] == values["spec"]
        remark = note(values["local"], values["spec"]) if note and both and not agree else ""
        facts.append(Fact(sample.label, name, shown["local"], shown["spec"], agree, remark))

    add("compiled for", "fusions", lambda d: d["compiled_for"], show_target, informative=True)
    local = document("fusions", "local")
    found = ((local or {}).get("compiled_for") or {}).get("platform")
    if local is not None and found != expect_platform:
        facts[-1].note = f"the local compile is for {found}, not {expect_platform}"
    add(
        "fusions",
        "fusions",
        lambda d: d["summary"]["fusions"],
        str,
        gemm_note_for_counts(calls, sample),
    )
    add("fusion kinds", "fusions", lambda d: dict(d["summary"]["by_kind"]), show_counts, kinds_note)
    add(
        "unfused ops",
        "fusions",
        lambda d: (d["summary"]["unfused_ops"], dict(d["summary"]["unfused_by_category"])),
        lambda v: f"{v[0]}" + (f" ({show_counts(v[1])})" if v[1] else ""),
    )
    add("collectives", "placement", lambda d: collectives(d["collectives"]), show_collectives)
    add("memory totals", "memory", lambda d: memory_totals(d["totals"]), show_memory, memory_note)
    add("peak bytes", "memory", lambda d: d["peak_bytes"], show_bytes)
    return facts


def gemm_note_for_counts(
    calls: dict[tuple[str, str, str], Call], sample: Sample
) -> Callable[[Any, Any], str]:
    def note(local: Any, spec: Any) -> str:
        kinds = []
        for side in ("local", "spec"):
            doc = calls[(sample.label, "fusions", side)].document
            kinds.append(dict(doc["summary"]["by_kind"]))
        return kinds_note(kinds[0], kinds[1])

    return note


def kinds_note(local: dict[str, int], spec: dict[str, int]) -> str:
    differing = sorted(k for k in set(local) | set(spec) if local.get(k, 0) != spec.get(k, 0))
    if differing and all(GEMM_KIND.search(k) for k in differing):
        return "GEMM kinds only (autotuning on the device may choose other GEMM kernels)"
    return "differ in " + ", ".join(differing) if differing else ""


def memory_note(local: dict[str, int], spec: dict[str, int]) -> str:
    fields = sorted(k for k in set(local) | set(spec) if local.get(k) != spec.get(k))
    return "differ in " + ", ".join(fields) if fields else ""


def collectives(entries: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return sorted(
        (e.get("op"), e.get("count"), e.get("async"), e.get("bytes")) for e in entries or []
    )


def memory_totals(totals: dict[str, Any] | None) -> dict[str, int]:
    if not totals:
        return {}
    return {k.removesuffix("_bytes"): int(v) for k, v in totals.items() if v is not None}


def show_target(target: dict[str, Any]) -> str:
    parts = [
        str(target.get("spec") or target.get("platform")),
        str(target.get("device_kind")),
        f"{target.get('devices')} device(s)",
        f"{target.get('compiler')} {target.get('compiler_version')}",
        "deviceless" if target.get("deviceless") else "on the device",
    ]
    if target.get("autotuned") is not None:
        parts.append("autotuned" if target["autotuned"] else "not autotuned")
    return ", ".join(parts)


def show_counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) or "none"


def show_collectives(entries: list[tuple[Any, ...]]) -> str:
    if not entries:
        return "none"
    return ", ".join(
        f"{op} x{count}{' async' if asynchronous else ''} {show_bytes(size)}"
        for op, count, asynchronous, size in entries
    )


def show_memory(totals: dict[str, int]) -> str:
    if not totals:
        return "none"
    return ", ".join(f"{k} {show_bytes(v)}" for k, v in totals.items() if v) or "all 0"


def show_bytes(value: Any) -> str:
    if value is None:
        return "-"
    return f"{int(value):,} B"


# --------------------------------------------------------------------------- 3. profile

TRACE_SCRIPT = """
import importlib.util, json, sys, tempfile, time
from pathlib import Path
import jax


def read(trace):
    # By plane kind (device or host), module and instruction: total ns and events;
    # the run ids and planes seen.
    found = {}
    for plane in jax.profiler.ProfileData.from_file(str(trace)).planes:
        kind = "device" if plane.name.startswith("/device:") else "host"
        for line in plane.lines:
            for event in line.events:
                stats = dict(event.stats)
                op, hlo_module = stats.get("hlo_op"), stats.get("hlo_module")
                if op is None or hlo_module is None:
                    continue
                entry = found.setdefault(kind, {}).setdefault(
                    str(hlo_module), {"ops": {}, "run_ids": set(), "planes": set()}
                )
                total, count = entry["ops"].get(str(op), (0.0, 0))
                entry["ops"][str(op)] = (total + float(event.duration_ns), count + 1)
                entry["run_ids"].add(str(stats.get("run_id")))
                entry["planes"].add(plane.name)
    return {
        kind: {
            name: {
                "ops": entry["ops"],
                "run_ids": len(entry["run_ids"]),
                "planes": sorted(entry["planes"]),
            }
            for name, entry in modules.items()
        }
        for kind, modules in found.items()
    }


def run(path, function, factory, runs, warmup):
    import numpy as np

    spec = importlib.util.spec_from_file_location("device_check_sample", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    step = getattr(module, function)
    rng = np.random.default_rng(0)

    def concrete(leaf):
        if isinstance(leaf, jax.ShapeDtypeStruct):
            return jax.device_put(rng.standard_normal(leaf.shape).astype(leaf.dtype))
        return leaf

    args = jax.tree.map(concrete, getattr(module, factory)())
    for _ in range(warmup):
        jax.block_until_ready(step(*args))
    options = jax.profiler.ProfileOptions()
    options.python_tracer_level = 0  # as hloscope profile: no event per Python call
    walls = []
    with tempfile.TemporaryDirectory(prefix="device-check-trace-") as folder:
        with jax.profiler.trace(folder, profiler_options=options):
            for _ in range(runs):
                start = time.perf_counter()
                jax.block_until_ready(step(*args))
                walls.append(time.perf_counter() - start)
        traces = sorted(
            Path(folder).glob("plugins/profile/*/*.xplane.pb"), key=lambda p: p.stat().st_mtime
        )
        events = read(traces[-1])
    return {"walls": walls, "backend": jax.default_backend(), "events": events}


if sys.argv[1] == "read":
    print(json.dumps({"events": read(sys.argv[2])}))
else:
    path, function, factory = sys.argv[2:5]
    print(json.dumps(run(path, function, factory, int(sys.argv[5]), int(sys.argv[6]))))
"""


@dataclasses.dataclass
class Profiled:
    calls: list[Call]
    summary: list[list[str]]
    rows: list[list[str]]
    notes: list[str]


def trace_ops(
    events: dict[str, Any], module: str, runs: int, notes: list[str], what: str
) -> dict[str, tuple[float, float]] | None:
    """`module`'s instructions in a trace read by TRACE_SCRIPT: seconds and events per
    run, from the device's events (the host's where there are none: the CPU)."""
    kind = "device" if module in events.get("device", {}) else "host"
    if kind == "host":
        notes.append(f"{what}: no device events of {module}; its host events are read")
    entry = events.get(kind, {}).get(module)
    if entry is None:
        seen = sorted({m for modules in events.values() for m in modules})
        notes.append(f"{what}: no events of {module} (modules seen: {seen})")
        return None
    if entry["run_ids"] != runs:
        notes.append(f"{what}: {entry['run_ids']} run ids for {runs} runs")
    return {
        name: (total / 1e9 / runs, count / runs) for name, (total, count) in entry["ops"].items()
    }


def profile_check(
    sample: Sample, *, runs: int, warmup: int, timeout: float, deadline: Deadline
) -> Profiled:
    """`hloscope profile` of `sample` against (1) the same step run `runs` times by a
    plain child under `jax.profiler.trace` and (2) hloscope's own trace (`--trace-dir`)
    read again here, independently: the same events, so any gap is how hloscope
    reads them."""
    notes: list[str] = []
    with tempfile.TemporaryDirectory(prefix="device-check-") as folder:
        ran = run_child(
            "hloscope profile",
            hloscope(
                "profile",
                *sample.args,
                "--runs",
                str(runs),
                "--warmup",
                str(warmup),
                "--trace-dir",
                folder,
                "--json",
            ),
            timeout=timeout,
            deadline=deadline,
        )
        kept = sorted(Path(folder).glob("plugins/profile/*/*.xplane.pb"))
        reread = None
        if ran.ok and kept:
            reread = run_child(
                "hloscope's trace, read again",
                [sys.executable, "-c", TRACE_SCRIPT, "read", str(kept[-1])],
                timeout=timeout,
                deadline=deadline,
            )
        elif ran.ok:
            notes.append(f"hloscope profile --trace-dir {folder} left no .xplane.pb there")
    path, function = sample.target.rsplit(":", 1)
    factory = sample.factory.rsplit(":", 1)[1]
    traced = run_child(
        "jax.profiler.trace",
        [
            sys.executable,
            "-c",
            TRACE_SCRIPT,
            "run",
            path,
            function,
            factory,
            str(runs),
            str(warmup),
        ],
        timeout=timeout,
        deadline=deadline,
    )
    calls = [c for c in (ran, reread, traced) if c is not None]
    if not ran.ok:
        return Profiled(calls, [], [], notes)
    doc = ran.document
    module = str(doc.get("module"))
    mine = {str(op["name"]): op for op in doc.get("ops", [])}
    mine_total = sum(float(op["seconds"]) for op in mine.values())
    plain = (
        trace_ops(traced.document["events"], module, runs, notes, "the plain run's trace")
        if traced.ok
        else None
    )
    again = (
        trace_ops(reread.document["events"], module, runs, notes, "hloscope's trace")
        if reread is not None and reread.ok
        else None
    )
    plain_total = sum(s for s, _ in plain.values()) if plain else None
    again_total = sum(s for s, _ in again.values()) if again else None
    plain_wall = median(traced.document["walls"]) if traced.ok else None
    my_wall = doc.get("seconds_per_run", {}).get("median")
    summary = [
        [
            "instructions, per run",
            show_seconds(mine_total),
            show_seconds(again_total),
            show_ratio(mine_total, again_total),
            show_seconds(plain_total),
            show_ratio(mine_total, plain_total),
        ],
        [
            "wall time per run (median)",
            show_seconds(my_wall),
            "",
            "",
            show_seconds(plain_wall),
            show_ratio(my_wall, plain_wall),
        ],
        [
            "instructions seen",
            str(len(mine)),
            str(len(again)) if again is not None else "-",
            "",
            str(len(plain)) if plain is not None else "-",
            "",
        ],
    ]
    top = [name for name, _ in sorted(mine.items(), key=lambda item: -float(item[1]["seconds"]))]
    names = top[:5]
    for other in (again, plain):
        if other:
            names += [n for n in sorted(other, key=lambda n: -other[n][0])[:5] if n not in names]

    def share(seconds: float | None, total: float | None) -> str:
        return f"{seconds / total:.1%}" if seconds is not None and total else "-"

    rows = []
    for name in names:
        op = mine.get(name)
        seconds = float(op["seconds"]) if op else None
        a = again.get(name) if again else None
        p = plain.get(name) if plain else None
        rows.append(
            [
                f"`{name}`",
                show_seconds(seconds) if op else "absent",
                share(seconds, mine_total),
                show_seconds(a[0]) if a else "absent",
                show_ratio(seconds, a[0] if a else None),
                show_seconds(p[0]) if p else "absent",
                share(p[0] if p else None, plain_total),
                show_ratio(seconds, p[0] if p else None),
                " / ".join(
                    [
                        str(op["calls"]) if op else "-",
                        f"{a[1]:g}" if a else "-",
                        f"{p[1]:g}" if p else "-",
                    ]
                ),
            ]
        )
    for what, other in (("hloscope's trace", again), ("the plain run's trace", plain)):
        if other is None:
            continue
        missing = sorted(set(other) - set(mine))
        extra = sorted(set(mine) - set(other))
        if missing:
            notes.append(f"in {what}, not in hloscope's ops: {', '.join(missing[:10])}")
        if extra:
            notes.append(f"in hloscope's ops, not in {what}: {', '.join(extra[:10])}")
    if doc.get("unknown_ops"):
        notes.append(f"hloscope's unknown_ops: {doc['unknown_ops']}")
    return Profiled(calls, summary, rows, notes)


def median(values: list[float]) -> float | None:
    ordered = sorted(values)
    if not ordered:
        return None
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def show_seconds(value: Any) -> str:
    if value is None:
        return "-"
    value = float(value)
    if value >= 1:
        return f"{value:.3f} s"
    if value >= 1e-3:
        return f"{value * 1e3:.3f} ms"
    return f"{value * 1e6:.1f} µs"


def show_ratio(mine: Any, theirs: Any) -> str:
    if mine is None or theirs is None or float(theirs) == 0:
        return "-"
    return f"{float(mine) / float(theirs):.2f}x"


# --------------------------------------------------------------------------- 4. report


def versions() -> str:
    found = []
    for name in PACKAGES:
        try:
            found.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            continue
    return ", ".join(found) or "no JAX installed"


def driver() -> str:
    try:
        run = subprocess.run(
            [
                "nvidia-smi",
                "--query-gpu=name,driver_version,memory.total",
                "--format=csv,noheader",
            ],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return last_line(run.stdout) if run.returncode == 0 else ""


def revision() -> str:
    try:
        head = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        ).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return (head or "unknown") + (" with local changes" if dirty else "")


def table(header: list[str], rows: list[list[str]]) -> list[str]:
    def cell(text: str) -> str:
        return text.replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(" --- " for _ in header) + "|"]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return lines


def agreement(fact: Fact) -> str:
    if fact.agree is None:
        return ""
    return "yes" if fact.agree else "**no**"


# --------------------------------------------------------------------------- main


def parse_arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="bench/device_check.py",
        description="On a GPU machine: --for's compiles against the GPU's, and hloscope "
        "profile against JAX's profiler (see the module's docstring)",
    )
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="run every step without a GPU: the local backend against --spec (default cpu)",
    )
    parser.add_argument("--spec", help="the deviceless spec to compare with (default: the GPU's)")
    parser.add_argument("--out", type=Path, default=OUT, help=f"the snippet (default {OUT})")
    parser.add_argument("--runs", type=int, default=20, help="profiled runs (default 20)")
    parser.add_argument("--warmup", type=int, default=2, help="runs before them (default 2)")
    parser.add_argument(
        "--jobs",
        type=int,
        default=max(1, min(4, (os.cpu_count() or 2) // 2)),
        help="deviceless compiles at a time, beside the device's (default: half the cores, 1-4)",
    )
    parser.add_argument("--timeout", type=float, default=240, help="each child's limit (s)")
    parser.add_argument("--deadline", type=float, default=480, help="the whole run's limit (s)")
    options = parser.parse_args(argv)
    if options.runs < 1 or options.warmup < 0 or options.jobs < 1:
        parser.error("--runs and --jobs must be at least 1, --warmup at least 0")
    return options


def main(argv: list[str] | None = None) -> int:
    options = parse_arguments(argv)
    started = time.perf_counter()
    deadline = Deadline(options.deadline)
    probe = probe_backend(min(options.timeout, 120), deadline)
    if not probe.ok:
        print(f"device-check: could not ask JAX for its backend: {probe.error}")
        return 1
    backend = probe.document
    if backend["backend"] != "gpu" and not options.dry_run:
        print(
            f"device-check: no GPU here (JAX's default backend is {backend['backend']}): "
            "nothing to check"
        )
        return 0

    def progress(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    failures: list[str] = []
    on_gpu = backend["backend"] == "gpu"
    local_name = f"local {backend['device_kind']}" if on_gpu else f"local {backend['backend']}"
    lines: list[str] = []
    spec, spec_note = options.spec, ""
    if spec is None and on_gpu:
        specs, why = gpu_specs(options.timeout, deadline)
        if why:
            spec_note = why
        spec = spec_for_kind(str(backend["device_kind"]), specs)
        if spec is None:
            spec_note = (
                f"no deviceless spec for {backend['device_kind']!r} (hloscope platforms "
                f"lists gpu:{', gpu:'.join(sorted(specs))}): the comparison is skipped; "
                "--spec gpu:NAME compares with the nearest anyway"
            )
        elif re.sub(r"\s*\(.*\)$", "", specs.get(spec.removeprefix("gpu:"), "")) not in (
            "",
            backend["device_kind"],
        ):
            spec_note = (
                f"{spec} describes {specs[spec.removeprefix('gpu:')]}, "
                f"this device is {backend['device_kind']}"
            )
    elif spec is None:
        spec = "cpu"

    # The header.
    date = time.strftime("%Y-%m-%d")
    title = "Device check" + (" (dry run, no GPU)" if not on_gpu else "")
    lines.append(f"### {title}: `make device-check`, {date}")
    lines.append("")
    if on_gpu:
        gpu = f"{backend['count']} x {backend['device_kind']}"
        if backend.get("compute_capability"):
            gpu += f" (compute capability {backend['compute_capability']})"
        smi = driver()
        if smi:
            gpu += f"; nvidia-smi: {smi}"
    else:
        gpu = f"none: JAX's backend is {backend['backend']} ({backend['device_kind']})"
    lines.append(f"- GPU: {gpu}")
    lines.append(
        f"- host: {os.cpu_count()} cores, {platform.machine()}, Python "
        f"{platform.python_version()}; {versions()}"
    )
    lines.append(f"- hloscope: {revision()}")
    lines.append(
        f"- compared: {local_name} (no --for) against "
        f"{'--for ' + spec if spec else 'no spec'}" + (f" ({spec_note})" if spec_note else "")
    )
    lines.append("")

    # 2. The compiles.
    samples = [NESTED, PROFILED]
    skipped = []
    if backend["count"] >= SHARDED.devices or not on_gpu:
        samples.insert(1, SHARDED)
    else:
        skipped.append(
            f"{SHARDED.label} skipped: it needs {SHARDED.devices} devices, "
            f"this machine has {backend['count']}"
        )
    if spec is not None:
        progress(f"device-check: compiling {len(samples)} samples for {local_name} and {spec}")
        calls = compile_calls(
            samples,
            spec,
            jobs=options.jobs,
            timeout=options.timeout,
            deadline=deadline,
            progress=progress,
        )
        failures += [f"{c.label}: {c.error}" for c in calls.values() if not c.ok]
        facts = [
            fact
            for sample in samples
            for fact in compare_sample(sample, calls, "gpu" if on_gpu else str(backend["backend"]))
        ]
        compared = [f for f in facts if f.agree is not None]
        agreeing = sum(1 for f in compared if f.agree)
        lines.append(
            f"**Compiled for the {local_name} and for `--for {spec}`**: {agreeing} of "
            f"{len(compared)} facts agree."
        )
        lines.append("")
        lines += table(
            ["sample", "fact", local_name, f"--for {spec}", "agree", "note"],
            [[f.sample, f.name, f.local, f.spec, agreement(f), f.note] for f in facts],
        )
        lines.append("")
    else:
        lines.append(
            f"**Compiled for the {local_name} and a deviceless spec**: skipped ({spec_note})."
        )
        lines.append("")
    for line in skipped:
        lines.append(f"- {line}")
    if skipped:
        lines.append("")

    # 3. The profile.
    progress(f"device-check: profiling {PROFILED.target} ({options.runs} runs, twice)")
    profiled = profile_check(
        PROFILED,
        runs=options.runs,
        warmup=options.warmup,
        timeout=options.timeout,
        deadline=deadline,
    )
    failures += [f"{call.label}: {call.error}" for call in profiled.calls if not call.ok]
    lines.append(
        f"**`hloscope profile {PROFILED.target}`** ({options.runs} runs after "
        f"{options.warmup} warm-up) **against its own trace read again here** (`--trace-dir`: "
        "the same events, so a gap is how hloscope reads them) **and against a plain run "
        "under `jax.profiler.trace`** (the same runs in a process of its own): each trace's "
        "events of the module summed by `hlo_op`, per run."
    )
    lines.append("")
    if profiled.summary:
        lines += table(
            ["", "hloscope profile", "its trace", "ratio", "plain run's trace", "ratio"],
            profiled.summary,
        )
        lines.append("")
        lines += table(
            [
                "instruction",
                "hloscope",
                "share",
                "its trace",
                "ratio",
                "plain trace",
                "share",
                "ratio",
                "calls per run (hloscope / its trace / plain)",
            ],
            profiled.rows,
        )
        lines.append("")
    for call in profiled.calls:
        if not call.ok:
            lines.append(f"- {call.label} failed: {call.error}")
    for note in profiled.notes:
        lines.append(f"- {note}")
    if failures:
        lines.append("")
        lines.append(f"**Failed steps ({len(failures)})**:")
        lines.append("")
        lines += [f"- {failure}" for failure in failures]
    lines.append("")
    lines.append(f"({time.perf_counter() - started:.0f} s)")
    snippet = "\n".join(lines) + "\n"
    print(snippet)
    try:
        options.out.parent.mkdir(parents=True, exist_ok=True)
        options.out.write_text(snippet)
        print(f"device-check: written to {display(options.out)}")
    except OSError as error:
        print(f"device-check: could not write {options.out}: {error}")
        failures.append(f"writing the snippet: {error}")
    return 1 if failures else 0


def display(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


if __name__ == "__main__":
    raise SystemExit(main())

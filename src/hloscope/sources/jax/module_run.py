"""A dumped module compiled and run under JAX's profiler in a child process.

A module that did not come from the user's own function (a dump) may make XLA abort
while compiling or running it; in a child, that costs the child, and hloscope says so
in one line. The parent (`profile_module`) writes the request into a temporary
folder (the module's bytecode and `request.json`), runs `python -m
hloscope.sources.jax.module_run FOLDER`, and reads what the child wrote there: the
optimized module (`optimized.pb`, `optimized.txt`), `result.json` (XLA's analyses,
the runs' times and the trace's events), or `error.json` (a refusal, one line).

The inputs are made for the entry parameters' shapes: seeded random values, the same
every run (`sources.jax.inputs`).
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from hloscope.errors import HloscopeError, one_line
from hloscope.stages import Compilation, ProfiledRuns, TraceEvent

CHILD_EXIT_REFUSED = 3
"""The child's exit code when it refused the module (`error.json` says why)."""


def profile_module(
    bytecode: bytes,
    specs: tuple[str, ...],
    label: str,
    *,
    runs: int | None,
    warmup: int,
    trace_dir: str | None,
    custom_call_targets: tuple[str, ...] = (),
) -> tuple[Compilation, ProfiledRuns]:
    """Compile the StableHLO module `bytecode` for the local backend's first device and
    run it under JAX's profiler on inputs made for `specs` (its parameters' shapes,
    `f32[8,128]`), in a child process."""
    with tempfile.TemporaryDirectory(prefix="hloscope-run-") as temporary:
        folder = Path(temporary)
        (folder / "module.mlirbc").write_bytes(bytecode)
        request = {
            "label": label,
            "specs": list(specs),
            "runs": runs,
            "warmup": warmup,
            "trace_dir": str(Path(trace_dir).resolve()) if trace_dir is not None else None,
            "custom_call_targets": list(custom_call_targets),
        }
        (folder / "request.json").write_text(json.dumps(request))
        done = subprocess.run(
            [sys.executable, "-m", "hloscope.sources.jax.module_run", str(folder)],
            capture_output=True,
            text=True,
            check=False,
        )
        error = folder / "error.json"
        if done.returncode == CHILD_EXIT_REFUSED and error.is_file():
            refused = json.loads(error.read_text())
            raise HloscopeError(refused["message"], where=refused.get("where") or label)
        result = folder / "result.json"
        if done.returncode != 0 or not result.is_file():
            raise HloscopeError(_death(done), where=label)
        return _read(folder, json.loads(result.read_text()), trace_dir)


STACK_TRACE_HEADER = "*** Check failure stack trace: ***"
"""What XLA writes after a failed check's message, before the stack's frames."""


def _death(done: subprocess.CompletedProcess[str]) -> str:
    """What killed the child, with XLA's last message (a failed check's, not its stack
    trace's frames)."""
    lines = [line.strip() for line in done.stderr.splitlines() if line.strip()]
    if STACK_TRACE_HEADER in lines:
        lines = lines[: lines.index(STACK_TRACE_HEADER)]
    lines = [line for line in lines if not line.startswith("@")]
    # Without the log line's prefix (`F1125 23:18:42.265112 28098 file.cc:269] `).
    message = lines[-1].partition("] ")[2] or lines[-1] if lines else ""
    last = f": {one_line(message, 300)}" if message else ""
    if done.returncode < 0:
        return f"XLA aborted (signal {-done.returncode}) while compiling or running it{last}"
    return f"compiling or running it failed (exit {done.returncode}){last}"


def _read(
    folder: Path, result: dict[str, Any], trace_dir: str | None
) -> tuple[Compilation, ProfiledRuns]:
    compilation = Compilation(
        hlo_proto=(folder / "optimized.pb").read_bytes(),
        hlo_text=(folder / "optimized.txt").read_text(),
        compile_seconds=result["compile_seconds"],
        cost=result["cost"],
        memory=result["memory"],
        platform=result["platform"],
    )
    runs = ProfiledRuns(
        module=result["module"],
        run_seconds=tuple(result["run_seconds"]),
        warmup=result["warmup"],
        events=tuple(TraceEvent(**event) for event in result["events"]),
        inputs=result["inputs"],
        trace_file=result["trace_file"] if trace_dir is not None else None,
    )
    return compilation, runs


def _child(folder: Path) -> int:
    """The child's work: compile, run under the profiler, write what it found."""
    from hloscope.sources.jax.arguments import example_arguments
    from hloscope.sources.jax.compile import compile_executable, executable_compilation
    from hloscope.sources.jax.inputs import InputPlan
    from hloscope.sources.jax.private import private_execute
    from hloscope.sources.jax.profile import profile_runs
    from hloscope.sources.target import parse_arg_spec

    request = json.loads((folder / "request.json").read_text())
    label = request["label"]
    try:
        executable, elapsed, platform = compile_executable(
            (folder / "module.mlirbc").read_bytes(),
            label,
            custom_call_targets=request["custom_call_targets"],
        )
        compilation = executable_compilation(executable, elapsed, platform)
        (folder / "optimized.pb").write_bytes(compilation.hlo_proto)
        (folder / "optimized.txt").write_text(compilation.hlo_text)
        module = str(executable.hlo_modules()[0].name)
        args = example_arguments([parse_arg_spec(spec) for spec in request["specs"]])

        def parameters(*leaves: Any) -> None:
            """What the inputs are named by (`%arg0`, ...), for InputPlan."""

        plan = InputPlan(parameters, args, {}, label)

        def call(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
            return private_execute(executable, list(args))

        runs = profile_runs(
            call,
            plan,
            module,
            label,
            runs=request["runs"],
            warmup=request["warmup"],
            trace_dir=request["trace_dir"],
        )
    except HloscopeError as exc:
        (folder / "error.json").write_text(json.dumps({"message": exc.message, "where": exc.where}))
        return CHILD_EXIT_REFUSED
    result = {
        "compile_seconds": compilation.compile_seconds,
        "cost": dict(compilation.cost) if compilation.cost is not None else None,
        "memory": dict(compilation.memory) if compilation.memory is not None else None,
        "platform": compilation.platform,
        "module": runs.module,
        "run_seconds": list(runs.run_seconds),
        "warmup": runs.warmup,
        "events": [dataclasses.asdict(event) for event in runs.events],
        "inputs": runs.inputs,
        "trace_file": runs.trace_file,
    }
    (folder / "result.json").write_text(json.dumps(result))
    return 0


if __name__ == "__main__":
    from hloscope.native_stderr import native_stderr_kept

    with native_stderr_kept():
        code = _child(Path(sys.argv[1]))
    raise SystemExit(code)

"""A module that did not come from the user's own function (a dump) compiled, and run
under JAX's profiler, in a child process kept for reuse.

Compiling such a module may make XLA abort (a failed check: SIGABRT) and running it
may crash; in a child, that costs the child, and hloscope says so in one line naming
XLA's last message. The child's entry point is general (`run_module`): compile this
module (StableHLO bytecode or text) for the local backend, on this many devices, with
these XLA debug options (`ModuleRequest`); optionally run it on inputs made for its
entry parameters' shapes, seeded random values the same every run
(`sources.jax.inputs`), under JAX's profiler (`RunRequest`); and hand back what XLA
made (`ModuleResult`): the optimized module's proto and XLA's text of it, its model
(built here from the child's MLIR conversion, as the reader process's answer is:
`ir.hlo.parsed_from_reply`, so that XLA's converter crashing costs the child too),
XLA's cost and memory analyses, and the runs' times and the trace's events. What XLA
writes into a folder (`xla_dump_to` among the options) is written there by the child.

The protocol is `hloscope.child_process`'s: a request is a frame whose header holds the
`ModuleRequest` and whose body is the module; the reply's frames are the stages the
child reached (`compiled`, `running` before each run, `ran`, then the reader's
`parsed`, `converted`, `names`), or `refused` (one line: a custom call the backend
cannot run, too few devices, XLA's compile error), ending with `done`. The child
writes native code's lines on its stderr, which the parent keeps: the last one names a
crash. One run may take `RUN_TIME_LIMIT_SECONDS`: a module run on its own may never
finish (a module waiting on the host is refused before, by `sources.programs`), and
the line then names the run. The child ends when hloscope does, killed or not
(`child_process.exit_with_parent`).
"""

from __future__ import annotations

import atexit
import dataclasses
import json
import os
import sys
from typing import Any

from hloscope.child_process import (
    STAGE_DONE,
    ChildProcess,
    Frame,
    Reply,
    exit_with_parent,
    read_frame,
    write_frame,
)
from hloscope.environment import note_child_backend, package_version
from hloscope.errors import DoesNotFit, HloscopeError, one_line
from hloscope.ir.hlo import parsed_from_reply
from hloscope.ir.parsed import ParsedModule
from hloscope.runs import ProfiledRuns, TraceEvent
from hloscope.sources import compile_cache
from hloscope.stages import Compilation, CompiledFor, CompilerOptions

STAGE_REFUSED = "refused"
"""The module was refused (the header's `message` and `where`): one line."""
STAGE_COMPILED = "compiled"
"""XLA compiled it: the header has its analyses, the body is XLA's text of it."""
STAGE_RAN = "ran"
"""It ran under JAX's profiler: the body is the runs' JSON."""
STAGE_RUNNING = "running"
"""The child starts a stage of the runs (the header's `doing`: `measured run 2 of
5`); `run` says whether it is one run of the module, which gets
`RUN_TIME_LIMIT_SECONDS`."""

RUN_TIME_LIMIT_SECONDS = 60.0
"""How long one run of a dumped module may take before the child is ended: a module
run on its own may wait for ever on something nothing here sends it."""


@dataclasses.dataclass(frozen=True)
class RunRequest:
    """How to run a compiled module under JAX's profiler."""

    specs: tuple[str, ...]
    """Its entry parameters' shapes (`f32[8,128]`), for the inputs made for them."""
    runs: int | None
    """Measured runs (None: as many as fit in about two seconds)."""
    warmup: int
    trace_dir: str | None
    """Where the trace is kept (None: a temporary folder, gone after the run)."""


@dataclasses.dataclass(frozen=True)
class ModuleRequest:
    """What the child does with a module: compile it for the local backend, and run it
    when `run` says how."""

    label: str
    """What the module is called in messages (its file)."""
    partitions: int = 1
    replicas: int = 1
    compiler_options: CompilerOptions = ()
    """XLA debug options for this compilation (`xla_dump_to`, ...)."""
    custom_call_targets: tuple[str, ...] = ()
    """The targets it calls: one the backend cannot run is refused before compiling."""
    run: RunRequest | None = None
    compile_for: str | None = None
    """`--for`: the TPU topology or GPU spec to compile for instead of the local
    backend (its spec, read again in the child)."""
    cache: bool = True
    """Read and keep the compile in hloscope's compile cache (a request that runs the
    module compiles it: the run needs the executable)."""


@dataclasses.dataclass(frozen=True)
class ModuleResult:
    """What the child made of a module."""

    compilation: Compilation
    optimized: ParsedModule
    """The optimized module's model."""
    runs: ProfiledRuns | None
    """The runs, when the request asked for them."""


class _ModuleRunner(ChildProcess):
    def __init__(self) -> None:
        super().__init__("hloscope.sources.jax.module_run", keep_stderr=True)


_runner = _ModuleRunner()
atexit.register(_runner.close)


def start_runner() -> None:
    """Start the child now, so that it imports JAX and starts the backend while this
    process reads the module it will be asked to compile."""
    _runner.start()


def run_module(module: bytes, request: ModuleRequest) -> ModuleResult:
    """Compile `module` (StableHLO bytecode or text) in the child process, and run it
    when the request says how (see the module's docstring)."""
    header = {"request": dataclasses.asdict(request)}
    header["request"]["compiler_options"] = [list(o) for o in request.compiler_options]
    reply = _runner.request(header, module, limit_after=_run_limit)
    stages = reply.stages
    label = request.label
    if reply.timed_out is not None and STAGE_RUNNING in stages:
        doing = stages[STAGE_RUNNING][0].get("doing", "a run")
        raise HloscopeError(
            f"its {doing} did not finish within {reply.timed_out:g} s (the limit of one "
            "run of a dump) and was ended: a loop that never ends, or a wait on what "
            "nothing here sends",
            where=label,
        )
    if STAGE_REFUSED in stages:
        refused = stages[STAGE_REFUSED][0]
        where = refused.get("where") or label
        does_not_fit = refused.get("does_not_fit")
        if does_not_fit:
            made = does_not_fit["compiled_for"]
            raise DoesNotFit(
                does_not_fit["xla_message"],
                does_not_fit["spec"],
                where=where,
                compiled_for=CompiledFor(**made) if made else None,
            )
        raise HloscopeError(str(refused["message"]), where=where)
    if STAGE_COMPILED not in stages:
        raise HloscopeError(_death(reply, "compiling"), where=label)
    if request.run is not None and STAGE_RAN not in stages:
        raise HloscopeError(_death(reply, "running"), where=label)
    if "parsed" not in stages:
        raise HloscopeError(_death(reply, "converting"), where=label)
    compiled, text = stages[STAGE_COMPILED]
    note_child_backend(str(compiled["platform"]))
    compile_cache.relay_note(reply.stderr)
    compilation = Compilation(
        hlo_proto=stages["parsed"][1],
        hlo_text=text.decode("utf-8"),
        compile_seconds=compiled["compile_seconds"],
        cost=compiled["cost"],
        memory=compiled["memory"],
        platform=compiled["platform"],
        compiled_for=CompiledFor(**compiled["compiled_for"]) if compiled["compiled_for"] else None,
        cached=bool(compiled.get("cached", False)),
    )
    runs = None
    if request.run is not None:
        ran = json.loads(stages[STAGE_RAN][1])
        runs = ProfiledRuns(
            module=ran["module"],
            run_seconds=tuple(ran["run_seconds"]),
            warmup=ran["warmup"],
            events=tuple(TraceEvent(**event) for event in ran["events"]),
            inputs=ran["inputs"],
            trace_file=ran["trace_file"] if request.run.trace_dir is not None else None,
        )
    optimized = parsed_from_reply(reply, "proto", b"", label)
    return ModuleResult(compilation, optimized, runs)


def _run_limit(frame: Frame) -> float | None:
    """The limit for the child's next frame: one run of the module gets
    `RUN_TIME_LIMIT_SECONDS`; compiling, converting and reading the trace, none."""
    header = frame[0]
    if header.get("stage") == STAGE_RUNNING and header.get("run"):
        return RUN_TIME_LIMIT_SECONDS
    return None


def _death(reply: Reply, doing: str) -> str:
    """What ended the child while `doing` it, with XLA's last message (a failed
    check's, not its stack trace's frames): `XLA aborted while compiling it (SIGABRT,
    jaxlib 0.10.2): Check failed: ...`."""
    message = reply.last_message()
    last = f": {one_line(message, 300)}" if message else ""
    jaxlib = f"jaxlib {package_version('jaxlib') or 'unknown'}"
    if reply.died is not None and reply.died < 0:
        crash = reply.failure().removeprefix("crashed (").removesuffix(")")
        return f"XLA aborted while {doing} it ({crash}, {jaxlib}){last}"
    return f"{doing} it, the child process {reply.failure()} ({jaxlib}){last}"


# --------------------------------------------------------------------------- the child


def _serve(request: dict[str, Any], module: bytes, replies: Any) -> None:
    """The child's work on one request: compile, run when asked, answer each stage."""
    from hloscope.compile_for import parse_compile_for
    from hloscope.ir.reader_child import send_hlo_module
    from hloscope.sources.jax.compile import (
        compile_executable_for,
        compile_module,
        executable_compilation,
    )

    label = request["label"]
    inputs = (
        module,
        label,
        request["partitions"],
        request["replicas"],
        tuple((str(k), v) for k, v in request["compiler_options"]),
        request["custom_call_targets"],
        parse_compile_for(request.get("compile_for")),
    )
    try:
        if request["run"] is None:
            # Only what the views read: through the compile cache.
            compilation = compile_module(*inputs, cache=request.get("cache", True))
        else:
            executable, elapsed, platform, made_for = compile_executable_for(*inputs)
            compilation = executable_compilation(executable, elapsed, platform, made_for)
        compiled_for = compilation.compiled_for
        compiled = {
            "stage": STAGE_COMPILED,
            "compile_seconds": compilation.compile_seconds,
            "cost": dict(compilation.cost) if compilation.cost is not None else None,
            "memory": dict(compilation.memory) if compilation.memory is not None else None,
            "platform": compilation.platform,
            "compiled_for": dataclasses.asdict(compiled_for) if compiled_for else None,
            "cached": compilation.cached,
        }
        write_frame(replies, compiled, compilation.hlo_text.encode("utf-8"))
        if request["run"] is not None:
            ran = _run(executable, request["run"], label, replies)
            write_frame(replies, {"stage": STAGE_RAN}, json.dumps(ran).encode("utf-8"))
    except HloscopeError as exc:
        refused: dict[str, Any] = {
            "stage": STAGE_REFUSED,
            "message": exc.message,
            "where": exc.where,
        }
        if isinstance(exc, DoesNotFit):
            made = exc.compiled_for
            refused["does_not_fit"] = {
                "xla_message": exc.xla_message,
                "spec": exc.spec,
                "compiled_for": dataclasses.asdict(made) if made is not None else None,
            }
        write_frame(replies, refused)
        return
    # The proto and text are the module's: send_hlo_module needs no module object.
    send_hlo_module(None, replies, compilation.hlo_proto, compilation.hlo_text)


def _run(executable: Any, run: dict[str, Any], label: str, replies: Any) -> dict[str, Any]:
    from hloscope.sources.jax.arguments import example_arguments
    from hloscope.sources.jax.inputs import InputPlan
    from hloscope.sources.jax.private import private_execute
    from hloscope.sources.jax.profile import profile_runs
    from hloscope.sources.target import parse_arg_spec

    module = str(executable.hlo_modules()[0].name)
    args = example_arguments([parse_arg_spec(spec) for spec in run["specs"]])

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
        runs=run["runs"],
        warmup=run["warmup"],
        trace_dir=run["trace_dir"],
        on_stage=lambda doing, is_run: write_frame(
            replies, {"stage": STAGE_RUNNING, "doing": doing, "run": is_run}
        ),
    )
    return {
        "module": runs.module,
        "run_seconds": list(runs.run_seconds),
        "warmup": runs.warmup,
        "events": [dataclasses.asdict(event) for event in runs.events],
        "inputs": runs.inputs,
        "trace_file": runs.trace_file,
    }


def main() -> int:
    """The child's loop: one request after another until its stdin closes."""
    from hloscope.native_stderr import native_stderr_kept

    exit_with_parent()
    # Replies go to a descriptor of their own; what anything prints goes to stderr,
    # so that it cannot break a frame.
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    requests = sys.stdin.buffer
    # Native code's lines stay on stderr, which the parent keeps: the last names a
    # crash.
    with native_stderr_kept():
        # Ready before the first request comes (the parent starts this process while
        # it reads the module): JAX imported, the backend started.
        from hloscope.ir import reader_child  # noqa: F401
        from hloscope.sources.jax.backend import local_backend

        local_backend()
        while True:
            frame = read_frame(requests)
            if frame is None:
                return 0
            header, module = frame
            _serve(header["request"], module, replies)
            write_frame(replies, {"stage": STAGE_DONE})


if __name__ == "__main__":
    raise SystemExit(main())

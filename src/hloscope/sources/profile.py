"""A loaded target's program run under JAX's profiler (`hloscope profile`).

The program is compiled here (the optimized module is what the trace's events are
joined to) and run: an entrypoint's jitted function as it is called, on its example
arguments (`sources.jax.profile`); a dump's module before optimizations on inputs
made for its parameters' shapes, in a child process (`sources.jax.module_run`). A
script runs as it is, every program it runs traced.
"""

from __future__ import annotations

import dataclasses
import math

from hloscope.compile_for import CompileFor
from hloscope.errors import HloscopeError
from hloscope.runs import ProfiledRuns, ProfiledScript
from hloscope.sources.loader import Loaded, LoadOptions, load
from hloscope.sources.target import is_script


@dataclasses.dataclass(frozen=True)
class ProfiledProgram:
    """A program compiled here and run under JAX's profiler."""

    loaded: Loaded
    """The optimized module that ran."""
    lowered: Loaded
    """What was loaded before compiling (its lowered module maps instructions back
    to the user's lines)."""
    runs: ProfiledRuns


def profiled(
    loaded: Loaded,
    *,
    runs: int | None = None,
    warmup: int = 1,
    trace_dir: str | None = None,
) -> ProfiledProgram:
    """Compile a loaded target here and run it under JAX's profiler (`Loaded.profiled`):
    `warmup` runs, then `runs` measured ones (by default as many as fit in about two
    seconds), the trace in `trace_dir` or a temporary folder."""
    _check_counts(runs, warmup)
    optimized, runs_made = loaded.profiled(runs, warmup, trace_dir)
    return ProfiledProgram(loaded=optimized, lowered=loaded, runs=runs_made)


def profile_target(
    target: str,
    argv: list[str],
    options: LoadOptions,
    *,
    runs: int | None = None,
    warmup: int = 1,
    trace_dir: str | None = None,
    quiet: bool = False,
) -> ProfiledProgram | ProfiledScript:
    """Profile what `target` names: a script (`SCRIPT.py`, run with `argv`; `quiet`
    sends what it prints to stderr), or an entrypoint loaded with `options` (see
    `profiled`)."""
    _check_counts(runs, warmup)
    if options.compile_for is not None:
        from hloscope.sources.loader import needs_the_device

        raise needs_the_device("profile", options.compile_for)
    if is_script(target):
        if options.args or options.args_factory or runs is not None:
            raise HloscopeError(
                "--arg, --args and --runs are for a function; a script runs as it is, "
                "with its own arguments after its name",
                where=target,
            )
        from hloscope.sources.jax.profile import profile_script

        return profile_script(target, argv, stdout_to_stderr=quiet, trace_dir=trace_dir)
    if argv:
        raise HloscopeError(
            f"unexpected arguments {' '.join(argv)}: a function's example arguments come "
            "from --arg or --args",
            where=target,
        )
    return profiled(load(target, options), runs=runs, warmup=warmup, trace_dir=trace_dir)


def check_estimate_options(
    target: str,
    argv: list[str],
    runs: int | None,
    trace_dir: str | None,
    compile_for: CompileFor | None = None,
    model_flops: float | None = None,
) -> None:
    """Refuse what `profile --for` cannot do: it estimates one program compiled for
    the platform; nothing runs (no runs, no trace) and a script is not compiled; and
    a `--model-flops` it cannot take (`check_model_flops`)."""
    check_model_flops(compile_for, model_flops)
    if compile_for is None:
        return
    if is_script(target):
        raise HloscopeError(
            "profile --for estimates a function compiled for the platform; a script runs "
            "on this machine (profile it without --for)",
            where=target,
        )
    if argv:
        raise HloscopeError(
            f"unexpected arguments {' '.join(argv)}: a function's example arguments come "
            "from --arg or --args",
            where=target,
        )
    if runs is not None or trace_dir is not None:
        raise HloscopeError(
            "--runs and --trace-dir measure runs on this machine; profile --for estimates "
            "without running"
        )


def check_model_flops(compile_for: CompileFor | None, model_flops: float | None) -> None:
    """`--model-flops` (MFU's) is a positive number, and only an estimate takes it."""
    if model_flops is None:
        return
    if compile_for is None:
        raise HloscopeError(
            "--model-flops gives an estimate's MFU: it needs --for (a measured profile "
            "has no utilization)"
        )
    if not (math.isfinite(model_flops) and model_flops > 0):
        raise HloscopeError(
            f"--model-flops {model_flops:g}: expected the model's flops for one step, a "
            "positive number such as 1.2e15"
        )


def _check_counts(runs: int | None, warmup: int) -> None:
    """Refuse run counts no profile can have, before anything is loaded or run."""
    if runs is not None and runs < 1:
        raise HloscopeError(f"--runs {runs}: expected at least 1")
    if warmup < 0:
        raise HloscopeError(f"--warmup {warmup}: expected 0 or more")

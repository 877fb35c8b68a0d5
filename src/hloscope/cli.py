"""The command line: options in, a renderer out. No analysis happens here.

stdout is data (a report or one JSON document); failures are one line on stderr
and exit code 2 (see `hloscope.errors`)."""

from __future__ import annotations

import copy
import dataclasses
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Annotated, Literal, TypeVar

import typer

from hloscope.cli_compare import compare
from hloscope.cli_options import (
    ArgumentOptions,
    BaselineOption,
    CallsCheckOption,
    DebugOption,
    DiffTargetOptions,
    JsonOption,
    ModelFlopsOption,
    PrintedAnywayOption,
    PrintOption,
    ProfileTargetArg,
    RunsOption,
    StrictOption,
    TargetArg,
    TargetOptions,
    TargetOptionsNoCompile,
    TimeoutOption,
    ToleranceOption,
    TraceDirOption,
    UpdateOption,
    WarmupOption,
    option_groups,
    print_report,
    script_arguments,
    tolerance_specs,
)
from hloscope.errors import ExitCode, HloscopeError, command_edge, print_error, reader_gone
from hloscope.gc_pause import gc_paused
from hloscope.timeout import time_limit

# What a command reads and builds is imported when it runs: --help, a usage error and
# shell completion load none of it (tests/cli/test_startup.py).
if TYPE_CHECKING:
    from hloscope import reports
    from hloscope.reports.check import CheckReport
    from hloscope.sources import loader
    from hloscope.sources.diff_sides import DiffOptions

R = TypeVar("R")

app = typer.Typer(
    name="hloscope",
    help="See what XLA was given and what it made of it: StableHLO and HLO, "
    "from a JAX entrypoint or a dump.",
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)

WHY_HELP = "Compile with Shardy's dumps and say why each collective is there."


def _version(value: bool) -> None:
    if value:
        from hloscope.environment import environment, version_text

        with command_edge(False):
            text = version_text(environment(start_backend=True))
        sys.stdout.write(text)
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            callback=_version,
            is_eager=True,
            help="Show the versions of hloscope, JAX and jaxlib, and JAX's default backend.",
        ),
    ] = False,
) -> None:
    """hloscope: a terminal tool for JAX/XLA compiler IR."""


def emit(
    debug: bool,
    as_json: bool,
    build: Callable[[], R],
    exit_code: Callable[[R], int] | None = None,
    timeout: float | None = None,
    what: str | None = None,
    render: Callable[[R], None] | None = None,
) -> None:
    """The shape of every command: build a report inside the error edge, print it as JSON
    or text with the renderers its registry entry names (or with `render`), exit with the
    report's code (0 unless a check differs). Building stops after `timeout` seconds
    (`--timeout`), naming `what`. Analyses load to build, text renderers (rich) to print."""
    from hloscope.ir.xla_flags import xla_flags_checked

    with command_edge(debug), gc_paused(keep_for_exit=True):
        xla_flags_checked()  # before XLA reads XLA_FLAGS, and aborts on a flag it does not know
        with time_limit(timeout, what):
            report = build()
        print_report(report, as_json, render)
    code = exit_code(report) if exit_code is not None else ExitCode.OK
    if code != ExitCode.OK:
        raise typer.Exit(code)


@app.command()
@option_groups
def inspect(
    target: TargetArg,
    options: TargetOptions,
    json: JsonOption = False,
    print_: PrintOption = False,
    debug: DebugOption = False,
    timeout: TimeoutOption = None,
) -> None:
    """Overview: functions and call graph (nested jits), op counts, timings and cost.
    Opens the browser on a terminal (unless --print or --json)."""
    from hloscope import reports
    from hloscope.sources import loader

    options = _for_compiles(options)
    if not (json or print_) and sys.stdout.isatty() and sys.stdin.isatty():
        _browse(target, options, "overview", debug)
        return
    emit(
        debug,
        json,
        lambda: reports.inspect_report(loader.load(target, options)),
        timeout=timeout,
        what=target,
    )


FusionsCompileOption = Annotated[
    bool,
    typer.Option(
        "--compile",
        help="Compile a before-optimization dump for the local backend (entrypoints are "
        "always compiled; after-optimization dumps are read as they are).",
    ),
]


@app.command()
@option_groups
def fusions(
    target: TargetArg,
    options: TargetOptionsNoCompile,
    compile: FusionsCompileOption = False,
    json: JsonOption = False,
    print_: PrintedAnywayOption = False,
    debug: DebugOption = False,
    timeout: TimeoutOption = None,
) -> None:
    """What XLA fused, from which source lines, and what it left unfused."""
    from hloscope import reports
    from hloscope.sources import loader

    options = dataclasses.replace(
        options, optimized=True, compile_dumps=compile or options.compile_for is not None
    )
    emit(
        debug,
        json,
        lambda: reports.fusions_report(loader.load(target, options)),
        timeout=timeout,
        what=target,
    )


FailOnOption = Annotated[
    str | None,
    typer.Option(
        "--fail-on",
        metavar="STATUSES",
        help="Exit 1 when any argument has one of these statuses: a comma-separated list "
        "of unused, pruned.",
        show_default=False,
    ),
]


def _fail_on_statuses(text: str | None) -> tuple[str, ...]:
    if not text:
        return ()
    statuses = tuple(part.strip() for part in text.split(",") if part.strip())
    allowed = ("unused", "pruned", "used")
    wrong = [s for s in statuses if s not in allowed]
    if wrong:
        raise HloscopeError(
            f"--fail-on {text}: unknown status {', '.join(wrong)} (expected unused, pruned)"
        )
    return statuses


@app.command()
@option_groups
def params(
    target: TargetArg,
    options: TargetOptions,
    json: JsonOption = False,
    print_: PrintedAnywayOption = False,
    fail_on: FailOnOption = None,
    debug: DebugOption = False,
    timeout: TimeoutOption = None,
) -> None:
    """Parameter usage: every argument mapped to its HLO parameter, used, unused or
    pruned, with donation, sharding and memory kind."""
    statuses: tuple[str, ...] = ()

    def build() -> reports.ParamsReport:
        from hloscope import reports
        from hloscope.sources import loader

        nonlocal statuses
        statuses = _fail_on_statuses(fail_on)
        return reports.params_report(loader.load(target, _for_compiles(options)))

    emit(
        debug,
        json,
        build,
        lambda report: ExitCode.DIFFERENT if report.has_status(statuses) else ExitCode.OK,
        timeout=timeout,
        what=target,
    )


@app.command()
@option_groups
def placement(
    target: TargetArg,
    options: TargetOptions,
    json: JsonOption = False,
    print_: PrintedAnywayOption = False,
    why: Annotated[bool, typer.Option("--why", help=WHY_HELP)] = False,
    debug: DebugOption = False,
    timeout: TimeoutOption = None,
) -> None:
    """Where it runs: compute types (host vs device), memory kinds and transfers,
    shardings and meshes, collectives, and warnings."""
    from hloscope import reports
    from hloscope.sources import loader

    # --why compiles the loaded module itself, with Shardy's dumps.
    build = reports.placement_why_report if why else reports.placement_report
    options = _for_compiles(options)
    options = dataclasses.replace(options, optimized=options.optimized and not why)
    emit(debug, json, lambda: build(loader.load(target, options)), timeout=timeout, what=target)


@app.command()
@option_groups
def diff(
    a: Annotated[
        str,
        typer.Argument(
            metavar="A", help="The module before: a dump or an entrypoint.", show_default=False
        ),
    ],
    b: Annotated[
        str,
        typer.Argument(
            metavar="B", help="The module after: a dump or an entrypoint.", show_default=False
        ),
    ],
    options: DiffTargetOptions,
    json: JsonOption = False,
    print_: PrintOption = False,
    debug: DebugOption = False,
    timeout: TimeoutOption = None,
) -> None:
    """Structural diff of two modules (exit 1 when they differ), of compiled ones led by
    what changed in memory, estimate and collectives. Target options apply to each side
    they fit (--compile to both); --args-a, --for-b, --env-a NAME=V to one side. Opens
    the diff screen on a terminal (unless --print or --json)."""
    from hloscope import reports
    from hloscope.sources import diff_sides

    if not (json or print_) and sys.stdout.isatty() and sys.stdin.isatty():
        _browse_diff(a, b, options, debug)
        return
    emit(
        debug,
        json,
        lambda: reports.diff_loaded(*diff_sides.load_diff_sides(a, b, options), summary=True),
        lambda report: ExitCode.OK if report.same else ExitCode.DIFFERENT,
        timeout=timeout,
        what=f"diff {a} {b}",
    )


@app.command()
@option_groups
def tui(
    target: TargetArg,
    options: TargetOptions,
    debug: DebugOption = False,
    timeout: TimeoutOption = None,
) -> None:
    """The interactive browser: the module tree, the printed IR with each op's details,
    and the reports (press ? in it for the keys). --timeout limits the loading; the
    browser then stays open."""
    _browse(target, _for_compiles(options), "ir", debug, timeout)


def _for_compiles(options: loader.LoadOptions) -> loader.LoadOptions:
    """--for reads the program compiled for that platform: it implies --compile."""
    if options.compile_for is None:
        return options
    return dataclasses.replace(options, optimized=True)


def _browse(
    target: str,
    options: loader.LoadOptions,
    start: str,
    debug: bool,
    timeout: float | None = None,
) -> None:
    """Run the browser; textual is imported here, so no other command loads it."""
    with command_edge(debug):
        from hloscope.tui.app import run_browser

        code = run_browser(target, options, start=start, debug=debug, timeout=timeout)
    if code != ExitCode.OK:
        raise typer.Exit(code)


AotOption = Annotated[
    str | None,
    typer.Option(
        "--aot",
        metavar="OTHER_TARGET",
        help="The AOT object, named explicitly (module:attr or file.py:attr): a function "
        "(jitted or not), a jax.stages.Lowered or Compiled. By default: the target's own "
        ".lower, else the nearest .lower along its __wrapped__ chain, else jax.jit(target).",
        show_default=False,
    ),
]


@app.command("aot-check")
@option_groups
def aot_check(
    target: TargetArg,
    options: ArgumentOptions,
    aot: AotOption = None,
    json: JsonOption = False,
    print_: PrintedAnywayOption = False,
    debug: DebugOption = False,
    timeout: TimeoutOption = None,
) -> None:
    """The direct call against the AOT path: call the target, lower-compile-run its AOT
    path on the same inputs, compare placement, parameters, ops, text and results.
    Exit 0 when they agree, 1 when they differ."""
    from hloscope import reports
    from hloscope.sources import loader

    emit(
        debug,
        json,
        lambda: reports.aot_check_report(loader.load_runs(target, options, aot)),
        lambda report: ExitCode.DIFFERENT if report.verdict == "different" else ExitCode.OK,
        timeout=timeout,
        what=target,
    )


def _browse_diff(a: str, b: str, options: DiffOptions, debug: bool) -> None:
    """Run the diff screen; textual is imported here, so no other command loads it."""
    with command_edge(debug):
        from hloscope.tui.diff_app import run_diff

        code = run_diff(a, b, options, debug=debug)
    if code != ExitCode.OK:
        raise typer.Exit(code)


# --------------------------------------------------------------------------- compiles

CompilesTargetArg = Annotated[
    str,
    typer.Argument(
        metavar="SCRIPT.py [ARGS]... | TARGET",
        help="A Python script, run as `python SCRIPT.py ARGS` would run it (arguments "
        "after the script are its own; put -- before them when they clash with "
        "hloscope's options), or a function (pkg.module:function, file.py:function) "
        "called once per --args or --calls argument set.",
        show_default=False,
    ),
]
CompilesArgsOption = Annotated[
    list[str] | None,
    typer.Option(
        "--args",
        metavar="FACTORY",
        help="For a function: module:callable or file.py:callable returning one argument "
        "set (a tuple, or a pair (args_tuple, kwargs_dict)); repeat to call it once per set.",
        show_default=False,
    ),
]
CallsOption = Annotated[
    str | None,
    typer.Option(
        "--calls",
        metavar="FACTORY",
        help="For a function: module:callable or file.py:callable returning a list of "
        "argument sets; the function is called once per set.",
        show_default=False,
    ),
]
CompilesFailOnOption = Annotated[
    str | None,
    typer.Option(
        "--fail-on",
        metavar="WHAT",
        help="recompiles: exit 1 when a jitted function compiled more than once.",
        show_default=False,
    ),
]


def _compiles_exit(report: reports.CompilesReport, fail_on: str | None) -> int:
    """The program's failure first (its error: exit 2, its own exit code), then the
    check."""
    if report.error is not None:
        print_error(f"{report.target}: {report.error}")
        return ExitCode.ERROR
    if report.exit_code:
        return report.exit_code
    if fail_on == "recompiles" and report.recompiled:
        return ExitCode.DIFFERENT
    return ExitCode.OK


@app.command(
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
)
def compiles(
    ctx: typer.Context,
    target: CompilesTargetArg,
    args: CompilesArgsOption = None,
    calls: CallsOption = None,
    json: JsonOption = False,
    print_: PrintOption = False,
    fail_on: CompilesFailOnOption = None,
    debug: DebugOption = False,
    timeout: TimeoutOption = None,
) -> None:
    """Every compilation JAX performs while a script runs (or a function is called on
    several argument sets): why it compiled again, in JAX's words, and what it cost.
    Opens the browser on a terminal (unless --print or --json)."""
    argv = script_arguments(ctx, target, debug)
    if fail_on not in (None, "recompiles"):
        with command_edge(debug):
            raise HloscopeError(f"--fail-on {fail_on}: expected recompiles")

    def build() -> reports.CompilesReport:
        from hloscope import reports
        from hloscope.sources.jax.capture import record_target

        return reports.compiles_report(
            record_target(
                target,
                argv,
                arg_factories=tuple(args or ()),
                calls_factory=calls,
                stdout_to_stderr=json,
            )
        )

    if not (json or print_) and sys.stdout.isatty() and sys.stdin.isatty():
        _browse_compiles(build, fail_on, debug)
        return
    emit(
        debug,
        json,
        build,
        lambda report: _compiles_exit(report, fail_on),
        timeout=timeout,
    )


def _browse_compiles(
    build: Callable[[], reports.CompilesReport], fail_on: str | None, debug: bool
) -> None:
    """Record the run, then open the browser on its Compiles view."""
    with command_edge(debug), gc_paused():
        report = build()
        from hloscope.tui.compiles_app import run_compiles_browser

        code = run_compiles_browser(report, debug=debug)
    code = _compiles_exit(report, fail_on) or code
    if code != ExitCode.OK:
        raise typer.Exit(code)


FindOption = Annotated[
    str | None,
    typer.Option(
        "--find",
        metavar="PATTERN",
        help="Where in the pipeline PATTERN changes: an op kind (all-gather, fusion, copy), "
        "a custom-call target, attribute text (_xla_compute_type) or a source line "
        "(model.py:42).",
        show_default=False,
    ),
]
DiffPassOption = Annotated[
    str | None,
    typer.Option(
        "--diff",
        metavar="PASS",
        help="The structural diff of one pass (its index, or its name: the first run that "
        "changed the op counts): the module before it against after it.",
        show_default=False,
    ),
]


@app.command()
@option_groups
def passes(
    target: TargetArg,
    options: TargetOptionsNoCompile,
    find: FindOption = None,
    diff: DiffPassOption = None,
    json: JsonOption = False,
    print_: PrintOption = False,
    debug: DebugOption = False,
    timeout: TimeoutOption = None,
) -> None:
    """XLA's optimization pipeline pass by pass: each pass's op count and change, from
    a dump folder's per-pass files (--xla_dump_hlo_pass_re=.*), or compiling an
    entrypoint or a module before optimizations here with them. Opens the browser on
    a terminal (unless --print, --json or --diff)."""
    if not (json or print_ or diff) and sys.stdout.isatty() and sys.stdin.isatty():
        _browse_passes(target, options, find, debug)
        return
    emit(
        debug,
        json,
        lambda: _passes_report(target, options, find, diff),
        timeout=timeout,
        what=target,
    )


def _passes_report(
    target: str, options: loader.LoadOptions, find: str | None, diff: str | None
) -> reports.PassesReport:
    from hloscope import reports
    from hloscope.sources.passes import pass_dumps

    with pass_dumps(target, options) as dumped:
        return reports.passes_report(dumped, find, diff)


def _browse_passes(target: str, options: loader.LoadOptions, find: str | None, debug: bool) -> None:
    """Run the passes screen; textual is imported here, so no other command loads it."""
    with command_edge(debug):
        from hloscope.tui.passes_app import run_passes

        code = run_passes(target, options, find=find, debug=debug)
    if code != ExitCode.OK:
        raise typer.Exit(code)


def app_for(argv: Sequence[str] | None) -> typer.Typer:
    """The app, with only the command `argv` starts with when it names one: typer
    builds click's parameters for every command it holds before parsing, a cost each
    command would pay for all the others. Anything else (the top-level help and options,
    an unknown command, shell completion) gets the whole app."""
    args = sys.argv[1:] if argv is None else argv
    if not args:
        return app
    named = [info for info in app.registered_commands if _command_name(info) == args[0]]
    if not named:
        return app
    only = copy.copy(app)
    only.registered_commands = named
    return only


def _command_name(info: typer.models.CommandInfo) -> str | None:
    # As typer names a command: its given name, or its function's.
    if info.name:
        return info.name
    if info.callback is None:
        return None
    return typer.main.get_command_name(info.callback.__name__)


def main(argv: list[str] | None = None) -> None:
    """Entry point of the `hloscope` console script."""
    from hloscope.native_stderr import quiet_jax_import

    quiet_jax_import()
    try:
        # Without standalone mode, typer returns the code of a `typer.Exit` raised by a
        # command (a check's exit 1) instead of raising it, and leaves usage errors to
        # us: one line on stderr rather than click's usage block.
        returned = app_for(argv)(args=argv, prog_name="hloscope", standalone_mode=False)
        sys.stdout.flush()
    except BrokenPipeError:
        reader_gone()
    except typer.Exit as exc:
        raise SystemExit(exc.exit_code) from None
    except typer.Abort:
        print_error("interrupted")
        raise SystemExit(ExitCode.INTERRUPTED) from None
    except typer.TyperException as exc:
        if type(exc).__name__ == "NoArgsIsHelpError":
            # `hloscope` alone: the help is what the user asked for.
            sys.stdout.write(exc.format_message() + "\n")
            raise SystemExit(ExitCode.OK) from None
        # The help of the command the mistake is in: `hloscope diff --help`.
        context = getattr(exc, "ctx", None)
        where = context.command_path if context is not None else "hloscope"
        print_error(f"{exc.format_message()} (see {where} --help)")
        raise SystemExit(ExitCode.ERROR) from None
    raise SystemExit(returned if isinstance(returned, int) else ExitCode.OK)


@app.command()
@option_groups
def memory(
    target: TargetArg,
    options: TargetOptionsNoCompile,
    json: JsonOption = False,
    print_: PrintOption = False,
    debug: DebugOption = False,
    timeout: TimeoutOption = None,
) -> None:
    """What is live at the peak of memory, from XLA's buffer assignment, mapped to
    source lines. Compiles an entrypoint or a before-optimization dump with XLA
    dumping its buffer assignment into a temporary folder; reads an XLA dump folder's."""
    from hloscope import reports
    from hloscope.sources.memory import memory_dumps

    emit(
        debug,
        json,
        lambda: reports.memory_report(memory_dumps(target, options)),
        # Out of memory on the device --for names: a finding, as a failed check is.
        lambda report: ExitCode.DIFFERENT if report.does_not_fit else ExitCode.OK,
        timeout=timeout,
        what=target,
    )


@app.command()
@option_groups
def check(
    target: Annotated[
        str | None,
        typer.Argument(
            metavar="TARGET",
            help="An entrypoint, module file or dump folder (a compiled program), or a "
            "SCRIPT.py (the programs it compiles). None: the configured targets.",
            show_default=False,
        ),
    ] = None,
    baseline: BaselineOption = None,
    update: UpdateOption = False,
    *,
    options: TargetOptionsNoCompile,
    calls: CallsCheckOption = None,
    tolerance: ToleranceOption = None,
    runtime: Annotated[
        bool,
        typer.Option(
            "--runtime",
            help="Also run the program under JAX's profiler and check its run time "
            "(runtime.seconds_per_run), with a tolerance derived from the runs' spread.",
        ),
    ] = False,
    json: JsonOption = False,
    output: Annotated[
        Literal["text", "json", "github", "markdown"] | None,
        typer.Option(
            "--format",
            help="text, json (as --json), github (::error annotations at the lines, the "
            "table of changes in $GITHUB_STEP_SUMMARY), markdown (the table, for a PR).",
            show_default=False,
        ),
    ] = None,
    print_: PrintedAnywayOption = False,
    debug: DebugOption = False,
    timeout: TimeoutOption = None,
) -> None:
    """A regression guard: the compiled program's facts (ops, fusions, collectives,
    copies, parameters and donation, XLA's memory and cost, compile time) against a
    stored baseline. Exit 0: nothing regressed; 1: a regression; 2: bad input or no
    baseline (record one with --update)."""
    from pathlib import Path

    from hloscope.check_run import check_configured, check_one

    render = None
    if output in ("github", "markdown"):
        from hloscope.render.ci import PRINTERS

        render = PRINTERS[output]

    def build() -> CheckReport:
        if json and output not in (None, "json"):
            raise HloscopeError(f"--json and --format {output} disagree: give one of them")
        tolerances = tolerance_specs(tolerance or ())
        if target is None:
            if (
                baseline is not None
                or options.args
                or options.args_factory
                or options.module
                or options.compile_for
                or calls
                or tolerance
            ):
                raise HloscopeError(
                    "--baseline, --arg, --args, --module, --for, --calls and --tolerance go "
                    "with a TARGET; without one, the configured targets are checked"
                )
            return check_configured(update, runtime=runtime)
        if baseline is None:
            raise HloscopeError(
                "which baseline? give --baseline FILE (see hloscope check --help)", where=target
            )
        return check_one(
            target,
            Path(baseline),
            options=options,
            calls=calls,
            tolerances=tolerances,
            update=update,
            runtime=runtime,
        )

    emit(
        debug,
        json or output == "json",
        build,
        lambda report: ExitCode.OK if report.passed else ExitCode.DIFFERENT,
        timeout=timeout,
        what=target or "the configured targets",
        render=render,
    )


@app.command(
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
)
@option_groups
def profile(
    ctx: typer.Context,
    target: ProfileTargetArg,
    options: ArgumentOptions,
    runs: RunsOption = None,
    warmup: WarmupOption = 1,
    trace_dir: TraceDirOption = None,
    model_flops: ModelFlopsOption = None,
    json: JsonOption = False,
    print_: PrintedAnywayOption = False,
    debug: DebugOption = False,
    timeout: TimeoutOption = None,
) -> None:
    """Where the run time goes: the compiled program run under JAX's profiler, its time
    per XLA instruction and per line of your code. For a script: per jitted function,
    its calls, compilations and time per call, and the ops run outside any jit. With
    --for: an estimate of a step on that TPU or GPU, without the device, from the
    compiler's cost model and published figures (never a measurement)."""
    argv = script_arguments(ctx, target, debug)

    def build() -> reports.ProfileReport | reports.ScriptProfileReport | reports.EstimateReport:
        from hloscope import reports
        from hloscope.sources.profile import check_estimate_options, profile_target

        check_estimate_options(target, argv, runs, trace_dir, options.compile_for, model_flops)
        if options.compile_for is not None:  # an estimate: nothing runs
            from hloscope.reports.estimate import estimate_target

            return estimate_target(target, options, model_flops)
        profiled = profile_target(
            target, argv, options, runs=runs, warmup=warmup, trace_dir=trace_dir, quiet=json
        )
        return reports.profiled_report(profiled)

    emit(debug, json, build, _profile_exit, timeout=timeout, what=target)


def _profile_exit(
    report: reports.ProfileReport | reports.ScriptProfileReport | reports.EstimateReport,
) -> int:
    """A script's failure (its error: exit 2, its own exit code) after its report."""
    from hloscope import reports

    if isinstance(report, reports.ScriptProfileReport):
        if report.error is not None:
            print_error(f"{report.target}: {report.error}")
            return ExitCode.ERROR
        return report.exit_code
    return ExitCode.OK


@app.command()
@option_groups
def remat(
    target: TargetArg,
    options: TargetOptions,
    json: JsonOption = False,
    print_: PrintedAnywayOption = False,
    strict: StrictOption = False,
    debug: DebugOption = False,
    timeout: TimeoutOption = None,
) -> None:
    """What the backward pass keeps from the forward: every residual of the loss (or
    of jit(grad(loss))), saved, offloaded or recomputed by its jax.checkpoint policies,
    by your line and checkpoint name; with --compile, its share of the memory peak."""
    from hloscope import reports
    from hloscope.sources.remat import remat_source

    emit(
        debug,
        json,
        lambda: reports.remat_report(remat_source(target, options)),
        lambda report: ExitCode.DIFFERENT if strict and report.has_unmatched else ExitCode.OK,
        timeout=timeout,
        what=target,
    )


@app.command()
def platforms(json: JsonOption = False, debug: DebugOption = False) -> None:
    """What --for compiles for: TPU generations (with an example topology) and GPU
    specs, each device's memory, and whether its compiler is installed."""
    from hloscope.compile_for import platform_rows
    from hloscope.render.platforms import platforms_json, platforms_text

    with command_edge(debug):
        rows = platform_rows()
        sys.stdout.write(platforms_json(rows) if json else platforms_text(rows))


@app.command()
def schema(
    command: Annotated[
        str | None,
        typer.Argument(metavar="COMMAND", help="A command that takes --json.", show_default=False),
    ] = None,
    debug: DebugOption = False,
) -> None:
    """Print the JSON Schema of COMMAND's --json document; with no COMMAND, list them."""
    from hloscope.render.schema import schema_text

    with command_edge(debug):
        sys.stdout.write(schema_text(command))


@app.command()
def cache(
    clear: Annotated[bool, typer.Option("--clear", help="Remove every entry.")] = False,
    debug: DebugOption = False,
) -> None:
    """Where hloscope keeps the compiles its views read (one compile serves every view of a
    program and target) and how much it holds; --clear empties it."""
    from hloscope.sources import compile_cache

    with command_edge(debug):
        sys.stdout.write(compile_cache.clear_text() if clear else compile_cache.describe().text())


app.command()(compare)  # its body: cli_compare.py, as check's is check_run.py

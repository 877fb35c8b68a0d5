"""`hloscope compare`: the command layer of a comparison (cli.py registers it; its body
lives here, as `check`'s procedure lives in check_run.py). Options in, the
configurations run by `sources.compare_run`, the table or JSON out; no analysis here.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Annotated, Literal

import typer

from hloscope.cli_options import (
    DebugOption,
    JsonOption,
    PrintOption,
    ToleranceOption,
    UpdateOption,
    option_groups,
    print_report,
    target_group,
)
from hloscope.errors import ExitCode, HloscopeError, command_edge, print_error

if TYPE_CHECKING:
    from hloscope.reports.compare import CompareConfig, CompareRow, Comparison
    from hloscope.sources.compare_run import CompareOptions
    from hloscope.sources.loader import LoadOptions

CompareTargets = Annotated[
    list[str],
    typer.Argument(
        metavar="TARGET...",
        help="One or more entrypoints (pkg.module:function or path/to/file.py:function).",
        show_default=False,
    ),
]
CompareForOption = Annotated[
    list[str],
    typer.Option(
        "--for",
        "--compile-for",
        metavar="SPEC",
        help="A TPU topology or GPU spec to compile each configuration for (tpu:v5e:4x4, "
        "gpu:h100x8); repeat for several.",
        show_default=False,
    ),
]
VaryOption = Annotated[
    list[str] | None,
    typer.Option(
        "--vary",
        metavar="NAME=V1,V2",
        help="An environment variable the program reads when imported, and its values; "
        "repeat for several: one row per combination.",
        show_default=False,
    ),
]
EnvOption = Annotated[
    list[str] | None,
    typer.Option(
        "--env",
        metavar="NAME=VALUE",
        help="An environment variable every configuration is loaded with (a value may "
        "hold commas); repeat for several.",
        show_default=False,
    ),
]
CompareArgumentOptions = Annotated["LoadOptions", target_group("arg", "args", "no_cache")]


@option_groups
def compare(
    targets: CompareTargets,
    compile_for: CompareForOption,
    vary: VaryOption = None,
    env: EnvOption = None,
    *,
    options: CompareArgumentOptions,
    tokens_per_step: Annotated[
        int | None,
        typer.Option(
            "--tokens-per-step",
            metavar="N",
            min=1,
            help="Tokens a step trains on, all devices together (default: the program's "
            "TOKENS_PER_STEP), for tokens per second per device.",
            show_default=False,
        ),
    ] = None,
    sort: Annotated[
        Literal["time", "memory", "name"],
        typer.Option("--sort", help="time (fastest first), memory (smallest peak) or name."),
    ] = "time",
    jobs: Annotated[
        int | None,
        typer.Option(
            "--jobs",
            "-j",
            metavar="N",
            min=1,
            help="Configurations compiled at once, each in a process of its own "
            "(default: the cores).",
            show_default=False,
        ),
    ] = None,
    json: JsonOption = False,
    output: Annotated[
        Literal["text", "json", "markdown", "github"] | None,
        typer.Option(
            "--format",
            help="text, json (as --json) or markdown (the table); with --baseline, github "
            "too (the check's annotations).",
            show_default=False,
        ),
    ] = None,
    print_: PrintOption = False,
    debug: DebugOption = False,
    timeout: Annotated[
        float | None,
        typer.Option(
            "--timeout",
            metavar="SECONDS",
            help="Give up on a configuration after SECONDS (its row says so). No limit by default.",
            show_default=False,
        ),
    ] = None,
    baseline: Annotated[
        str | None,
        typer.Option(
            "--baseline",
            metavar="FILE",
            help="Check the rows against this baseline file (as hloscope check does: exit 1 "
            "when a configuration stops fitting or compiling, or gets slower or bigger); "
            "--update records it.",
            show_default=False,
        ),
    ] = None,
    update: UpdateOption = False,
    tolerance: ToleranceOption = None,
    diff: Annotated[
        tuple[str, str] | None,
        typer.Option(
            "--diff",
            metavar="ROW ROW",
            help="Then diff two rows' programs (hloscope diff, each side's --for and "
            "environment): its position in the table (from 1), or its configuration's label.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Configurations of one step side by side on the target: the product of the
    targets, the --for specs and the --vary values, each loaded and compiled in a child
    process of its own. Each row: fits, peak HBM, the estimated step (as profile --for),
    MFU, communication, compile time; the fastest that fits marked. Opens the browser on
    a terminal (unless --print, --json or --format). Exit 0 while one configuration
    compiles; 2 when none does."""
    from hloscope.ir.xla_flags import xla_flags_checked

    code: int | None = None
    with command_edge(debug):
        if json and output not in (None, "json"):
            raise HloscopeError(f"--json and --format {output} disagree: give one of them")
        as_json = json or output == "json"
        if baseline is None and (update or tolerance or output == "github"):
            raise HloscopeError("--update, --tolerance and --format github go with --baseline")
        xla_flags_checked()
        plan = _plan(
            targets, compile_for, (vary or (), env or ()), options, tokens_per_step, timeout
        )
        workers = jobs or os.cpu_count() or 1
        browse = not (as_json or print_ or output or diff or baseline) and sys.stdout.isatty()
        if browse and sys.stdin.isatty():
            from hloscope.tui.compare_app import run_compare_browser

            _, code = run_compare_browser(
                plan.configs, _runner(plan, workers, sort), sort, plan.options, debug=debug
            )
        else:
            report = _runner(plan, workers, sort, progress=True)(None, None)
            if baseline is not None:
                code = _check(report, baseline, update, tolerance, as_json, output)
            elif diff is not None:
                code = _diff_rows(report, diff, plan.options, as_json, print_)
            else:
                _print(report, as_json, output == "markdown")
                if not report.any_succeeded:
                    print_error(f"compare: none of the {len(report.rows)} configurations compiled")
                    code = ExitCode.ERROR
    if code:
        raise typer.Exit(code)


@dataclasses.dataclass(frozen=True)
class _Plan:
    configs: tuple[CompareConfig, ...]
    options: CompareOptions


def _plan(
    targets: list[str],
    specs: list[str],
    environment: tuple[Sequence[str], Sequence[str]],
    options: LoadOptions,
    tokens_per_step: int | None,
    timeout: float | None,
) -> _Plan:
    """The configurations and what each is loaded with, checked before any child runs."""
    from hloscope.sources import compile_cache
    from hloscope.sources.compare_run import CompareOptions, configurations

    vary, env = environment
    return _Plan(
        configurations(targets, specs, vary, env),
        CompareOptions(
            args=options.args,
            args_factory=options.args_factory,
            tokens_per_step=tokens_per_step,
            timeout_seconds=timeout,
            no_cache=not compile_cache.enabled(),
        ),
    )


def _runner(
    plan: _Plan, jobs: int, sort: Literal["time", "memory", "name"], progress: bool = False
) -> Callable[[Callable[[CompareRow, int, int], None] | None, threading.Event | None], Comparison]:
    """Runs the plan's configurations, `jobs` at a time, calling back as each finishes
    (with `progress`, a line on stderr too)."""
    from hloscope.render.text.compare import progress_line
    from hloscope.sources.compare_run import run_comparison

    def run(
        on_row: Callable[[CompareRow, int, int], None] | None, stop: threading.Event | None
    ) -> Comparison:
        def each(row: CompareRow, done: int, total: int) -> None:
            if progress:
                sys.stderr.write(progress_line(row, done, total) + "\n")
                sys.stderr.flush()
            if on_row is not None:
                on_row(row, done, total)

        return run_comparison(plan.configs, plan.options, jobs, each, sort, stop)

    return run


def _check(
    report: Comparison,
    baseline: str,
    update: bool,
    tolerance: list[str] | None,
    as_json: bool,
    output: str | None,
) -> int:
    """`--baseline FILE`: the rows' facts against the baseline (recorded with `update`),
    printed as `hloscope check` prints its report; 1 when one regressed."""
    from pathlib import Path

    from hloscope.check_run import check_comparison
    from hloscope.cli_options import tolerance_specs

    checked = check_comparison(
        report, Path(baseline), tolerances=tolerance_specs(tolerance or ()), update=update
    )
    render = None
    if output in ("github", "markdown"):
        from hloscope.render.ci import PRINTERS

        render = PRINTERS[output]
    print_report(checked, as_json, render)
    return ExitCode.OK if checked.passed else ExitCode.DIFFERENT


def _diff_rows(
    report: Comparison, rows: tuple[str, str], options: CompareOptions, as_json: bool, print_: bool
) -> int:
    """`--diff ROW ROW`: `hloscope diff` of two rows' programs, its output and exit code
    (the diff screen on a terminal)."""
    import subprocess

    from hloscope.sources.compare_run import diff_command

    a, b = (_row_named(report, name) for name in rows)
    command, env = diff_command(a.config, b.config, options)
    command += ["--json"] if as_json else (["--print"] if print_ else [])
    sys.stdout.flush()
    return subprocess.run(command, env=env, check=False).returncode


def _row_named(report: Comparison, name: str) -> CompareRow:
    """A row by its number in the table (from 1) or its configuration's label."""
    rows = report.rows
    if name.isdigit() and 1 <= int(name) <= len(rows):
        row = rows[int(name) - 1]
    else:
        found = [r for r in rows if r.config.label == name]
        if not found:
            raise HloscopeError(
                f"--diff {name}: no such row (a number from 1 to {len(rows)}, or a label: "
                + "; ".join(r.config.label for r in rows)
                + ")"
            )
        row = found[0]
    if not row.succeeded:
        raise HloscopeError(f"--diff {name}: {row.config.label} failed: {row.error}")
    return row


def _print(report: Comparison, as_json: bool, markdown: bool) -> None:
    render = None
    if markdown:
        from hloscope.render.text.compare import compare_markdown

        def render(report: Comparison) -> None:
            sys.stdout.write(compare_markdown(report))

    print_report(report, as_json, render)

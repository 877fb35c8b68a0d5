"""`hloscope compare`: the command layer of a comparison (cli.py registers it; its body
lives here, as `check`'s procedure lives in check_run.py). Options in, the
configurations run by `sources.compare_run`, the table or JSON out; no analysis here.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated, Literal

import typer

from hloscope.cli_options import (
    DebugOption,
    JsonOption,
    PrintedAnywayOption,
    option_groups,
    target_group,
)
from hloscope.errors import ExitCode, HloscopeError, command_edge, print_error

if TYPE_CHECKING:
    from hloscope.reports.compare import CompareRow, Comparison
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
        Literal["text", "json", "markdown"] | None,
        typer.Option(
            "--format", help="text, json (as --json) or markdown (the table).", show_default=False
        ),
    ] = None,
    print_: PrintedAnywayOption = False,
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
) -> None:
    """Configurations of one step side by side on the target: the product of the
    targets, the --for specs and the --vary values, each loaded and compiled in a child
    process of its own. Each row: fits, peak HBM, the estimated step (as profile --for),
    MFU, communication, compile time; the fastest that fits marked. Exit 0 while one
    configuration compiles; 2 when none does."""
    from hloscope.ir.xla_flags import xla_flags_checked

    with command_edge(debug):
        if json and output not in (None, "json"):
            raise HloscopeError(f"--json and --format {output} disagree: give one of them")
        as_json = json or output == "json"
        xla_flags_checked()
        environment = (vary or (), env or ())
        report = _run(
            targets, compile_for, environment, options, tokens_per_step, sort, jobs, timeout
        )
        _print(report, as_json, output == "markdown")
    if not report.any_succeeded:
        print_error(f"compare: none of the {len(report.rows)} configurations compiled")
        raise typer.Exit(ExitCode.ERROR)


def _run(
    targets: list[str],
    specs: list[str],
    environment: tuple[Sequence[str], Sequence[str]],
    options: LoadOptions,
    tokens_per_step: int | None,
    sort: Literal["time", "memory", "name"],
    jobs: int | None,
    timeout: float | None,
) -> Comparison:
    from hloscope.render.text.compare import progress_line
    from hloscope.sources import compile_cache
    from hloscope.sources.compare_run import CompareOptions, configurations, run_comparison

    vary, env = environment
    configs = configurations(targets, specs, vary, env)
    compare_options = CompareOptions(
        args=options.args,
        args_factory=options.args_factory,
        tokens_per_step=tokens_per_step,
        timeout_seconds=timeout,
        no_cache=not compile_cache.enabled(),
    )

    def on_row(row: CompareRow, done: int, total: int) -> None:
        sys.stderr.write(progress_line(row, done, total) + "\n")
        sys.stderr.flush()

    return run_comparison(configs, compare_options, jobs or os.cpu_count() or 1, on_row, sort)


def _print(report: Comparison, as_json: bool, markdown: bool) -> None:
    if as_json:
        from hloscope.environment import environment_json
        from hloscope.render import json as json_render
        from hloscope.render.compare_json import compare_json

        document = {**compare_json(report), "environment": environment_json()}
        sys.stdout.write(json_render.dumps(document) + "\n")
    elif markdown:
        from hloscope.render.text.compare import compare_markdown

        sys.stdout.write(compare_markdown(report))
    else:
        from hloscope.render.text.common import make_console
        from hloscope.render.text.compare import render_compare

        render_compare(report, make_console())

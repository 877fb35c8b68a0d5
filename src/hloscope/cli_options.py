"""The command line's shared options, declared once.

Each option several commands take is one typer `Annotated` alias here. The target
options (`--arg`, `--args`, `--module`, `--compile`) also form a group: a command
takes them as one `loader.LoadOptions` parameter annotated with `TargetOptions` (or
a narrower group), and `option_groups` shows typer the group's options in that
parameter's place, in the group's order and with the aliases' help, then calls the
command with the `LoadOptions` made from their values. typer reads a command's
parameters from `inspect.signature`, which honours a function's `__signature__`;
nothing of typer's own is touched.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, get_args, get_origin

import typer

from hloscope.errors import HloscopeError, command_edge

if TYPE_CHECKING:
    from hloscope.sources.diff_sides import DiffOptions
    from hloscope.sources.loader import LoadOptions

TargetArg = Annotated[
    str,
    typer.Argument(
        metavar="TARGET",
        help="A module file or dump folder, or an entrypoint: pkg.module:function or "
        "path/to/file.py:function.",
        show_default=False,
    ),
]
ArgOption = Annotated[
    list[str] | None,
    typer.Option(
        "--arg",
        metavar="SHAPE",
        help="Example positional argument as an HLO shape (f32[8,128], bf16[2,3], i32[], "
        "pred[4]); repeat once per argument.",
        show_default=False,
    ),
]
ArgsOption = Annotated[
    str | None,
    typer.Option(
        "--args",
        metavar="FACTORY",
        help="module:callable or file.py:callable returning the example arguments: a tuple, "
        "or a pair (args_tuple, kwargs_dict), of arrays or jax.ShapeDtypeStructs.",
        show_default=False,
    ),
]
ModuleOption = Annotated[
    str | None,
    typer.Option(
        "--module",
        metavar="NAME",
        help="Which module of a dump folder (its name, number or file stem).",
        show_default=False,
    ),
]
CompileOption = Annotated[
    bool,
    typer.Option(
        "--compile",
        help="Read the optimized module: compile an entrypoint or a before-optimization dump "
        "for the local backend, or pick a dump folder's after-optimization file.",
    ),
]
ForOption = Annotated[
    str | None,
    typer.Option(
        "--for",
        "--compile-for",
        metavar="SPEC",
        help="Compile for a TPU topology or a GPU spec on this machine, without the device "
        "(implies --compile): tpu:GEN:TOPOLOGY[,slices=N] (tpu:v5e:2x4, tpu:v4:2x2x1), "
        "gpu:NAME[xN] (gpu:h100, gpu:h100x8, gpu:a100, gpu:l4), gpu:PATH.txtpb; cpu: the "
        "local backend, as without --for. hloscope platforms lists them.",
        show_default=False,
    ),
]
NoCacheOption = Annotated[
    bool,
    typer.Option(
        "--no-cache",
        help="Compile again instead of reading (or keeping) the compile in hloscope's "
        "compile cache (HLOSCOPE_NO_CACHE=1 does the same; hloscope cache shows it).",
    ),
]
JsonOption = Annotated[
    bool, typer.Option("--json", help="Print one JSON object (the scripting contract).")
]
PrintOption = Annotated[bool, typer.Option("--print", help="Print the report even on a terminal.")]
# Commands that always print take --print too, so one command line works across commands.
PrintedAnywayOption = Annotated[
    bool, typer.Option("--print", help="Print the report (what this command always does).")
]
DebugOption = Annotated[bool, typer.Option("--debug", help="Show the traceback of a failure.")]
TimeoutOption = Annotated[
    float | None,
    typer.Option(
        "--timeout",
        metavar="SECONDS",
        help="Give up after SECONDS (exit 2): importing, tracing, lowering, compiling or "
        "running the target's code, reading and analysing the module. No limit by default.",
        show_default=False,
    ),
]

# `profile`'s own options.
ProfileTargetArg = Annotated[
    str,
    typer.Argument(
        metavar="TARGET | SCRIPT.py [ARGS]...",
        help="An entrypoint (pkg.module:function, file.py:function) with its example "
        "arguments; a module before optimizations (run on seeded random inputs, in a "
        "child process); or a Python script, run as `python SCRIPT.py ARGS` would run "
        "it (put -- before its arguments when they clash with hloscope's options).",
        show_default=False,
    ),
]
RunsOption = Annotated[
    int | None,
    typer.Option(
        "--runs",
        metavar="N",
        help="Measured runs (default: as many as fit in about 2 seconds, 3 to 100).",
        show_default=False,
    ),
]
WarmupOption = Annotated[
    int,
    typer.Option("--warmup", metavar="N", help="Runs before the measured ones, not traced."),
]
TraceDirOption = Annotated[
    str | None,
    typer.Option(
        "--trace-dir",
        metavar="DIR",
        help="Keep JAX's profiler trace in DIR (for XProf or Perfetto); a temporary "
        "folder otherwise.",
        show_default=False,
    ),
]
ModelFlopsOption = Annotated[
    float | None,
    typer.Option(
        "--model-flops",
        metavar="N",
        help="With --for: the model's flops for one step, all devices together, without "
        "recomputation (6 x parameters x tokens for a transformer's training step, "
        "1.2e15): the estimate's MFU. Without it MFU is known only for a step with no "
        "jax.checkpoint region; HFU (the flops executed) always is.",
        show_default=False,
    ),
]

# `remat`'s own option.
StrictOption = Annotated[
    bool,
    typer.Option(
        "--strict",
        help="Exit 1 when a checkpoint policy names a checkpoint_name the program never gives.",
    ),
]

# `check`'s own options.
BaselineOption = Annotated[
    str | None,
    typer.Option(
        "--baseline",
        metavar="FILE",
        help="The baseline file of TARGET (a JSON file meant to be committed). Without "
        "TARGET, the targets of [tool.hloscope.check] in pyproject.toml are checked, "
        "their baselines in its folder (hloscope-baselines/ by default).",
        show_default=False,
    ),
]
UpdateOption = Annotated[
    bool,
    typer.Option("--update", help="Record the baseline (again) instead of comparing with it."),
]
ToleranceOption = Annotated[
    list[str] | None,
    typer.Option(
        "--tolerance",
        metavar="FACT=TOL",
        help="How far a fact may move: memory.*=5%, compile.seconds=2s, "
        "memory.temp_bytes=1 MiB (repeatable; structural facts are exact by default).",
        show_default=False,
    ),
]
CallsCheckOption = Annotated[
    str | None,
    typer.Option(
        "--calls",
        metavar="FACTORY",
        help="A factory returning several argument sets: check the programs compiled "
        "while the function is called on each (programs.count).",
        show_default=False,
    ),
]


@dataclass(frozen=True)
class OptionGroup:
    """Options that several commands take together, and what a command receives for
    them: `make` called with their values by name."""

    parameters: tuple[inspect.Parameter, ...]
    make: Callable[..., Any]


def _load_options(
    arg: list[str] | None = None,
    args: str | None = None,
    module: str | None = None,
    compile: bool = False,
    compile_for: str | None = None,
    no_cache: bool = False,
) -> LoadOptions:
    from hloscope.compile_for import parse_compile_for
    from hloscope.errors import HloscopeError
    from hloscope.sources import compile_cache
    from hloscope.sources.loader import LoadOptions

    # Set by every command that loads a target, so that it does not outlive one.
    compile_cache.turn_off(no_cache)
    try:
        target = parse_compile_for(compile_for)
    except HloscopeError as exc:
        # A usage error, as typer's own: one line naming the command's --help.
        raise typer.BadParameter(str(exc)) from None
    return LoadOptions(
        args=tuple(arg or ()),
        args_factory=args,
        module=module,
        optimized=compile,
        compile_for=target,
    )


# Each target option once: its name in a command's signature, its alias, its default.
_TARGET_OPTIONS: dict[str, tuple[Any, Any]] = {
    "arg": (ArgOption, None),
    "args": (ArgsOption, None),
    "module": (ModuleOption, None),
    "compile": (CompileOption, False),
    "compile_for": (ForOption, None),
    "no_cache": (NoCacheOption, False),
}


def target_group(*names: str) -> OptionGroup:
    """The target options NAMES (in that order), made into a `LoadOptions`."""
    return OptionGroup(
        tuple(
            inspect.Parameter(
                name,
                inspect.Parameter.KEYWORD_ONLY,
                annotation=_TARGET_OPTIONS[name][0],
                default=_TARGET_OPTIONS[name][1],
            )
            for name in names
        ),
        _load_options,
    )


# (A command's LoadOptions is made when it runs: loading the loader waits until then.)
TargetOptions = Annotated[
    "LoadOptions", target_group("arg", "args", "module", "compile", "compile_for", "no_cache")
]
"""--arg, --args, --module, --compile (the optimized module), --for and --no-cache."""
TargetOptionsNoCompile = Annotated[
    "LoadOptions", target_group("arg", "args", "module", "compile_for", "no_cache")
]
"""--arg, --args, --module, --for and --no-cache: commands that choose the module's
stage themselves."""
ArgumentOptions = Annotated["LoadOptions", target_group("arg", "args", "compile_for", "no_cache")]
"""--arg, --args, --for and --no-cache: commands that call an entrypoint and compile what
runs, which the compile cache does not keep (`profile --for` compiles through it,
`aot-check` refuses --for); --no-cache on every command that compiles."""


# `diff`'s options of one side: a side's own replaces what is given for both.
def _side_option(name: str, side: str, metavar: str, what: str, many: bool = False) -> Any:
    option = typer.Option(
        f"{name}-{side}",
        metavar=metavar,
        help=f"{what} of {side.upper()} alone{' (repeatable)' if many else ''}.",
        show_default=False,
    )
    if many:
        return Annotated[list[str] | None, option]
    return Annotated[str | None, option]


EnvOption = Annotated[
    list[str] | None,
    typer.Option(
        "--env",
        metavar="NAME=VALUE",
        help="An environment variable set while each side's program is imported (afresh), "
        "its arguments built, lowered and compiled (repeatable; --env-a/--env-b for one "
        "side).",
        show_default=False,
    ),
]
_DIFF_SIDE_OPTIONS: dict[str, Any] = {
    f"{option}_{side}": _side_option(f"--{option}", side, metavar, what, many)
    for side in ("a", "b")
    for option, metavar, what, many in (
        ("arg", "SHAPE", "--arg", True),
        ("args", "FACTORY", "--args", False),
        ("for", "SPEC", "--for", False),
        ("env", "NAME=VALUE", "--env", True),
    )
}


def _env(given: Sequence[str], option: str) -> tuple[tuple[str, str], ...]:
    if not given:
        return ()
    from hloscope.sources.entrypoint import parse_env

    try:
        return tuple(parse_env(given, option).items())
    except HloscopeError as exc:
        raise typer.BadParameter(str(exc)) from None


def _diff_options(**values: Any) -> DiffOptions:
    import dataclasses

    from hloscope.sources.diff_sides import DiffOptions

    both = _load_options(**{name: values[name] for name in _TARGET_OPTIONS})
    env = dict(_env(values["env"] or (), "--env"))
    sides = []
    for side in ("a", "b"):
        own = _load_options(
            arg=values[f"arg_{side}"],
            args=values[f"args_{side}"],
            compile_for=values[f"for_{side}"],
            no_cache=values["no_cache"],
        )
        side_env = env | dict(_env(values[f"env_{side}"] or (), f"--env-{side}"))
        given = values[f"arg_{side}"] or values[f"args_{side}"]
        options = dataclasses.replace(
            both,
            args=own.args if given else both.args,
            args_factory=own.args_factory if given else both.args_factory,
            compile_for=own.compile_for or both.compile_for,
            env=tuple(side_env.items()) if side_env else None,
        )
        # --for reads the program compiled for that platform: it implies --compile.
        if options.compile_for is not None:
            options = dataclasses.replace(options, optimized=True)
        sides.append(options)
    return DiffOptions(sides[0], sides[1])


DiffTargetOptions = Annotated[
    "DiffOptions",
    OptionGroup(
        (
            *target_group("arg", "args", "module", "compile", "compile_for", "no_cache").parameters,
            inspect.Parameter(
                "env", inspect.Parameter.KEYWORD_ONLY, annotation=EnvOption, default=None
            ),
            *(
                inspect.Parameter(
                    name, inspect.Parameter.KEYWORD_ONLY, annotation=alias, default=None
                )
                for name, alias in _DIFF_SIDE_OPTIONS.items()
            ),
        ),
        _diff_options,
    ),
]
"""The target options of `diff`, for both sides (--arg, --args, --module, --compile,
--for, --no-cache, --env) and for one (--arg-a, --args-b, --for-a, --env-b, ...)."""


def _group_of(annotation: Any) -> OptionGroup | None:
    if get_origin(annotation) is not Annotated:
        return None
    return next((m for m in get_args(annotation)[1:] if isinstance(m, OptionGroup)), None)


def option_groups(command: Callable[..., None]) -> Callable[..., None]:
    """COMMAND with each parameter annotated with an option group replaced, for typer,
    by the group's options; COMMAND is called with what the group makes of them."""
    signature = inspect.signature(command, eval_str=True)
    groups: dict[str, OptionGroup] = {}
    shown: list[inspect.Parameter] = []
    for parameter in signature.parameters.values():
        group = _group_of(parameter.annotation)
        if group is None:
            shown.append(parameter.replace(kind=inspect.Parameter.KEYWORD_ONLY))
        else:
            groups[parameter.name] = group
            shown.extend(group.parameters)
    names = [p.name for p in shown]
    clashes = sorted({n for n in names if names.count(n) > 1})
    if clashes:
        raise TypeError(f"{command.__name__}: option names declared twice: {clashes}")

    @functools.wraps(command)
    def with_groups(**values: Any) -> None:
        for name, group in groups.items():
            values[name] = group.make(**{p.name: values.pop(p.name) for p in group.parameters})
        command(**values)

    with_groups.__signature__ = signature.replace(parameters=shown)  # type: ignore[attr-defined]
    with_groups.__annotations__ = {p.name: p.annotation for p in shown}
    return with_groups


def tolerance_specs(given: Sequence[str]) -> dict[str, str] | None:
    """`check --tolerance FACT=TOLERANCE`, repeated, as a mapping; None for none."""
    specs: dict[str, str] = {}
    for text in given:
        pattern, sep, value = text.partition("=")
        if not sep or not pattern.strip() or not value.strip():
            raise HloscopeError(f"--tolerance {text}: expected FACT=TOLERANCE (memory.*=5%)")
        specs[pattern.strip()] = value.strip()
    return specs or None


def script_arguments(ctx: typer.Context, target: str, debug: bool) -> list[str]:
    """What follows a script's name: its own arguments (`compiles`, `profile`). After a
    function (`file.py:step`) they are no one's, so an option there is one the command
    does not have, refused in click's words as every command refuses one."""
    from hloscope.sources.target import is_script

    argv = list(ctx.args)
    if argv[:1] == ["--"]:
        argv = argv[1:]
    unknown = next((word for word in argv if word.startswith("-") and word != "-"), None)
    if unknown is not None and not is_script(target):
        with command_edge(debug):
            raise HloscopeError(f"{no_such_option(ctx, unknown)} (see {ctx.command_path} --help)")
    return argv


def no_such_option(ctx: typer.Context, word: str) -> str:
    """Click's message for an option the command does not have, with its suggestion
    (the command's options close to it, found as click finds them)."""
    import difflib

    name = word.split("=", 1)[0]
    options = [o for p in ctx.command.params for o in (*p.opts, *p.secondary_opts) if o[:1] == "-"]
    close = difflib.get_close_matches(name, options)
    possible = f" (Possible options: {', '.join(sorted(close))})" if close else ""
    return f"No such option: {name}{possible}"


def print_report(report: Any, as_json: bool, render: Callable[[Any], None] | None = None) -> None:
    """Print a report with its registry entry's renderers (or with `render`): one JSON
    document on stdout, with the environment, or the text report."""
    import sys

    from hloscope import reports

    entry = reports.entry_of(report)
    if render is not None:
        render(report)
    elif as_json:
        from hloscope.environment import environment_json
        from hloscope.render import json as json_render

        document = {**entry.json_renderer()(report), "environment": environment_json()}
        sys.stdout.write(json_render.dumps(document) + "\n")
    else:
        from hloscope.render.text.common import make_console

        entry.text_renderer()(report, make_console())

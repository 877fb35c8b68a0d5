"""`compare`'s configurations, each loaded and compiled in a child process of its own.

A configuration's environment variables are read by the program when it is imported,
and `--for` gives the process as many host devices as the platform has before the
target is imported: neither can change in a process that imported it once, so each
configuration gets a fresh child (`sources.compare_child`), `jobs` at a time. The
child answers with its row as JSON; this process never imports JAX, and keeps only
the rows (its memory does not grow with the configurations' programs). A child that
raises, dies or runs past the time limit is a row with its one-line reason.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import os
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import Any

from hloscope.child_process import ChildProcess
from hloscope.errors import HloscopeError, one_line
from hloscope.reports.compare import (
    CompareCollective,
    CompareConfig,
    CompareEstimate,
    CompareRow,
    CompareSort,
    Comparison,
    comparison,
    config_label,
    config_targets,
    failed_row,
)

CHILD_MODULE = "hloscope.sources.compare_child"
HLOSCOPE = (sys.executable, "-m", "hloscope")
STOPPED = "not run: the comparison was stopped"
STAGE_ROW = "row"
"""The child's one frame before `done`: the row, as JSON."""


@dataclasses.dataclass(frozen=True)
class CompareOptions:
    """What every configuration of a comparison is loaded with."""

    args: tuple[str, ...] = ()
    """`--arg` shape specs."""
    args_factory: str | None = None
    """`--args FACTORY`."""
    tokens_per_step: int | None = None
    """`--tokens-per-step`: tokens a step trains on, all devices together; None: the
    program's `TOKENS_PER_STEP`, where it has one."""
    timeout_seconds: float | None = None
    """How long one configuration may take (None: no limit)."""
    no_cache: bool = False
    """`--no-cache`: compile every configuration, read and keep nothing."""


def parse_vary(given: Sequence[str]) -> dict[str, tuple[str, ...]]:
    """`--vary NAME=V1,V2` options as {NAME: values}, in their order; bad syntax is a
    `HloscopeError` naming the option."""
    varied: dict[str, tuple[str, ...]] = {}
    for text in given:
        name, sep, values = text.partition("=")
        name = name.strip()
        if not sep or not (name.isascii() and name.isidentifier()):
            raise HloscopeError(
                f"--vary {text}: expected NAME=V1,V2,... (an environment variable's name, "
                "then its values, comma-separated)"
            )
        parts = tuple(v.strip() for v in values.split(","))
        if not all(parts):
            raise HloscopeError(f"--vary {text}: an empty value (values are comma-separated)")
        if name in varied:
            raise HloscopeError(f"--vary {name} given twice: give its values in one option")
        varied[name] = tuple(dict.fromkeys(parts))
    return varied


def configurations(
    targets: Sequence[str],
    specs: Sequence[str],
    vary: Sequence[str],
    env: Sequence[str] = (),
) -> tuple[CompareConfig, ...]:
    """The product of the targets, the `--for` specs and the `--vary` values (over the
    `--env` every configuration shares), each checked before anything runs: a spec of
    no known form, a `--vary` or `--env` of bad syntax or a target that names nothing
    is a `HloscopeError`. A configuration's label names what varies only."""
    from hloscope.compile_for import parse_compile_for
    from hloscope.sources.entrypoint import parse_env
    from hloscope.sources.target import parse_target

    if not targets:
        raise HloscopeError("compare: give a TARGET")
    if not specs:
        raise HloscopeError(
            "compare: give --for SPEC (a TPU topology or GPU spec; repeat it for several)"
        )
    for spec in specs:
        if parse_compile_for(spec) is None:
            raise HloscopeError(
                f"--for {spec}: compare foresees a TPU or GPU (tpu:v5e:4x4, gpu:h100x8), "
                "not the local backend"
            )
    for target in targets:
        parse_target(target)
    varied = parse_vary(vary)
    shared = parse_env(env)
    both = sorted(set(shared) & set(varied))
    if both:
        raise HloscopeError(f"{both[0]} is given with --env and with --vary: give one")
    several = len(dict.fromkeys(targets)) > 1
    names = list(varied)
    configs = []
    for target, spec, values in itertools.product(
        dict.fromkeys(targets), dict.fromkeys(specs), itertools.product(*varied.values())
    ):
        chosen = dict(zip(names, values, strict=True))
        label = config_label(chosen, spec, target if several else None)
        configs.append(CompareConfig(target, spec, {**shared, **chosen}, label))
    return tuple(configs)


def target_options(options: CompareOptions) -> list[str]:
    """The command-line options every configuration was loaded with (`--arg`, `--args`,
    `--no-cache`), for the hloscope commands that open one or two of them."""
    words = [word for spec in options.args for word in ("--arg", spec)]
    if options.args_factory is not None:
        words += ["--args", options.args_factory]
    return [*words, "--no-cache"] if options.no_cache else words


def open_command(
    config: CompareConfig, options: CompareOptions
) -> tuple[list[str], dict[str, str]]:
    """The `hloscope tui` command line and environment that browse one configuration as
    the comparison loaded it: its target `--for` its spec, its environment set, reading
    the compile cache the comparison filled."""
    words = [*HLOSCOPE, "tui", config.target, "--for", config.compile_for]
    return [*words, *target_options(options)], {**os.environ, **config.env}


def diff_command(
    a: CompareConfig, b: CompareConfig, options: CompareOptions
) -> tuple[list[str], dict[str, str]]:
    """The `hloscope diff` command line of two configurations: each side's spec and
    environment (`--for-a`, `--env-b NAME=V`)."""
    words = [*HLOSCOPE, "diff", a.target, b.target, "--for-a", a.compile_for]
    words += ["--for-b", b.compile_for]
    for side, config in (("a", a), ("b", b)):
        for name, value in config.env.items():
            words += [f"--env-{side}", f"{name}={value}"]
    return [*words, *target_options(options)], dict(os.environ)


def run_configuration(
    config: CompareConfig, options: CompareOptions, stop: threading.Event | None = None
) -> CompareRow:
    """One configuration's row, from a child process of its own: its environment set
    before it starts, the target loaded and compiled for `config.compile_for`. `stop`
    set: the child is ended (the comparison was abandoned)."""
    from hloscope.sources import compile_cache

    if stop is not None and stop.is_set():
        return failed_row(config, STOPPED)
    child = ChildProcess(CHILD_MODULE, keep_stderr=True, env=config.env)
    header = {"config": _plain(config), "options": _plain(options)}
    answered_or_died = threading.Event()
    if stop is not None:
        threading.Thread(
            target=_kill_when_stopped, args=(child, stop, answered_or_died), daemon=True
        ).start()
    try:
        reply = child.request(header, timeout=options.timeout_seconds)
    finally:
        answered_or_died.set()
        child.close()
    if stop is not None and stop.is_set():
        return failed_row(config, STOPPED)
    compile_cache.relay_note(reply.stderr)
    answered = reply.stages.get(STAGE_ROW)
    if answered is None:
        # What native code said last names a crash, not a hang.
        last = reply.last_message() if reply.timed_out is None else None
        reason = f"its child process {reply.failure()}" + (f": {last}" if last else "")
        return failed_row(config, one_line(reason))
    return row_from_plain(config, json.loads(answered[1]))


def _kill_when_stopped(child: ChildProcess, stop: threading.Event, over: threading.Event) -> None:
    while not over.is_set():
        if stop.wait(0.2):
            child.kill()
            return


def run_comparison(
    configs: Sequence[CompareConfig],
    options: CompareOptions,
    jobs: int = 1,
    on_row: Callable[[CompareRow, int, int], None] | None = None,
    sort: CompareSort = "time",
    stop: threading.Event | None = None,
) -> Comparison:
    """Every configuration's row, `jobs` children at a time; `on_row(row, done, total)`
    as each finishes (in the order they finish, one call at a time). `stop` set (the
    user quit the browser): the running children are ended, the rest not started."""
    rows: list[CompareRow] = []
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = [pool.submit(run_configuration, config, options, stop) for config in configs]
        # Rows are taken here, on this thread alone, as they finish.
        for future in as_completed(futures):
            rows.append(future.result())
            if on_row is not None:
                on_row(rows[-1], len(rows), len(configs))
    return comparison(config_targets(configs), rows, sort)


def _plain(value: Any) -> Any:
    return json.loads(json.dumps(dataclasses.asdict(value)))


def row_from_plain(config: CompareConfig, plain: Mapping[str, Any]) -> CompareRow:
    """A row as the child sent it (`dataclasses.asdict`), with the parent's config."""
    fields = {f.name for f in dataclasses.fields(CompareRow)}
    values = {k: v for k, v in plain.items() if k in fields}
    estimate = values.get("estimate")
    values["config"] = config
    values["estimate"] = CompareEstimate(**estimate) if estimate is not None else None
    values["collectives"] = tuple(CompareCollective(**c) for c in values.get("collectives", ()))
    values["notes"] = tuple(values.get("notes", ()))
    return CompareRow(**values)

"""The child process of one `compare` configuration (`python -m
hloscope.sources.compare_child`, started by `sources.compare_run`).

It starts with the configuration's environment, reads one request, loads the target
compiled for the configuration's `--for` through the compile cache, and answers with
its row, built from the reports the single views build: `memory --for`'s, `profile
--for`'s and `placement --for`'s. A failure the views would print as one line is the
row's `error`.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from typing import Any

from hloscope.child_process import STAGE_DONE, exit_with_parent, read_frame, write_frame
from hloscope.errors import DoesNotFit, HloscopeError, describe_exception, one_line
from hloscope.reports.compare import CompareConfig, CompareRow, failed_row

TOKENS_VARIABLE = "TOKENS_PER_STEP"
"""The module attribute a program names its tokens per step with (all devices)."""


def measured_row(config: CompareConfig, options: dict[str, Any]) -> CompareRow:
    """The row of one configuration, loaded and compiled in this process."""
    from hloscope.compile_for import parse_compile_for
    from hloscope.reports.common import stage_timings
    from hloscope.reports.compare import compare_row
    from hloscope.reports.estimate import estimate_report
    from hloscope.reports.memory import memory_report
    from hloscope.reports.placement import placement_report
    from hloscope.sources import compile_cache
    from hloscope.sources.loader import LoadOptions, load
    from hloscope.sources.memory import compiled_memory_dumps

    compile_cache.turn_off(bool(options.get("no_cache")))
    load_options = LoadOptions(
        args=tuple(options.get("args") or ()),
        args_factory=options.get("args_factory"),
        optimized=True,
        compile_for=parse_compile_for(config.compile_for),
    )
    before = compile_cache.compile_count()
    try:
        loaded = load(config.target, load_options)
    except DoesNotFit:
        # As `memory --for` reads it: what XLA's buffer assignment allocated before
        # refusing. No other view has a word on a program XLA refused.
        lowered = load(config.target, dataclasses.replace(load_options, optimized=False))
        memory = memory_report(compiled_memory_dumps(lowered))
        compiles = compile_cache.compile_count() - before
        return compare_row(config, memory, None, None, None, _tokens(config, options), compiles)
    memory = memory_report(compiled_memory_dumps(loaded))
    estimate = estimate_report(loaded)
    placement = placement_report(loaded)
    compiles = compile_cache.compile_count() - before
    return compare_row(
        config,
        memory,
        estimate,
        placement,
        stage_timings(loaded),
        _tokens(config, options),
        compiles,
    )


def _tokens(config: CompareConfig, options: dict[str, Any]) -> int | None:
    """`--tokens-per-step`, or the program's `TOKENS_PER_STEP` (a positive int)."""
    given = options.get("tokens_per_step")
    if given is not None:
        return int(given)
    from hloscope.sources.entrypoint import module_attribute
    from hloscope.sources.target import EntrypointTarget, parse_target

    target = parse_target(config.target)
    if not isinstance(target, EntrypointTarget):
        return None
    value = module_attribute(target, TOKENS_VARIABLE)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise HloscopeError(
            f"{TOKENS_VARIABLE} = {value!r}: expected a positive int (tokens a step trains "
            "on, all devices together)",
            where=config.target,
        )
    return value


def _answer(header: dict[str, Any]) -> CompareRow:
    plain = header["config"]
    config = CompareConfig(
        plain["target"], plain["compile_for"], dict(plain["env"]), plain["label"]
    )
    try:
        return measured_row(config, header["options"])
    except HloscopeError as exc:
        return failed_row(config, one_line(str(exc)))
    except Exception as exc:  # the program's own failure, beyond what the views catch
        return failed_row(config, one_line(describe_exception(exc)))


def main() -> int:
    """Answer one request, then end: a configuration's process is its own."""
    from hloscope.native_stderr import native_stderr_kept

    exit_with_parent()
    # Replies go to a descriptor of their own; what anything prints goes to stderr, so
    # that it cannot break a frame.
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    frame = read_frame(sys.stdin.buffer)
    if frame is None:
        return 0
    with native_stderr_kept():
        row = _answer(frame[0])
    body = json.dumps(dataclasses.asdict(row)).encode("utf-8")
    write_frame(replies, {"stage": "row"}, body)
    write_frame(replies, {"stage": STAGE_DONE})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

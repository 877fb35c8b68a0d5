"""The two sides of a diff of targets: each loaded with the options that apply to it
(example arguments to an entrypoint, `--module` to a dump folder, `--compile` to both)."""

from __future__ import annotations

import dataclasses

from hloscope.errors import HloscopeError
from hloscope.sources.loader import Loaded, LoadOptions, load
from hloscope.sources.target import DumpTarget, EntrypointTarget, parse_target


def diff_options(target: str, options: LoadOptions) -> LoadOptions:
    """The target options that apply to one side: example arguments to an entrypoint,
    `--module` to a dump folder, `--compile` to both."""
    parsed = parse_target(target)
    if isinstance(parsed, EntrypointTarget):
        return dataclasses.replace(options, module=None)
    keep_module = options.module if parsed.path.is_dir() else None
    return dataclasses.replace(options, args=(), args_factory=None, module=keep_module)


def load_diff_sides(
    target_a: str, target_b: str, options: LoadOptions | None = None
) -> tuple[Loaded, Loaded]:
    """Load the two targets of a diff, each with the options that apply to it (the
    browser's diff screen loads them itself, to print them too)."""
    options = options or LoadOptions()
    parsed = [parse_target(target_a), parse_target(target_b)]
    if (options.args or options.args_factory) and not any(
        isinstance(p, EntrypointTarget) for p in parsed
    ):
        raise HloscopeError(
            "--arg and --args give example arguments to entrypoints; A and B are dumps"
        )
    if options.module is not None and not any(
        isinstance(p, DumpTarget) and p.path.is_dir() for p in parsed
    ):
        raise HloscopeError("--module picks a module of a dump folder; neither A nor B is one")
    loaded: list[Loaded] = []
    for target, side in zip((target_a, target_b), parsed, strict=True):
        if isinstance(side, EntrypointTarget):
            # Each side lowered as if alone: JAX would give B the lowering it cached
            # for A of an inner jit both call, with A's source locations.
            from hloscope.sources.jax.lower import forget_traces

            forget_traces()
        loaded.append(load(target, diff_options(target, options)))
    return loaded[0], loaded[1]

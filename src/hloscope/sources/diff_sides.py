"""The two sides of a diff of targets: each loaded with the options that apply to it
(example arguments to an entrypoint, `--module` to a dump folder, `--compile` to both),
and each side's own (`--args-a`, `--for-b`, `--env-a NAME=V`: two configurations of
one step).

One process has one JAX backend, made once with one device count and the flags JAX
and XLA read when it starts: two sides that need different ones are refused here,
in one line, rather than the second silently compiled under the first's."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from hloscope.errors import HloscopeError
from hloscope.ir import parse
from hloscope.sources.loader import Loaded, LoadOptions, load
from hloscope.sources.target import DumpTarget, EntrypointTarget, parse_target

if TYPE_CHECKING:
    from hloscope.compile_for import CompileFor


@dataclasses.dataclass(frozen=True)
class DiffOptions:
    """The load options of each side of a diff (`LoadOptions.env` included)."""

    a: LoadOptions
    b: LoadOptions

    @classmethod
    def both(cls, options: LoadOptions) -> DiffOptions:
        """The same options for A and B."""
        return cls(options, options)


# What JAX, XLA and the platforms' plugins read once, when JAX is imported or its
# backend starts: a second value in the same process would be ignored.
_BACKEND_PREFIXES = ("JAX_", "XLA_", "LIBTPU_", "TPU_", "TF_CPP_")
_BACKEND_NAMES = frozenset({"CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES"})


def diff_options(target: str, options: LoadOptions) -> LoadOptions:
    """The target options that apply to one side: example arguments to an entrypoint,
    `--module` to a dump folder, `--compile` to both."""
    parsed = parse_target(target)
    if isinstance(parsed, EntrypointTarget):
        return dataclasses.replace(options, module=None)
    keep_module = options.module if parsed.path.is_dir() else None
    return dataclasses.replace(options, args=(), args_factory=None, module=keep_module)


def load_diff_sides(
    target_a: str, target_b: str, options: LoadOptions | DiffOptions | None = None
) -> tuple[Loaded, Loaded]:
    """Load the two targets of a diff, each with the options that apply to it: one
    `LoadOptions` for both, or `DiffOptions`, each side's (the browser's diff screen
    loads them itself, to print them too)."""
    sides = (
        options if isinstance(options, DiffOptions) else DiffOptions.both(options or LoadOptions())
    )
    parsed = [parse_target(target_a), parse_target(target_b)]
    given = (sides.a, sides.b)
    if any(s.args or s.args_factory for s in given) and not any(
        isinstance(p, EntrypointTarget) for p in parsed
    ):
        raise HloscopeError(
            "--arg and --args give example arguments to entrypoints; A and B are dumps"
        )
    if any(s.module is not None for s in given) and not any(
        isinstance(p, DumpTarget) and p.path.is_dir() for p in parsed
    ):
        raise HloscopeError("--module picks a module of a dump folder; neither A nor B is one")
    if all(isinstance(p, EntrypointTarget) for p in parsed):
        _refuse_two_backends(sides)
    sides = _fresh_imports(sides)
    loaded: list[Loaded] = []
    for target, side, side_options in zip(
        (target_a, target_b), parsed, (sides.a, sides.b), strict=True
    ):
        if isinstance(side, EntrypointTarget):
            # Each side lowered as if alone: JAX would give B the lowering it cached
            # for A of an inner jit both call, with A's source locations.
            from hloscope.sources.jax.lower import forget_traces

            forget_traces()
        loaded.append(load(target, diff_options(target, side_options)))
    return _one_form(loaded[0], loaded[1], (target_a, target_b), sides)


def _one_form(
    a: Loaded, b: Loaded, targets: tuple[str, str], sides: DiffOptions
) -> tuple[Loaded, Loaded]:
    """Both sides in XLA's own form when one of two optimized HLO modules does not
    convert to MLIR: across forms every op would differ by its name alone
    (`hlo.dot` against `stablehlo.dot`)."""
    if {a.source.ir, b.source.ir} != {"hlo", "hlo-native"}:
        return a, b
    again = [a, b]
    for index, side in enumerate(again):
        if side.source.ir != "hlo":
            continue
        target, options = targets[index], (sides.a, sides.b)[index]
        with parse.in_xla_form():
            again[index] = (
                side.reread()
                if side.compilation is not None
                else load(target, diff_options(target, options))
            )
    return again[0], again[1]


def _fresh_imports(sides: DiffOptions) -> DiffOptions:
    """Where one side sets environment variables, both import their programs afresh
    (an empty environment for the other): a module imported under A's variables
    would otherwise be B's too."""
    if sides.a.env is None and sides.b.env is None:
        return sides
    return DiffOptions(
        dataclasses.replace(sides.a, env=sides.a.env or ()),
        dataclasses.replace(sides.b, env=sides.b.env or ()),
    )


def _refuse_two_backends(sides: DiffOptions) -> None:
    """Refuse two entrypoints that need two JAX backends: other device counts (`--for`
    gives the program its platform's count of host devices before it is imported), or
    other values of a variable read when JAX starts."""
    a, b = sides.a.compile_for, sides.b.compile_for
    if _devices(a) != _devices(b):
        raise HloscopeError(
            f"A compiles for {_platform(a)} and B for {_platform(b)}: one process gives "
            "its programs one device count, before JAX starts; diff two configurations "
            "with as many devices, or compare them with hloscope compare (a process each)"
        )
    env_a, env_b = dict(sides.a.env or ()), dict(sides.b.env or ())
    read_at_start = sorted(
        name
        for name in env_a.keys() | env_b.keys()
        if (name.startswith(_BACKEND_PREFIXES) or name in _BACKEND_NAMES)
        and env_a.get(name) != env_b.get(name)
    )
    if read_at_start:
        names = ", ".join(read_at_start)
        raise HloscopeError(
            f"A and B set {names} differently: JAX reads it once, when the process starts "
            "its backend, so both sides would run with the first value; give both one "
            f"value (--env), or compare the two with hloscope compare --vary "
            f"{read_at_start[0]}=... (a process each)"
        )


def _devices(target: CompileFor | None) -> int | None:
    return target.devices if target is not None else None


def _platform(target: CompileFor | None) -> str:
    if target is None:
        return "the local backend"
    return f"{target.spec} ({target.devices} devices)"

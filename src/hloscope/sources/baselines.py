"""Where `hloscope check` finds its targets and baselines, and measures a target.

Baselines are JSON files meant to be committed: one per target and backend
(`hloscope-baselines/train_step.cpu.json`). `[tool.hloscope.check]` in the project's
`pyproject.toml` lists the targets checked when `hloscope check` names none:

    [tool.hloscope.check]
    baselines = "hloscope-baselines"       # the folder, beside pyproject.toml
    tolerances = { "memory.*" = "2%" }     # for every target

    [[tool.hloscope.check.targets]]
    name = "train_step"
    target = "model.py:train_step"
    args = "model.py:example_args"         # or arg = ["f32[8,128]"], or calls = ...
    tolerances = { "compile.seconds" = "200%" }

A baseline is written only when asked (`--update`), in one step (a file that is
complete or absent).
"""

from __future__ import annotations

import dataclasses
import json
import os
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hloscope.errors import HloscopeError, display_path
from hloscope.sources.target import is_script

if TYPE_CHECKING:
    from hloscope.analyses.baseline.record import Backend, Baseline
    from hloscope.remat_facts import RematFacts
    from hloscope.runs import RecordedRun
    from hloscope.sources.loader import Call, Loaded, LoadOptions
    from hloscope.sources.memory import BufferDumps
    from hloscope.stages import CompiledFor

DEFAULT_FOLDER = "hloscope-baselines"


@dataclasses.dataclass(frozen=True)
class ConfiguredTarget:
    """One target of `[tool.hloscope.check]`."""

    name: str
    """Names its baseline file."""
    target: str
    args: str | None = None
    """`--args`: a factory returning the example arguments."""
    arg: tuple[str, ...] = ()
    """`--arg` shapes."""
    module: str | None = None
    calls: str | None = None
    """`--calls`: a factory returning several argument sets (facts of the programs
    compiled)."""
    tolerances: Mapping[str, str | float] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class CheckConfig:
    """`[tool.hloscope.check]` of a project."""

    path: Path
    """The pyproject.toml read."""
    folder: Path
    """Where the baselines are."""
    tolerances: Mapping[str, str | float]
    targets: tuple[ConfiguredTarget, ...]


def find_config(start: Path | None = None) -> CheckConfig | None:
    """The `[tool.hloscope.check]` of the nearest pyproject.toml from `start` (the
    working directory) up; None when there is none."""
    folder = (start or Path.cwd()).resolve()
    for candidate in (folder, *folder.parents):
        path = candidate / "pyproject.toml"
        if path.is_file():
            return _read_config(path)
    return None


def from_project(spec: str | None, folder: Path) -> str | None:
    """A target or factory `[tool.hloscope.check]` names (`model.py:step`,
    `script.py`, `pkg.mod:fn`), its file found from the pyproject's `folder` as the
    configuration means it, named relative to the working directory (`..` where the
    check runs in a subfolder). A dotted module is found on the path
    `check_configured` gives."""
    if spec is None:
        return None
    left, colon, attribute = spec.rpartition(":")
    file = left if colon and left.endswith(".py") else spec if not colon else None
    if file is None or Path(file).is_absolute():
        return spec
    moved = os.path.relpath(folder / file)
    return f"{moved}:{attribute}" if colon else moved


def project_root(start: Path) -> Path | None:
    """The project `start` is in: the nearest folder from `start` up holding a
    pyproject.toml, else a git checkout's root; None outside both."""
    folders = (start, *start.parents)
    for marker in ("pyproject.toml", ".git"):
        found = next((f for f in folders if (f / marker).exists()), None)
        if found is not None:
            return found
    return None


def _read_config(path: Path) -> CheckConfig | None:
    where = display_path(path)
    try:
        document = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise HloscopeError(f"cannot read it: {exc}", where=where) from None
    section = document.get("tool", {}).get("hloscope", {}).get("check")
    if section is None:
        return None
    where = f"{where} [tool.hloscope.check]"
    if not isinstance(section, dict):
        raise HloscopeError("expected a table", where=where)
    targets = []
    for index, raw in enumerate(section.get("targets", [])):
        entry_where = f"{where} targets[{index}]"
        if not isinstance(raw, dict) or not isinstance(raw.get("target"), str):
            raise HloscopeError('each target needs target = "file.py:function"', where=entry_where)
        unknown = set(raw) - {f.name for f in dataclasses.fields(ConfiguredTarget)}
        if unknown:
            raise HloscopeError(
                f"unknown key {sorted(unknown)[0]!r} (expected name, target, args, arg, "
                "module, calls, tolerances)",
                where=entry_where,
            )
        name = raw.get("name") or _name_of(raw["target"])
        arg = raw.get("arg", ())
        targets.append(
            ConfiguredTarget(
                name=str(name),
                target=raw["target"],
                args=raw.get("args"),
                arg=(arg,) if isinstance(arg, str) else tuple(arg),
                module=raw.get("module"),
                calls=raw.get("calls"),
                tolerances=_tolerances(raw.get("tolerances"), entry_where),
            )
        )
    names = [t.name for t in targets]
    if len(set(names)) != len(names):
        twice = next(n for n in names if names.count(n) > 1)
        raise HloscopeError(f"two targets are named {twice!r}: give each a name", where=where)
    folder = path.parent / str(section.get("baselines", DEFAULT_FOLDER))
    return CheckConfig(
        path=path,
        folder=folder,
        tolerances=_tolerances(section.get("tolerances"), where),
        targets=tuple(targets),
    )


def _tolerances(raw: Any, where: str) -> Mapping[str, str | float]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise HloscopeError('tolerances: expected a table of fact pattern = "5%"', where=where)
    return dict(raw)


def _name_of(target: str) -> str:
    """`model.py:train_step` -> `train_step`; a script's stem."""
    head, _, function = target.rpartition(":")
    return function or Path(head or target).stem


def baseline_path(folder: Path, name: str, platform: str) -> Path:
    """The baseline of target `name` on `platform`: `folder/name.platform.json`."""
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in name)
    return folder / f"{safe}.{platform}.json"


def read_baseline_file(path: Path) -> Baseline | None:
    """The baseline stored at `path`; None when there is no file."""
    from hloscope.analyses.baseline.record import read_baseline

    where = display_path(path)
    if path.is_dir():
        raise HloscopeError("a folder, not a baseline file", where=where)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise HloscopeError(f"cannot read it: {exc}", where=where) from None
    try:
        document = json.loads(text)
    except ValueError as exc:
        raise HloscopeError(f"not JSON ({exc}): not an hloscope baseline", where=where) from None
    return read_baseline(document, where)


def write_baseline_file(path: Path, baseline: Baseline) -> None:
    """Store `baseline` at `path` (its folder made when missing), in one step."""
    from hloscope.analyses.baseline.record import baseline_json

    text = json.dumps(baseline_json(baseline), indent=2) + "\n"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f".{path.name}.partial")
        partial.write_text(text, encoding="utf-8")
        os.replace(partial, path)
    except OSError as exc:
        raise HloscopeError(f"cannot write the baseline: {exc}", where=display_path(path)) from None


def backend_record(compiled_for: CompiledFor | None = None) -> Backend:
    """What a program compiled here is compiled for: the local backend, or the TPU
    topology or GPU spec `compiled_for` names (`--for`)."""
    from hloscope.analyses.baseline.record import Backend
    from hloscope.environment import package_version

    if compiled_for is not None and compiled_for.spec is not None:
        return Backend(
            platform=compiled_for.platform,
            device_kind=compiled_for.device_kind,
            device_count=compiled_for.devices,
            jax=package_version("jax"),
            jaxlib=package_version("jaxlib"),
            compiled_for=compiled_for.spec,
            compiler=compiled_for.compiler,
            compiler_version=compiled_for.compiler_version,
            deviceless=compiled_for.deviceless,
        )
    from hloscope.sources.jax.backend import local_devices

    platform, device_kind, count = local_devices()
    return Backend(
        platform=platform,
        device_kind=device_kind,
        device_count=count,
        jax=package_version("jax"),
        jaxlib=package_version("jaxlib"),
    )


def comparison_backend(specs: Sequence[str]) -> Backend:
    """What a comparison's baseline is comparable on: its rows' `--for` specs, in order
    (the parent of a comparison never starts JAX: the versions are the installed ones)."""
    from hloscope.analyses.baseline.record import COMPARISON_PLATFORM, Backend
    from hloscope.environment import package_version

    unique = list(dict.fromkeys(specs))
    return Backend(
        platform=COMPARISON_PLATFORM,
        device_kind="configurations",
        device_count=len(unique),
        jax=package_version("jax"),
        jaxlib=package_version("jaxlib"),
        compiled_for=" + ".join(unique),
    )


@dataclasses.dataclass(frozen=True)
class CheckedProgram:
    """What `hloscope check` measures of a target: one program compiled here (with
    XLA's buffer assignment), or a run whose compilations were recorded."""

    lowered: Loaded | None = None
    optimized: Loaded | None = None
    buffers: BufferDumps | None = None
    """XLA's buffer assignment of `optimized`; None for an optimized module read as it
    is without one."""
    run: RecordedRun | None = None
    """A script, or a function called on several argument sets."""
    remat: RematFacts | None = None
    """Where the target is a gradient: the residuals of the loss it differentiates."""


def checked_program(
    target: str,
    options: LoadOptions,
    call: Call | None = None,
    calls: str | None = None,
    obj: Any = None,
) -> CheckedProgram:
    """Compile `target` (or `obj`, a Python object in hand named `target`) here with
    XLA's buffer assignment dumped; or, for a script or a function with `calls` (a
    factory of argument sets), run it with its compilations recorded."""
    from hloscope.sources.loader import load, load_object
    from hloscope.sources.memory import compiled_memory_dumps, loaded_memory_dumps

    if obj is None and (calls is not None or is_script(target)):
        from hloscope.sources.jax.capture import record_target

        if options.compile_for is not None:
            raise HloscopeError(
                f"--for {options.compile_for.spec} compiles one program without the device; "
                "a script or a function with --calls runs, which needs it",
                where=target,
            )
        if options.args or options.args_factory:
            raise HloscopeError(
                "a script or a function with calls is run as it is: --arg and --args "
                "are for one compiled program",
                where=target,
            )
        return CheckedProgram(run=record_target(target, calls_factory=calls, stdout_to_stderr=True))
    loaded = (
        load_object(obj, target, options, call) if obj is not None else load(target, options, call)
    )
    if loaded.program is None:  # an optimized module read as it is
        try:
            buffers = loaded_memory_dumps(loaded)
        except HloscopeError:
            return CheckedProgram(lowered=loaded, optimized=loaded)
        return CheckedProgram(lowered=loaded, optimized=buffers.loaded, buffers=buffers)
    buffers = compiled_memory_dumps(loaded)
    if buffers.refused is not None:
        raise buffers.refused  # it does not fit the device --for names
    from hloscope.sources.remat import gradient_residuals

    remat = gradient_residuals(target, options, call, obj)
    return CheckedProgram(lowered=loaded, optimized=buffers.loaded, buffers=buffers, remat=remat)

"""XLA's per-pass dump files of one module: from a dump folder, or made here.

A dump folder written with `--xla_dump_to` and `--xla_dump_hlo_pass_re=.*` holds
the module after every pass that changed it; `pass_dumps` picks the module
(`--module`) and hands its files over. An entrypoint or a module before
optimizations is compiled here with those two options, for this compilation
only, into a temporary folder that lives as long as the `with` block.
"""

from __future__ import annotations

import contextlib
import dataclasses
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

from hloscope.errors import HloscopeError, display_path
from hloscope.sources import dumps
from hloscope.sources.dumps import PASS_DUMP_FLAG, DumpModule, PassFile
from hloscope.sources.loader import Loaded, LoadOptions, load
from hloscope.sources.target import DumpTarget, parse_target


@dataclasses.dataclass(frozen=True)
class PassDumps:
    """One module's per-pass files, in pipeline order."""

    target: str
    """The target as the user gave it."""
    folder: Path
    """The folder holding the files (a temporary one when compiled here)."""
    module: DumpModule
    """The module, with its before/after-optimization files and per-pass files."""
    compiled: Loaded | None
    """What was compiled here (None for a dump folder's files)."""
    notes: tuple[str, ...]
    """What picking the module or compiling noted."""

    @property
    def files(self) -> tuple[PassFile, ...]:
        return self.module.passes

    @property
    def temporary(self) -> bool:
        """Whether the files were made here (and vanish after the `with` block)."""
        return self.compiled is not None

    def module_before(self, index: int) -> Path | None:
        """The file of the module before the pass at `index` (the module before
        optimizations for the first pass, when dumped)."""
        if index > 0:
            return self.files[index - 1].path
        return self.module.before


def _no_pass_files(where: str) -> HloscopeError:
    return HloscopeError(
        f"no per-pass files: XLA writes them with --xla_dump_to=FOLDER {PASS_DUMP_FLAG}",
        where=where,
    )


def _pick(folder: dumps.DumpFolder, wanted: str | None) -> tuple[DumpModule, str | None]:
    """The module `--module` names, or the one with the most per-pass files."""
    where = display_path(folder.path)
    with_passes = [m for m in folder.modules if m.passes]
    if wanted is not None:
        module, note = folder.pick(wanted)
        if not module.passes:
            raise _no_pass_files(f"{where} ({module.key})")
        return module, note
    if not with_passes:
        raise _no_pass_files(where)
    if len(with_passes) == 1:
        return with_passes[0], None
    picked = max(with_passes, key=lambda m: (len(m.passes), m.size))
    return picked, (
        f"the folder holds per-pass files of {len(with_passes)} modules; showing "
        f"{picked.key}, with the most passes (pick another with --module NAME)"
    )


@contextlib.contextmanager
def pass_dumps(target: str, options: LoadOptions | None = None) -> Iterator[PassDumps]:
    """The per-pass files of `target`: a dump folder's, or those of compiling an
    entrypoint or a module before optimizations here (in a temporary folder, removed
    when the block ends)."""
    options = options or LoadOptions()
    parsed = parse_target(target)
    if isinstance(parsed, DumpTarget) and parsed.path.is_dir():
        if options.args or options.args_factory:
            raise HloscopeError("--arg and --args give example arguments to entrypoints, not dumps")
        folder = dumps.list_folder(parsed.path)
        module, note = _pick(folder, options.module)
        yield PassDumps(target, parsed.path, module, None, (note,) if note else ())
        return
    with compiled_pass_dumps(target, lambda given: load(target, given), options) as dumped:
        yield dumped


@contextlib.contextmanager
def compiled_pass_dumps(
    label: str, load_with: Callable[[LoadOptions], Loaded], options: LoadOptions
) -> Iterator[PassDumps]:
    """The per-pass files of compiling what `load_with` loads (given the options to
    load with: a target, an object in hand, module text), made in a temporary folder
    removed when the block ends."""
    with tempfile.TemporaryDirectory(prefix="hloscope-passes-") as temporary:
        folder_path = Path(temporary)
        compile_options = dataclasses.replace(
            options,
            optimized=True,
            compile_dumps=True,
            compiler_options=(
                *options.compiler_options,
                ("xla_dump_to", temporary),
                ("xla_dump_hlo_pass_re", ".*"),
            ),
        )
        loaded = load_with(compile_options)
        if loaded.compilation is None:
            raise HloscopeError(
                "this module is already optimized: XLA's passes run on the module "
                "before optimizations (give that, or the entrypoint)",
                where=label,
            )
        folder = dumps.list_folder(folder_path)
        with_passes = [m for m in folder.modules if m.passes]
        if not with_passes:
            raise _no_pass_files(label)
        module = max(with_passes, key=lambda m: len(m.passes))
        yield PassDumps(label, folder_path, module, loaded, loaded.notes)

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
from collections.abc import Iterator
from pathlib import Path

from hloscope.errors import HloscopeError, display_path
from hloscope.sources import dumps
from hloscope.sources.dumps import PASS_DUMP_FLAG, DumpModule, PassFile
from hloscope.sources.loader import Loaded, LoadOptions, load, load_data
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

    def pass_texts(self) -> Iterator[str]:
        """Each per-pass file's text, in pipeline order, read as it is asked for."""
        for file in self.files:
            yield dumps.read_pass_text(file.path)

    def stage_text(self, path: Path | None) -> str | None:
        """The text of the module before or after optimizations (`module.before`,
        `module.after`) when it was dumped as text."""
        if path is None or path.suffix != ".txt":
            return None
        return dumps.read_pass_text(path)

    def sides(self, index: int, before_label: str, after_label: str) -> tuple[Loaded, Loaded]:
        """The module before the pass at `index` and the module after it, parsed in
        full (unlike the listing); the first pass needs the module before
        optimizations dumped (`module_before`)."""
        before_path = self.module_before(index)
        assert before_path is not None
        before = load_data(dumps.read_file(before_path), before_label)
        after = load_data(dumps.read_file(self.files[index].path), after_label)
        return before, after


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


PASS_COMPILER_OPTIONS = (("xla_dump_hlo_pass_re", ".*"),)
"""What makes XLA write the module after every pass (with `xla_dump_to`)."""


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
        yield folder_pass_dumps(target, parsed.path, options.module)
        return
    # Only compiled: the module before optimizations is not built into the model.
    loaded = load(target, dataclasses.replace(options, defer_model=True))
    with compiled_pass_dumps(loaded) as dumped:
        yield dumped


def folder_pass_dumps(target: str, path: Path, module: str | None) -> PassDumps:
    """The per-pass files a dump folder holds of the module `module` names (`--module`),
    or of the one with the most of them."""
    folder = dumps.list_folder(path)
    picked, note = _pick(folder, module)
    return PassDumps(target, path, picked, None, (note,) if note else ())


@contextlib.contextmanager
def loaded_pass_dumps(loaded: Loaded) -> Iterator[PassDumps]:
    """The per-pass files of a target loaded already: its dump folder's, or those of
    compiling it here (in a temporary folder, removed when the block ends)."""
    source = loaded.source
    if source.folder_modules:
        yield folder_pass_dumps(source.target, Path(source.target), loaded.options.module)
        return
    with compiled_pass_dumps(loaded) as dumped:
        yield dumped


@contextlib.contextmanager
def compiled_pass_dumps(loaded: Loaded) -> Iterator[PassDumps]:
    """The per-pass files of compiling a loaded target here, made in a temporary folder
    removed when the block ends."""
    refusal = (
        "this module is already optimized: XLA's passes run on the module "
        "before optimizations (give that, or the entrypoint)"
    )
    with loaded.compiled_with_dumps(PASS_COMPILER_OPTIONS, refusal) as dump:
        folder = dumps.list_folder(dump.folder)
        with_passes = [m for m in folder.modules if m.passes]
        if not with_passes:
            raise _no_pass_files(loaded.label)
        module = max(with_passes, key=lambda m: len(m.passes))
        assert dump.compiled is not None  # a refusal is raised, not kept
        yield PassDumps(loaded.label, dump.folder, module, dump.compiled, dump.compiled.notes)

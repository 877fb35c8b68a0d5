"""XLA's buffer assignment and live ranges of a target: from a dump folder, or made here.

XLA writes them beside the optimized module when it dumps (`--xla_dump_to`). A dump
folder that holds them is read; otherwise the target (an entrypoint, a module before
optimizations) is compiled here with XLA dumping into a temporary folder
(`Loaded.compiled_with_dumps`), and the two files are read before it goes.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from hloscope.errors import DoesNotFit, HloscopeError, display_path
from hloscope.ir.xla_buffers import (
    DUMP_FLAGS_HINT,
    BufferAssignment,
    LiveRanges,
    NamedSpace,
    embedded_live_ranges,
    parse_buffer_assignment,
    parse_live_ranges,
    parse_memory_usage_report,
)
from hloscope.sources import dumps
from hloscope.sources.loader import Call, Loaded, LoadOptions, load
from hloscope.stages import OPTIMIZED


@dataclasses.dataclass(frozen=True)
class BufferDumps:
    """What XLA says of the memory of one optimized module."""

    loaded: Loaded
    """The optimized module the files describe."""
    assignment: BufferAssignment
    live: LiveRanges
    files: tuple[str, ...]
    """The dump folder's files read; empty when compiled here (the files are gone)."""
    spaces: tuple[NamedSpace, ...] = ()
    """XLA's names of the memory spaces (its memory-usage report); empty where XLA
    wrote none."""
    refused: DoesNotFit | None = None
    """XLA's refusal to compile the program for a device it does not fit: the files
    are what XLA dumped before refusing."""

    @property
    def dumped(self) -> bool:
        """Whether the files are a dump folder's (not made here)."""
        return bool(self.files)


def memory_dumps(
    target: str, options: LoadOptions | None = None, call: Call | None = None
) -> BufferDumps:
    """The buffer assignment of `target`: a dump folder's, or that of compiling the
    target (an entrypoint, a before-optimization dump) here."""
    options = options or LoadOptions()
    path = Path(target)
    if call is None and path.is_dir():
        folder = dumps.list_folder(path)
        picked, _ = folder.pick(options.module)
        files = _folder_files(path, folder, picked.key)
        if files is not None:
            loaded = load(target, dataclasses.replace(options, optimized=True))
            return _read(loaded, files, dumped=True)
    return compiled_memory_dumps(load(target, options, call))


def loaded_memory_dumps(loaded: Loaded) -> BufferDumps:
    """The buffer assignment of a target loaded already (the browser's Memory tab, the
    Python API): its dump folder's files, or else the target compiled here."""
    source = loaded.source
    if source.kind == "dump" and source.folder_module is not None:
        path = Path(source.target)
        files = _folder_files(path, dumps.list_folder(path), source.folder_module)
        if files is not None:
            if source.stage != OPTIMIZED or loaded.compilation is not None:
                options = dataclasses.replace(
                    loaded.options, module=source.folder_module, optimized=True
                )
                loaded = load(source.target, options)
            return _read(loaded, files, dumped=True)
    return compiled_memory_dumps(loaded)


def compiled_memory_dumps(loaded: Loaded) -> BufferDumps:
    """The buffer assignment of compiling a loaded target here."""
    refusal = (
        "this is an optimized module, which hloscope cannot compile again to get "
        f"its buffer assignment: give the dump folder XLA wrote ({DUMP_FLAGS_HINT}), "
        "or the module before optimization"
    )
    with loaded.compiled_with_dumps((), refusal, keep_refused=True) as dump:
        if dump.refused is not None:
            return _refused(loaded, dump.folder, dump.refused)
        compiled = dump.compiled
        assert compiled is not None
        files = dumps.memory_files(dump.folder, name=compiled.module.name)
        if files is None:
            raise HloscopeError(
                "XLA wrote no buffer assignment while compiling it", where=compiled.label
            )
        return _read(compiled, files, dumped=False)


def _refused(loaded: Loaded, folder: Path, refused: DoesNotFit) -> BufferDumps:
    """What XLA dumped before refusing a program that does not fit the device: its
    optimized module and buffer assignment, read as a dump folder's are, under the
    target's name. Without them, the refusal is the answer."""
    files = dumps.memory_files(folder)
    picked = [m for m in dumps.list_folder(folder).modules if m.after is not None]
    if files is None or not picked:
        raise refused
    read = load(str(picked[-1].after), LoadOptions())
    source = dataclasses.replace(
        loaded.source,
        ir=read.source.ir,
        stage=OPTIMIZED,
        compiled_for=refused.compiled_for,
    )
    optimized = Loaded(
        source,
        read.parsed,
        loaded.lowering,
        None,
        loaded.load_seconds,
        loaded.notes,
        loaded.options,
    )
    return dataclasses.replace(_read(optimized, files, dumped=False), refused=refused)


def _folder_files(path: Path, folder: dumps.DumpFolder, key: str) -> dumps.MemoryFiles | None:
    """The memory files of the module `key` in a dump folder; None when the folder
    holds no optimized module of it either (its module before optimizations is
    compiled here then)."""
    files = dumps.memory_files(path, key=key)
    if files is not None:
        return files
    picked = next(m for m in folder.modules if m.key == key)
    if picked.after is not None or folder.kind in ("xla-dump", "mixed"):
        raise HloscopeError(
            f"no buffer assignment of {key} here ({DUMP_FLAGS_HINT})",
            where=display_path(path),
        )
    return None


def _read(loaded: Loaded, files: dumps.MemoryFiles, dumped: bool) -> BufferDumps:
    assignment_label = display_path(files.buffer_assignment)
    assignment_text = _text(files.buffer_assignment, assignment_label)
    assignment = parse_buffer_assignment(assignment_text, assignment_label)
    read: tuple[str, ...] = (assignment_label,)
    if files.live_range is not None:
        live_label = display_path(files.live_range)
        live = parse_live_ranges(_text(files.live_range, live_label), live_label)
        read += (live_label,)
    elif (embedded := embedded_live_ranges(assignment_text)) is not None:
        live = parse_live_ranges(embedded, assignment_label)  # older XLA's one file
    else:
        raise HloscopeError(
            "XLA wrote the buffer assignment without its live ranges (-live-range.txt): "
            "dump again with --xla_dump_buffer_assignment_analysis=true",
            where=assignment_label,
        )
    spaces: tuple[NamedSpace, ...] = ()
    if files.memory_usage_report is not None:
        usage_label = display_path(files.memory_usage_report)
        spaces = parse_memory_usage_report(
            _text(files.memory_usage_report, usage_label), usage_label
        )
    return BufferDumps(loaded, assignment, live, read if dumped else (), spaces)


def _text(path: Path, label: str) -> str:
    text = dumps.decode_text(dumps.read_file(path))
    if text is None:
        raise HloscopeError("not a text file", where=label)
    return text

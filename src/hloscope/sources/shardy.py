"""What `placement --why` reads: the target compiled with Shardy's verbose dumps
(`xla_dump_hlo_pass_re=shardy-verbose`), the optimized module, Shardy's record of
each sharding's origins (`shardy/<module>/02.after_propagation.mlir`) and the module
XLA was given (`before_optimizations.txt`, for lines), all from one compilation in a
temporary folder (`Loaded.compiled_with_dumps`).

A user's XLA dump folder (`xla_dump_to`) is read instead of compiled again: its
optimized module, its module before optimizations, and Shardy's dump beside them
(`shardy/<module>/02.after_propagation.mlir`, written with
`xla_dump_hlo_pass_re=shardy-verbose`).

Where the compilation did not go through Shardy (GSPMD), the dump folder holds no
Shardy dump, or there is nothing to compile (an optimized module read as it is), the
collectives are listed without origins and one note says why.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from hloscope.ir.model import Module
from hloscope.ir.parse import parse_hlo_text
from hloscope.ir.shardy import PROPAGATED_FILE, read_propagation
from hloscope.ir.shardy_model import ShardyPropagation
from hloscope.sources import dumps as dump_files
from hloscope.sources.loader import Loaded, load
from hloscope.stages import OPTIMIZED

SHARDY_DUMP_OPTIONS = (("xla_dump_hlo_pass_re", "shardy-verbose"),)
"""The compiler options that make XLA write Shardy's dumps with origins."""


@dataclasses.dataclass(frozen=True)
class ShardyDumps:
    """One compilation's optimized module and what Shardy recorded of it."""

    compiled: Loaded
    """The optimized module (the one whose collectives are explained)."""
    propagation: ShardyPropagation | None
    """Shardy's origins; None when it did not run (the note says why)."""
    before: Module | None
    """The module XLA was given, with locations (lines up Shardy's ops)."""
    note: str | None


def shardy_dumps(loaded: Loaded) -> ShardyDumps:
    """Compile `loaded` with Shardy's verbose dumps and read them (a dump folder's
    own, when `loaded` is a module of one that holds its optimized module)."""
    folder = _dump_folder(loaded)
    if folder is not None:
        return folder
    if loaded.program is None:
        return ShardyDumps(
            loaded,
            None,
            None,
            "no sharding origins: an optimized module read as it is says nothing of "
            "where its shardings came from; give the entrypoint, or the module before "
            "optimizations, to compile it here with Shardy's dumps",
        )
    refusal = "nothing to compile here: --why needs the module before optimizations"
    with loaded.compiled_with_dumps(SHARDY_DUMP_OPTIONS, refusal) as dump:
        compiled = dump.compiled
        assert compiled is not None  # a refusal is raised, not kept
        name = compiled.module.name or ""
        propagated = _pick(sorted(dump.folder.glob(f"shardy/*/{PROPAGATED_FILE}")), name)
        befores = sorted(dump.folder.glob("*.before_optimizations.txt"))
        before_file = _pick(befores, name)
        before = None
        if before_file is not None:
            text = before_file.read_text(encoding="utf-8", errors="replace")
            before = parse_hlo_text(text, before_file.name, given_to_xla=True).model
        if propagated is None:
            return ShardyDumps(compiled, None, before, _no_shardy(loaded, compiled))
        return ShardyDumps(compiled, read_propagation(propagated), before, None)


def _dump_folder(loaded: Loaded) -> ShardyDumps | None:
    """What a user's XLA dump folder holds of the module `loaded` is: its optimized
    module and Shardy's dump of the same compilation, read as they are. None when the
    target is no dump folder, or the folder holds no optimized module of it (the
    module before optimizations is compiled here then)."""
    source = loaded.source
    key = source.folder_module
    folder = Path(source.target)
    if source.kind != "dump" or key is None or not folder.is_dir():
        return None
    picked = next((m for m in dump_files.list_folder(folder).modules if m.key == key), None)
    if picked is None or picked.after is None:
        return None
    options = dataclasses.replace(loaded.options, module=key)
    read_as_is = source.stage == OPTIMIZED and loaded.compilation is None
    compiled = (
        loaded if read_as_is else load(source.target, dataclasses.replace(options, optimized=True))
    )
    before: Module | None = None
    if source.stage != OPTIMIZED:
        before = loaded.module
    elif picked.before is not None:
        before = load(source.target, dataclasses.replace(options, optimized=False)).module
    files = dump_files.shardy_files(folder, key)
    propagated = next((f for f in files or () if f.name == PROPAGATED_FILE), None)
    if propagated is None:
        where = f"{dump_files.SHARDY_FOLDER}/{key}/{PROPAGATED_FILE}"
        held = (
            "holds no Shardy dump of this module"
            if files is None
            else "holds Shardy's dumps of this module without their origins"
        )
        note = (
            f"no sharding origins: the dump folder {held} ({where}, which XLA writes "
            "with xla_dump_hlo_pass_re=shardy-verbose; a module GSPMD partitioned has none)"
        )
        return ShardyDumps(compiled, None, before, note)
    return ShardyDumps(compiled, read_propagation(propagated), before, None)


def _pick(paths: list[Path], name: str) -> Path | None:
    """The file of module `name` (XLA names files and folders `module_NNNN.<name>`)."""
    for path in paths:
        folder = path.parent.name if path.name == PROPAGATED_FILE else path.name
        if f".{name}." in f"{folder}." or folder.endswith(f".{name}"):
            return path
    return paths[0] if paths else None


def _no_shardy(loaded: Loaded, compiled: Loaded) -> str:
    if (loaded.module.num_partitions or 1) <= 1 and (compiled.module.num_partitions or 1) <= 1:
        return (
            "no sharding origins: the module is not partitioned (one partition), "
            "so no partitioner ran"
        )
    if loaded.lowering is not None:
        from hloscope.sources.jax.compile import shardy_partitioner

        if not shardy_partitioner():
            return (
                "no sharding origins: JAX partitioned this with GSPMD, not Shardy "
                "(jax_use_shardy_partitioner is False), and GSPMD records none"
            )
        return (
            "no sharding origins: XLA did not run Shardy on this module (JAX falls back "
            "to GSPMD when a module holds GSPMD shardings, `mhlo.sharding`), and GSPMD "
            "records none"
        )
    return (
        "no sharding origins: XLA did not run Shardy on this module (a module with "
        "GSPMD shardings, `mhlo.sharding`, is partitioned by GSPMD, which records none)"
    )

"""A cache of what the views read from a compile, across processes: the optimized
module (proto and text), XLA's cost and memory analyses, the compile's seconds and
what it compiled for (a `Compilation`), and the files XLA dumped while compiling
(`xla_dump_to`: the buffer assignment and live ranges `memory` reads, the per-pass
files `passes` reads), so that every view of one program and target compiles it once.

An entry is one zip file named by the key (`compile_key`: the lowered module's
bytes, the target, the devices, the compiler options, the versions of what
compiles): `entry.json` (the format, the `Compilation`'s plain fields, the dump
options it was made with), `hlo.pb`, `hlo.txt`, and `dump/...`. It is written to a
temporary file in the same folder, locked while it is written, and renamed into
place, so that a reader sees a whole entry or none; one that cannot be read in full
(cut short, a member that does not inflate or does not match its CRC) or of another
format is ignored, compiled again and replaced. The folder is kept under a size cap
by removing the least recently used entries (a hit touches its file); a temporary
file no writer holds is a killed writer's, removed. The dump options (`xla_dump_*`)
do not change what XLA compiles: they are not in the key, and an entry made with any
of them serves a request for no files; one for files is served the files of the
same dump options only. A compile kept for no files is made with XLA's default dump,
kept too: `memory` reads its buffer assignment. This process's compiles are kept in
memory as well (the browser's tabs read one `Compilation`). A compile whose XLA_FLAGS
name a dump folder is given no key (`sources.jax.compile`): XLA writes the user's
files only when it compiles.

Not JAX's persistent compilation cache (`jax_compilation_cache_dir`): that keeps
serialized executables of programs JAX compiles and loads itself, not what a
compile-only topology client makes for `--for`, nor XLA's dump files, and it skips
compiles under a second (`jax_persistent_cache_min_compile_time_secs`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import math
import os
import sys
import tempfile
import time
import zipfile
import zlib
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from hloscope.environment import package_version
from hloscope.stages import Compilation, CompiledFor, CompilerOptions

FORMAT = 2
"""The entries' layout, and what hloscope makes of a compile: bump it when either
changes (an entry of another is ignored, and its key differs)."""

ENV_OFF = "HLOSCOPE_NO_CACHE"
"""Set (to anything but empty or 0): compile every time, read and write no entry."""
ENV_FOLDER = "HLOSCOPE_CACHE_DIR"
"""Where the entries go instead of the user's cache folder."""
ENV_CAP = "HLOSCOPE_CACHE_MAX_MB"
"""The size cap in MiB instead of `DEFAULT_CAP_BYTES`."""

DEFAULT_CAP_BYTES = 2 * 1024**3
"""2 GiB: a few dozen 16-chip steps with their buffer assignments, or a few with
their per-pass files."""

DUMP_TO = "xla_dump_to"
_DUMP_PREFIX = "xla_dump_"
_ENVIRONMENT = ("XLA_FLAGS", "LIBTPU_INIT_ARGS", "JAX_PLATFORMS")
"""What in the environment changes what XLA compiles."""


@dataclasses.dataclass
class _State:
    turned_off: bool = False
    """`--no-cache` on the command line."""
    noted: set[str] = dataclasses.field(default_factory=set)
    """The notes printed, by their start (each once a process)."""
    unwritable: bool = False
    compiles: int = 0
    """Compiles done through `cached_compilation` in this process (the tests count)."""


_state = _State()


def _hloscope_version() -> str:
    return package_version("hloscope") or "unknown"


_kept: dict[str, Compilation] = {}
"""This process's compiles by key (those asked without dump files), so that the
browser's tabs and views of one target share one `Compilation` without reading its
entry again; at most `_KEPT` of them."""
_KEPT = 4


def turn_off(off: bool) -> None:
    """`--no-cache` (each command sets it, so it does not outlive the command)."""
    _state.turned_off = off


def enabled() -> bool:
    """Whether the cache is on (neither `--no-cache` nor `HLOSCOPE_NO_CACHE`); its
    folder is read and written unless it could not be written once."""
    off = os.environ.get(ENV_OFF, "")
    return not _state.turned_off and off in ("", "0")


def folder() -> Path:
    """The entries' folder: `HLOSCOPE_CACHE_DIR`, else the user's cache folder's
    `hloscope/compiles` (`XDG_CACHE_HOME` or `~/.cache` on Linux, `~/Library/Caches`
    on macOS, `%LOCALAPPDATA%` on Windows)."""
    given = os.environ.get(ENV_FOLDER)
    if given:
        return Path(given).expanduser()
    if sys.platform == "darwin":
        base = Path.home() / "Library" / "Caches"
    elif sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
    else:
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "hloscope" / "compiles"


def cap_bytes() -> int:
    """The folder's size cap: `HLOSCOPE_CACHE_MAX_MB` in MiB (a number, 0 or more),
    else the default; a value that is not such a size is one note and the default."""
    given = os.environ.get(ENV_CAP, "").strip()
    if not given:
        return DEFAULT_CAP_BYTES
    try:
        mib = float(given)
    except ValueError:
        mib = math.nan
    if not math.isfinite(mib) or mib < 0:
        from hloscope.units import human_bytes

        _note(
            f"{_CAP_NOTE}{given} is not a size in MiB (a number, 0 or more): the compile "
            f"cache keeps the default, {human_bytes(DEFAULT_CAP_BYTES)}"
        )
        return DEFAULT_CAP_BYTES
    return int(mib * 1024**2)


def compile_count() -> int:
    """How many compiles `cached_compilation` ran in this process (not served)."""
    return _state.compiles


def compile_key(
    module: bytes | str,
    target: Mapping[str, Any],
    devices: Iterable[int],
    compiler_options: CompilerOptions,
    partitions: int,
    replicas: int,
    propagation: Any,
    versions: Mapping[str, str | None],
) -> str:
    """The key of one compile: the module's bytes as compiled, the target (the local
    backend's platform, device kind and count, or the `--for` spec), the ids of the
    devices it is compiled over, in order, the compiler options but the dump ones
    (sorted), the partition and replica counts, the sharding propagation flags, the
    versions of what compiles (jax, jaxlib, the platform's compiler) with JAX's
    settings that go into its compile options, and the environment's XLA flags."""
    data = module.encode() if isinstance(module, str) else module
    described = {
        "format": FORMAT,
        "hloscope": _hloscope_version(),
        "module": hashlib.sha256(data).hexdigest(),
        "target": dict(sorted(target.items())),
        "devices": [int(d) for d in devices],
        "options": sorted([k, v] for k, v in compiler_options if not k.startswith(_DUMP_PREFIX)),
        "partitions": partitions,
        "replicas": replicas,
        "propagation": propagation,
        "versions": dict(sorted(versions.items())),
        "environment": {name: os.environ.get(name, "") for name in _ENVIRONMENT},
    }
    text = json.dumps(described, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:40]


def cached_compilation(
    key: str | None,
    compiler_options: CompilerOptions,
    compile_with: Callable[[CompilerOptions], Compilation],
) -> Compilation:
    """What `compile_with(compiler_options)` makes, from the cache when an entry of `key`
    holds it (and the files XLA dumps into `xla_dump_to`, when the options ask for
    them: copied there from the entry), else compiled and kept. A compile kept
    without `xla_dump_to` is made with XLA's default dump into a temporary folder,
    kept too: the buffer assignment that `memory` (and `remat`, `check`) read then
    comes with the compile any other view made. `key` None: compiled, not kept."""
    options = dict(compiler_options)
    dump_to = options.get(DUMP_TO)
    dumps = {k: v for k, v in options.items() if k.startswith(_DUMP_PREFIX) and k != DUMP_TO}
    if key is None or not enabled():
        _state.compiles += 1
        return compile_with(compiler_options)
    if dump_to is None and key in _kept:
        return dataclasses.replace(_kept[key], cached=True)
    where = folder()
    hit = None if _state.unwritable else _lookup(where, key, dumps, dump_to)
    if hit is None and _state.unwritable:
        _state.compiles += 1
        hit = compile_with(compiler_options)
    elif hit is None:
        _state.compiles += 1
        if dump_to is not None:
            hit = compile_with(compiler_options)
            _write(where / _entry_name(key, dumps), key, hit, dumps, dump_to)
        else:
            with tempfile.TemporaryDirectory(prefix="hloscope-xla-") as temporary:
                hit = compile_with(((DUMP_TO, temporary), *compiler_options))
                _write(where / _entry_name(key, dumps), key, hit, dumps, temporary)
    _kept[key] = hit
    while len(_kept) > _KEPT:
        del _kept[next(iter(_kept))]
    return hit


def _entry_name(key: str, dumps: Mapping[str, str]) -> str:
    """One entry per key and dump options (`passes` and `shardy`'s dumps differ)."""
    described = json.dumps(sorted(dumps.items()))
    return f"{key}.{hashlib.sha256(described.encode()).hexdigest()[:12]}.zip"


def _lookup(
    where: Path, key: str, dumps: Mapping[str, str], dump_to: str | None
) -> Compilation | None:
    """The entry of `key` made with exactly these dump options; without `dump_to` (no
    files asked for), any other of `key`. Files dumped with other options are never
    handed over: a folder gets what XLA would write into it."""
    exact = where / _entry_name(key, dumps)
    hit = _read(exact, key, dumps, dump_to)
    if hit is not None or dump_to is not None:
        return hit
    with contextlib.suppress(OSError):
        for path in sorted(where.glob(f"{key}.*.zip")):
            if path != exact:
                hit = _read(path, key, dumps, dump_to)
                if hit is not None:
                    return hit
    return None


# --------------------------------------------------------------------------- reading


def _read(
    path: Path, key: str, dumps: Mapping[str, str], dump_to: str | None
) -> Compilation | None:
    """The entry at `path`, when it is whole, of this format and key, and holds the
    dump files asked for; None otherwise (it is compiled again)."""
    try:
        with zipfile.ZipFile(path) as entry:
            meta = json.loads(entry.read("entry.json"))
            if meta.get("format") != FORMAT or meta.get("key") != key:
                return None
            if dump_to is not None and meta.get("dumps") != dict(dumps):
                return None
            compilation = _compilation(meta, entry.read("hlo.pb"), entry.read("hlo.txt"))
            if dump_to is not None:
                _extract(entry, Path(dump_to), meta["files"])
    except _UNREADABLE:
        return None  # absent, cut short, corrupt, or of another layout
    with contextlib.suppress(OSError):
        os.utime(path)  # recently used
    return compilation


_UNREADABLE = (
    OSError,
    KeyError,
    ValueError,
    TypeError,
    AttributeError,
    EOFError,
    zipfile.BadZipFile,
    zlib.error,
    NotImplementedError,
    RuntimeError,
)
"""What reading an entry whose bytes changed raises (one bit flipped in a member:
`zlib.error`; in a header: a compression method, version or flag zipfile does not
read, `NotImplementedError`, or "encrypted", `RuntimeError`), or one of another
layout: the entry is compiled again."""


def _compilation(meta: Mapping[str, Any], proto: bytes, text: bytes) -> Compilation:
    made = meta["compilation"]
    compiled_for = made["compiled_for"]
    return Compilation(
        hlo_proto=proto,
        hlo_text=text.decode("utf-8"),
        compile_seconds=made["compile_seconds"],
        cost=made["cost"],
        memory=made["memory"],
        platform=made["platform"],
        compiled_for=CompiledFor(**compiled_for) if compiled_for is not None else None,
        cached=True,
    )


_MEMBERS = ("entry.json", "hlo.pb", "hlo.txt")


def _extract(entry: zipfile.ZipFile, into: Path, files: list[str]) -> None:
    """The entry's dump files, into `into`, when its directory lists the files its meta
    does: a directory whose bytes changed may list fewer (a comment's length that
    swallows the next members) or other names (`dump/x.o` read as a folder,
    `dump/x./`), and the entry is not whole."""
    listed = sorted(i.filename for i in entry.infolist() if i.filename not in _MEMBERS)
    if listed != sorted(f"dump/{name}" for name in files):
        raise ValueError("the entry's directory does not list its files")
    into = into.resolve()
    for info in entry.infolist():
        if info.filename in _MEMBERS:
            continue
        target = (into / info.filename.removeprefix("dump/")).resolve()
        if into not in target.parents:
            raise ValueError("an entry's file outside its folder")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(entry.read(info))  # checks the member's CRC


# --------------------------------------------------------------------------- writing


def _write(
    path: Path,
    key: str,
    compilation: Compilation,
    dumps: Mapping[str, str],
    dump_to: str | None,
) -> None:
    """Keep `compilation` (and the files in `dump_to`) as the entry at `path`: written
    to a temporary file beside it, then renamed over it. A folder that cannot be
    written turns the cache off for the process, with one note."""
    files = _dump_files(Path(dump_to)) if dump_to is not None else []
    meta = {
        "format": FORMAT,
        "key": key,
        "hloscope": _hloscope_version(),
        "dumps": dict(dumps) if dump_to is not None else None,
        "files": [name for name, _ in files],
        "compilation": {
            "compile_seconds": compilation.compile_seconds,
            "cost": dict(compilation.cost) if compilation.cost is not None else None,
            "memory": dict(compilation.memory) if compilation.memory is not None else None,
            "platform": compilation.platform,
            "compiled_for": (
                dataclasses.asdict(compilation.compiled_for)
                if compilation.compiled_for is not None
                else None
            ),
        },
    }
    size = len(compilation.hlo_proto) + sum(f.stat().st_size for _, f in files)
    cap = cap_bytes()
    if size > cap:
        return  # larger than the whole cache: compiled again next time
    temporary = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(prefix=_WRITING, suffix=".zip", dir=path.parent)
        # Held open (and locked) until renamed: `_stopped_writing` tells a killed
        # writer's file, which `--clear` and the eviction remove, from this one.
        with os.fdopen(handle, "wb") as raw:
            _lock(raw.fileno())
            with zipfile.ZipFile(raw, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as entry:
                entry.writestr("hlo.pb", compilation.hlo_proto)
                entry.writestr("hlo.txt", compilation.hlo_text)
                for name, file in files:
                    entry.write(file, f"dump/{name}")
                # Last: an entry is only read when its meta is there too.
                entry.writestr("entry.json", json.dumps(meta))
            raw.flush()
            os.replace(temporary, path)
            temporary = None
    except FileNotFoundError:
        # The file (or the folder) was removed while it was written (`--clear` in
        # another process): the folder can be written, this compile is not kept.
        return
    except OSError as exc:
        _unwritable(path.parent, exc)
        return
    finally:
        if temporary is not None:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
    _evict(path.parent, cap, keep=path)


def _dump_files(folder: Path) -> list[tuple[str, Path]]:
    return sorted(
        (file.relative_to(folder).as_posix(), file) for file in folder.rglob("*") if file.is_file()
    )


_WRITING = ".writing-"
"""The start of a temporary file's name: an entry being written."""
_DEAD_AFTER = 3600
"""Seconds after which a temporary file is a stopped writer's where files are not locked."""


def _lock(fd: int) -> None:
    """Lock the file being written, where the platform has `flock` (the lock goes with
    the process that holds it, killed or not)."""
    if sys.platform != "win32":
        import fcntl

        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)


def _stopped_writing(file: Path) -> bool:
    """Whether the temporary file `file` is a writer's that stopped (killed before it
    renamed it): no process holds its lock; on Windows (no `flock`, and a file open
    there is not removed), over an hour old."""
    if sys.platform == "win32":
        return file.stat().st_mtime < time.time() - _DEAD_AFTER
    import fcntl

    fd = os.open(file, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False  # a writer holds it
    finally:
        os.close(fd)
    return True


_NOTE = "hloscope: note: the compile cache folder "
_CAP_NOTE = f"hloscope: note: {ENV_CAP}="
_NOTES = (_NOTE, _CAP_NOTE)


def _unwritable(where: Path, exc: OSError) -> None:
    _state.unwritable = True
    reason = exc.strerror or type(exc).__name__
    _note(
        f"{_NOTE}{where} cannot be written ({reason}): compiling without the cache (set "
        f"{ENV_FOLDER} to another folder, or {ENV_OFF}=1)"
    )


def _note(line: str) -> None:
    """`line` on stderr, once a process for each kind of note (`_NOTES`)."""
    kind = next((start for start in _NOTES if line.startswith(start)), line)
    if kind not in _state.noted:
        _state.noted.add(kind)
        sys.stderr.write(line + "\n")


def relay_note(child_stderr: Iterable[str]) -> None:
    """The notes a child process that compiled (the module runner) wrote of the cache,
    on this process's stderr, each once: the child's stderr is not shown."""
    for line in child_stderr:
        if line.strip().startswith(_NOTES):
            _note(line.strip())


def _evict(where: Path, cap: int, keep: Path) -> None:
    """Remove the temporary files of writers that stopped, then the least recently
    used entries until the folder holds at most `cap` bytes."""
    entries = []
    for file in where.glob("*.zip"):
        try:
            stat = file.stat()
            if not file.name.startswith(_WRITING):
                entries.append((stat.st_mtime, stat.st_size, file))
            elif _stopped_writing(file):
                file.unlink()
        except OSError:
            continue
    total = sum(size for _, size, _ in entries)
    for _, size, file in sorted(entries, key=lambda e: e[0]):
        if total <= cap:
            break
        if file == keep:
            continue
        with contextlib.suppress(OSError):
            file.unlink()
            total -= size


# --------------------------------------------------------------------------- the folder


@dataclasses.dataclass(frozen=True)
class CacheFolder:
    """What `hloscope cache` shows: where the entries are, how many, their size."""

    path: str
    entries: int
    size_bytes: int
    cap_bytes: int
    enabled: bool
    writing: int = 0
    """Temporary files: entries being written, or left by writers that stopped (not
    entries, nor in `size_bytes`; `--clear` removes the second)."""

    def text(self) -> str:
        """What `hloscope cache` prints."""
        from hloscope.units import counted, human_bytes

        state = "on" if self.enabled else "off (--no-cache, or HLOSCOPE_NO_CACHE is set)"
        writing = (
            f"writing  {counted(self.writing, 'temporary file')} (an entry being written, "
            "or left by a writer that stopped: --clear removes those)\n"
            if self.writing
            else ""
        )
        return (
            f"folder   {self.path}\n"
            f"entries  {counted(self.entries, 'entry', 'entries')} · "
            f"{human_bytes(self.size_bytes)} of {human_bytes(self.cap_bytes)} (the least "
            f"recently used go beyond it; {ENV_CAP} sets it)\n"
            f"{writing}"
            f"cache    {state}; {ENV_FOLDER} moves it, --no-cache or {ENV_OFF}=1 turns it "
            "off\n"
        )


def describe() -> CacheFolder:
    where = folder()
    files = list(where.glob("*.zip"))
    entries = [f for f in files if not f.name.startswith(_WRITING)]
    size = 0
    for file in entries:
        with contextlib.suppress(OSError):
            size += file.stat().st_size
    return CacheFolder(
        str(where),
        len(entries),
        size,
        cap_bytes(),
        enabled() and not _state.unwritable,
        writing=len(files) - len(entries),
    )


@dataclasses.dataclass(frozen=True)
class Cleared:
    """What `hloscope cache --clear` did."""

    path: str
    entries: int
    """Entries removed."""
    leftovers: int
    """Temporary files of writers that stopped, removed."""
    writing: int
    """Temporary files of writers still writing, kept."""
    failed: tuple[tuple[str, str], ...]
    """(file name, why) of each file that could not be removed."""

    def text(self) -> str:
        """What `hloscope cache --clear` prints when it removed all it could."""
        return f"{self._removed()} from {self.path}{self._kept()}\n"

    def failure(self) -> str | None:
        """What was removed, what could not be and why, in one line; None when all
        that could go went."""
        if not self.failed:
            return None
        from hloscope.units import counted

        reasons = sorted({why for _, why in self.failed})
        first = self.failed[0][0]
        return (
            f"{self._removed()}{self._kept()}; {counted(len(self.failed), 'file')} could "
            f"not be removed ({first}{' and others' if len(self.failed) > 1 else ''}: "
            f"{'; '.join(reasons)}): make the folder writable, or remove it yourself"
        )

    def _removed(self) -> str:
        from hloscope.units import counted

        said = f"removed {counted(self.entries, 'entry', 'entries')}"
        if self.leftovers:
            said += f" and {counted(self.leftovers, 'temporary file')} of writers that stopped"
        return said

    def _kept(self) -> str:
        from hloscope.units import counted

        if not self.writing:
            return ""
        return (
            f"; kept {counted(self.writing, 'temporary file')} another process is "
            "writing (an entry when it is done)"
        )


def clear_text() -> str:
    """Clear the cache and say what went (`hloscope cache --clear`); a file that could
    not be removed is a `HloscopeError` that says what went too (exit 2)."""
    from hloscope.errors import HloscopeError

    cleared = clear()
    failure = cleared.failure()
    if failure is not None:
        raise HloscopeError(failure, where=cleared.path)
    return cleared.text()


def clear() -> Cleared:
    """Remove every entry and the temporary files of writers that stopped; keep those
    being written (their writers would fail)."""
    where = folder()
    entries = leftovers = writing = 0
    failed: list[tuple[str, str]] = []
    try:
        files = sorted(where.glob("*.zip"))
    except OSError as exc:
        files = []
        failed.append((where.name, exc.strerror or type(exc).__name__))
    for file in files:
        temporary = file.name.startswith(_WRITING)
        try:
            if temporary and not _stopped_writing(file):
                writing += 1
                continue
            file.unlink()
        except FileNotFoundError:
            continue  # renamed into place, or removed, meanwhile
        except OSError as exc:
            failed.append((file.name, exc.strerror or type(exc).__name__))
            continue
        if temporary:
            leftovers += 1
        else:
            entries += 1
    return Cleared(str(where), entries, leftovers, writing, tuple(failed))

"""A cache of what the views read from a compile, across processes: the optimized
module (proto and text), XLA's cost and memory analyses, the compile's seconds and
what it compiled for (a `Compilation`), and the files XLA dumped while compiling
(`xla_dump_to`: the buffer assignment and live ranges `memory` reads, the per-pass
files `passes` reads), so that every view of one program and target compiles it once.

An entry is one zip file named by the key (`compile_key`: the lowered module's
bytes, the target, the devices, the compiler options, the versions of what
compiles): `entry.json` (the format, the `Compilation`'s plain fields, the dump
options it was made with), `hlo.pb`, `hlo.txt`, and `dump/...`. It is written to a
temporary file in the same folder and renamed into place, so that a reader sees a
whole entry or none; one cut short (a zip without its directory) or whose member
does not match its CRC, or of another format, is ignored and compiled again. The
folder is kept under a size cap by removing the least recently used entries (a hit
touches its file). The dump options (`xla_dump_*`) do not change what XLA compiles:
they are not in the key, and an entry made with any of them serves a request for no
files; one for files is served the files of the same dump options only. A compile
kept for no files is made with XLA's default dump, kept too: `memory` reads its
buffer assignment. This process's compiles are kept in memory as well (the
browser's tabs read one `Compilation`).

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
import os
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from hloscope.environment import package_version
from hloscope.stages import Compilation, CompiledFor, CompilerOptions

FORMAT = 1
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
    noted: bool = False
    """The note that the folder cannot be written was printed (once a process)."""
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
    """The folder's size cap."""
    given = os.environ.get(ENV_CAP, "")
    with contextlib.suppress(ValueError):
        return max(0, int(float(given) * 1024**2))
    return DEFAULT_CAP_BYTES


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
                _extract(entry, Path(dump_to))
    except (OSError, KeyError, ValueError, TypeError, zipfile.BadZipFile, EOFError):
        return None  # absent, cut short, corrupt, or of another layout
    with contextlib.suppress(OSError):
        os.utime(path)  # recently used
    return compilation


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


def _extract(entry: zipfile.ZipFile, into: Path) -> None:
    into = into.resolve()
    for info in entry.infolist():
        if not info.filename.startswith("dump/") or info.is_dir():
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
    meta = {
        "format": FORMAT,
        "key": key,
        "hloscope": _hloscope_version(),
        "dumps": dict(dumps) if dump_to is not None else None,
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
    files = _dump_files(Path(dump_to)) if dump_to is not None else []
    size = len(compilation.hlo_proto) + sum(f.stat().st_size for _, f in files)
    cap = cap_bytes()
    if size > cap:
        return  # larger than the whole cache: compiled again next time
    temporary = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(prefix=".writing-", suffix=".zip", dir=path.parent)
        with (
            os.fdopen(handle, "wb") as raw,
            zipfile.ZipFile(raw, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as entry,
        ):
            entry.writestr("hlo.pb", compilation.hlo_proto)
            entry.writestr("hlo.txt", compilation.hlo_text)
            for name, file in files:
                entry.write(file, f"dump/{name}")
            # Last: an entry is only read when its meta is there too.
            entry.writestr("entry.json", json.dumps(meta))
        os.replace(temporary, path)
        temporary = None
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


_NOTE = "hloscope: note: the compile cache folder "


def _unwritable(where: Path, exc: OSError) -> None:
    _state.unwritable = True
    reason = exc.strerror or type(exc).__name__
    _note(
        f"{_NOTE}{where} cannot be written ({reason}): compiling without the cache (set "
        f"{ENV_FOLDER} to another folder, or {ENV_OFF}=1)"
    )


def _note(line: str) -> None:
    if not _state.noted:
        _state.noted = True
        sys.stderr.write(line + "\n")


def relay_note(child_stderr: Iterable[str]) -> None:
    """The note a child process that compiled (the module runner) wrote of the folder,
    on this process's stderr, once: the child's stderr is not shown."""
    for line in child_stderr:
        if line.strip().startswith(_NOTE):
            _note(line.strip())
            return


def _evict(where: Path, cap: int, keep: Path) -> None:
    """Remove the temporary files of writers that died (over an hour old), then the
    least recently used entries until the folder holds at most `cap` bytes."""
    entries = []
    for file in where.glob("*.zip"):
        try:
            stat = file.stat()
        except OSError:
            continue
        if not file.name.startswith(".writing-"):
            entries.append((stat.st_mtime, stat.st_size, file))
        elif stat.st_mtime < time.time() - 3600:
            with contextlib.suppress(OSError):
                file.unlink()
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

    def text(self) -> str:
        """What `hloscope cache` prints."""
        from hloscope.units import counted, human_bytes

        state = "on" if self.enabled else "off (--no-cache, or HLOSCOPE_NO_CACHE is set)"
        return (
            f"folder   {self.path}\n"
            f"entries  {counted(self.entries, 'entry', 'entries')} · "
            f"{human_bytes(self.size_bytes)} of {human_bytes(self.cap_bytes)} (the least "
            f"recently used go beyond it; {ENV_CAP} sets it)\n"
            f"cache    {state}; {ENV_FOLDER} moves it, --no-cache or {ENV_OFF}=1 turns it "
            "off\n"
        )


def describe() -> CacheFolder:
    where = folder()
    files = [f for f in where.glob("*.zip") if not f.name.startswith(".writing-")]
    size = 0
    for file in files:
        with contextlib.suppress(OSError):
            size += file.stat().st_size
    return CacheFolder(
        str(where), len(files), size, cap_bytes(), enabled() and not _state.unwritable
    )


def clear_text() -> str:
    """Clear the cache, and say so (`hloscope cache --clear`)."""
    from hloscope.units import counted

    return f"removed {counted(clear(), 'entry', 'entries')} from {folder()}\n"


def clear() -> int:
    """Remove every entry (and leftover temporary file); the number removed."""
    removed = 0
    for file in folder().glob("*.zip"):
        with contextlib.suppress(OSError):
            file.unlink()
            removed += 1
    return removed

"""Recognise dumped modules by content, and list the modules of dump folders.

Pure functions of bytes and folder listings: no parsing, no JAX. The formats:

- MLIR bytecode (magic `ML\\xefR`), including portable VHLO artifacts
  (producer `StableHLO_vX.Y.Z`);
- MLIR text (StableHLO, MHLO, sdy, any dialect jaxlib knows);
- HLO text, with or without the `HloModule` header and the FileNames/StackFrames
  sections newer XLA prints;
- a serialized HLO module proto (`HloModuleProto`, or the `HloProto` that
  `--xla_dump_hlo_as_proto` writes);
- a serialized `jax.export.Exported` (a flatbuffer);
- an XLA `--xla_dump_to` folder (`module_0004.jit_f.before_optimizations.txt`,
  `...cpu_after_optimizations.txt`, `.hlo.pb`, and `module_0004.jit_f/module.mlir`);
  with Shardy's dumps of each module in `shardy/module_0004.jit_f/` when asked for;
- a `JAX_DUMP_IR_TO` folder (`jax_ir0002_jit_f_compile.mlir`).
"""

from __future__ import annotations

import dataclasses
import errno
import os
import re
import stat
from pathlib import Path
from typing import Final, Literal

from hloscope.errors import HloscopeError, display_path
from hloscope.stages import DumpFormat

BYTECODE_MAGIC = b"ML\xefR"

Sniffed = DumpFormat | Literal["unknown-text", "unknown-binary"]
"""What a dump looks like it holds, from its first bytes and lines."""

MLIR_BYTECODE: Final = "mlir-bytecode"
MLIR_TEXT: Final = "mlir-text"
HLO_TEXT: Final = "hlo-text"
HLO_PROTO: Final = "hlo-proto"
JAX_EXPORTED: Final = "jax-exported"
UNKNOWN_TEXT: Final = "unknown-text"
UNKNOWN_BINARY: Final = "unknown-binary"

# Refuse files larger than this with a message instead of exhausting memory.
MAX_FILE_BYTES = 2 * 1024**3

_MLIR_START = re.compile(
    r"""^(?:module\b|builtin\.module\b|func\.func\b|\#|"|%|!|\{-\#|
        [a-z_][a-z0-9_]*\.[a-z_][\w.]*)""",
    re.VERBOSE,
)
_HLO_INSTRUCTION = re.compile(
    r"^\s*(?:ROOT\s+)?%?[\w.-]+\s*=\s*(?:\(|[a-z][a-z0-9]*\[|token\[\]|token\b)", re.MULTILINE
)
_MODULE_START = re.compile(
    r"""^(?:HloModule\b|module\b|builtin\.module\b|func\.func\b|\{-\#|
        [\#!%^][\w.$-]|"[a-z_][\w]*\.[\w.]+"|[a-z_][a-z0-9_]*\.[a-z_][\w.]*)""",
    re.VERBOSE,
)
_MLIR_OP_LINE = re.compile(r"^\s*%[\w#:]+\s*=\s*(?:\"|[a-z_][\w]*\.[\w.]+)", re.MULTILINE)


def strip_leading_comments(text: str) -> str:
    """Text after leading blank lines and `//` comment lines."""
    pos = 0
    length = len(text)
    while pos < length:
        end = text.find("\n", pos)
        end = length if end == -1 else end
        line = text[pos:end].strip()
        if line and not line.startswith("//"):
            break
        pos = end + 1
    return text[pos:].lstrip("\ufeff \t\r\n")


def decode_text(data: bytes) -> str | None:
    """The file as text, or None if it is binary."""
    sample = data[:65536]
    if b"\x00" in sample:
        return None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return None


def sniff_text(text: str) -> Sniffed:
    """MLIR_TEXT, HLO_TEXT or UNKNOWN_TEXT for a text file."""
    head = strip_leading_comments(text)
    if head.startswith("HloModule"):
        return HLO_TEXT
    if _MLIR_START.match(head):
        return MLIR_TEXT
    window = text[:200_000]
    hlo_lines = len(_HLO_INSTRUCTION.findall(window))
    mlir_lines = len(_MLIR_OP_LINE.findall(window))
    if re.search(r"^\s*HloModule\b", window, re.MULTILINE) or hlo_lines > mlir_lines:
        return HLO_TEXT
    if mlir_lines or "func.func" in window:
        return MLIR_TEXT
    return UNKNOWN_TEXT


def starts_like_a_module(text: str) -> bool:
    """Whether the text's first line (after `//` comments) can begin a module:
    `HloModule`, `module`, an op, an attribute or type alias (`#map =`, `!t =`), a
    value (`%0 =`) or a generic op (`"stablehlo.add"(`). A Markdown heading (`# `), a
    TOML table or prose cannot."""
    head = strip_leading_comments(text)
    return bool(_MODULE_START.match(head))


def sniff_bytes(data: bytes) -> Sniffed:
    """The format of a file's contents."""
    if data.startswith(BYTECODE_MAGIC):
        return MLIR_BYTECODE
    text = decode_text(data)
    if text is not None:
        return sniff_text(text)
    if data[:1] == b"\x0a":
        # Protobuf field 1 (the module name of an HloModuleProto, the module of an
        # HloProto) is length-delimited: tag byte 0x0a.
        return HLO_PROTO
    if looks_like_flatbuffer(data):
        return JAX_EXPORTED
    return UNKNOWN_BINARY


def looks_like_flatbuffer(data: bytes) -> bool:
    """A structural check of a flatbuffer root table (a serialized Exported is one)."""
    if len(data) < 16:
        return False
    root = int.from_bytes(data[0:4], "little")
    if root < 4 or root + 4 > len(data):
        return False
    vtable = root - int.from_bytes(data[root : root + 4], "little", signed=True)
    if vtable < 0 or vtable + 4 > len(data):
        return False
    vtable_size = int.from_bytes(data[vtable : vtable + 2], "little")
    return 4 <= vtable_size <= 256 and vtable_size % 2 == 0


def read_file(path: Path) -> bytes:
    """The file's bytes, with clear errors for what cannot be read: what is not a
    regular file (a FIFO or a device would block or never end), and what would not
    fit in memory once parsed (see `memory_estimate`)."""
    where = display_path(path)
    try:
        info = path.stat()
    except OSError as exc:
        if path.is_symlink() and not path.exists() and exc.errno == errno.ENOENT:
            target = os.readlink(path)
            raise HloscopeError(f"a broken symbolic link (to {target})", where=where) from exc
        raise HloscopeError(f"cannot read it: {exc.strerror or exc}", where=where) from exc
    if not stat.S_ISREG(info.st_mode):
        kind = _FILE_KINDS.get(stat.S_IFMT(info.st_mode), "not a regular file")
        raise HloscopeError(f"{kind}, not a module file", where=where)
    size = info.st_size
    if size > MAX_FILE_BYTES:
        raise HloscopeError(
            f"the file is {size / 1024**3:.1f} GiB; hloscope reads modules up to "
            f"{MAX_FILE_BYTES // 1024**3} GiB",
            where=where,
        )
    _check_memory(size * MIN_MEMORY_PER_BYTE, size, where, "at least ")
    try:
        data = path.read_bytes()
    except IsADirectoryError as exc:
        raise HloscopeError("is a directory", where=where) from exc
    except OSError as exc:
        raise HloscopeError(f"cannot read it: {exc.strerror or exc}", where=where) from exc
    if not data.strip():
        raise HloscopeError("the file is empty", where=where)
    _check_memory(memory_estimate(data), len(data), where, "about ")
    return data


_FILE_KINDS = {
    stat.S_IFDIR: "is a directory",
    stat.S_IFIFO: "is a named pipe (FIFO)",
    stat.S_IFCHR: "is a character device",
    stat.S_IFBLK: "is a block device",
    stat.S_IFSOCK: "is a socket",
}

# What reading a module costs in memory (hloscope's process and its reader process
# together, at their peak), measured on modules dense in ops, the costliest kind:
# per line of text, and per byte (constants; binary formats, whose lines say nothing).
MEMORY_PER_LINE = {MLIR_TEXT: 2_000, HLO_TEXT: 8_000, UNKNOWN_TEXT: 8_000}
MEMORY_PER_BYTE = {MLIR_BYTECODE: 150, HLO_PROTO: 130, JAX_EXPORTED: 150}
MEMORY_PER_TEXT_BYTE = 4
# Even a module of nothing but constants takes this many bytes per byte of file.
MIN_MEMORY_PER_BYTE = 3
MEMORY_BASE = 300 * 1024**2
# Set to 0 to read a file the estimate says will not fit (a binary module mostly made
# of constants needs far less than the estimate for modules dense in ops).
MEMORY_CHECK_VARIABLE = "HLOSCOPE_MEMORY_CHECK"


def memory_estimate(data: bytes) -> int:
    """About how many bytes of memory reading this module takes, at most."""
    fmt = sniff_bytes(data)
    if fmt in MEMORY_PER_LINE:
        lines = data.count(b"\n") + 1
        return MEMORY_BASE + lines * MEMORY_PER_LINE[fmt] + len(data) * MEMORY_PER_TEXT_BYTE
    return MEMORY_BASE + len(data) * MEMORY_PER_BYTE.get(fmt, MIN_MEMORY_PER_BYTE)


def available_memory() -> int | None:
    """Bytes of memory this process can still use: the system's available memory,
    or what is left under its control group's limit when that is less; None when
    it cannot be told."""
    available: int | None = None
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    available = int(line.split()[1]) * 1024
                    break
    except (OSError, ValueError, IndexError):
        available = None
    for limit_file, usage_file in (
        ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
        (
            "/sys/fs/cgroup/memory/memory.limit_in_bytes",
            "/sys/fs/cgroup/memory/memory.usage_in_bytes",
        ),
    ):
        try:
            limit_text = Path(limit_file).read_text().strip()
            usage = int(Path(usage_file).read_text().strip())
        except (OSError, ValueError):
            continue
        if limit_text.isdigit() and int(limit_text) < 1 << 60:
            left = max(int(limit_text) - usage, 0)
            available = left if available is None else min(available, left)
        break
    return available


def _check_memory(needed: int, size: int, where: str, about: str) -> None:
    if os.environ.get(MEMORY_CHECK_VARIABLE, "1") == "0":
        return
    available = available_memory()
    if available is None or needed <= available:
        return
    raise HloscopeError(
        f"the file is {_size(size)}; reading it would take {about}{_size(needed)} of memory "
        f"and {_size(available)} are available (set {MEMORY_CHECK_VARIABLE}=0 to try anyway)",
        where=where,
    )


def _size(count: int) -> str:
    for unit, scale in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if count >= scale:
            return f"{count / scale:.1f} {unit}"
    return f"{count} bytes"


# --------------------------------------------------------------------------- folders


@dataclasses.dataclass(frozen=True)
class PassFile:
    """A per-pass dump file: `module_0004.jit_f.0013.PIPELINE.after_PASS.before_NEXT.txt`."""

    path: Path
    """The file."""
    step: int
    """XLA's dump number within the module (`0013`): the files' order."""
    pipeline: str
    """The pass pipeline (for a dump made during a pass, the pass)."""
    after: str
    """The pass after which the module was dumped (`pipeline-start` at a pipeline's
    start; a step's name for a dump made during a pass)."""
    before: str | None
    """The next pass, when the name says."""


@dataclasses.dataclass(frozen=True)
class DumpModule:
    """One module of a dump folder, with the files that hold its stages."""

    key: str
    """Unique within the folder: `module_0004.jit_f`, `jax_ir0002_jit_f_compile`."""
    name: str
    """The module's name: `jit_f`."""
    number: int | None
    before: Path | None
    """The module before XLA's optimizations (HLO text or proto, or MLIR)."""
    after: Path | None
    """The module after XLA's optimizations, when dumped."""
    passes: tuple[PassFile, ...] = ()
    """The module after each pass that changed it (`xla_dump_hlo_pass_re`), in
    pipeline order."""

    @property
    def size(self) -> int:
        path = self.before or self.after or (self.passes[-1].path if self.passes else None)
        try:
            return path.stat().st_size if path else 0
        except OSError:
            return 0


@dataclasses.dataclass(frozen=True)
class DumpFolder:
    path: Path
    kind: str
    """`xla-dump`, `jax-dump`, `mixed` or `folder` (module files of any name)."""
    modules: tuple[DumpModule, ...]
    truncated: bool = False
    """The folder has more than `MAX_FOLDER_ENTRIES` entries; only that many were
    listed."""

    def pick(self, wanted: str | None) -> tuple[DumpModule, str | None]:
        """The module `--module` names, or the largest one (with a note saying so)."""
        where = display_path(self.path)
        if not self.modules:
            raise HloscopeError("the folder holds no modules hloscope can read", where=where)
        if wanted is None:
            if len(self.modules) == 1:
                return self.modules[0], None
            largest = max(self.modules, key=lambda m: (m.size, m.number or 0))
            note = (
                f"the folder holds {len(self.modules)} modules; showing the largest, "
                f"{largest.key} (pick another with --module NAME)"
            )
            return largest, note
        exact = [
            m
            for m in self.modules
            if wanted in (m.key, m.name)
            or (m.number is not None and wanted.isdigit() and int(wanted) == m.number)
        ]
        if len(exact) == 1:
            return exact[0], None
        candidates = exact or [m for m in self.modules if wanted in m.key]
        if len(candidates) == 1:
            return candidates[0], None
        names = ", ".join(m.key for m in (candidates or self.modules)[:12])
        more = "" if len(candidates or self.modules) <= 12 else ", ..."
        if candidates:
            raise HloscopeError(
                f"--module {wanted} matches {len(candidates)} modules: {names}{more}", where=where
            )
        raise HloscopeError(f"no module named '{wanted}'; modules: {names}{more}", where=where)


_XLA_FILE = re.compile(
    r"^module_(?P<number>\d+)\.(?P<name>.+?)\."
    r"(?P<stage>before_optimizations|[\w.]*after_optimizations)"
    r"\.(?P<ext>txt|hlo\.pb|pb|mlir)$"
)
_XLA_MODULE_DIR = re.compile(r"^module_(?P<number>\d+)\.(?P<name>[^/]+)$")
_JAX_FILE = re.compile(r"^jax_ir(?P<number>\d+)_(?P<rest>.+)\.mlir$")
_JAX_STAGES = ("before_refine_polymorphic_shapes", "verification", "compile", "export")
_MODULE_EXTENSIONS = (".mlir", ".mlirbc", ".bc", ".hlo", ".txt", ".pb", ".fb", ".stablehlo")
# A folder of thousands of files is listed, but only this many are kept.
MAX_FOLDER_ENTRIES = 100_000


def list_folder(path: Path) -> DumpFolder:
    """The modules in a dump folder (XLA's, JAX's, or a folder of module files)."""
    where = display_path(path)
    truncated = False
    try:
        entries: list[str] = []
        with os.scandir(path) as scan:
            for entry in scan:
                if len(entries) >= MAX_FOLDER_ENTRIES:
                    truncated = True
                    break
                entries.append(entry.name)
    except OSError as exc:
        raise HloscopeError(f"cannot list the folder: {exc.strerror or exc}", where=where) from exc
    entries.sort()
    xla: dict[str, dict[str, object]] = {}
    # Prefer text over protos: both hold the same module, text keeps it readable.
    rank = {"txt": 0, "hlo.pb": 1, "pb": 2, "mlir": 3}
    for name in entries:
        match = _XLA_FILE.match(name)
        if not match:
            continue
        key = f"module_{match['number']}.{match['name']}"
        slot = "after" if match["stage"].endswith("after_optimizations") else "before"
        module = xla.setdefault(key, {"name": match["name"], "number": int(match["number"])})
        current = module.get(slot)
        if current is None or rank[match["ext"]] < module[f"{slot}_rank"]:  # type: ignore[operator]
            module[slot] = path / name
            module[f"{slot}_rank"] = rank[match["ext"]]
    for name in entries:
        # Newer XLA writes the module it was given as module_NNNN.name/module.mlir.
        match = _XLA_MODULE_DIR.match(name)
        mlir = path / name / "module.mlir"
        if match and mlir.is_file():
            key = f"module_{match['number']}.{match['name']}"
            module = xla.setdefault(key, {"name": match["name"], "number": int(match["number"])})
            module.setdefault("before", mlir)
    modules = [
        DumpModule(
            key=key,
            name=str(info["name"]),
            number=int(info["number"]),  # type: ignore[call-overload]
            before=info.get("before"),  # type: ignore[arg-type]
            after=info.get("after"),  # type: ignore[arg-type]
        )
        for key, info in xla.items()
    ]
    jax_modules = []
    for name in entries:
        match = _JAX_FILE.match(name)
        if not match:
            continue
        rest = match["rest"]
        stage = next((s for s in _JAX_STAGES if rest.endswith("_" + s)), rest.rpartition("_")[2])
        module_name = rest[: -len(stage) - 1] if rest.endswith("_" + stage) else rest
        jax_modules.append(
            DumpModule(
                key=name[: -len(".mlir")],
                name=module_name,
                number=int(match["number"]),
                before=path / name,
                after=None,
            )
        )
    if not modules and any(_XLA_PASS_FILE.match(name) for name in entries):
        kind = "xla-dump"
    elif modules and jax_modules:
        kind = "mixed"
    elif modules:
        kind = "xla-dump"
    elif jax_modules:
        kind = "jax-dump"
    else:
        kind = "folder"
    _add_pass_files(path, entries, modules)
    modules.extend(jax_modules)
    if kind == "folder":
        for name in entries:
            file = path / name
            if name.startswith(".") or not name.endswith(_MODULE_EXTENSIONS):
                continue
            if not file.is_file():
                continue
            modules.append(DumpModule(key=name, name=name, number=None, before=file, after=None))
    return DumpFolder(path=path, kind=kind, modules=tuple(modules), truncated=truncated)


# --------------------------------------------------------------------------- per-pass files

# `module_0000.jit_f.0013.PIPELINE.after_fusion.before_fusion-wrapper.txt`;
# a dump made during a pass has no `before_`
# (`module_0000.jit_f.0015.copy-insertion.after_adding_copies_to_resolve_interference.txt`).
_XLA_PASS_FILE = re.compile(
    r"^module_(?P<number>\d+)\.(?P<name>.+?)\.(?P<step>\d{4,})\.(?P<pipeline>[^.]+)"
    r"\.after_(?P<after>.+?)(?:\.before_(?P<before>[^.]+))?\.txt$"
)

PASS_DUMP_FLAG = "--xla_dump_hlo_pass_re=.*"
"""The XLA flag that writes the per-pass files."""


def parse_pass_file(path: Path) -> tuple[str, str, PassFile] | None:
    """The module key, module name and pass of a per-pass file's name, or None
    when the name is not one."""
    match = _XLA_PASS_FILE.match(path.name)
    if match is None:
        return None
    key = f"module_{match['number']}.{match['name']}"
    return (
        key,
        match["name"],
        PassFile(
            path=path,
            step=int(match["step"]),
            pipeline=match["pipeline"],
            after=match["after"],
            before=match["before"],
        ),
    )


def _add_pass_files(path: Path, entries: list[str], modules: list[DumpModule]) -> None:
    """Attach each module's per-pass files, in step order (adding modules that only
    have per-pass files)."""
    found: dict[str, tuple[str, list[PassFile]]] = {}
    for name in entries:
        parsed = parse_pass_file(path / name)
        if parsed is None:
            continue
        key, module_name, pass_file = parsed
        found.setdefault(key, (module_name, []))[1].append(pass_file)
    if not found:
        return
    by_key = {module.key: index for index, module in enumerate(modules)}
    for key, (module_name, files) in found.items():
        files.sort(key=lambda f: f.step)
        if key in by_key:
            index = by_key[key]
            modules[index] = dataclasses.replace(modules[index], passes=tuple(files))
        else:
            number = int(key.split(".", 1)[0][len("module_") :])
            modules.append(
                DumpModule(
                    key=key,
                    name=module_name,
                    number=number,
                    before=None,
                    after=None,
                    passes=tuple(files),
                )
            )


def read_pass_text(path: Path) -> str:
    """A per-pass file's text (read as it is: the listing counts its lines)."""
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise HloscopeError(
            f"cannot read it: {exc.strerror or exc}", where=display_path(path)
        ) from exc


# --------------------------------------------------------------------------- Shardy's files

SHARDY_FOLDER = "shardy"
"""Where XLA writes Shardy's dumps of each module, in its dump folder:
`shardy/<module key>/NN.<stage>.mlir` (with `xla_dump_hlo_pass_re=shardy-verbose`,
its origins too)."""


def shardy_files(folder: Path, key: str) -> tuple[Path, ...] | None:
    """Shardy's dumps of the module `key` (`module_0004.jit_f`) in an XLA dump
    folder, in the order XLA wrote them; None when the folder holds no Shardy folder
    for it (an empty tuple when it holds one without files)."""
    module = folder / SHARDY_FOLDER / key
    if not module.is_dir():
        return None
    try:
        names = sorted(entry.name for entry in os.scandir(module) if entry.is_file())
    except OSError as exc:
        raise HloscopeError(
            f"cannot list the folder: {exc.strerror or exc}", where=display_path(module)
        ) from exc
    return tuple(module / name for name in names if name.endswith(".mlir"))


# --------------------------------------------------------------------------- memory files


@dataclasses.dataclass(frozen=True)
class MemoryFiles:
    """The files XLA wrote about one module's memory, beside its optimized module."""

    buffer_assignment: Path
    """`...after_optimizations-buffer-assignment.txt`."""
    live_range: Path | None
    """`...after_optimizations-live-range.txt`, when XLA wrote it."""
    memory_usage_report: Path | None = None
    """`...after_optimizations-memory-usage-report.txt` (the memory spaces' names),
    when XLA wrote it."""


_MEMORY_FILE = re.compile(
    r"^(?P<key>module_\d+\.(?P<name>.+?))\.(?P<stage>[\w.]*after_optimizations)"
    r"-(?P<kind>buffer-assignment|live-range|memory-usage-report)\.txt$"
)


def memory_files(
    folder: Path, key: str | None = None, name: str | None = None
) -> MemoryFiles | None:
    """The buffer assignment and live ranges XLA dumped in `folder` for the module
    `key` (`module_0004.jit_f`), or else for the last module named `name` (`jit_f`),
    or else for the last module; None when the folder holds none."""
    where = display_path(folder)
    try:
        entries = sorted(entry.name for entry in os.scandir(folder))
    except OSError as exc:
        raise HloscopeError(f"cannot list the folder: {exc.strerror or exc}", where=where) from exc
    found: dict[str, dict[str, Path]] = {}
    for entry in entries:
        match = _MEMORY_FILE.match(entry)
        if match is None:
            continue
        files = found.setdefault(match["key"], {})
        if match["kind"] in files:
            raise HloscopeError(
                f"two {match['kind']} files for {match['key']}: {files[match['kind']].name} "
                f"and {entry}",
                where=where,
            )
        files[match["kind"]] = folder / entry
    candidates = [k for k in found if "buffer-assignment" in found[k]]
    if key is not None:
        candidates = [k for k in candidates if k == key]
    elif name is not None and any(k.split(".", 1)[1] == name for k in candidates):
        candidates = [k for k in candidates if k.split(".", 1)[1] == name]
    if not candidates:
        return None
    chosen = found[max(candidates, key=lambda k: int(k.split(".", 1)[0][len("module_") :]))]
    return MemoryFiles(
        buffer_assignment=chosen["buffer-assignment"],
        live_range=chosen.get("live-range"),
        memory_usage_report=chosen.get("memory-usage-report"),
    )

"""hloscope's compile cache (`hloscope.sources.compile_cache`) on its own: what it
serves, and the bad inputs it must never read as truth (an entry cut short, one of
another format, two writers of one entry, a folder that cannot be written). The
compiles here are stand-ins that count their calls; tests/cli/test_cli_compile_cache.py
compiles real programs."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import ROOT
from hloscope.sources import compile_cache
from hloscope.stages import Compilation, CompiledFor

KEY_INPUTS = {
    "module": b"module @m {}",
    "target": {"spec": "tpu:v5e:2x2"},
    "devices": (0, 1, 2, 3),
    "compiler_options": (),
    "partitions": 4,
    "replicas": 1,
    "propagation": None,
    "versions": {"jaxlib": "0.10.2"},
}


def _key(**changed: object) -> str:
    return compile_cache.compile_key(**{**KEY_INPUTS, **changed})  # type: ignore[arg-type]


class Compiler:
    """A stand-in compile: counts its calls and writes what XLA would dump."""

    def __init__(self, proto: bytes = b"\x08\x01proto") -> None:
        self.calls = 0
        self.proto = proto

    def __call__(self, options: tuple[tuple[str, str], ...]) -> Compilation:
        self.calls += 1
        given = dict(options)
        if "xla_dump_to" in given:
            folder = Path(given["xla_dump_to"])
            (folder / "module_0000.f.buffer-assignment.txt").write_text("assignment\n")
            if "xla_dump_hlo_pass_re" in given:
                (folder / "module_0000.f.0001.pass.txt").write_text("after a pass\n")
        return Compilation(
            hlo_proto=self.proto,
            hlo_text="HloModule f\n",
            compile_seconds=1.5,
            cost={"flops": 2.0},
            memory={"temp_size_in_bytes": 4},
            platform="tpu",
            compiled_for=CompiledFor(
                platform="tpu",
                name="v5e",
                spec="tpu:v5e:2x2",
                topology="v5e:2x2",
                devices=4,
                platform_devices=4,
                device_kind="TPU v5 lite",
                compiler="libtpu",
                compiler_version="0.0.1",
                deviceless=True,
                autotuned=None,
            ),
        )


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    where = tmp_path / "compiles"
    monkeypatch.setenv(compile_cache.ENV_FOLDER, str(where))
    monkeypatch.delenv(compile_cache.ENV_OFF, raising=False)
    monkeypatch.delenv(compile_cache.ENV_CAP, raising=False)
    monkeypatch.setattr(compile_cache, "_state", compile_cache._State())
    monkeypatch.setattr(compile_cache, "_kept", {})
    return where


def _forget_this_process() -> None:
    """As another process would find the folder: nothing kept in memory."""
    compile_cache._kept.clear()


def _entries(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.zip"))


def test_a_second_compile_is_read_and_equal(folder: Path) -> None:
    compiler = Compiler()
    cold = compile_cache.cached_compilation(_key(), (), compiler)
    _forget_this_process()
    warm = compile_cache.cached_compilation(_key(), (), compiler)
    assert compiler.calls == 1
    assert not cold.cached and warm.cached
    assert warm == Compilation(**{**cold.__dict__, "cached": True})


def test_within_one_process_the_compilation_is_kept(folder: Path) -> None:
    compiler = Compiler()
    compile_cache.cached_compilation(_key(), (), compiler)
    for entry in _entries(folder):
        entry.unlink()  # not read from the folder again
    assert compile_cache.cached_compilation(_key(), (), compiler).cached
    assert compiler.calls == 1


def test_the_key_names_what_is_compiled_and_not_the_dump_folder() -> None:
    assert _key() == _key()
    assert _key(devices=(1, 0, 2, 3)) != _key(), "the device order is in the key"
    assert _key(target={"spec": "tpu:v5e:2x4"}) != _key()
    assert _key(versions={"jaxlib": "0.10.3"}) != _key()
    assert _key(module=b"module @n {}") != _key()
    assert _key(propagation=((True,), (False,))) != _key()
    a = _key(compiler_options=(("xla_a", "1"), ("xla_b", "2")))
    b = _key(compiler_options=(("xla_b", "2"), ("xla_a", "1")))
    assert a == b != _key(), "options are sorted"
    assert _key(compiler_options=(("xla_dump_to", "/tmp/x"),)) == _key()


def test_dump_files_come_back_into_the_folder_asked_for(folder: Path, tmp_path: Path) -> None:
    compiler = Compiler()
    first = tmp_path / "first"
    first.mkdir()
    compile_cache.cached_compilation(_key(), (("xla_dump_to", str(first)),), compiler)
    _forget_this_process()
    again = tmp_path / "again"
    again.mkdir()
    warm = compile_cache.cached_compilation(_key(), (("xla_dump_to", str(again)),), compiler)
    assert compiler.calls == 1 and warm.cached
    assert sorted(p.name for p in again.iterdir()) == sorted(p.name for p in first.iterdir())


def test_a_plain_compile_keeps_the_buffer_assignment_for_memory(
    folder: Path, tmp_path: Path
) -> None:
    compiler = Compiler()
    compile_cache.cached_compilation(_key(), (), compiler)
    _forget_this_process()
    dump = tmp_path / "dump"
    dump.mkdir()
    assert compile_cache.cached_compilation(_key(), (("xla_dump_to", str(dump)),), compiler).cached
    assert (dump / "module_0000.f.buffer-assignment.txt").read_text() == "assignment\n"
    assert compiler.calls == 1


def test_other_dump_options_compile_again_and_hand_over_only_their_files(
    folder: Path, tmp_path: Path
) -> None:
    compiler = Compiler()
    compile_cache.cached_compilation(_key(), (), compiler)
    passes = (("xla_dump_to", str(tmp_path / "p")), ("xla_dump_hlo_pass_re", ".*"))
    (tmp_path / "p").mkdir()
    assert not compile_cache.cached_compilation(_key(), passes, compiler).cached
    assert compiler.calls == 2
    assert (tmp_path / "p" / "module_0000.f.0001.pass.txt").is_file()
    _forget_this_process()
    (tmp_path / "q").mkdir()
    again = (("xla_dump_to", str(tmp_path / "q")), ("xla_dump_hlo_pass_re", ".*"))
    assert compile_cache.cached_compilation(_key(), again, compiler).cached
    assert (tmp_path / "q" / "module_0000.f.0001.pass.txt").is_file()
    # A folder asked for without the pass dumps gets no per-pass file: what XLA
    # would have written there (the default dump's entry).
    (tmp_path / "r").mkdir()
    plain = (("xla_dump_to", str(tmp_path / "r")),)
    assert compile_cache.cached_compilation(_key(), plain, compiler).cached
    assert sorted(p.name for p in (tmp_path / "r").iterdir()) == [
        "module_0000.f.buffer-assignment.txt"
    ]
    assert compiler.calls == 2
    # Without files asked for, the entry of other dump options serves too.
    for entry in _entries(folder):
        with zipfile.ZipFile(entry) as held:
            if json.loads(held.read("entry.json"))["dumps"] == {}:
                entry.unlink()
    assert len(_entries(folder)) == 1
    _forget_this_process()
    assert compile_cache.cached_compilation(_key(), (), compiler).cached
    assert compiler.calls == 2


def test_an_entry_cut_short_is_compiled_again(folder: Path) -> None:
    compiler = Compiler(proto=os.urandom(200_000))  # not compressible: a long file
    compile_cache.cached_compilation(_key(), (), compiler)
    (entry,) = _entries(folder)
    data = entry.read_bytes()
    for cut in (len(data) // 2, len(data) - 10, 30):
        entry.write_bytes(data[:cut])  # a process killed while writing it
        _forget_this_process()
        again = compile_cache.cached_compilation(_key(), (), compiler)
        assert not again.cached
        assert again.hlo_proto == compiler.proto
    assert compiler.calls == 4
    assert entry.read_bytes() != data[:30], "written whole again"


def test_an_entry_whose_bytes_changed_is_compiled_again(folder: Path) -> None:
    compiler = Compiler(proto=os.urandom(200_000))  # most of the entry's bytes
    compile_cache.cached_compilation(_key(), (), compiler)
    (entry,) = _entries(folder)
    data = bytearray(entry.read_bytes())
    data[len(data) // 2] ^= 0xFF  # the proto no longer matches its CRC
    entry.write_bytes(bytes(data))
    _forget_this_process()
    assert not compile_cache.cached_compilation(_key(), (), compiler).cached
    assert compiler.calls == 2


def test_an_entry_with_any_bit_flipped_is_read_whole_or_compiled_again(
    folder: Path, tmp_path: Path
) -> None:
    # A member that no longer inflates raised zlib.error, which was not caught: an
    # "internal error" on every later run until the cache was cleared. Each bit of a
    # small entry in turn: it reads as it was written, or compiles again.
    dump = tmp_path / "dump"
    dump.mkdir()
    compiler = Compiler(proto=os.urandom(300) + b"\x08\x01" * 400)
    compile_cache.cached_compilation(_key(), (("xla_dump_to", str(dump)),), compiler)
    (entry,) = _entries(folder)
    data = entry.read_bytes()
    compiled_again = 0
    for bit in range(0, len(data) * 8, 3):
        flipped = bytearray(data)
        flipped[bit // 8] ^= 1 << (bit % 8)
        entry.write_bytes(bytes(flipped))
        _forget_this_process()
        out = tmp_path / f"out{bit}"
        out.mkdir()
        read = compile_cache.cached_compilation(_key(), (("xla_dump_to", str(out)),), compiler)
        assert read.hlo_proto == compiler.proto and read.hlo_text == "HloModule f\n"
        assert (out / "module_0000.f.buffer-assignment.txt").read_text() == "assignment\n"
        if not read.cached:
            compiled_again += 1
            # Replaced: the next run reads the entry the compile wrote.
            _forget_this_process()
            again = compile_cache.cached_compilation(_key(), (("xla_dump_to", str(out)),), compiler)
            assert again.cached
    assert compiled_again > 100, "flips inside the members are found"


def _rewrite_meta(entry: Path, change: dict[str, object]) -> None:
    with zipfile.ZipFile(entry) as old:
        members = {name: old.read(name) for name in old.namelist()}
    meta = json.loads(members["entry.json"])
    meta.update(change)
    members["entry.json"] = json.dumps(meta).encode()
    with zipfile.ZipFile(entry, "w") as new:
        for name, data in members.items():
            new.writestr(name, data)


@pytest.mark.parametrize("change", [{"format": 0}, {"key": "another"}, {"compilation": {}}])
def test_an_entry_of_another_version_is_compiled_again(
    folder: Path, change: dict[str, object]
) -> None:
    compiler = Compiler()
    compile_cache.cached_compilation(_key(), (), compiler)
    (entry,) = _entries(folder)
    _rewrite_meta(entry, change)
    _forget_this_process()
    assert not compile_cache.cached_compilation(_key(), (), compiler).cached
    assert compiler.calls == 2


WRITER = """
import sys
from hloscope.sources import compile_cache
from hloscope.stages import Compilation
proto = bytes([int(sys.argv[1])]) * 3_000_000
for _ in range(8):
    compile_cache._kept.clear()
    compile_cache._write(
        compile_cache.folder() / "k.plain.zip", "k",
        Compilation(proto, "text " + sys.argv[1], 1.0, None, None, "cpu"), {}, None,
    )
"""


def test_two_writers_of_one_entry_leave_a_whole_one(folder: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    writers = [subprocess.Popen([sys.executable, "-c", WRITER, str(n)], env=env) for n in (1, 2)]
    assert [w.wait(timeout=120) for w in writers] == [0, 0]
    entries = list(folder.iterdir())
    assert [e.name for e in entries] == ["k.plain.zip"], "no temporary file is left"
    read = compile_cache._read(entries[0], "k", {}, None)
    assert read is not None
    assert read.hlo_proto in (b"\x01" * 3_000_000, b"\x02" * 3_000_000)
    assert read.hlo_text == f"text {read.hlo_proto[0]}", "one writer's entry, not a mix"


def test_a_folder_that_cannot_be_written_is_one_note_and_no_cache(
    folder: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # A folder under a file cannot be made, even by root (whom chmod does not stop).
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv(compile_cache.ENV_FOLDER, str(blocker / "compiles"))
    compiler = Compiler()
    for _ in range(3):
        _forget_this_process()
        compilation = compile_cache.cached_compilation(_key(), (), compiler)
        assert not compilation.cached and compilation.hlo_proto == compiler.proto
    assert compiler.calls == 3
    notes = capsys.readouterr().err.splitlines()
    assert len(notes) == 1, notes
    assert notes[0].startswith("hloscope: note: the compile cache folder ")
    assert "compiling without the cache" in notes[0]


def test_a_read_only_folder_is_no_cache(folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder.mkdir()
    folder.chmod(0o555)
    try:
        if os.access(folder, os.W_OK):
            pytest.skip("running as root: a read-only mode does not stop writing")
        compiler = Compiler()
        compile_cache.cached_compilation(_key(), (), compiler)
        _forget_this_process()
        assert not compile_cache.cached_compilation(_key(), (), compiler).cached
        assert compiler.calls == 2
        assert capsys.readouterr().err.count("hloscope: note:") == 1
    finally:
        folder.chmod(0o755)


def test_turned_off_compiles_every_time(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    compiler = Compiler()
    monkeypatch.setenv(compile_cache.ENV_OFF, "1")
    compile_cache.cached_compilation(_key(), (), compiler)
    compile_cache.cached_compilation(_key(), (), compiler)
    monkeypatch.delenv(compile_cache.ENV_OFF)
    compile_cache.turn_off(True)
    compile_cache.cached_compilation(_key(), (), compiler)
    compile_cache.turn_off(False)
    assert compiler.calls == 3
    assert not folder.exists() or not _entries(folder)


def test_the_least_recently_used_entries_go_beyond_the_cap(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each entry holds about 0.3 MiB that does not compress; the cap holds two.
    monkeypatch.setenv(compile_cache.ENV_CAP, "0.7")
    keys = [_key(module=bytes([n])) for n in range(4)]
    compiler = Compiler(proto=os.urandom(300_000))
    for n, key in enumerate(keys[:2]):
        compile_cache.cached_compilation(key, (), compiler)
        for entry in _entries(folder):  # distinct times, oldest first
            if key in entry.name:
                os.utime(entry, (1000 + n, 1000 + n))
    _forget_this_process()
    assert compile_cache.cached_compilation(keys[0], (), compiler).cached  # used again
    compile_cache.cached_compilation(keys[2], (), compiler)
    kept = {k for k in keys if any(k in e.name for e in _entries(folder))}
    assert kept == {keys[0], keys[2]}
    assert sum(e.stat().st_size for e in _entries(folder)) <= 0.7 * 1024**2


def test_an_entry_larger_than_the_cap_is_not_kept(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(compile_cache.ENV_CAP, "0.1")
    compiler = Compiler(proto=os.urandom(200_000))
    compile_cache.cached_compilation(_key(), (), compiler)
    assert not folder.exists() or not _entries(folder)


@pytest.mark.parametrize("given", ["inf", "1e400", "-5", "nan", "2GB"])
def test_a_cap_that_is_not_a_size_is_one_note_and_the_default(
    folder: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    given: str,
) -> None:
    # inf and 1e400 raised OverflowError (exit 2 after every compile); -5 was 0.
    monkeypatch.setenv(compile_cache.ENV_CAP, given)
    compiler = Compiler()
    for _ in range(2):
        assert compile_cache.cap_bytes() == compile_cache.DEFAULT_CAP_BYTES
        _forget_this_process()
        compile_cache.cached_compilation(_key(), (), compiler)
    assert len(_entries(folder)) == 1, "kept under the default cap"
    notes = capsys.readouterr().err.splitlines()
    assert notes == [
        f"hloscope: note: HLOSCOPE_CACHE_MAX_MB={given} is not a size in MiB (a number, 0 "
        "or more): the compile cache keeps the default, 2.0 GiB"
    ]


@pytest.mark.parametrize(("given", "cap"), [("0", 0), ("1.5", 1572864), (" 2 ", 2097152)])
def test_a_cap_in_mib(monkeypatch: pytest.MonkeyPatch, given: str, cap: int) -> None:
    monkeypatch.setenv(compile_cache.ENV_CAP, given)
    assert compile_cache.cap_bytes() == cap


def test_describe_and_clear(folder: Path) -> None:
    compile_cache.cached_compilation(_key(), (), Compiler())
    held = compile_cache.describe()
    assert held.path == str(folder) and held.entries == 1 and held.size_bytes > 0
    cleared = compile_cache.clear()
    assert (cleared.entries, cleared.leftovers, cleared.writing, cleared.failed) == (1, 0, 0, ())
    assert compile_cache.describe().entries == 0


def test_the_default_folder_is_the_users_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(compile_cache.ENV_FOLDER, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", "/somewhere/cache")
    if sys.platform.startswith("linux"):
        assert compile_cache.folder() == Path("/somewhere/cache/hloscope/compiles")


HOLDER = """
import fcntl, sys, time
with open(sys.argv[1], "ab") as held:
    fcntl.flock(held.fileno(), fcntl.LOCK_EX)
    print("held", flush=True)
    time.sleep(120)
"""


@contextlib.contextmanager
def _written_by_another_process(path: Path) -> Iterator[None]:
    """`path` locked by another process while the block runs, as a writer holds its
    temporary file until it renames it."""
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(path)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        yield
    finally:
        holder.kill()
        holder.wait(timeout=30)


needs_flock = pytest.mark.skipif(sys.platform == "win32", reason="Windows has no flock")


@needs_flock
def test_a_stopped_writers_temporary_file_goes_and_a_writing_ones_stays(folder: Path) -> None:
    folder.mkdir()
    stopped = folder / ".writing-abc.zip"
    stopped.write_bytes(b"half an entry")  # fresh: a writer killed a moment ago
    writing = folder / ".writing-def.zip"
    writing.write_bytes(b"being written")
    with _written_by_another_process(writing):
        compile_cache.cached_compilation(_key(), (), Compiler())
        assert not stopped.exists() and writing.exists()


@needs_flock
def test_clear_says_what_it_removed_and_keeps_what_is_being_written(folder: Path) -> None:
    # --clear removed a writer's temporary file (the writer then said the folder
    # "cannot be written"), and counted a killed writer's leftover as an entry.
    compile_cache.cached_compilation(_key(), (), Compiler())
    (folder / ".writing-killed.zip").write_bytes(b"half an entry")
    writing = folder / ".writing-live.zip"
    writing.write_bytes(b"being written")
    with _written_by_another_process(writing):
        shown = compile_cache.describe()
        assert (shown.entries, shown.writing) == (1, 2)
        cleared = compile_cache.clear()
        assert (cleared.entries, cleared.leftovers, cleared.writing) == (1, 1, 1)
        assert cleared.failure() is None
        assert cleared.text() == (
            f"removed 1 entry and 1 temporary file of writers that stopped from {folder}; "
            "kept 1 temporary file another process is writing (an entry when it is done)\n"
        )
        assert [p.name for p in folder.iterdir()] == [writing.name]


def test_a_writer_whose_file_is_removed_keeps_the_folder(
    folder: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Its temporary file removed before the rename (--clear in another process, or
    # the folder removed): not "cannot be written", and the next compile is kept.
    removed: list[Path] = []
    rename = os.replace

    def removed_first(source: str, target: Path) -> None:
        if not removed:
            removed.append(Path(source))
            os.unlink(source)
        rename(source, target)

    monkeypatch.setattr(compile_cache.os, "replace", removed_first)
    compiler = Compiler()
    assert not compile_cache.cached_compilation(_key(), (), compiler).cached
    assert removed and not _entries(folder)
    _forget_this_process()
    compile_cache.cached_compilation(_key(), (), compiler)
    assert len(_entries(folder)) == 1
    assert capsys.readouterr().err == ""


def test_clear_says_what_it_could_not_remove(folder: Path) -> None:
    # A read-only folder said "removed 0 entries", exit 0. (A folder named like an
    # entry cannot be removed as a file, by root either.)
    compile_cache.cached_compilation(_key(), (), Compiler())
    (folder / "stuck.zip").mkdir()
    cleared = compile_cache.clear()
    assert cleared.entries == 1
    assert [name for name, _ in cleared.failed] == ["stuck.zip"]
    failure = cleared.failure()
    assert failure is not None
    assert failure.startswith("removed 1 entry; 1 file could not be removed (stuck.zip: ")


def test_clear_on_a_read_only_folder_removes_nothing_and_says_so(folder: Path) -> None:
    compile_cache.cached_compilation(_key(), (), Compiler())
    folder.chmod(0o555)
    try:
        if os.access(folder, os.W_OK):
            pytest.skip("running as root: a read-only mode does not stop removing")
        cleared = compile_cache.clear()
        assert cleared.entries == 0 and len(cleared.failed) == 1
        assert "Permission denied" in (cleared.failure() or "")
    finally:
        folder.chmod(0o755)

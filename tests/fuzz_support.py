"""Fuzzing support: mutations of valid modules, and a worker process that runs
hloscope on them so that a native crash or a hang is observed, not suffered.

`Mutation`s are plain data (what to do where); `apply` turns a seed module and a
list of them into the bytes to try. `mutations()` is the Hypothesis strategy the
tests draw from, `random_mutations()` the same operations drawn from a
`random.Random` for long campaigns (`python tests/fuzz_support.py campaign`).

`FuzzWorker` keeps a child process (`python tests/fuzz_support.py worker`) that runs
hloscope's command line in process, through typer's `CliRunner` as the tests'
`cli` fixture does, for each request, and answers with the exit code and stderr. If
the child dies (a signal), the request is answered `crashed`; if it does not answer
within the time bound, it is killed and the request is answered `hung`. The next
request starts a new child either way.
"""

from __future__ import annotations

import dataclasses
import json
import os
import random
import re
import select
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DUMPS = ROOT / "samples" / "dumps"

# One valid module per loader.
SEEDS = {
    "mlir-text": DUMPS / "mlp.stablehlo.mlir",
    "mlir-text-host": DUMPS / "host_call.stablehlo.mlir",
    "mlir-bytecode": DUMPS / "mlp.mlirbc",
    "vhlo": DUMPS / "mlp.vhlo.mlirbc",
    "hlo-text": DUMPS / "mlp.before_optimizations.hlo",
    "hlo-text-optimized": DUMPS / "mlp.after_optimizations.hlo",
    "hlo-proto": DUMPS / "mlp.after_optimizations.hlo.pb",
    "exported": DUMPS / "mlp.exported.bin",
}

# Characters that break naive text handling: bidirectional overrides, zero widths,
# byte order marks, line and paragraph separators, NUL, escapes, combining marks,
# astral planes, a lone surrogate (invalid in UTF-8), and Latin-1 bytes.
ODD_UNICODE = (
    "\u202e",
    "\u200b",
    "\ufeff",
    "\u2028",
    "\u2029",
    "\x00",
    "\x1b[31m",
    "\r",
    "\x0b",
    "\x85",
    "e\u0301",
    "\U0001d518",
    "\U0001f600",
    "\udcff",
    "\xff",
    '"',
    "\\",
    "}",
    "{",
    "\n\n",
)

# Numbers beyond every element type, and dimensions beyond every memory.
HUGE_NUMBERS = (
    "99999999999999999999999999999999",
    "340282366920938463463374607431768211457",
    "-9223372036854775809",
    "18446744073709551616",
    "1e400",
    "-1e-400",
    "0x7fffffffffffffffffff",
    "nan",
    "inf",
    "4294967296",
    "2147483648",
    "1" * 400,
)
HUGE_DIMENSIONS = ("4294967296", "9223372036854775807", "99999999999", "1000000000", "0", "-1")

_NUMBER = re.compile(rb"(?<![\w.])-?\d+(?:\.\d+)?(?:e[+-]?\d+)?(?![\w.])")
# A dimension of an MLIR tensor type (`tensor<8x64xf32>`) or an HLO shape (`f32[8,64]`).
_DIMENSION = re.compile(rb"(?<=[<x\[,])\d+(?=[x,\]])")


@dataclasses.dataclass(frozen=True)
class Mutation:
    """One change to a module's bytes. Positions and indices wrap around the
    length of what they index, so any integers give a valid mutation."""

    kind: str
    """`truncate`, `flip`, `set`, `delete_range`, `duplicate_range`, `insert`,
    `delete_line`, `duplicate_line`, `swap_lines`, `unicode`, `huge_number`,
    `huge_dimension`."""
    at: int = 0
    value: int = 0
    length: int = 1

    def __str__(self) -> str:
        return f"{self.kind}(at={self.at}, value={self.value}, length={self.length})"


KINDS = (
    "truncate",
    "flip",
    "set",
    "delete_range",
    "duplicate_range",
    "insert",
    "delete_line",
    "duplicate_line",
    "swap_lines",
    "unicode",
    "huge_number",
    "huge_dimension",
    "token",
    "in_string",
)
# Text seeds mostly get changes that keep them text, so that most mutants reach the
# parsers instead of being refused as binary.
TEXT_KINDS = (*KINDS, "token", "in_string", "in_string", "unicode", "huge_number", "delete_line")
BINARY_KINDS = (*KINDS, "flip", "flip", "set", "delete_range", "duplicate_range")
# Pieces of MLIR and HLO syntax.
TOKENS = (
    "(", ")", "{", "}", "<", ">", "[", "]", ",", ":", "=", "%", "@", "#", "!", '"', "->",
    "x", "?", "0", "-1", "1.5", "tensor<", "f32", "i1", "complex<f32>", "tuple<", "loc(",
    "ROOT ", "parameter(0)", "%arg0", "func.func", "stablehlo.add", "dense<", "sdy.sharding",
    "mhlo.sharding", "{replicated}", "metadata={", "custom-call(", "while(", "calls=",
    "backend_config=", "frontend_attributes={", "S(5)", "f32[]", "token[]", "/*index=5*/",
    "\\FF", "\\00", "\\22", "\\xff", "\\n",
)  # fmt: skip
# Put inside string literals (names, locations, attributes): odd characters, and
# escapes of bytes that are not valid UTF-8 or that end the string.
IN_STRING = (*ODD_UNICODE, "\\FF", "\\C3", "\\00", "\\22", "\\xff\\xfe", "\\", "%s", "$0")
INTERESTING_BYTES = (0x00, 0xFF, 0x7F, 0x80, 0x01, 0x0A, 0x22, 0x7B, 0x7D, 0x3C, 0x3E, 0x25)


def _lines(data: bytes) -> list[bytes]:
    return data.splitlines(keepends=True) or [b""]


def apply_one(data: bytes, m: Mutation) -> bytes:
    size = max(len(data), 1)
    at = m.at % size
    if m.kind == "truncate":
        return data[:at]
    if m.kind == "flip":
        if not data:
            return data
        mask = (m.value % 255) + 1
        return data[:at] + bytes([data[at] ^ mask]) + data[at + 1 :]
    if m.kind == "set":
        byte = INTERESTING_BYTES[m.value % len(INTERESTING_BYTES)]
        return data[:at] + bytes([byte]) + data[at + 1 :]
    if m.kind == "delete_range":
        return data[:at] + data[at + m.length :]
    if m.kind == "duplicate_range":
        return data[: at + m.length] + data[at : at + m.length] + data[at + m.length :]
    if m.kind == "insert":
        rng = random.Random(m.value)
        return data[:at] + bytes(rng.randrange(256) for _ in range(m.length)) + data[at:]
    if m.kind in ("delete_line", "duplicate_line", "swap_lines"):
        lines = _lines(data)
        i = m.at % len(lines)
        if m.kind == "delete_line":
            del lines[i]
        elif m.kind == "duplicate_line":
            lines.insert(i, lines[i])
        else:
            j = m.value % len(lines)
            lines[i], lines[j] = lines[j], lines[i]
        return b"".join(lines)
    if m.kind == "unicode":
        text = ODD_UNICODE[m.value % len(ODD_UNICODE)]
        encoded = text.encode("utf-8", "surrogatepass") if text != "\xff" else b"\xff"
        return data[:at] + encoded + data[at:]
    if m.kind == "in_string":
        quotes = [i for i, byte in enumerate(data) if byte == 0x22]
        if not quotes:
            return data
        where = quotes[m.at % len(quotes)] + 1
        piece = IN_STRING[m.value % len(IN_STRING)].encode("utf-8", "surrogatepass")
        return data[:where] + piece + data[where:]
    if m.kind == "token":
        return data[:at] + TOKENS[m.value % len(TOKENS)].encode() + data[at:]
    if m.kind in ("huge_number", "huge_dimension"):
        pattern = _NUMBER if m.kind == "huge_number" else _DIMENSION
        found = list(pattern.finditer(data))
        if not found:
            return data
        match = found[m.at % len(found)]
        choices = HUGE_NUMBERS if m.kind == "huge_number" else HUGE_DIMENSIONS
        replacement = choices[m.value % len(choices)].encode()
        return data[: match.start()] + replacement + data[match.end() :]
    raise ValueError(f"unknown mutation {m.kind}")


def apply(data: bytes, mutations: Sequence[Mutation]) -> bytes:
    for m in mutations:
        data = apply_one(data, m)
    return data


def is_text(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return b"\x00" not in data


def mutations(text: bool, max_size: int = 4) -> Any:
    """A Hypothesis strategy: a list of one to `max_size` mutations of a text or a
    binary module."""
    from hypothesis import strategies as st

    one = st.builds(
        Mutation,
        kind=st.sampled_from(TEXT_KINDS if text else BINARY_KINDS),
        at=st.integers(0, 1 << 20),
        value=st.integers(0, 1 << 16),
        length=st.integers(1, 64),
    )
    return st.lists(one, min_size=1, max_size=max_size)


def random_mutations(rng: random.Random, text: bool, max_size: int = 4) -> list[Mutation]:
    """The same operations as `mutations()`, from a `random.Random`."""
    kinds = TEXT_KINDS if text else BINARY_KINDS
    return [
        Mutation(
            kind=rng.choice(kinds),
            at=rng.randrange(1 << 20),
            value=rng.randrange(1 << 16),
            length=rng.randrange(1, 65),
        )
        for _ in range(rng.randint(1, max_size))
    ]


# --------------------------------------------------------------------------- outcomes


@dataclasses.dataclass
class Outcome:
    """What one run of hloscope did."""

    status: str
    """`exited` (the command returned), `crashed` (the process died) or `hung`."""
    code: int | None = None
    stdout: str = ""
    stderr: str = ""
    seconds: float = 0.0
    signal: int | None = None

    def problem(self, allowed: tuple[int, ...] = (0, 2)) -> str | None:
        """Why this outcome breaks hloscope's promise, or None: the run ends with an
        allowed exit code, one `hloscope: error:` line on stderr when it fails and none
        when it succeeds, a JSON document on stdout for `--json`, never a traceback or
        an internal error."""
        if self.status == "crashed":
            return f"the process died (signal {self.signal}): {self.stderr[-500:]}"
        if self.status == "hung":
            return f"no answer within {self.seconds:.0f} s"
        if "Traceback" in self.stderr or "internal error" in self.stderr:
            return f"internal failure: {self.stderr[-500:]}"
        if self.code not in allowed:
            return f"exit {self.code}: {self.stderr[-300:]}"
        lines = self.stderr.splitlines()
        if self.code == 2:
            if len(lines) != 1 or not lines[0].startswith("hloscope: error: "):
                return f"exit 2 without exactly one error line: {self.stderr[:500]!r}"
            if self.stdout:
                return f"exit 2 with output on stdout: {self.stdout[:200]!r}"
        elif lines:
            return f"exit {self.code} with stderr: {self.stderr[:300]!r}"
        return None


class FuzzWorker:
    """A child process running hloscope commands in process, restarted when it dies."""

    def __init__(self, timeout: float = 120.0, read_timeout: float = 20.0) -> None:
        self.timeout = timeout
        """How long one command may take before the child is declared hung."""
        self.read_timeout = read_timeout
        """`HLOSCOPE_READ_TIMEOUT` for hloscope's own reader process."""
        self._process: subprocess.Popen[bytes] | None = None
        self._stderr: Any = None
        self.started = 0

    def _start(self) -> subprocess.Popen[bytes]:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(ROOT / "src"), env.get("PYTHONPATH")) if p
        )
        env["HLOSCOPE_READ_TIMEOUT"] = str(self.read_timeout)
        env.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 (kept with the child)
        self.started += 1
        return subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            cwd=ROOT,
            env=env,
        )

    def _child_stderr(self) -> str:
        if self._stderr is None:
            return ""
        self._stderr.seek(0)
        text: str = self._stderr.read().decode("utf-8", "replace")
        return text

    def run(self, *args: str, timeout: float | None = None) -> Outcome:
        """Run `hloscope ARGS` in the child: hung when it has not answered within
        `timeout` seconds (the worker's own limit by default)."""
        if self._process is None or self._process.poll() is not None:
            self._process = self._start()
        process = self._process
        assert process.stdin is not None and process.stdout is not None
        start = time.monotonic()
        try:
            process.stdin.write(json.dumps(list(args)).encode() + b"\n")
            process.stdin.flush()
        except OSError:
            pass
        limit = self.timeout if timeout is None else timeout
        ready, _, _ = select.select([process.stdout], [], [], limit)
        elapsed = time.monotonic() - start
        if not ready:
            process.kill()
            process.wait()
            self._process = None
            return Outcome("hung", seconds=elapsed)
        line = process.stdout.readline()
        if not line:
            code = process.wait()
            self._process = None
            return Outcome(
                "crashed", signal=-code if code < 0 else None, stderr=self._child_stderr()
            )
        reply = json.loads(line)
        return Outcome(
            "exited", reply["code"], reply["stdout"], reply["stderr"], time.monotonic() - start
        )

    def close(self) -> None:
        if self._process is not None and self._process.poll() is None:
            assert self._process.stdin is not None
            self._process.stdin.close()
            try:
                self._process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        self._process = None


ABORT = "--abort-the-worker"
HANG = "--hang-the-worker"


def _worker() -> int:
    """The child of `FuzzWorker`: one JSON list of arguments per line in, one JSON
    reply per line out. Its own stdout is kept for replies: anything native code
    prints goes to stderr instead."""
    reply = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    from typer.testing import CliRunner

    from hloscope.cli import app

    runner = CliRunner()
    for line in sys.stdin:
        args = json.loads(line)
        # For the tests of this harness: a worker that dies, or hangs.
        if args == [ABORT]:
            os.abort()
        if args == [HANG]:
            time.sleep(3600)
        result = runner.invoke(app, args, catch_exceptions=False)
        reply.write(
            json.dumps({"code": result.exit_code, "stdout": result.stdout, "stderr": result.stderr})
            + "\n"
        )
        reply.flush()
    return 0


# --------------------------------------------------------------------------- campaigns


def campaign(argv: Sequence[str]) -> int:
    """A long random campaign: `campaign SEED_NAME COUNT [RANDOM_SEED] [OUT_DIR]`.
    Writes each input that breaks the promise to OUT_DIR with what happened."""
    name = argv[0]
    count = int(argv[1])
    rng = random.Random(int(argv[2]) if len(argv) > 2 else 0)
    out = Path(argv[3] if len(argv) > 3 else "/tmp/hloscope-fuzz")
    out.mkdir(parents=True, exist_ok=True)
    seed = SEEDS[name] if name in SEEDS else Path(name)
    data = seed.read_bytes()
    text = is_text(data)
    worker = FuzzWorker()
    found = 0
    codes: dict[str, int] = {}
    work = Path(tempfile.mkdtemp(prefix="hloscope-fuzz-"))
    target = work / seed.name
    commands = (
        ["inspect", "--json"],
        ["params", "--json"],
        ["placement", "--json"],
        ["fusions", "--json"],
        ["diff", "--json", str(seed)],
        ["inspect", "--print"],
    )
    try:
        for i in range(count):
            mutated = apply(data, random_mutations(rng, text))
            target.write_bytes(mutated)
            command = commands[i % len(commands)]
            outcome = worker.run(command[0], str(target), *command[1:])
            problem = outcome.problem((0, 1, 2) if command[0] == "diff" else (0, 2))
            key = f"{outcome.status} {outcome.code}"
            codes[key] = codes.get(key, 0) + 1
            if problem:
                found += 1
                stem = f"{seed.name}.{i}"
                (out / stem).write_bytes(mutated)
                (out / f"{stem}.txt").write_text(f"{command}\n{problem}\n")
                print(f"{i}: {problem[:200]}", flush=True)
            if i % 200 == 0:
                print(f"{name}: {i}/{count}, {found} found, {worker.started} workers", flush=True)
    finally:
        worker.close()
        target.unlink(missing_ok=True)
        work.rmdir()
    print(f"{name}: {count} tried, {found} found; outcomes {codes}")
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["worker"]:
        raise SystemExit(_worker())
    if sys.argv[1:2] == ["campaign"]:
        raise SystemExit(campaign(sys.argv[2:]))
    raise SystemExit("usage: fuzz_support.py worker | campaign SEED COUNT [RANDOM_SEED] [OUT]")

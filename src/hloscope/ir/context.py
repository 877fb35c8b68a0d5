"""The one place that talks to jaxlib's native IR libraries.

It owns the MLIR context (JAX's dialects: stablehlo, chlo, mhlo, sdy, mpmd,
func and the upstream ones), parses MLIR text and bytecode, turns portable VHLO
artifacts back into StableHLO, parses HLO text and protos with XLA's own parser
and converts them to MLIR with jaxlib's `hlo_to_stablehlo` (which keeps
`mhlo.fusion` regions and source locations, but not the memory spaces of the entry
layout: those are recorded as `hloscope.xla_shape` on the entry function's
arguments and results), and builds the `hloscope.ir.model` that analyses read, in
one walk. Nothing else in hloscope imports `jaxlib.mlir`.

All native calls run under one lock (an MLIR context is not thread safe) and with
native stderr captured, so XLA's log lines never reach the user's terminal.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from types import MappingProxyType
from typing import Any

from hloscope.errors import HloscopeError, native_stderr_captured, one_line
from hloscope.ir import model

_lock = threading.RLock()
_context: Any = None

# Attributes longer than this are summarised: multi-megabyte constants and
# serialized kernels (`backend_config`) would otherwise be copied into every report.
MAX_ATTRIBUTE_CHARS = 2000
# Dense constants with more elements than this are summarised without printing.
MAX_DENSE_ELEMENTS = 64

BYTECODE_MAGIC = b"ML\xefR"
# Module attributes kept whole however long they are: analyses read every entry
# (`analyses.params` maps each parameter to the output it aliases).
FULL_MODULE_ATTRIBUTES = frozenset({"mhlo.input_output_alias"})


@contextmanager
def native() -> Iterator[list[str]]:
    """Serialise native IR work and capture what it logs to stderr."""
    with _lock, native_stderr_captured() as logged:
        yield logged


def _make_context() -> Any:
    from jaxlib.mlir import ir
    from jaxlib.mlir._mlir_libs import _jax_mlir_ext
    from jaxlib.mlir.dialects import chlo, mhlo, mpmd, sdy, stablehlo

    # As jax._src.interpreters.mlir.make_ir_context does, without importing jax
    # (half a second we do not need to load a dump).
    registry = ir.DialectRegistry()
    _jax_mlir_ext.register_dialects(registry)
    context = ir.Context()
    context.append_dialect_registry(registry)
    context.load_all_available_dialects()
    sdy.register_dialect(context)
    mpmd.register_dialect(context)
    mhlo.register_mhlo_dialect(context)
    chlo.register_dialect(context)
    stablehlo.register_dialect(context)
    return context


_portable: Any = None


def _portable_context() -> Any:
    """A context for deserializing portable artifacts. StableHLO's deserializer loads
    dialects (quant) into the context it is given; keeping that out of the main
    context keeps what parses there independent of what was loaded before."""
    global _portable
    with _lock:
        if _portable is None:
            _portable = _make_context()
        return _portable


def mlir_context() -> Any:
    """The process-wide MLIR context with JAX's dialects."""
    global _context
    with _lock:
        if _context is None:
            _context = _make_context()
        return _context


# --------------------------------------------------------------------------- results


@dataclasses.dataclass(eq=False)
class ParsedModule:
    """A module parsed by jaxlib, with the model built from it."""

    model: model.Module
    format: str
    """What was parsed: `stablehlo`, `mlir`, `vhlo`, `hlo` (converted to MLIR),
    `hlo-native` (XLA's HLO, shown without conversion)."""
    notes: tuple[str, ...] = ()
    """Things worth telling the user (a conversion fallback, XLA warnings)."""
    _printer: Callable[[bool, int], str] | None = dataclasses.field(default=None, repr=False)
    _writer: Callable[[], bytes] | None = dataclasses.field(default=None, repr=False)

    def text(self, debug_info: bool = False, elements_limit: int = 16) -> str:
        """The module's IR as MLIR's printer (or XLA's, for `hlo-native`) prints it;
        constants with more than `elements_limit` elements are elided."""
        if self._printer is None:
            return ""
        return self._printer(debug_info, elements_limit)

    def bytecode(self) -> bytes | None:
        """The module as MLIR bytecode (None for `hlo-native`), e.g. to compile it."""
        return self._writer() if self._writer is not None else None


# --------------------------------------------------------------------------- MLIR


def _diagnostic_where(location: str, source_name: str) -> str:
    match = re.match(r'loc\("(?:[^"\\]|\\.)*":(\d+):(\d+)', location)
    if match and match.group(1) != "0":
        return f"{source_name}:{match.group(1)}:{match.group(2)}"
    return source_name


def _mlir_error(exc: Exception, source_name: str, what: str) -> HloscopeError:
    from jaxlib.mlir import ir

    if isinstance(exc, ir.MLIRError) and exc.error_diagnostics:
        first = exc.error_diagnostics[0]
        message = first.message
        notes = [n.message for n in first.notes if n.message]
        if notes and "bytecode" in " ".join(notes):
            message = f"{message} ({notes[0]})"
        return HloscopeError(
            f"{what}: {one_line(message, 300)}",
            where=_diagnostic_where(str(first.location), source_name),
        )
    return HloscopeError(f"{what}: {one_line(str(exc), 300)}", where=source_name)


def parse_mlir(data: str | bytes, source_name: str, *, trusted: bool = False) -> ParsedModule:
    """Parse MLIR text or bytecode (a portable VHLO artifact is deserialized to
    StableHLO first).

    Untrusted bytecode (a dump) is read first by the child process: MLIR's bytecode
    reader and StableHLO's deserializer can crash, abort or hang on malformed bytes,
    and they are deterministic, so what the child read safely is safe to read here.
    The child also builds the model, because jaxlib's bindings abort on names that
    are not valid UTF-8, which bytecode can hold. `trusted` bytecode (what JAX
    produced in this process) skips that. Text is parsed here: MLIR's text parser
    reports bad input as diagnostics, and valid UTF-8 text makes valid UTF-8 names,
    except through string escapes of bytes above 0x7f (`"\\FF"`), so text with those
    goes through the child first too.
    """
    from jaxlib.mlir import ir

    is_bytecode = isinstance(data, bytes) and data.startswith(BYTECODE_MAGIC)
    fmt = "mlir"
    if is_bytecode and not trusted:
        _probe_bytecode(data, source_name, _is_portable_artifact(data))  # type: ignore[arg-type]
    elif not is_bytecode and not trusted and _has_high_byte_escape(data):
        text = data.encode("utf-8", "surrogateescape") if isinstance(data, str) else data
        _probe_bytecode(text, source_name, False, is_text=True)
    with native() as logged:
        context = mlir_context()
        if is_bytecode and _is_portable_artifact(data):  # type: ignore[arg-type]
            from jaxlib.mlir.dialects import stablehlo

            try:
                module = stablehlo.deserialize_portable_artifact(_portable_context(), data)
                fmt = "vhlo"
            except Exception as exc:
                raise _portable_error(str(exc), source_name) from exc
        else:
            try:
                with context:
                    module = ir.Module.parse(data)
            except Exception as exc:
                what = "malformed MLIR bytecode" if is_bytecode else "malformed MLIR"
                raise _mlir_error(exc, source_name, what) from exc
        try:
            built = build_model(module)
        except RecursionError:
            raise
        except RuntimeError as exc:
            # nanobind's "conversion error": a name or string that is not valid UTF-8.
            raise _unreadable_error(str(exc), source_name) from exc
    if fmt == "mlir" and any(op.dialect == "stablehlo" for op in built.ops):
        fmt = "stablehlo"
    return ParsedModule(
        built, fmt, _notes_from_log(logged), _mlir_printer(module), _mlir_writer(module)
    )


def _portable_error(message: str, source_name: str) -> HloscopeError:
    reason = one_line(message.replace("failed to deserialize module", ""), 300).strip(" :")
    return HloscopeError(
        f"cannot read this portable StableHLO artifact: {reason or 'it is malformed'}",
        where=source_name,
    )


def _probe_bytecode(
    data: bytes, source_name: str, portable: bool, *, is_text: bool = False
) -> None:
    """Have the child process read untrusted bytecode (or text) first and build its
    model; raise what it found."""
    reply = _reader.request("portable" if portable else "mlir", data, read_timeout(len(data)))
    stages = reply.stages
    if "error" in stages:
        header = stages["error"][0]
        message = str(header.get("message", ""))
        if portable:
            raise _portable_error(message, source_name)
        where = _diagnostic_where(str(header.get("location", "")), source_name)
        what = "malformed MLIR" if is_text else "malformed MLIR bytecode"
        raise HloscopeError(f"{what}: {one_line(message, 300)}", where=where)
    if "parsed" not in stages:
        if is_text:
            reader = "MLIR's parser"
        else:
            reader = "StableHLO's deserializer" if portable else "MLIR's bytecode reader"
        raise HloscopeError(f"{reader} {reply.failure()}; the file is malformed", where=source_name)
    if "unreadable" in stages:
        raise _unreadable_error(str(stages["unreadable"][0].get("message", "")), source_name)
    if "built" not in stages:
        raise HloscopeError(
            f"jaxlib's MLIR bindings {reply.failure()} reading the parsed module (a name "
            "that is not valid UTF-8?); the file is malformed",
            where=source_name,
        )


def _unreadable_error(message: str, source_name: str) -> HloscopeError:
    if "conversion error" in message or "UTF-8" in message or "utf-8" in message:
        reason = "a name or string in it is not valid UTF-8"
    else:
        reason = one_line(message, 300)
    return HloscopeError(
        f"jaxlib's MLIR bindings cannot read this module: {reason}", where=source_name
    )


# A string escape of a byte above 0x7f (`"\\FF"`): MLIR text can spell names that are
# not valid UTF-8 with it.
_HIGH_BYTE_ESCAPE = re.compile(r"\\[89a-fA-F][0-9a-fA-F]")


def _has_high_byte_escape(data: str | bytes) -> bool:
    text = data if isinstance(data, str) else data.decode("utf-8", "replace")
    return _HIGH_BYTE_ESCAPE.search(text) is not None


def _is_portable_artifact(data: bytes) -> bool:
    # The bytecode producer string follows the magic and the version varint.
    return b"StableHLO_v" in data[4:40]


def _mlir_printer(module: Any) -> Callable[[bool, int], str]:
    def print_module(debug_info: bool, elements_limit: int) -> str:
        with native():
            text: str = module.operation.get_asm(
                enable_debug_info=debug_info,
                large_elements_limit=elements_limit,
                assume_verified=True,
            )
        return text

    return print_module


def _mlir_writer(module: Any) -> Callable[[], bytes]:
    def write_module() -> bytes:
        import io

        buffer = io.BytesIO()
        with native():
            module.operation.write_bytecode(file=buffer)
        return buffer.getvalue()

    return write_module


def _notes_from_log(lines: list[str]) -> tuple[str, ...]:
    """XLA's warnings, de-duplicated and without glog prefixes."""
    notes: dict[str, None] = {}
    for line in lines:
        text = re.sub(r"^[WEI]\d{4} [\d:. ]+\s*\d+ [\w.]+:\d+\]\s*", "", line).strip()
        text = re.sub(r"\d+", "N", text) if text.startswith("Invalid stack_frame_id") else text
        if text and not text.startswith("WARNING: All log messages before absl"):
            notes[text] = None
    return tuple(notes)[:10]


# --------------------------------------------------------------------------- HLO


def parse_hlo_text(text: str, source_name: str) -> ParsedModule:
    """Parse HLO text with XLA's parser and convert it to MLIR.

    Both run in a child process: XLA's converter can crash (a segfault) on modules
    its parser accepts, and a dump is untrusted input.
    """
    return _parse_hlo_isolated("text", text.encode("utf-8"), source_name)


def parse_hlo_proto(data: bytes, source_name: str, *, trusted: bool = False) -> ParsedModule:
    """Parse a serialized `HloModuleProto` (or an `HloProto` wrapping one).

    `trusted` protos (made by XLA in this process) are converted in process; others in
    a child process, as for HLO text.
    """
    if not trusted:
        return _parse_hlo_isolated("proto", data, source_name)
    module = hlo_module_from_proto(data)
    if module is None:
        raise HloscopeError("not a valid HLO module proto", where=source_name)
    return _from_hlo_module(module, source_name, [])


# Untrusted input gets this long per megabyte (and at least READ_TIMEOUT_SECONDS)
# in the child process before it is declared hung.
READ_TIMEOUT_SECONDS = 60.0
READ_SECONDS_PER_MB = 2.0


def read_timeout(size: int) -> float:
    """How long the child may take over `size` bytes of input (`HLOSCOPE_READ_TIMEOUT`
    overrides it, in seconds)."""
    import os

    override = os.environ.get("HLOSCOPE_READ_TIMEOUT")
    if override:
        try:
            return max(0.1, float(override))
        except ValueError:
            pass
    return READ_TIMEOUT_SECONDS + READ_SECONDS_PER_MB * size / 1e6


Frame = tuple[dict[str, Any], bytes]


@dataclasses.dataclass
class Reply:
    """What the child process answered to one request."""

    frames: list[Frame]
    died: int | None
    """The child's exit code when it died before finishing (negative: a signal)."""
    timed_out: float | None
    """The time limit it exceeded, when it hung."""

    @property
    def stages(self) -> dict[str, Frame]:
        return {str(header.get("stage")): (header, body) for header, body in self.frames}

    def failure(self) -> str:
        """`crashed (SIGSEGV)`, `did not finish within 60 s`, ... for a message."""
        import signal

        if self.timed_out is not None:
            return f"did not finish within {self.timed_out:.0f} s"
        if self.died is not None and self.died < 0:
            try:
                return f"crashed ({signal.Signals(-self.died).name})"
            except ValueError:
                return f"crashed (signal {-self.died})"
        return f"failed (exit {self.died})"


class _NativeReader:
    """A child process that reads untrusted IR with jaxlib's native readers, kept for
    reuse.

    XLA's HLO-to-MLIR converter segfaults on some modules its parser accepts (a
    typed-FFI custom call with a non-dictionary backend_config, in the corpus); MLIR's
    bytecode reader and StableHLO's deserializer segfault, abort (invalid UTF-8 in a
    diagnostic) or hang on malformed bytes. So untrusted HLO and bytecode are read
    here first. When the child dies or hangs, the request is answered from what it
    sent before, and the next request starts a new child. Requests and replies are
    frames: a JSON header line with a `size`, then that many bytes.
    """

    def __init__(self) -> None:
        self._process: Any = None

    def _start(self) -> Any:
        import os
        import subprocess
        import sys
        from pathlib import Path

        env = dict(os.environ)
        package_root = str(Path(__file__).resolve().parent.parent.parent)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
        try:
            return subprocess.Popen(
                [sys.executable, "-m", "hloscope.ir.context"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env=env,
            )
        except OSError as exc:
            raise HloscopeError(f"cannot start the IR reader process: {exc}") from exc

    def request(self, kind: str, payload: bytes, timeout: float | None = None) -> Reply:
        """Send one request and collect the reply frames until `done`, the child's death,
        or `timeout` seconds."""
        import queue
        import threading

        with _lock:
            if self._process is None or self._process.poll() is not None:
                self._process = self._start()
            process = self._process
            frames: list[Frame] = []
            incoming: queue.Queue[Frame | None] = queue.Queue()

            def receive() -> None:
                try:
                    while True:
                        frame = _read_frame(process.stdout)
                        incoming.put(frame)
                        if frame is None or frame[0].get("stage") == "done":
                            return
                except (OSError, ValueError):
                    incoming.put(None)

            timed_out: float | None = None
            try:
                with suppress(OSError):  # a child that died reading it answers with EOF
                    _write_frame(process.stdin, {"kind": kind}, payload)
                threading.Thread(target=receive, daemon=True).start()
                while True:
                    try:
                        frame = incoming.get(timeout=timeout)
                    except queue.Empty:
                        timed_out = timeout
                        process.kill()
                        break
                    if frame is None:
                        break
                    frames.append(frame)
                    if frame[0].get("stage") == "done":
                        return Reply(frames, None, None)
            except BaseException:
                # Interrupted (ctrl-c, --timeout) mid-request: the rest of this reply
                # would answer the next request, so this child goes.
                process.kill()
                process.wait()
                self._process = None
                raise
            code: int = process.wait()
            self._process = None
            return Reply(frames, None if timed_out is not None else code, timed_out)


def _write_frame(stream: Any, header: dict[str, Any], body: bytes = b"") -> None:
    import json

    stream.write(json.dumps({**header, "size": len(body)}).encode() + b"\n" + body)
    stream.flush()


def _read_frame(stream: Any) -> Frame | None:
    import json

    line = stream.readline()
    if not line.endswith(b"\n"):
        return None
    header = json.loads(line)
    size = int(header.get("size", 0))
    body = stream.read(size) if size else b""
    if len(body) != size:
        return None
    return header, body


_reader = _NativeReader()


def _parse_hlo_isolated(kind: str, payload: bytes, source_name: str) -> ParsedModule:
    reply = _reader.request(kind, payload, read_timeout(len(payload)))
    stages = reply.stages
    if "error" in stages:
        raise _hlo_error(str(stages["error"][0].get("message", "")), source_name)
    logged = list(stages["done"][0].get("log", [])) if "done" in stages else []
    if "parsed" not in stages:
        raise HloscopeError(
            f"XLA's HLO parser {reply.failure()} reading this file", where=source_name
        )

    def xla_module() -> Any:
        # The child parsed it without crashing, so parsing here is safe too.
        module = hlo_module_from_proto(stages["parsed"][1])
        if module is None and kind == "text":
            import jaxlib._hlo as hlo

            with native():
                module = hlo.hlo_module_from_text(payload.decode("utf-8"))
        if module is None:
            raise HloscopeError("not a valid HLO module", where=source_name)
        return module

    entry_layout = stages["parsed"][0].get("entry_layout")
    if "converted" not in stages:
        reason = (
            f"XLA's converter {reply.failure()}"
            if "done" not in stages
            else "XLA's converter failed"
        )
        module = xla_module()
        notes = (
            f"shown as XLA's HLO: converting it to MLIR failed ({reason}); "
            "op names are HLO opcodes",
        )
        return ParsedModule(
            _build_hlo_native_model(module),
            "hlo-native",
            notes + _notes_from_log(logged),
            lambda _debug, _limit: str(module.to_string()),
        )
    names = None
    if "names" in stages:
        import json

        answer = json.loads(stages["names"][1])
        names = HloNames(
            [(op, name) for op, name in answer["ops"]], answer["fusion_backend_configs"]
        )
    return _from_converted(
        xla_module, stages["converted"][1], source_name, logged, names, entry_layout
    )


def _reader_worker() -> int:
    """The child process of `_NativeReader`. For each request:

    - HLO (`text`, `proto`): parse it, send its module proto, then its MLIR
      conversion, then the HLO names of the converted ops (`hlo_instruction_names`);
    - MLIR bytecode or text (`mlir`), portable artifacts (`portable`): read it in a
      fresh context and say whether it parsed (or send the first diagnostic), then
      build its model and say whether that worked;

    then `done` with what the native code logged.
    """
    import json
    import sys

    import jaxlib._hlo as hlo
    import jaxlib._jax as jax_ext
    from jaxlib.mlir import ir
    from jaxlib.mlir.dialects import stablehlo

    requests = sys.stdin.buffer
    replies = sys.stdout.buffer
    while True:
        request = _read_frame(requests)
        if request is None:
            return 0
        header, payload = request
        kind = header.get("kind")
        with native_stderr_captured() as logged:
            if kind in ("mlir", "portable"):
                # A fresh context each time: what parses must not depend on dialects an
                # earlier request loaded (StableHLO's deserializer loads `quant`).
                context = _make_context()
                try:
                    if kind == "portable":
                        module = stablehlo.deserialize_portable_artifact(context, payload)
                    else:
                        with context:
                            module = ir.Module.parse(payload)
                except Exception as exc:
                    error: dict[str, Any] = {"stage": "error", "message": str(exc)}
                    if isinstance(exc, ir.MLIRError) and exc.error_diagnostics:
                        first = exc.error_diagnostics[0]
                        error["message"] = first.message
                        error["location"] = str(first.location)
                    _write_frame(replies, error)
                else:
                    _write_frame(replies, {"stage": "parsed"})
                    # What the main process does next: jaxlib's bindings abort on some
                    # malformed names.
                    try:
                        build_model(module)
                    except Exception as exc:
                        _write_frame(replies, {"stage": "unreadable", "message": str(exc)})
                    else:
                        _write_frame(replies, {"stage": "built"})
                    del module
            else:
                _read_hlo(kind, payload, replies, hlo, jax_ext, json)
        _write_frame(replies, {"stage": "done", "log": logged[:50]})


def _read_hlo(kind: Any, payload: bytes, replies: Any, hlo: Any, jax_ext: Any, json: Any) -> None:
    module: Any = None
    try:
        if kind == "text":
            module = hlo.hlo_module_from_text(payload.decode("utf-8"))
        else:
            module = hlo_module_from_proto(payload)
            if module is None:
                raise ValueError("not a valid HLO module proto")
    except Exception as exc:
        _write_frame(replies, {"stage": "error", "message": str(exc)})
        return
    proto = module.as_serialized_hlo_module_proto()
    printed = str(module.to_string())
    layout = entry_computation_layout(printed)
    _write_frame(replies, {"stage": "parsed", "entry_layout": layout}, proto)
    try:
        converted = jax_ext.mlir.hlo_to_stablehlo(proto)
    except Exception as exc:
        _write_frame(replies, {"stage": "convert-error", "message": str(exc)})
        return
    _write_frame(replies, {"stage": "converted"}, converted)
    names = hlo_instruction_names(proto) if wants_names(proto, printed) else None
    if names is not None:
        answer = {"ops": names.ops, "fusion_backend_configs": names.fusion_backend_configs}
        _write_frame(replies, {"stage": "names"}, json.dumps(answer).encode())


def hlo_module_from_proto(data: bytes) -> Any | None:
    """XLA's `HloModule` from proto bytes, or None if they are not one."""
    import jaxlib._hlo as hlo

    candidates = [data]
    inner = _proto_field(data, 1)
    if inner is not None:
        # An HloProto (what --xla_dump_hlo_as_proto writes) has the module in field 1.
        candidates.insert(0, inner)
    with native():
        for candidate in candidates:
            try:
                module = hlo.HloModule.from_serialized_hlo_module_proto(candidate)
            except Exception:
                continue
            if module.computations():
                return module
    return None


def _proto_field(data: bytes, field: int) -> bytes | None:
    """The payload of the first length-delimited `field` in a protobuf message."""
    pos = 0
    size = len(data)

    def varint() -> int:
        nonlocal pos
        shift = value = 0
        while pos < size:
            byte = data[pos]
            pos += 1
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
            shift += 7
            if shift > 63:
                break
        raise ValueError("bad varint")

    try:
        while pos < size:
            key = varint()
            number, wire = key >> 3, key & 7
            if wire == 2:
                length = varint()
                if pos + length > size:
                    return None
                if number == field:
                    return data[pos : pos + length]
                pos += length
            elif wire == 0:
                varint()
            elif wire == 1:
                pos += 8
            elif wire == 5:
                pos += 4
            else:
                return None
    except ValueError:
        return None
    return None


def _hlo_error(message: str, source_name: str) -> HloscopeError:
    # XLA: "INVALID_ARGUMENT: Syntax error when trying to parse the text as a
    # HloModule:\nwas parsing 4:14: error: expects opcode but sees: x\n  <line>\n ^"
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    found: list[tuple[str, str, str]] = []
    for line in lines:
        match = re.match(r"^(?:was parsing\s+)?(\d+):(\d+):\s*(?:error:)?\s*(.*)$", line)
        if match and match.group(3) not in [m for _, _, m in found]:
            found.append((match.group(1), match.group(2), match.group(3)))
    if found:
        line, column, _ = found[0]
        text = "; ".join(m for _, _, m in found[:2])
        return HloscopeError(
            f"malformed HLO: {one_line(text, 300)}", where=f"{source_name}:{line}:{column}"
        )
    text = next((line for line in reversed(lines) if not line.endswith(":")), message)
    text = re.sub(r"^[A-Z_]+:\s*", "", text)
    return HloscopeError(f"malformed HLO: {one_line(text, 300)}", where=source_name)


def _from_hlo_module(hlo_module: Any, source_name: str, logged: list[str]) -> ParsedModule:
    import jaxlib._jax as jax_ext

    with native() as converted_log:
        proto = hlo_module.as_serialized_hlo_module_proto()
        bytecode = jax_ext.mlir.hlo_to_stablehlo(proto)
        printed = str(hlo_module.to_string())
        layout = entry_computation_layout(printed)
    names = hlo_instruction_names(proto) if wants_names(proto, printed) else None
    return _from_converted(
        lambda: hlo_module, bytecode, source_name, logged + converted_log, names, layout
    )


def _from_converted(
    xla_module: Callable[[], Any],
    bytecode: bytes,
    source_name: str,
    logged: list[str],
    names: HloNames | None = None,
    entry_layout: str | None = None,
) -> ParsedModule:
    """The model of an HLO module from its MLIR conversion, or XLA's own view when the
    conversion does not verify (ops MHLO cannot express, say).

    `entry_layout` is the module's `entry_computation_layout`, whose memory spaces the
    conversion drops (see `record_entry_memory_spaces`)."""
    from jaxlib.mlir import ir

    with native() as parse_log:
        try:
            with mlir_context():
                module = ir.Module.parse(bytecode)
        except Exception as exc:
            reason = one_line(str(exc).replace("Unable to parse module assembly:", ""), 200)
            hlo_module = xla_module()
            built = _build_hlo_native_model(hlo_module)
            notes: tuple[str, ...] = (
                f"shown as XLA's HLO: converting it to MLIR failed ({reason}); "
                "op names are HLO opcodes",
            )
            return ParsedModule(
                built,
                "hlo-native",
                notes + _notes_from_log(logged),
                lambda _debug, _limit: str(hlo_module.to_string()),
            )
        built = build_model(module)
    _attach_hlo_names(built, names)
    record_entry_memory_spaces(built, entry_layout)
    notes = _notes_from_log(logged + parse_log)
    return ParsedModule(built, "hlo", notes, _mlir_printer(module), _mlir_writer(module))


def hlo_to_mlir_bytecode(hlo_proto: bytes) -> bytes:
    """Convert a serialized HloModuleProto to StableHLO bytecode (with mhlo.fusion)."""
    import jaxlib._jax as jax_ext

    with native():
        out: bytes = jax_ext.mlir.hlo_to_stablehlo(hlo_proto)
    return out


# --------------------------------------------------------------------------- HLO names


@dataclasses.dataclass(frozen=True)
class HloNames:
    """What the MLIR conversion of an HLO module drops, recovered from the module."""

    ops: list[tuple[str, str | None]]
    """For each op of the converted module, in pre-order: its MLIR name and the HLO
    instruction it came from (None for ops the conversion made up)."""
    fusion_backend_configs: dict[str, str]
    """`backend_config` of the fusion instructions that have one, by name."""


def wants_names(hlo_proto: bytes, printed: str) -> bool:
    """Whether to recover HLO instruction names: for modules after XLA's
    optimizations (scheduled, or holding a fusion instruction: opcode, field 2 of an
    instruction, is the string `fusion`), whose ops users know by those names.
    Recovering them costs a second conversion of the module."""
    header = printed[: printed.find("\n")]
    return "is_scheduled=true" in header or b"\x12\x06fusion" in hlo_proto


def hlo_instruction_names(hlo_proto: bytes) -> HloNames | None:
    """The HLO instruction name of every op of `hlo_to_stablehlo(hlo_proto)`.

    The conversion uses an instruction's metadata (`op_name`, source frames) as the
    op's location and the instruction's name only when there is no metadata, so the
    names of fusions (`broadcast_add_fusion`) and copies are usually lost. Converting
    a copy of the module with the metadata removed gives ops in the same order whose
    locations are the names; the two are paired by position. None when the proto
    cannot be rewritten or converted.
    """
    import jaxlib._jax as jax_ext
    from jaxlib.mlir import ir

    rewritten = _without_metadata(hlo_proto)
    if rewritten is None:
        return None
    stripped, configs = rewritten
    names: list[tuple[str, str | None]] = []
    with native():
        try:
            bytecode = jax_ext.mlir.hlo_to_stablehlo(stripped)
            with mlir_context():
                module = ir.Module.parse(bytecode)
        except Exception:
            return None
        locations: dict[Any, str | None] = {}

        def visit(operation: Any) -> None:
            loc = operation.location
            name = locations.get(loc, "")
            if name == "":
                parsed = model.parse_location(str(loc))
                name = parsed.names[0] if len(parsed.names) == 1 and not parsed.frames else None
                locations[loc] = name
            names.append((operation.name, name))
            for region in operation.regions:
                for block in region.blocks:
                    for child in block.operations:
                        visit(child.operation)

        for child in module.body.operations:
            visit(child.operation)
    return HloNames(names, configs)


def _attach_hlo_names(built: model.Module, names: HloNames | None) -> None:
    """Record the HLO names in the model when both conversions have the same ops."""
    if names is None or len(names.ops) != len(built.ops):
        return
    if any(op.name != name for op, (name, _) in zip(built.ops, names.ops, strict=True)):
        return
    for op, (_, hlo_name) in zip(built.ops, names.ops, strict=True):
        op.hlo_name = hlo_name
    built.fusion_backend_configs = MappingProxyType(names.fusion_backend_configs)


def _without_metadata(hlo_proto: bytes) -> tuple[bytes, dict[str, str]] | None:
    """An `HloModuleProto` with the `metadata` of every instruction removed, and the
    backend configs of its fusion instructions; None if it is not one.

    Only the wire format is read: computations (field 3 of HloModuleProto) hold
    instructions (field 2 of HloComputationProto), whose `name` is field 1, `opcode`
    field 2, `metadata` field 7 and `backend_config` field 43 (xla/service/hlo.proto).
    Everything else is copied as it is.
    """
    configs: dict[str, str] = {}

    def instruction(data: bytes) -> bytes:
        kept: list[bytes] = []
        name = opcode = ""
        config = b""
        for number, wire, start, end, value in _proto_fields(data):
            if number == 7 and wire == 2:
                continue
            kept.append(data[start:end])
            if wire == 2 and number in (1, 2, 43):
                if number == 1:
                    name = value.decode("utf-8", "replace")
                elif number == 2:
                    opcode = value.decode("utf-8", "replace")
                else:
                    config = value
        if opcode == "fusion" and config:
            text = config.decode("utf-8", "replace")
            if len(text) > MAX_ATTRIBUTE_CHARS:
                digest = hashlib.blake2b(config, digest_size=8).hexdigest()
                text = f"{text[:200]}...({len(text)} chars, {digest})"
            configs[name] = text
        return b"".join(kept)

    def rewrite(data: bytes, field: int, inner: Callable[[bytes], bytes]) -> bytes:
        out: list[bytes] = []
        for number, wire, start, end, value in _proto_fields(data):
            if number == field and wire == 2:
                body = inner(value)
                out.append(_proto_key(number, 2) + _proto_varint(len(body)) + body)
            else:
                out.append(data[start:end])
        return b"".join(out)

    try:
        stripped = rewrite(hlo_proto, 3, lambda computation: rewrite(computation, 2, instruction))
    except (ValueError, IndexError):
        return None
    return stripped, configs


def _proto_fields(data: bytes) -> Iterator[tuple[int, int, int, int, bytes]]:
    """(field number, wire type, start, end, payload) of each field of a message;
    `data[start:end]` is the whole field, key included. Raises ValueError if malformed."""
    pos = 0
    size = len(data)

    def varint() -> int:
        nonlocal pos
        shift = value = 0
        while True:
            if pos >= size or shift > 63:
                raise ValueError("bad varint")
            byte = data[pos]
            pos += 1
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
            shift += 7

    while pos < size:
        start = pos
        key = varint()
        number, wire = key >> 3, key & 7
        if wire == 0:
            varint()
            payload = b""
        elif wire == 2:
            length = varint()
            if pos + length > size:
                raise ValueError("truncated field")
            payload = data[pos : pos + length]
            pos += length
        elif wire == 1:
            pos += 8
            payload = b""
        elif wire == 5:
            pos += 4
            payload = b""
        else:
            raise ValueError(f"unsupported wire type {wire}")
        if pos > size:
            raise ValueError("truncated field")
        yield number, wire, start, pos, payload


def _proto_varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _proto_key(number: int, wire: int) -> bytes:
    return _proto_varint((number << 3) | wire)


# --------------------------------------------------------------------------- memory spaces

# XLA's HLO-to-MLIR conversion keeps an instruction's non-default layout, memory
# space included, in an `xla_shape` attribute (`"f32[1024]{0:S(5)}"`), but drops the
# memory spaces of the entry computation's layout (`entry_computation_layout=
# {(f32[8]{0:S(5)})->f32[8]{0}}`): it keeps only the dimension order. A parameter or
# result in host memory (`S(5)`, what `memory_kind="pinned_host"` becomes after
# optimization) would look like any other. So the layout is read from XLA's printed
# module header and, where a parameter's or result's layout has a memory space,
# recorded on the entry function's argument or result as this attribute: its HLO
# shape with layout, printed as a string attribute (`"f32[8]{0:S(5)}"`).
ENTRY_SHAPE_ATTRIBUTE = model.ENTRY_SHAPE_ATTRIBUTE

_MEMORY_SPACE = re.compile(r"S\((\d+)\)")


def entry_computation_layout(hlo_text: str) -> str | None:
    """The `entry_computation_layout={...}` value of XLA's printed module header (its
    first line), or None."""
    header = hlo_text.split("\n", 1)[0]
    start = header.find("entry_computation_layout={")
    if start < 0:
        return None
    start += len("entry_computation_layout={")
    depth = 0
    for i in range(start, len(header)):
        ch = header[i]
        if ch in "({[":
            depth += 1
        elif ch in ")}]":
            if depth == 0:
                return header[start:i]
            depth -= 1
    return None


def _shape_leaves(shape: str) -> list[str]:
    """Array shapes of an HLO shape, tuples flattened: `(f32[2]{0}, s32[])` -> both."""
    shape = re.sub(r"/\*[^*]*\*/", "", shape).strip()
    if shape.startswith("(") and shape.endswith(")"):
        leaves: list[str] = []
        depth = 0
        start = 1
        # Split at top-level commas; `<` is not a bracket here (`f32[<=4]`).
        for i in range(1, len(shape) - 1):
            ch = shape[i]
            if ch in "({[":
                depth += 1
            elif ch in ")}]":
                depth -= 1
            elif ch == "," and depth == 0:
                leaves.extend(_shape_leaves(shape[start:i]))
                start = i + 1
        leaves.extend(_shape_leaves(shape[start:-1]))
        return leaves
    return [shape] if shape else []


def entry_layout_shapes(layout: str) -> tuple[list[str], list[str]]:
    """Parameter and result shapes (tuples flattened) of an entry computation layout
    `(p0, p1)->result`."""
    layout = layout.strip()
    if not layout.startswith("("):
        return [], []
    depth = 0
    for i, ch in enumerate(layout):
        if ch in "({[":
            depth += 1
        elif ch in ")}]":
            depth -= 1
            if depth == 0:
                params = _shape_leaves(layout[: i + 1])
                rest = layout[i + 1 :].strip()
                results = _shape_leaves(rest[2:]) if rest.startswith("->") else []
                return params, results
    return [], []


def _has_memory_space(shape: str) -> bool:
    layout = shape[shape.find("{") :] if "{" in shape else ""
    return any(match.group(1) != "0" for match in _MEMORY_SPACE.finditer(layout))


def record_entry_memory_spaces(built: model.Module, layout: str | None) -> None:
    """Record the entry layout's memory spaces on the entry function's arguments and
    results (as `ENTRY_SHAPE_ATTRIBUTE`), where the flattened layout matches them."""
    entry = built.entry
    if not layout or "S(" not in layout or entry is None:
        return
    params, results = entry_layout_shapes(layout)
    arguments = entry.arguments
    outputs = entry.results
    changed = False
    if len(params) == len(arguments) and any(_has_memory_space(p) for p in params):
        arguments = tuple(
            dataclasses.replace(
                argument,
                attributes={**argument.attributes, ENTRY_SHAPE_ATTRIBUTE: f'"{shape}"'},
            )
            if _has_memory_space(shape)
            else argument
            for argument, shape in zip(arguments, params, strict=True)
        )
        changed = True
    if len(results) == len(outputs) and any(_has_memory_space(r) for r in results):
        outputs = tuple(
            dataclasses.replace(
                result, attributes={**result.attributes, ENTRY_SHAPE_ATTRIBUTE: f'"{shape}"'}
            )
            if _has_memory_space(shape)
            else result
            for result, shape in zip(outputs, results, strict=True)
        )
        changed = True
    if changed:
        functions = dict(built.functions)
        functions[entry.name] = dataclasses.replace(entry, arguments=arguments, results=outputs)
        built.functions = functions


# --------------------------------------------------------------------------- model builder


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector while a large object graph is built.

    Building the model allocates a few objects per op, all of them kept; each
    collection would walk the whole growing graph again (15 to 30% of the build time
    at 100k ops, more beyond). Reference counting still frees everything else.
    """
    import gc

    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def build_model(module: Any) -> model.Module:
    """Build the model in one pre-order walk of an `ir.Module`.

    Strings for types, attributes and locations are cached by the (uniqued) MLIR
    object, so each distinct one is printed once. This loop is most of the time of
    loading a module beyond MLIR's own parse (see `make bench`), hence the local
    bindings and the bulk accessors (`results.types`, `map` over operands).
    """
    from jaxlib.mlir import ir

    ops: list[model.Op] = []
    value_types: list[str] = []
    value_owner: list[int] = []
    value_ids: dict[Any, int] = {}
    type_text: dict[Any, str] = {}
    attr_text: dict[Any, str] = {}
    locations: dict[Any, str] = {}
    unresolved: list[tuple[model.Op, list[Any]]] = []
    functions: dict[str, model.Function] = {}
    dense_type = ir.DenseElementsAttr
    empty = model.EMPTY_ATTRIBUTES
    new_op = model.Op
    new_block = model.Block
    new_region = model.Region
    add_op = ops.append
    add_type = value_types.append
    add_owner = value_owner.append
    value_id = value_ids.get
    cached_type = type_text.get
    cached_attr = attr_text.get
    cached_location = locations.get

    def attribute(attr: Any) -> str:
        text = cached_attr(attr)
        if text is None:
            text = attr_text[attr] = _attribute_text(attr, dense_type)
        return text

    def location(loc: Any) -> str:
        # Keyed by the location's attribute: ir.Location hashes by Python object,
        # ir.Attribute by the uniqued MLIR attribute.
        key = loc.attr
        text = cached_location(key)
        if text is None:
            text = locations[key] = str(loc)
        return text

    def new_values(values: Any, owner: int) -> tuple[int, ...]:
        first = len(value_types)
        for t in values.types:
            text = cached_type(t)
            if text is None:
                text = type_text[t] = str(t)
            add_type(text)
            add_owner(owner)
        index = first
        for value in values:
            value_ids[value] = index
            index += 1
        return tuple(range(first, index))

    def visit(operation: Any, parent: model.Op | None, function: str | None) -> model.Op:
        op_id = len(ops)
        operands = tuple(map(value_id, operation.operands))
        attrs = operation.attributes
        attributes: dict[str, str] | Mapping[str, str] = empty
        if len(attrs):
            try:
                attributes = {name: attribute(attr) for name, attr in attrs.items()}
            except TypeError:
                attributes = _attributes_one_by_one(operation, attribute)
        loc = operation.location
        key = loc.attr
        loc_text = cached_location(key)
        if loc_text is None:
            loc_text = locations[key] = str(loc)
        if None in operands:
            # Used before defined (graph regions, later blocks): resolved at the end.
            op = new_op(op_id, operation.name, (), (), attributes, loc_text, parent, function)
            unresolved.append((op, list(operation.operands)))
        else:
            op = new_op(op_id, operation.name, operands, (), attributes, loc_text, parent, function)  # type: ignore[arg-type]
        add_op(op)
        results = operation.results
        if len(results):
            op.results = new_values(results, op_id)
        regions = operation.regions
        if len(regions):
            is_function = parent is None and op.name == "func.func"
            if is_function:
                function = model.string_attribute(attributes.get("sym_name", '""'))
            built_regions = []
            for region in regions:
                blocks = []
                for block in region.blocks:
                    arguments = block.arguments
                    argument_ids = new_values(arguments, op_id) if len(arguments) else ()
                    children = [visit(child.operation, op, function) for child in block.operations]
                    blocks.append(new_block(argument_ids, tuple(children)))
                built_regions.append(new_region(tuple(blocks)))
            op.regions = tuple(built_regions)
            op.end = len(ops)
            if is_function:
                built = _function(op, operation, value_types, attribute, location)
                if built is not None:
                    functions.setdefault(built.name, built)
        elif parent is None and op.name == "func.func":
            # A declaration (no body).
            built = _function(op, operation, value_types, attribute, location)
            if built is not None:
                functions.setdefault(built.name, built)
        return op

    body_ops: list[model.Op] = []
    with gc_paused():
        for child in module.body.operations:
            body_ops.append(visit(child.operation, None, None))

    for op, values in unresolved:
        op.operands = tuple(-1 if i is None else i for i in map(value_id, values))

    module_attrs = module.operation.attributes
    attributes = {
        name: str(attr) if name in FULL_MODULE_ATTRIBUTES else attribute(attr)
        for name, attr in module_attrs.items()
    }
    name = attributes.get("sym_name")
    return model.Module(
        name=model.string_attribute(name) if name else None,
        attributes=attributes,
        ops=ops,
        body=tuple(body_ops),
        functions=functions,
        value_types=value_types,
        value_owner=value_owner,
    )


def _attributes_one_by_one(operation: Any, attribute: Callable[[Any], str]) -> dict[str, str]:
    """Attributes of an op some of whose attributes the bindings cannot represent.

    jaxlib's bindings raise TypeError for complex-valued dense constants (and abort
    the process if one is reached through `NamedAttribute.attr`), so such values are
    read from the op's generic printed form instead.
    """
    attrs = operation.attributes
    out: dict[str, str] = {}
    generic: str | None = None
    for name in attrs.keys():  # noqa: SIM118 (an MLIR attribute map, not a dict)
        try:
            out[name] = attribute(attrs[name])
        except TypeError:
            if generic is None:
                generic = operation.get_asm(
                    print_generic_op_form=True,
                    skip_regions=True,
                    large_elements_limit=MAX_DENSE_ELEMENTS,
                    assume_verified=True,
                )
            out[name] = _printed_attribute(generic, name)
    return out


def _printed_attribute(generic: str, name: str) -> str:
    """The value of attribute `name` in an op's generic printed form."""
    match = re.search(rf"[{{,<]\s*{re.escape(name)} = ", generic)
    if not match:
        return "?"
    depth = 0
    start = match.end()
    for i in range(start, len(generic)):
        ch = generic[i]
        if ch in "<([{":
            depth += 1
        elif ch in ">)]}":
            if depth == 0:
                return generic[start:i].strip()
            depth -= 1
        elif ch == "," and depth == 0:
            return generic[start:i].strip()
    return generic[start:].strip()


def _attribute_text(attr: Any, dense_type: Any) -> str:
    if isinstance(attr, dense_type):
        try:
            large = not attr.is_splat and len(attr) > MAX_DENSE_ELEMENTS
        except Exception:
            # Element types the bindings cannot size (complex): size it from the type.
            large = _type_elements(str(attr.type)) > MAX_DENSE_ELEMENTS
        if large:
            count = _type_elements(str(attr.type))
            return f"dense<...{count} elements, {_digest(attr)}> : {attr.type}"
    text = str(attr)
    if len(text) > MAX_ATTRIBUTE_CHARS:
        digest = hashlib.blake2b(text.encode(), digest_size=8).hexdigest()
        return f"{text[:200]}...({len(text)} chars, {digest})"
    return text


def _type_elements(mlir_type: str) -> int:
    types = model.parse_type(mlir_type)
    return (types[0].elements or 0) if types else 0


def _digest(attr: Any) -> str:
    try:
        import numpy as np

        data = np.ascontiguousarray(np.asarray(attr)).tobytes()
    except Exception:
        return "contents not summarised"
    return hashlib.blake2b(data, digest_size=8).hexdigest()


def _function(
    op: model.Op,
    operation: Any,
    value_types: list[str],
    attribute: Callable[[Any], str],
    location: Callable[[Any], str],
) -> model.Function | None:
    name = model.string_attribute(op.attributes.get("sym_name", ""))
    if not name:
        return None
    visibility = model.string_attribute(op.attributes.get("sym_visibility", '"public"'))
    raw_attrs = operation.attributes
    arg_attrs = _dict_list(raw_attrs, "arg_attrs", attribute)
    res_attrs = _dict_list(raw_attrs, "res_attrs", attribute)
    function_type = str(raw_attrs["function_type"]) if "function_type" in raw_attrs else ""
    input_types, result_types = _split_function_type(function_type)
    arguments: list[model.Argument] = []
    if op.regions and op.regions[0].blocks:
        block = operation.regions[0].blocks[0]
        for index, value in enumerate(op.regions[0].blocks[0].arguments):
            attrs = arg_attrs[index] if index < len(arg_attrs) else model.EMPTY_ATTRIBUTES
            arguments.append(
                model.Argument(
                    index=index,
                    value=value,
                    type=value_types[value],
                    location_text=location(block.arguments[index].location),
                    attributes=attrs,
                )
            )
    else:
        # A declaration: no block, so no argument values.
        arguments = [
            model.Argument(i, -1, t, "loc(unknown)", model.EMPTY_ATTRIBUTES)
            for i, t in enumerate(input_types)
        ]
    results = tuple(
        model.Result(i, t, res_attrs[i] if i < len(res_attrs) else model.EMPTY_ATTRIBUTES)
        for i, t in enumerate(result_types)
    )
    return model.Function(name, visibility, op, tuple(arguments), results)


def _dict_list(attrs: Any, key: str, attribute: Callable[[Any], str]) -> list[Mapping[str, str]]:
    if key not in attrs:
        return []
    out: list[Mapping[str, str]] = []
    try:
        entries_list = list(attrs[key])
    except TypeError:
        return out
    for entry in entries_list:
        entries: dict[str, str] = {}
        # By name, never through NamedAttribute.attr (see _attributes_one_by_one).
        for i in range(len(entry)):
            name = entry[i].name
            try:
                entries[name] = attribute(entry[name])
            except TypeError:
                entries[name] = "?"
        out.append(entries or model.EMPTY_ATTRIBUTES)
    return out


def _split_function_type(text: str) -> tuple[list[str], list[str]]:
    """`(tensor<4xf32>, tensor<i32>) -> (tensor<f32>)` into input and result types."""
    if not text.startswith("("):
        return [], []
    depth = 0
    for i, ch in enumerate(text):
        if ch in "(<[{":
            depth += 1
        elif ch in ")>]}":
            depth -= 1
            if depth == 0:
                inputs = model.split_top_level(text[1:i])
                rest = text[i + 1 :].strip()
                if rest.startswith("->"):
                    rest = rest[2:].strip()
                    if rest.startswith("(") and rest.endswith(")"):
                        results = model.split_top_level(rest[1:-1])
                    else:
                        results = [rest] if rest else []
                else:
                    results = []
                return inputs, results
    return [], []


# --------------------------------------------------------------------------- HLO fallback


_HLO_INSTRUCTION = re.compile(
    r"^\s*(?:ROOT\s+)?%?(?P<name>[\w.-]+)\s*=\s*(?P<shape>.+?)\s+"
    r"(?P<opcode>[a-z][\w-]*)\((?P<operands>.*)$",
    # Backend configs can span lines.
    re.DOTALL,
)


def _build_hlo_native_model(hlo_module: Any) -> model.Module:
    """A model of XLA's HLO module itself, used when its MLIR conversion fails.

    Each computation becomes a function, each instruction an op named
    `hlo.<opcode>`; shapes come from XLA's own printing of the instruction.
    """
    ops: list[model.Op] = []
    value_types: list[str] = []
    value_owner: list[int] = []
    functions: dict[str, model.Function] = {}
    body: list[model.Op] = []
    fusion_configs: dict[str, str] = {}
    with native():
        computations = list(hlo_module.computations())
        printed = str(hlo_module.to_string())
        entry = re.search(r"^ENTRY\s+%?([\w.-]+)", printed, re.MULTILINE)
        entry_name = entry.group(1) if entry else (computations[-1].name if computations else None)
        for computation in computations:
            is_entry = computation.name == entry_name
            func_name = "main" if is_entry else computation.name
            func_op = model.Op(
                len(ops),
                "func.func",
                (),
                (),
                {
                    "sym_name": f'"{func_name}"',
                    "sym_visibility": '"public"' if is_entry else '"private"',
                },
                _name_loc(computation.name),
                None,
                None,
            )
            ops.append(func_op)
            body.append(func_op)
            ids: dict[str, int] = {}
            children: list[model.Op] = []
            arguments: list[model.Argument] = []
            parameters: list[tuple[int, model.Op]] = []
            for instruction in computation.instructions():
                text = str(instruction.to_string())
                match = _HLO_INSTRUCTION.match(text)
                shape = match.group("shape") if match else ""
                # HloOpcode.kGetTupleElement -> get-tuple-element, as XLA prints it.
                enum_name = str(instruction.opcode).rsplit(".", 1)[-1].removeprefix("k")
                opcode = re.sub(r"(?<!^)(?=[A-Z])", "-", enum_name).lower()
                if match:
                    opcode = match.group("opcode")
                value = len(value_types)
                value_types.append(_hlo_shape_to_mlir(shape))
                operands = tuple(ids.get(o.name, -1) for o in instruction.operands())
                op = model.Op(
                    len(ops),
                    f"hlo.{opcode}",
                    operands,
                    (value,),
                    _hlo_attributes(text),
                    _name_loc(instruction.name),
                    func_op,
                    func_name,
                    hlo_name=str(instruction.name),
                )
                if opcode == "fusion":
                    config = _hlo_backend_config(text)
                    if config:
                        fusion_configs[str(instruction.name)] = config
                value_owner.append(op.id)
                ids[instruction.name] = value
                ops.append(op)
                children.append(op)
                if opcode == "parameter":
                    number = re.search(r"parameter\((\d+)\)", text)
                    parameters.append((int(number.group(1)) if number else len(parameters), op))
            func_op.regions = (model.Region((model.Block((), tuple(children)),)),)
            func_op.end = len(ops)
            for index, op in sorted(parameters, key=lambda item: item[0]):
                arguments.append(
                    model.Argument(
                        index,
                        op.results[0],
                        value_types[op.results[0]],
                        op.location_text,
                        model.EMPTY_ATTRIBUTES,
                    )
                )
            root_type = value_types[children[-1].results[0]] if children else ""
            functions[func_name] = model.Function(
                func_name,
                "public" if is_entry else "private",
                func_op,
                tuple(arguments),
                (model.Result(0, root_type, model.EMPTY_ATTRIBUTES),) if children else (),
            )
    built = model.Module(
        name=str(hlo_module.name),
        attributes={},
        ops=ops,
        body=tuple(body),
        functions=functions,
        value_types=value_types,
        value_owner=value_owner,
        fusion_backend_configs=MappingProxyType(fusion_configs),
    )
    record_entry_memory_spaces(built, entry_computation_layout(printed))
    return built


def _hlo_backend_config(text: str) -> str | None:
    """The `backend_config={...}` of an instruction as XLA prints it (braces nest)."""
    start = text.find("backend_config={")
    if start < 0:
        return None
    start += len("backend_config=")
    depth = 0
    in_string = escaped = False
    for i in range(start, len(text)):
        ch = text[i]
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return text[start : i + 1]
    return None


def _name_loc(name: str) -> str:
    escaped = name.replace("\\", "\\\\").replace('"', '\\"')
    return f'loc("{escaped}")'


_HLO_DTYPES = {
    "pred": "i1",
    "s8": "i8",
    "s16": "i16",
    "s32": "i32",
    "s64": "i64",
    "u8": "ui8",
    "u16": "ui16",
    "u32": "ui32",
    "u64": "ui64",
    "c64": "complex<f32>",
    "c128": "complex<f64>",
}


def _hlo_shape_to_mlir(shape: str) -> str:
    """`f32[4,8]{1,0}` -> `tensor<4x8xf32>`; tuples become `tuple<...>`."""
    shape = re.sub(r"\{[^{}]*\}", "", shape).strip()
    if shape.startswith("("):
        inner = model.split_top_level(shape[1:-1])
        return "tuple<" + ", ".join(_hlo_shape_to_mlir(s) for s in inner) + ">"
    match = re.match(r"^(\w+)\[([^\]]*)\]", shape)
    if not match:
        return "!stablehlo.token" if shape.startswith("token") else shape
    dtype = _HLO_DTYPES.get(match.group(1), match.group(1))
    dims = [d.strip().lstrip("<=") or "?" for d in match.group(2).split(",") if d.strip()]
    return "tensor<" + "".join(f"{d}x" for d in dims) + dtype + ">"


def _hlo_attributes(text: str) -> dict[str, str]:
    attributes: dict[str, str] = {}
    # While and conditional bodies too, so that the functions that run are reachable.
    keys = ("frontend_attributes", "sharding", "custom_call_target", "kind", "calls")
    calls = ("calls", "body", "condition", "branch_computations")
    for key in (*keys, *calls[1:]):
        match = re.search(rf"\b{key}=(\{{[^}}]*\}}|\"[^\"]*\"|[\w.%-]+)", text)
        if match:
            value = match.group(1)
            # Computations as MLIR names functions (`@body`), for the call graph.
            attributes[key] = re.sub(r"%([\w.-]+)", r"@\1", value) if key in calls else value
    return attributes


if __name__ == "__main__":
    raise SystemExit(_reader_worker())

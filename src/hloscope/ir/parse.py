"""The parse entry points: MLIR text and bytecode (portable VHLO artifacts too), HLO
text and protos.

MLIR is parsed here, in a context with JAX's dialects; HLO goes through XLA's own
parser and jaxlib's `hlo_to_stablehlo` (see `hloscope.ir.hlo`). Untrusted input
(a dump) that native code could crash on is read by the reader process first
(`hloscope.ir.reader`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any

from hloscope.errors import HloscopeError, one_line
from hloscope.ir import hlo, reader
from hloscope.ir.attributes import Mesh, parse_mesh
from hloscope.ir.build import build_model
from hloscope.ir.context import (
    cut_short_note,
    mlir_context,
    native,
    portable_context,
    release_note,
    walk_operations,
)
from hloscope.ir.model import Module
from hloscope.ir.parsed import (
    ParsedFormat,
    ParsedModule,
    mlir_printer,
    mlir_writer,
    notes_from_log,
)

BYTECODE_MAGIC = b"ML\xefR"


def parse_mlir(
    data: str | bytes, source_name: str, *, trusted: bool = False, defer_model: bool = False
) -> ParsedModule:
    """Parse MLIR text or bytecode (a portable VHLO artifact is deserialized to
    StableHLO first).

    Untrusted bytecode (a dump) is read first by the child process: MLIR's bytecode
    reader and StableHLO's deserializer can crash, abort or hang on malformed bytes,
    and they are deterministic, so what the child read safely is safe to read here.
    The child builds nothing: it parses and reads the names that the model builder
    reads without MLIR's printer (jaxlib's bindings abort on names that are not valid
    UTF-8, which bytecode can hold); the model is built once, here. `trusted`
    bytecode (what JAX produced in this process) skips that. Text is parsed here:
    MLIR's text parser reports bad input as diagnostics, and valid UTF-8 text makes
    valid UTF-8 names, except through string escapes of bytes above 0x7f (`"\\FF"`),
    so text with those goes through the child first too.

    `defer_model`: the model is built when first asked for (`ParsedModule.model`),
    not here, so that the module can be printed first.
    """
    from jaxlib.mlir import ir

    is_bytecode = isinstance(data, bytes) and data.startswith(BYTECODE_MAGIC)
    fmt: ParsedFormat = "mlir"
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
                module = stablehlo.deserialize_portable_artifact(portable_context(), data)
                fmt = "vhlo"
            except Exception as exc:
                raise _portable_error(str(exc), source_name, data) from exc  # type: ignore[arg-type]
        else:
            try:
                with context:
                    module = ir.Module.parse(data)
            except Exception as exc:
                what = "malformed MLIR bytecode" if is_bytecode else "malformed MLIR"
                raise _mlir_error(exc, source_name, what, data) from exc
        with _names_readable(source_name):
            if fmt == "mlir" and _has_stablehlo_op(module):
                fmt = "stablehlo"

    def build() -> Module:
        with native(), _names_readable(source_name):
            return build_model(module)

    return ParsedModule(
        build if defer_model else build(),
        fmt,
        notes_from_log(logged),
        mlir_printer(module),
        mlir_writer(module),
    )


def declared_meshes(bytecode: bytes) -> tuple[Mesh, ...]:
    """The `sdy.mesh` ops of a module JAX lowered in this process, without building
    its model: the user's axis names, for the optimized module compiled from it
    (whose meshes XLA names `axis_0`, ...)."""
    from jaxlib.mlir import ir

    out: list[Mesh] = []
    with native(), mlir_context():
        module = ir.Module.parse(bytecode)
        for op in module.body.operations:
            if op.operation.name == "sdy.mesh":
                name = ir.StringAttr(op.attributes["sym_name"]).value
                out.append(parse_mesh(name, str(op.attributes["mesh"])))
    return tuple(out)


@contextmanager
def _names_readable(source_name: str) -> Iterator[None]:
    """Reading the module's names through jaxlib's bindings: nanobind's "conversion
    error" (a name or string that is not valid UTF-8) becomes the one-line error."""
    try:
        yield
    except RecursionError:
        raise
    except RuntimeError as exc:
        raise _unreadable_error(str(exc), source_name) from exc


def _has_stablehlo_op(module: Any) -> bool:
    """Whether any op of `module` is in the StableHLO dialect (walked natively, up to
    the first one: the model may not be built yet)."""
    found = False

    def visit(operation: Any) -> bool:
        nonlocal found
        found = bool(operation.name.partition(".")[0] == "stablehlo")
        return found

    walk_operations(module.operation, visit)
    return found


def parse_hlo_text(text: str, source_name: str, *, given_to_xla: bool = False) -> ParsedModule:
    """Parse HLO text with XLA's parser and convert it to MLIR.

    Both run in a child process: XLA's converter can crash (a segfault) on modules
    its parser accepts, and a dump is untrusted input. `given_to_xla`: the module
    before XLA's optimizations, always converted where it can be (`HLOSCOPE_HLO_FORM`
    chooses the optimized program's form).
    """
    return hlo.parse_hlo_isolated(
        "text", text.encode("utf-8"), source_name, given_to_xla=given_to_xla
    )


def parse_hlo_proto(data: bytes, source_name: str, *, trusted: bool = False) -> ParsedModule:
    """Parse a serialized `HloModuleProto` (or an `HloProto` wrapping one).

    `trusted` protos (made by XLA in this process) are converted in process; others in
    a child process, as for HLO text.
    """
    if not trusted:
        return hlo.parse_hlo_isolated("proto", data, source_name)
    module = hlo.hlo_module_from_proto(data)
    if module is None:
        raise HloscopeError("not a valid HLO module proto", where=source_name)
    return hlo.from_hlo_module(module, source_name, [])


def in_xla_form() -> AbstractContextManager[None]:
    """Inside the block, an optimized HLO module is read in XLA's own form, converted
    or not: a diff whose other side does not convert reads both in one form."""
    return hlo.xla_form()


def parse_compiled_hlo(proto: bytes, printed: str, source_name: str) -> ParsedModule:
    """The optimized module XLA compiled in this process, from its serialized
    `HloModuleProto` and XLA's text of it: trusted, converted in process, and
    neither read back into an `HloModule` nor printed again."""
    return hlo.from_hlo_proto(proto, printed, source_name, [])


def _diagnostic_where(location: str, source_name: str) -> str:
    match = re.match(r'loc\("(?:[^"\\]|\\.)*":(\d+):(\d+)', location)
    if match and match.group(1) != "0":
        return f"{source_name}:{match.group(1)}:{match.group(2)}"
    return source_name


def _diagnostic_line(location: str) -> int | None:
    where = _diagnostic_where(location, "")
    return int(where.split(":")[1]) if where else None


def _mlir_error(exc: Exception, source_name: str, what: str, data: str | bytes) -> HloscopeError:
    from jaxlib.mlir import ir

    raw = data if isinstance(data, bytes) else None
    if isinstance(exc, ir.MLIRError) and exc.error_diagnostics:
        first = exc.error_diagnostics[0]
        message = first.message
        notes = [n.message for n in first.notes if n.message]
        if notes and "bytecode" in " ".join(notes):
            message = f"{message} ({notes[0]})"
        note = release_note(message, raw)
        line = _diagnostic_line(str(first.location))
        if line is not None and not (raw or b"").startswith(BYTECODE_MAGIC):
            text = data if isinstance(data, str) else data.decode("utf-8", "replace")
            note = cut_short_note(text, line) or note
        return HloscopeError(
            f"{what}: {one_line(message, 300)}{note}",
            where=_diagnostic_where(str(first.location), source_name),
        )
    note = release_note(str(exc), raw)
    return HloscopeError(f"{what}: {one_line(str(exc), 300)}{note}", where=source_name)


def _portable_error(message: str, source_name: str, data: bytes) -> HloscopeError:
    reason = one_line(message.replace("failed to deserialize module", ""), 300).strip(" :")
    return HloscopeError(
        f"cannot read this portable StableHLO artifact: {reason or 'it is malformed'}"
        f"{release_note(message, data)}",
        where=source_name,
    )


def _probe_bytecode(
    data: bytes, source_name: str, portable: bool, *, is_text: bool = False
) -> None:
    """Have the child process read untrusted bytecode (or text) first, and the names
    the model builder reads; raise what it found."""
    kind: reader.RequestKind = "portable" if portable else "mlir"
    reply = reader.request(kind, data, reader.read_timeout(len(data)))
    stages = reply.stages
    if reader.STAGE_ERROR in stages:
        header = stages[reader.STAGE_ERROR][0]
        message = str(header.get("message", ""))
        if portable:
            raise _portable_error(message, source_name, data)
        where = _diagnostic_where(str(header.get("location", "")), source_name)
        what = "malformed MLIR" if is_text else "malformed MLIR bytecode"
        note = release_note(message, None if is_text else data)
        line = _diagnostic_line(str(header.get("location", "")))
        if is_text and line is not None:
            note = cut_short_note(data.decode("utf-8", "replace"), line) or note
        raise HloscopeError(f"{what}: {one_line(message, 300)}{note}", where=where)
    if reader.STAGE_PARSED not in stages:
        if is_text:
            native_reader = "MLIR's parser"
        else:
            native_reader = "StableHLO's deserializer" if portable else "MLIR's bytecode reader"
        raise HloscopeError(
            f"{native_reader} {reply.failure()}; the file is malformed", where=source_name
        )
    if reader.STAGE_UNREADABLE in stages:
        raise _unreadable_error(
            str(stages[reader.STAGE_UNREADABLE][0].get("message", "")), source_name
        )
    if reader.STAGE_BUILT not in stages:
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

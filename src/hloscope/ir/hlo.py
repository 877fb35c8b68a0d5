"""XLA's HLO: read with XLA's own parser and converted to MLIR with jaxlib's
`hlo_to_stablehlo`, which keeps `mhlo.fusion` regions and source locations.

The conversion drops what the model needs from the HLO module (instruction names,
fusion backend configs, the memory spaces of the entry layout); those are recovered
from the module itself (`hloscope.ir.hlo_names`, `hloscope.ir.layout`). A module
whose conversion fails or does not verify is shown in XLA's own form
(`hloscope.ir.hlo_native`), and so is every HLO module when `HLOSCOPE_HLO_FORM=xla`
(`xla_form_forced`): the switch the differential tests read both builders through.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import os
import re
from collections.abc import Callable, Iterator
from typing import Any

from hloscope.errors import HloscopeError, one_line
from hloscope.ir import reader
from hloscope.ir.build import build_model
from hloscope.ir.context import cut_short_note, mlir_context, native, release_note, xla_hlo
from hloscope.ir.hlo_names import HloNames, attach_hlo_names, hlo_instruction_names, wants_names
from hloscope.ir.layout import (
    entry_computation_layout,
    module_counts,
    record_entry_memory_spaces,
    record_module_counts,
)
from hloscope.ir.parsed import ParsedModule, mlir_printer, mlir_writer, notes_from_log
from hloscope.ir.proto import proto_field

XLA_FORM_SWITCH = "HLOSCOPE_HLO_FORM"
"""`xla`: read every HLO module in XLA's own form, without converting it to MLIR (the
form LLM-scale TPU programs arrive in); anything else, or unset: convert where XLA's
converter can."""

XLA_FORM_NOTE = f"shown as XLA's HLO ({XLA_FORM_SWITCH}=xla); op names are HLO opcodes"
ONE_FORM_NOTE = (
    "shown as XLA's HLO, as the other side of the diff is (it does not convert to MLIR); "
    "op names are HLO opcodes"
)


_XLA_FORM_WANTED: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "xla_form_wanted", default=False
)


def xla_form_forced() -> bool:
    """Whether `HLOSCOPE_HLO_FORM=xla`, or a caller in `xla_form()`, asks for XLA's own
    form of every optimized HLO module."""
    if _XLA_FORM_WANTED.get():
        return True
    return os.environ.get(XLA_FORM_SWITCH, "").strip().lower() == "xla"


def _forced_note() -> str:
    return ONE_FORM_NOTE if _XLA_FORM_WANTED.get() else XLA_FORM_NOTE


@contextlib.contextmanager
def xla_form() -> Iterator[None]:
    """Read the optimized HLO modules parsed inside the block in XLA's own form: a diff
    reads its two sides in one form when one of them does not convert."""
    token = _XLA_FORM_WANTED.set(True)
    try:
        yield
    finally:
        _XLA_FORM_WANTED.reset(token)


def parse_hlo_isolated(
    kind: reader.RequestKind, payload: bytes, source_name: str, *, given_to_xla: bool = False
) -> ParsedModule:
    """Parse HLO text or a proto in the reader process, then read what it answered:
    the module converted to MLIR, or XLA's own form where the conversion failed.
    `given_to_xla`: the module before XLA's optimizations, converted whatever
    `HLOSCOPE_HLO_FORM` says (the switch is for the optimized program)."""
    reply = reader.request(kind, payload, reader.read_timeout(len(payload)))
    return parsed_from_reply(reply, kind, payload, source_name, given_to_xla=given_to_xla)


def parsed_from_reply(
    reply: reader.Reply,
    kind: reader.RequestKind,
    payload: bytes,
    source_name: str,
    *,
    given_to_xla: bool = False,
) -> ParsedModule:
    """The model of an HLO module from what a child process answered of it
    (`reader_child.send_hlo_module`): the reader's, or the module runner's of the
    module it compiled (`kind` "proto", `payload` empty: the proto is the reply's)."""
    stages = reply.stages
    if reader.STAGE_ERROR in stages:
        text = payload.decode("utf-8", "replace") if kind == "text" else None
        raise _hlo_error(str(stages[reader.STAGE_ERROR][0].get("message", "")), source_name, text)
    logged = (
        list(stages[reader.STAGE_DONE][0].get("log", [])) if reader.STAGE_DONE in stages else []
    )
    if reader.STAGE_PARSED not in stages:
        raise HloscopeError(
            f"XLA's HLO parser {reply.failure()} reading this file", where=source_name
        )

    def xla_module() -> Any:
        # The child parsed it without crashing, so parsing here is safe too.
        module = hlo_module_from_proto(stages[reader.STAGE_PARSED][1])
        if module is None and kind == "text":
            hlo = xla_hlo()

            with native():
                module = hlo.hlo_module_from_text(payload.decode("utf-8"))
        if module is None:
            raise HloscopeError("not a valid HLO module", where=source_name)
        return module

    entry_layout = stages[reader.STAGE_PARSED][0].get("entry_layout")
    counts = stages[reader.STAGE_PARSED][0].get("counts")
    if reader.STAGE_CONVERTED not in stages or (xla_form_forced() and not given_to_xla):
        reason = (
            f"XLA's converter {reply.failure()}"
            if reader.STAGE_DONE not in stages
            else "XLA's converter failed"
        )
        module = xla_module()
        notes = (
            (_forced_note(),)
            if reader.STAGE_CONVERTED in stages
            else (
                f"shown as XLA's HLO: converting it to MLIR failed ({reason}); "
                "op names are HLO opcodes",
            )
        )
        from hloscope.ir.hlo_native import build_hlo_native_model

        return ParsedModule(
            build_hlo_native_model(module, counts),
            "hlo-native",
            notes + notes_from_log(logged),
            lambda _debug, _limit: str(module.to_string()),
        )
    names = None
    if reader.STAGE_NAMES in stages:
        answer = json.loads(stages[reader.STAGE_NAMES][1])
        names = HloNames(
            [(op, name) for op, name in answer["ops"]],
            answer["backend_configs"],
            answer.get("opcodes", {}),
            answer.get("schedule", {}),
            answer.get("async_types", {}),
        )
    return _from_converted(
        xla_module,
        stages[reader.STAGE_CONVERTED][1],
        source_name,
        logged,
        names,
        entry_layout,
        counts,
    )


def hlo_module_from_proto(data: bytes) -> Any | None:
    """XLA's `HloModule` from proto bytes, or None if they are not one."""
    hlo = xla_hlo()

    candidates = [data]
    inner = proto_field(data, 1)
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


def _hlo_error(message: str, source_name: str, text: str | None = None) -> HloscopeError:
    # XLA: "INVALID_ARGUMENT: Syntax error when trying to parse the text as a
    # HloModule:\nwas parsing 4:14: error: expects opcode but sees: x\n  <line>\n ^"
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    found: list[tuple[str, str, str]] = []
    for line in lines:
        match = re.match(r"^(?:was parsing\s+)?(\d+):(\d+):\s*(?:error:)?\s*(.*)$", line)
        if match and match.group(3) not in [m for _, _, m in found]:
            found.append((match.group(1), match.group(2), match.group(3)))
    note = release_note(message)
    if found:
        line, column, _ = found[0]
        cut = cut_short_note(text, int(line)) if text is not None else None
        note = cut if cut is not None else note
        text = "; ".join(m for _, _, m in found[:2])
        return HloscopeError(
            f"malformed HLO: {one_line(text, 300)}{note}", where=f"{source_name}:{line}:{column}"
        )
    text = next((line for line in reversed(lines) if not line.endswith(":")), message)
    text = re.sub(r"^[A-Z_]+:\s*", "", text)
    return HloscopeError(f"malformed HLO: {one_line(text, 300)}{note}", where=source_name)


def from_hlo_module(hlo_module: Any, source_name: str, logged: list[str]) -> ParsedModule:
    with native() as printed_log:
        proto = hlo_module.as_serialized_hlo_module_proto()
        printed = str(hlo_module.to_string())
    return from_hlo_proto(proto, printed, source_name, logged + printed_log, lambda: hlo_module)


def from_hlo_proto(
    proto: bytes,
    printed: str,
    source_name: str,
    logged: list[str],
    xla_module: Callable[[], Any] | None = None,
) -> ParsedModule:
    """The model of an HLO module given as its proto and XLA's text of it (what a
    compilation in this process hands over, so neither is made again). `xla_module`
    gives XLA's `HloModule` when the conversion fails; by default it is read from
    `proto` then."""
    import jaxlib._jax as jax_ext

    with native() as converted_log:
        try:
            if xla_form_forced():
                raise _XlaFormForced
            bytecode: bytes | str = jax_ext.mlir.hlo_to_stablehlo(proto)
        except _XlaFormForced:
            bytecode = XLA_FORM_NOTE
        except Exception as exc:
            # XLA's converter refuses some modules outright (a TPU kernel's tiled
            # layouts: "UNIMPLEMENTED: Tiled layout is not supported yet"): shown as
            # XLA's own view, as a conversion that does not verify is.
            bytecode = f"the converter refused it: {one_line(str(exc), 200)}"
    layout = entry_computation_layout(printed)
    counts = module_counts(printed)
    names = (
        hlo_instruction_names(proto)
        if not xla_form_forced() and wants_names(proto, printed)
        else None
    )

    def module_from_proto() -> Any:
        module = hlo_module_from_proto(proto)
        if module is None:
            raise HloscopeError("not a valid HLO module proto", where=source_name)
        return module

    return _from_converted(
        xla_module or module_from_proto,
        bytecode,
        source_name,
        logged + converted_log,
        names,
        layout,
        counts,
    )


def _from_converted(
    xla_module: Callable[[], Any],
    bytecode: bytes | str,
    source_name: str,
    logged: list[str],
    names: HloNames | None = None,
    entry_layout: str | None = None,
    counts: dict[str, str] | None = None,
) -> ParsedModule:
    """The model of an HLO module from its MLIR conversion, or XLA's own view when the
    conversion does not verify (ops MHLO cannot express, say).

    `entry_layout` is the module's `entry_computation_layout`, whose memory spaces the
    conversion drops (see `record_entry_memory_spaces`); `counts`, its header's device
    counts, which it drops too (`record_module_counts`). `bytecode` is text where the
    converter refused the module: why."""
    from jaxlib.mlir import ir

    with native() as parse_log:
        try:
            if isinstance(bytecode, str):
                raise ValueError(bytecode)
            with mlir_context():
                module = ir.Module.parse(bytecode)
        except Exception as exc:
            reason = one_line(str(exc).replace("Unable to parse module assembly:", ""), 200)
            from hloscope.ir.hlo_native import build_hlo_native_model

            hlo_module = xla_module()
            built = build_hlo_native_model(hlo_module, counts)
            notes: tuple[str, ...] = (
                (_forced_note(),)
                if bytecode == XLA_FORM_NOTE
                else (
                    f"shown as XLA's HLO: converting it to MLIR failed ({reason}); "
                    "op names are HLO opcodes",
                )
            )
            return ParsedModule(
                built,
                "hlo-native",
                notes + notes_from_log(logged),
                lambda _debug, _limit: str(hlo_module.to_string()),
            )
        built = build_model(module)
    attach_hlo_names(built, names)
    record_entry_memory_spaces(built, entry_layout)
    record_module_counts(built, counts)
    notes = notes_from_log(logged + parse_log)
    return ParsedModule(built, "hlo", notes, mlir_printer(module), mlir_writer(module))


class _XlaFormForced(Exception):
    """`HLOSCOPE_HLO_FORM=xla`: the conversion is not tried."""


def hlo_to_mlir_bytecode(hlo_proto: bytes) -> bytes:
    """Convert a serialized HloModuleProto to StableHLO bytecode (with mhlo.fusion)."""
    import jaxlib._jax as jax_ext

    with native():
        out: bytes = jax_ext.mlir.hlo_to_stablehlo(hlo_proto)
    return out

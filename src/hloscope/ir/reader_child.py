"""The reader process itself: what runs in the child that `hloscope.ir.reader`
starts (`python -m hloscope.ir.reader_child`).

It reads requests from stdin and answers on stdout, one frame per stage reached, so
that when native code crashes or hangs on a request the parent still knows how far
it got.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from hloscope.ir import hlo_names, reader
from hloscope.ir.build import read_names
from hloscope.ir.context import make_context, xla_hlo
from hloscope.ir.hlo import hlo_module_from_proto
from hloscope.ir.layout import entry_computation_layout, module_counts
from hloscope.native_stderr import native_stderr_captured


def main() -> int:
    """The reader process's loop. For each request:

    - HLO (`text`, `proto`): parse it, send its module proto, then its MLIR
      conversion, then the HLO names of the converted ops (`hlo_instruction_names`);
    - MLIR bytecode or text (`mlir`), portable artifacts (`portable`): read it in a
      fresh context and say whether it parsed (or send the first diagnostic), then
      read the names the model builder reads unprinted (`build.read_names`) and say
      whether that worked; the model itself is built once, by the main process;

    then `done` with what the native code logged.
    """
    from jaxlib.mlir import ir
    from jaxlib.mlir.dialects import stablehlo

    from hloscope.child_process import exit_with_parent

    exit_with_parent()  # a parse that never ends must not outlive hloscope
    requests = sys.stdin.buffer
    replies = sys.stdout.buffer
    while True:
        request = reader.read_frame(requests)
        if request is None:
            return 0
        header, payload = request
        kind = header.get("kind")
        with native_stderr_captured() as logged:
            if kind in ("mlir", "portable"):
                # A fresh context each time: what parses must not depend on dialects an
                # earlier request loaded (StableHLO's deserializer loads `quant`).
                context = make_context()
                try:
                    if kind == "portable":
                        module = stablehlo.deserialize_portable_artifact(context, payload)
                    else:
                        with context:
                            module = ir.Module.parse(payload)
                except Exception as exc:
                    error: dict[str, Any] = {"stage": reader.STAGE_ERROR, "message": str(exc)}
                    if isinstance(exc, ir.MLIRError) and exc.error_diagnostics:
                        first = exc.error_diagnostics[0]
                        error["message"] = first.message
                        error["location"] = str(first.location)
                    reader.write_frame(replies, error)
                else:
                    reader.write_frame(replies, {"stage": reader.STAGE_PARSED})
                    # What the main process reads next without MLIR's printer:
                    # jaxlib's bindings abort on names that are not valid UTF-8.
                    try:
                        read_names(module)
                    except Exception as exc:
                        reader.write_frame(
                            replies, {"stage": reader.STAGE_UNREADABLE, "message": str(exc)}
                        )
                    else:
                        reader.write_frame(replies, {"stage": reader.STAGE_BUILT})
                    del module
            else:
                _read_hlo(kind, payload, replies)
        reader.write_frame(replies, {"stage": reader.STAGE_DONE, "log": logged[:50]})


def _read_hlo(kind: Any, payload: bytes, replies: Any) -> None:
    module: Any = None
    try:
        if kind == "text":
            module = xla_hlo().hlo_module_from_text(payload.decode("utf-8"))
        else:
            module = hlo_module_from_proto(payload)
            if module is None:
                raise ValueError("not a valid HLO module proto")
    except Exception as exc:
        reader.write_frame(replies, {"stage": reader.STAGE_ERROR, "message": str(exc)})
        return
    send_hlo_module(module, replies)


def send_hlo_module(
    module: Any, replies: Any, proto: bytes | None = None, printed: str | None = None
) -> None:
    """Answer with what the main process builds an HLO module's model from: its proto
    (`parsed`), its MLIR conversion (`converted`, or `convert-error`), and the HLO
    names of the converted ops (`names`). Also what the module runner's child sends of
    the module it compiled (`hloscope.sources.jax.module_run`), whose proto and text
    it has made already."""
    import jaxlib._jax as jax_ext

    if proto is None:
        proto = module.as_serialized_hlo_module_proto()
    if printed is None:
        printed = str(module.to_string())
    header = {
        "stage": reader.STAGE_PARSED,
        "entry_layout": entry_computation_layout(printed),
        "counts": module_counts(printed),
    }
    reader.write_frame(replies, header, proto)
    try:
        converted = jax_ext.mlir.hlo_to_stablehlo(proto)
    except Exception as exc:
        reader.write_frame(replies, {"stage": reader.STAGE_CONVERT_ERROR, "message": str(exc)})
        return
    reader.write_frame(replies, {"stage": reader.STAGE_CONVERTED}, converted)
    names = (
        hlo_names.hlo_instruction_names(proto) if hlo_names.wants_names(proto, printed) else None
    )
    if names is not None:
        answer = {
            "ops": names.ops,
            "backend_configs": names.backend_configs,
            "opcodes": names.opcodes,
            "schedule": names.schedule,
            "async_types": names.async_types,
        }
        reader.write_frame(replies, {"stage": reader.STAGE_NAMES}, json.dumps(answer).encode())


if __name__ == "__main__":
    raise SystemExit(main())

"""What a parse returns: the model of a module, with its printer and writer.

The printer and writer keep the native module alive behind a closure, so the model
(plain Python objects) can be read by any thread while printing goes through the
lock of `hloscope.ir.context`.
"""

from __future__ import annotations

import dataclasses
import re
import threading
from collections.abc import Callable
from typing import Any, Literal

from hloscope.ir import model
from hloscope.ir.context import native

ParsedFormat = Literal["stablehlo", "mlir", "vhlo", "hlo", "hlo-native"]
"""What was parsed (see `ParsedModule.format`)."""


@dataclasses.dataclass(eq=False)
class ParsedModule:
    """A module parsed by jaxlib, with the model built from it (or to be built from it
    on first use: see `model`)."""

    built: dataclasses.InitVar[model.Module | Callable[[], model.Module]]
    """The model, or what builds it when it is first asked for."""
    format: ParsedFormat
    """What was parsed: `stablehlo`, `mlir`, `vhlo`, `hlo` (converted to MLIR),
    `hlo-native` (XLA's HLO, shown without conversion)."""
    notes: tuple[str, ...] = ()
    """Things worth telling the user (a conversion fallback, XLA warnings)."""
    _printer: Callable[[bool, int], str] | None = dataclasses.field(default=None, repr=False)
    _writer: Callable[[], bytes] | None = dataclasses.field(default=None, repr=False)

    def __post_init__(self, built: model.Module | Callable[[], model.Module]) -> None:
        self._model = built if isinstance(built, model.Module) else None
        self._build = None if isinstance(built, model.Module) else built
        self._lock = threading.Lock()

    @property
    def model(self) -> model.Module:
        """The model of the module. A deferred one (the browser prints a module before
        building its model, to show it sooner) is built here on first use, once, and
        raises here what building it raises."""
        if self._model is None:
            with self._lock:
                if self._model is None:
                    assert self._build is not None
                    self._model = self._build()
                    self._build = None
        return self._model

    @property
    def model_built(self) -> bool:
        """Whether the model has been built (a deferred one is built on first use)."""
        return self._model is not None

    def text(self, debug_info: bool = False, elements_limit: int = 16) -> str:
        """The module's IR as MLIR's printer (or XLA's, for `hlo-native`) prints it;
        constants with more than `elements_limit` elements are elided."""
        if self._printer is None:
            return ""
        return self._printer(debug_info, elements_limit)

    def bytecode(self) -> bytes | None:
        """The module as MLIR bytecode (None for `hlo-native`), e.g. to compile it."""
        return self._writer() if self._writer is not None else None


def mlir_printer(module: Any) -> Callable[[bool, int], str]:
    def print_module(debug_info: bool, elements_limit: int) -> str:
        with native():
            text: str = module.operation.get_asm(
                enable_debug_info=debug_info,
                large_elements_limit=elements_limit,
                assume_verified=True,
            )
        return text

    return print_module


def mlir_writer(module: Any) -> Callable[[], bytes]:
    def write_module() -> bytes:
        import io

        buffer = io.BytesIO()
        with native():
            module.operation.write_bytecode(file=buffer)
        return buffer.getvalue()

    return write_module


def notes_from_log(lines: list[str]) -> tuple[str, ...]:
    """XLA's warnings, de-duplicated and without glog prefixes."""
    notes: dict[str, None] = {}
    for line in lines:
        text = re.sub(r"^[WEI]\d{4} [\d:. ]+\s*\d+ [\w.]+:\d+\]\s*", "", line).strip()
        text = re.sub(r"\d+", "N", text) if text.startswith("Invalid stack_frame_id") else text
        if text and not text.startswith("WARNING: All log messages before absl"):
            notes[text] = None
    return tuple(notes)[:10]

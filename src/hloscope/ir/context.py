"""The MLIR context with JAX's dialects, and the lock around native IR work.

jaxlib's MLIR context is not thread safe, so every native call (parsing,
printing, converting, building the model) runs under one lock, with native stderr
captured so that XLA's log lines never reach the user's terminal. Nothing outside
`hloscope.ir` imports `jaxlib`, and within it the imports are made where they are
used: loading a dump must not pay for importing `jax`.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from hloscope.native_stderr import native_stderr_captured

_lock = threading.RLock()
_context: Any = None
_portable: Any = None


@contextmanager
def native() -> Iterator[list[str]]:
    """Serialise native IR work and capture what it logs to stderr."""
    with _lock, native_stderr_captured() as logged:
        yield logged


def walk_operations(operation: Any, visit: Callable[[Any], bool | None]) -> None:
    """Call `visit` on `operation` and every op nested in it, in pre-order, until it
    returns True. The walk is native and hands over plain operations: for a pass that
    reads little of each op (names, locations) it is faster than iterating blocks,
    which makes each op its dialect's Python op class (the model builder, which reads
    everything of an op and its block, recurses instead: `build.build_model`). What
    `visit` raises is raised here as it was; the bindings would make it a RuntimeError
    naming the callback."""
    from jaxlib.mlir import ir

    advance = ir.WalkResult.ADVANCE
    interrupt = ir.WalkResult.INTERRUPT
    raised: list[BaseException] = []

    def each(op: Any) -> Any:
        try:
            return interrupt if visit(op) else advance
        except BaseException as error:
            raised.append(error)
            return interrupt

    operation.walk(each, ir.WalkOrder.PRE_ORDER)
    if raised:
        raise raised[0]


def make_context() -> Any:
    """A new MLIR context with JAX's dialects (the reader process makes one per
    request)."""
    from jaxlib.mlir import ir
    from jaxlib.mlir._mlir_libs import (
        _chlo,
        _jax_mlir_ext,
        _mlirHlo,
        _sdy,
        _sdyMpmd,
        _stablehlo,
    )

    # As jax._src.interpreters.mlir.make_ir_context does, without importing jax
    # (half a second we do not need to load a dump). The dialects are registered with
    # the native extensions their `jaxlib.mlir.dialects` modules re-export (in every
    # jaxlib hloscope supports): those modules also define Python classes for every
    # op, which nothing here uses and which cost a small module's load more than its
    # parsing (tests/cli/test_startup.py).
    registry = ir.DialectRegistry()
    _jax_mlir_ext.register_dialects(registry)
    context = ir.Context()
    context.append_dialect_registry(registry)
    context.load_all_available_dialects()
    _sdy.register_dialect(context)
    _sdyMpmd.register_dialect(context)
    _mlirHlo.register_mhlo_dialect(context)
    _chlo.register_dialect(context)
    _stablehlo.register_dialect(context)
    return context


def xla_hlo() -> Any:
    """jaxlib's module holding XLA's HLO bindings (`HloModule`, `hlo_module_from_text`,
    `XlaComputation`): `jaxlib._hlo` since jaxlib 0.10, `jaxlib._jax` before."""
    try:
        import jaxlib._hlo as bindings
    except ImportError:
        import jaxlib._jax as bindings
    if not (hasattr(bindings, "hlo_module_from_text") and hasattr(bindings, "HloModule")):
        raise ImportError("jaxlib has no HLO bindings (HloModule, hlo_module_from_text)")
    return bindings


def hlo_computations(hlo_module: Any) -> list[Any]:
    """The computations of XLA's `HloModule`, each with `name` and `instructions()`
    (each with `name`, `opcode`, `operands()` and `to_string()`), as jaxlib 0.10 binds
    them. jaxlib 0.8 and 0.9 bind no instructions: there they are read from the
    module's proto and XLA's printing of it (`hloscope.ir.hlo_listing`)."""
    computations = list(hlo_module.computations())
    if all(hasattr(computation, "instructions") for computation in computations):
        return computations
    from hloscope.ir.hlo_listing import listed_computations

    return list(listed_computations(hlo_module))


def _has_hlo_bindings(module: Any) -> bool:
    return hasattr(module, "hlo_module_from_text") and hasattr(module, "HloModule")


def portable_context() -> Any:
    """A context for deserializing portable artifacts. StableHLO's deserializer loads
    dialects (quant) into the context it is given; keeping that out of the main
    context keeps what parses there independent of what was loaded before."""
    global _portable
    with _lock:
        if _portable is None:
            _portable = make_context()
        return _portable


def mlir_context() -> Any:
    """The process-wide MLIR context with JAX's dialects."""
    global _context
    with _lock:
        if _context is None:
            _context = make_context()
        return _context


# What jaxlib's parsers say of a construct they do not know: what a newer XLA or
# StableHLO than the installed one writes (an opcode, an attribute, a type of JAX's
# own dialects, a bytecode version).
_UNKNOWN_CONSTRUCT = re.compile(
    r"Unknown opcode|unexpected attribute|error parsing attribute"
    r"|unknown (?:stablehlo|mhlo|chlo|sdy|vhlo|mpmd) (?:type|attribute)"
    r"|custom op '(?:stablehlo|mhlo|chlo|sdy|vhlo|mpmd)\.[\w.]+' is unknown"
    r"|unregistered operation '(?:stablehlo|mhlo|chlo|sdy|vhlo|mpmd)\."
    r"|is newer than the current version|newer than the current"
)


def bytecode_producer(data: bytes) -> str | None:
    """Who wrote an MLIR bytecode file, as its header says after the magic and the
    bytecode version: `StableHLO_v1.15.0` (a portable artifact), `MLIR23.0.0git`."""
    if not data.startswith(b"ML\xefR") or len(data) < 6:
        return None
    first = data[4]
    # MLIR's prefix varint: the trailing zero bits of the first byte, plus one, bytes.
    size = 9 if first == 0 else (first & -first).bit_length()
    end = data.find(b"\0", 4 + size, 4 + size + 128)
    if end < 0:
        return None
    producer = data[4 + size : end].decode("ascii", "replace")
    return producer if producer.isprintable() and producer else None


def installed_release() -> str:
    """`jaxlib 0.9.2, StableHLO 1.14.0`: the parsers this process reads with."""
    from importlib import metadata

    try:
        version = metadata.version("jaxlib")
    except metadata.PackageNotFoundError:
        version = "unknown"
    try:
        from jaxlib.mlir.dialects import stablehlo

        return f"jaxlib {version}, StableHLO {stablehlo.get_current_version()}"
    except Exception:
        return f"jaxlib {version}"


def cut_short_note(text: str, line: int) -> str | None:
    """What to add to a parser's refusal at `line` of `text` where that is the text's
    last line: a file cut short (a dump or a copy that did not finish), not syntax
    from a newer release. None elsewhere."""
    last = len(text.rstrip().splitlines())
    if line < last:
        return None
    return f" (the file ends at line {last}: it looks cut short)"


def release_note(message: str, data: bytes | None = None) -> str:
    """What to add to a parser's refusal that may come from a newer release than the
    installed one having written the file: which release wrote it, where the file says
    (MLIR bytecode names its producer), and which one is installed. Empty where the
    refusal is of something else."""
    producer = bytecode_producer(data) if data is not None else None
    if producer is not None and producer.startswith("StableHLO_v"):
        producer = "StableHLO " + producer.removeprefix("StableHLO_v")
    if _UNKNOWN_CONSTRUCT.search(message) is None:
        return ""
    if producer is not None:
        return f" (written by {producer}; installed: {installed_release()})"
    return f" (installed: {installed_release()}; a newer release may have written it)"

"""The MLIR context with JAX's dialects, and the lock around native IR work.

jaxlib's MLIR context is not thread safe, so every native call (parsing,
printing, converting, building the model) runs under one lock, with native stderr
captured so that XLA's log lines never reach the user's terminal. Nothing outside
`hloscope.ir` imports `jaxlib`, and within it the imports are made where they are
used: loading a dump must not pay for importing `jax`.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from hloscope.errors import native_stderr_captured

_lock = threading.RLock()
_context: Any = None
_portable: Any = None


@contextmanager
def native() -> Iterator[list[str]]:
    """Serialise native IR work and capture what it logs to stderr."""
    with _lock, native_stderr_captured() as logged:
        yield logged


def make_context() -> Any:
    """A new MLIR context with JAX's dialects (the reader process makes one per
    request)."""
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


def xla_hlo() -> Any:
    """jaxlib's module holding XLA's HLO bindings (`HloModule`, `hlo_module_from_text`,
    `XlaComputation`): `jaxlib._hlo` since jaxlib 0.10, `jaxlib._jax` before."""
    # Two fixed names, imported plainly: no module name reaches an import from data.
    try:
        from jaxlib import _hlo

        if _has_hlo_bindings(_hlo):
            return _hlo
    except ImportError:
        pass
    try:
        from jaxlib import _jax

        if _has_hlo_bindings(_jax):
            return _jax
    except ImportError:
        pass
    raise ImportError("jaxlib has no HLO bindings (HloModule, hlo_module_from_text)")


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

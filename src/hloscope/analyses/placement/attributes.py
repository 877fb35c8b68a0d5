"""What an op's or a function's attributes say about placement: the compute type
an op is marked with, a function's execution thread."""

from __future__ import annotations

from hloscope.ir.model import Function, Op


def own_compute_type(op: Op) -> str | None:
    """The compute type an op's own attributes give it, or None."""
    entries = op.frontend_attributes
    if not entries:
        return None
    stream = entries.get("_xla_stream_annotation")
    if stream is not None:
        return f"gpu_stream:{stream}"
    return entries.get("_xla_compute_type")


def function_thread(function: Function) -> str | None:
    """A function's `execution_thread` when it is not the main one."""
    thread = function.execution_thread
    return None if thread == "main" else thread

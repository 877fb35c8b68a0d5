"""What an op's or a function's attributes say about placement: the compute type
an op is marked with, its frontend attributes, a function's execution thread, a
custom call's target."""

from __future__ import annotations

from hloscope.ir.model import Function, Op, parse_dict_attribute, string_attribute


def own_compute_type(op: Op) -> str | None:
    """The compute type an op's own attributes give it, or None."""
    attributes = op.attributes
    text = attributes.get("mhlo.frontend_attributes") or attributes.get("frontend_attributes")
    if not text or "_xla_" not in text:
        return None
    entries = parse_dict_attribute(text)
    stream = entries.get("_xla_stream_annotation")
    if stream is not None:
        return f"gpu_stream:{stream}"
    return entries.get("_xla_compute_type")


def frontend_attribute(op: Op, key: str) -> str | None:
    text = op.attributes.get("mhlo.frontend_attributes") or op.attributes.get("frontend_attributes")
    if not text or key not in text:
        return None
    return parse_dict_attribute(text).get(key)


def function_thread(function: Function) -> str | None:
    """A function's `execution_thread` when it is not the main one."""
    text = function.op.attributes.get("execution_thread")
    if text is None:
        return None
    thread = string_attribute(text)
    return None if thread == "main" else thread


def custom_call_target(op: Op) -> str | None:
    """The target of a custom call (`MoveToHost`), None for other ops."""
    if "custom" in op.name and op.short_name in ("custom_call", "custom-call"):
        text = op.attributes.get("call_target_name") or op.attributes.get("custom_call_target")
        return string_attribute(text) if text is not None else None
    return None

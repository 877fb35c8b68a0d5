"""What a difference is about, for a change's aspects: the attribute keys that name
compute type, sharding, memory kind and stream, and whether two result types differ in
shape, dtype or layout."""

from __future__ import annotations

from hloscope.ir.model import Module

# What an attribute is about, for the change's aspects.
COMPUTE_TYPE_KEYS = frozenset({"frontend._xla_compute_type"})
STREAM_KEYS = frozenset({"frontend._xla_stream_annotation"})
MEMORY_KEYS = frozenset(
    {"frontend._xla_buffer_placement", "mhlo.memory_kind", "frontend._xla_memory_kind"}
)
SHARDING_KEYS = frozenset({"mhlo.sharding", "sdy.sharding", "sdy.sharding_rule", "sharding"})


def aspect_of(key: str) -> str:
    if key in COMPUTE_TYPE_KEYS:
        return "compute_type"
    if key in SHARDING_KEYS:
        return "sharding"
    if key in MEMORY_KEYS:
        return "memory_kind"
    if key in STREAM_KEYS:
        return "stream"
    if key == "callee":
        return "callee"
    if key == "fusion_kind":
        return "fusion"
    return "attributes"


def type_change(
    types_a: tuple[str, ...], types_b: tuple[str, ...], module_a: Module, module_b: Module
) -> tuple[str, str] | None:
    """(`shape`, `dtype` or `layout`, text) when result types differ (types of
    `module_a` and `module_b`); for ops with several results, only the results that
    differ are named."""
    if types_a == types_b:
        return None
    parsed_a = [t for text in types_a for t in module_a.type_arrays(text)]
    parsed_b = [t for text in types_b for t in module_b.type_arrays(text)]
    if not parsed_a or not parsed_b:
        return "shape", f"{', '.join(types_a) or '()'} → {', '.join(types_b) or '()'}"
    if len(parsed_a) != len(parsed_b):
        return "shape", (f"{', '.join(map(str, parsed_a))} → {', '.join(map(str, parsed_b))}")
    differing = [
        (i, x, y) for i, (x, y) in enumerate(zip(parsed_a, parsed_b, strict=True)) if x != y
    ]
    if not differing:
        return "layout", f"{', '.join(types_a)} → {', '.join(types_b)}"
    aspect = "dtype" if all(x.shape == y.shape for _, x, y in differing) else "shape"
    if len(parsed_a) == 1:
        return aspect, f"{parsed_a[0]} → {parsed_b[0]}"
    return aspect, "; ".join(f"result {i}: {x} → {y}" for i, x, y in differing)

"""What each distinct op is to the diff (`Signatures`, shared by both sides): its kind,
its attributes in the normal form in which printers agree (implied comparison types,
the default precision and `xla_shape` left out, per-compile numbering dropped), its
result types, whether it only adds or drops unit dimensions, its own fingerprint, the
functions it names and, in XLA's own form, the computations it holds
(`structure.held_computations`), which the graph walks as its regions."""

from __future__ import annotations

from collections.abc import Sequence

from hloscope.analyses.diff.names import (
    normalize_frontend_attribute,
    normalize_kind,
    normalize_value,
)
from hloscope.analyses.structure import CALL_ATTRIBUTES, held_computations
from hloscope.ir.model import Module, Op
from hloscope.ir.types import TensorType

# Ops whose region is not a scope of its own for the diff: the region's arguments
# are the op's operands and its results are what the region returns.
TRANSPARENT_OPS = frozenset({"mhlo.fusion"})
CALL_OP = "func.call"
# XLA's own form's call: its `to_apply` is its callee, inlined as a `func.call`'s is.
XLA_CALL = "hlo.call"
CALLS = frozenset({CALL_OP, XLA_CALL})

# XLA's own form's fusion: its ops are the computation its `calls` names, walked in
# place as an `mhlo.fusion`'s region is (the computation is no function of its own to
# the diff). One started asynchronously holds its computation as a region.
XLA_FUSION = "hlo.fusion"
_XLA_FUSIONS = frozenset({XLA_FUSION, "hlo.fusion-start"})

# Attributes that repeat what the result types say (XLA's converter leaves them,
# sometimes stale), and XLA's own form's channel ids, which number the collectives in
# order (one inserted op renumbers all; the converted form's `channel_handle` loses its
# number in `normalize_value`).
IGNORED_ATTRIBUTES = frozenset({"xla_shape", "channel_id"})

# A comparison's type is implied by its operands' element type unless it is TOTALORDER;
# XLA's HLO drops the implied ones.
_IMPLIED_COMPARE_TYPES = frozenset(
    f"#stablehlo<comparison_type {t}>" for t in ("SIGNED", "UNSIGNED", "FLOAT", "NOTYPE")
)


# Attributes naming functions that are not inlined (they become roots of their own).
REFERENCE_ATTRIBUTES = frozenset(CALL_ATTRIBUTES) - {"callee"}
_REFERENCE_KEYS = frozenset(CALL_ATTRIBUTES)
UNIT_RESHAPE_KINDS = frozenset({"stablehlo.reshape", "stablehlo.broadcast_in_dim"})


def _unit_reshape(
    op: Op,
    kind: str,
    source: tuple[TensorType, ...],
    target: tuple[TensorType, ...],
    attrs: tuple[tuple[str, str], ...],
) -> tuple[bool, tuple[tuple[str, str], ...]]:
    """Whether an op only adds or drops unit dimensions (a reshape 64 -> 1x64, the
    identity broadcast XLA writes), and a broadcast's attributes with its dimensions
    said for the operand's non-unit dimensions only, so that broadcasting `x[64]` and
    `x[1,64]` into the same shape read the same."""
    if len(source) != 1 or len(target) != 1:
        return False, attrs
    src, dst = source[0], target[0]
    if src.shape is None or dst.shape is None or src.dtype != dst.dtype:
        return False, attrs
    squeezed_src = [d for d in src.shape if d != 1]
    squeezed_dst = [d for d in dst.shape if d != 1]
    if kind == "stablehlo.reshape":
        return squeezed_src == squeezed_dst, attrs
    values = dict(attrs)
    dims = op.i64_array("broadcast_dimensions")
    if dims is None:
        return False, attrs
    if len(dims) != len(src.shape):
        return False, attrs
    kept = [d for d, size in zip(dims, src.shape, strict=True) if size != 1]
    values["broadcast_dimensions"] = "array<i64: " + ", ".join(map(str, kept)) + ">"
    canonical = tuple(sorted(values.items()))
    unit = squeezed_src == squeezed_dst and kept == sorted(kept)
    return unit, canonical


# What an op is, for the diff: its kind, attributes in normal form, result types,
# whether it only adds or drops unit dimensions, its own fingerprint, the functions it
# names (by attribute), the functions those attributes ask to be roots of their own,
# and the computations it holds (XLA's own form), walked as its regions.
Signature = tuple[
    str,
    tuple[tuple[str, str], ...],
    tuple[str, ...],
    bool,
    int,
    tuple[tuple[str, tuple[str, ...]], ...],
    tuple[str, ...],
    tuple[str, ...],
]


def operand_key(operands: Sequence[int], value_types: Sequence[str]) -> tuple[object, ...]:
    """What an op whose signature reads its first operand (a reshape, a broadcast, a
    `dot`) adds to its key: the number of operands and the first one's type."""
    if not operands:
        return (0, None)
    first = operands[0]
    return (len(operands), value_types[first] if first >= 0 else None)


class Signatures:
    """What each distinct op is, worked out once: ops with the same name, result types,
    attributes, number of regions (and, for reshapes, broadcasts and `dot`, the same
    first operand's type) are the same to the diff. An unrolled model repeats a few
    hundred distinct ops; both sides of a diff share one `Signatures`."""

    def __init__(self) -> None:
        self.known: dict[tuple[object, ...], Signature] = {}
        self.names: dict[str, tuple[bool, bool, bool, bool]] = {}
        """Op name -> (a terminator, a call or a transparent op, its signature reads
        its first operand's type, an instruction of XLA's own form)."""

    def name_info(self, op: Op) -> tuple[bool, bool, bool, bool]:
        name = op.name
        info = (
            op.is_terminator,
            name in CALLS or name == XLA_FUSION or name in TRANSPARENT_OPS,
            normalize_kind(name) in UNIT_RESHAPE_KINDS or name == "stablehlo.dot",
            name.startswith("hlo."),
        )
        self.names[name] = info
        return info

    def of(
        self,
        key: tuple[object, ...],
        op: Op,
        types: tuple[str, ...],
        module: Module,
    ) -> Signature:
        if "replica_groups" in op.attributes:
            # The same text names other devices on another module's mesh.
            key = (*key, module.device_groups(op))
        known = self.known.get(key)
        if known is not None:
            return known
        kind = normalize_kind(op.name)
        attributes = op.attributes
        attrs = _attributes(op, module)
        # A fusion's computation is its contents (`Graph._contents`), not a region.
        held = () if op.name == XLA_FUSION else tuple(held_computations(op, module.functions))
        references = (
            tuple((key, op.references(key)) for key in CALL_ATTRIBUTES if key in attributes)
            if attributes and not _REFERENCE_KEYS.isdisjoint(attributes)
            else ()
        )
        if op.name == XLA_CALL:
            # Its callee, as the converted form's `func.call` names it.
            references = tuple(
                ("callee" if key == "to_apply" else key, names) for key, names in references
            )
        if held:
            # What it holds is compared as its regions, not by name.
            references = tuple(
                (key, kept)
                for key, names in references
                if (kept := tuple(name for name in names if name not in held))
            )
        unit_reshape = False
        if kind in UNIT_RESHAPE_KINDS and len(op.operands) == 1 and len(types) == 1:
            operand = module.arrays(op.operands[0]) if op.operands[0] >= 0 else ()
            result = module.type_arrays(types[0])
            unit_reshape, attrs = _unit_reshape(op, kind, operand, result, attrs)
        named: tuple[str, ...] = ()
        if attributes and not REFERENCE_ATTRIBUTES.isdisjoint(attributes):
            # In a fixed order (the set's would vary with Python's string hashing, and
            # with it the order in which these functions are walked).
            named = tuple(
                callee_name
                for name in CALL_ATTRIBUTES
                if name in REFERENCE_ATTRIBUTES and name in attributes
                for callee_name in op.references(name)
                if callee_name not in held
            )
        local = hash((kind, types, attrs, len(op.regions) or len(held)))
        signature = (kind, attrs, types, unit_reshape, local, references, named, held)
        self.known[key] = signature
        return signature


def _attributes(op: Op, module: Module) -> tuple[tuple[str, str], ...]:
    """An op's attributes in normal form: what printers leave out or spell otherwise
    dropped or respelled, the functions it names left out (in its references)."""
    attributes = op.attributes
    if op.name == "stablehlo.dot" and op.operands and op.operands[0] >= 0:
        # A dot contracts the last dimension of the left with the first of the right.
        lhs = module.arrays(op.operands[0])
        rank = len(lhs[0].shape or ()) if lhs else 1
        numbers = (
            "#stablehlo.dot<lhs_contracting_dimensions = "
            f"[{max(rank - 1, 0)}], rhs_contracting_dimensions = [0]>"
        )
        merged = dict(attributes)
        merged["dot_dimension_numbers"] = numbers
        attributes = merged
    if not attributes:
        return ()
    out: dict[str, str] = {}
    for name, value in attributes.items():
        if name in IGNORED_ATTRIBUTES:
            continue
        if name == "mhlo.frontend_attributes":
            for entry, entry_value in op.frontend_attributes.items():
                out["frontend." + entry] = normalize_frontend_attribute(entry, entry_value)
            continue
        if name == "compare_type" and value in _IMPLIED_COMPARE_TYPES:
            continue
        if name == "precision_config" and op.default_precision:
            continue  # the default, which some printers leave out
        if name in _REFERENCE_KEYS:
            continue  # in `references`: names are compared by what they name
        if name == "calls" and op.name in _XLA_FUSIONS:
            continue  # its fused ops are compared instead, as an `mhlo.fusion`'s are
        if name == "replica_groups":
            # Compared by the devices in each group, not by the text naming them (the
            # same mesh-axes text names other groups on another mesh).
            groups = module.device_groups(op)
            if groups is not None:
                out[name] = "{" + ", ".join("{" + ",".join(map(str, g)) + "}" for g in groups) + "}"
                continue
        out[name] = normalize_value(value)
    return tuple(sorted(out.items()))

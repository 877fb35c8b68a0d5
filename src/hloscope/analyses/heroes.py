"""A fusion's hero: the op its kernel is built around (a matmul or a convolution),
the other fused ops in its prologue and epilogue; where its run time goes, read the
same in either form of the module."""

from __future__ import annotations

from collections.abc import Sequence

from hloscope.ir.model import Module, Op

# `fusion-start` is how XLA prints an async-wrapped fusion.
FUSION_OPS = frozenset({"mhlo.fusion", "hlo.fusion", "hlo.fusion-start"})
HERO_OPS = frozenset({"dot", "dot_general", "convolution"})


def hero_ops(module: Module, fusion: Op) -> list[Op]:
    """The matmuls and convolutions a fusion's kernel is built around: those of its
    own computation, else of the outermost fusions nested in it that hold one (a TPU
    convolution fusion nests its operands' producers, which may hold a matmul of their
    own), by XLA's name: the order of fused ops differs between the two forms."""
    level = [fusion]
    while level:
        found: list[Op] = []
        nested: list[Op] = []
        for outer in level:
            for member in _own_ops(module, outer):
                if member.name in FUSION_OPS:
                    nested.append(member)
                elif member.short_name in HERO_OPS:
                    found.append(member)
        if found:
            return sorted(found, key=lambda o: (o.hlo_name or "", o.id))
        level = nested
    return []


def _own_ops(module: Module, fusion: Op) -> Sequence[Op]:
    """The ops of a fusion's own computation, not those of a fusion nested in it: its
    called computation in XLA's form, its region's ops outside nested fusions'
    converted."""
    if fusion.name.startswith("hlo."):
        called = module.functions.get(next(iter(fusion.references("calls")), ""))
        return module.function_ops(called) if called is not None else ()
    own: list[Op] = []
    for op in module.descendants(fusion):
        parent = op.parent
        while parent is not None and parent is not fusion and parent.name not in FUSION_OPS:
            parent = parent.parent
        if parent is fusion:
            own.append(op)
    return own

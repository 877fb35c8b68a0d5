"""Which parameters of a module JAX lowered carry JAX's donation.

JAX marks a donated argument on the entry function's parameter: `tf.aliasing_output
= N` (its buffer becomes result N) or `jax.buffer_donor = true` (XLA may reuse it for
any result). A donation the caller asked for that JAX could not use (no result of
the parameter's shape and dtype) gets neither: JAX only warns, and does not delete
the array. This reads the attributes from the MLIR module object JAX holds, so that
what the caller asked for can be told from what the module does even where only the
optimized module is shown.
"""

from __future__ import annotations

from typing import Any, Final

from hloscope.ir.context import native

DONATION_ATTRIBUTES: Final = ("tf.aliasing_output", "jax.buffer_donor")
"""The parameter attributes by which JAX donates an argument's buffer."""


def entry_donations(module: Any) -> tuple[bool, ...] | None:
    """For each parameter of the entry of `module` (a jaxlib MLIR module, what
    `jax.stages.Lowered.compiler_ir("stablehlo")` returns), implicit ones included,
    whether it carries JAX's donation. The entry is the public `main`, else the first
    public function. None when there is no such function."""
    from jaxlib.mlir import ir

    with native(), module.context:
        functions = [op for op in module.body.operations if op.operation.name == "func.func"]

        def name(op: Any) -> str:
            return str(ir.StringAttr(op.attributes["sym_name"]).value)

        def public(op: Any) -> bool:
            attributes = op.attributes
            return (
                "sym_visibility" not in attributes
                or ir.StringAttr(attributes["sym_visibility"]).value == "public"
            ) and len(op.regions[0].blocks) > 0

        entry = next((op for op in functions if name(op) == "main" and public(op)), None)
        if entry is None:
            entry = next((op for op in functions if public(op)), None)
        if entry is None:
            return None
        count = len(entry.regions[0].blocks[0].arguments)
        if "arg_attrs" not in entry.attributes:
            return (False,) * count
        flags = tuple(
            any(attribute in ir.DictAttr(attributes) for attribute in DONATION_ATTRIBUTES)
            for attributes in ir.ArrayAttr(entry.attributes["arg_attrs"])
        )
        return flags if len(flags) == count else None

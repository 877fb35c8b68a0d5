"""An HLO opcode from the name XLA's converter gives its op in the converted form
(`stablehlo.broadcast_in_dim` is `broadcast`, `mhlo.fusion` `fusion`): what lets a
fact counted by op name in one form of an optimized module meet the same fact counted
in the other (`hlo.broadcast`), where no module is at hand to ask (a stored baseline).
Read from the converter's own spellings (checked against the opcodes of converted
modules' instructions, `Module.hlo_opcode`, in tests/analyses/test_opcodes.py)."""

from __future__ import annotations

from typing import Final

_CONVERTED_DIALECTS: Final = ("stablehlo.", "mhlo.", "func.")
_SPELLINGS: Final = {
    "broadcast_in_dim": "broadcast",
    "dot_general": "dot",
    "case": "conditional",
    "if": "conditional",
    "optimization_barrier": "opt-barrier",
    "count_leading_zeros": "clz",
}
"""The converter's names that are not the opcode with `-` spelled `_`."""


def converted_opcode(op_name: str) -> str | None:
    """The HLO opcode of an op of the converted form named `op_name`; `op_name` itself
    where it is XLA's own form's (`hlo.add` is `add`); None for a name of neither form.
    An async pair converts to one op of the collective's name or to async wrappers
    (`stablehlo.all_gather` for `all-gather-start` and `all-gather-done`), which this
    names by their own name: the two forms count those differently."""
    if op_name.startswith("hlo."):
        return op_name[4:]
    for dialect in _CONVERTED_DIALECTS:
        if op_name.startswith(dialect):
            short = op_name[len(dialect) :]
            return _SPELLINGS.get(short, short.replace("_", "-"))
    return None

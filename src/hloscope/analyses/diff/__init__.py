"""A structural diff of two modules: which ops were added, removed or changed, and how.

Text diffs of IR drown in noise: SSA values are renumbered, independent ops move,
locations change, and another printer (XLA's HLO, converted to MLIR) spells the
same program differently. This diff matches structure instead, in the way XLA's
`hlo_diff` does:

1. Both modules become dataflow graphs. Calls (`func.call`) are inlined, because
   nested jits, `compute_on` wrappers and XLA's own inlining move call boundaries
   without changing the computation; fusions are transparent too (`mhlo.fusion`
   regions, and in XLA's own form the computation an `hlo.fusion` calls, walked in
   the fusion's place), so ops are matched across fusion boundaries. A call or a
   fusion stays a node of its own, matched afterwards by where its contents went. In
   XLA's own form a `call`'s `to_apply` is inlined as a callee, a computation an op
   holds (a reducer, a loop's condition and body) is walked as the op's region, and
   tuples are the values they hold, so both forms of a module read alike.
2. Every op gets a fingerprint of what it is (op kind, result types, attributes
   without locations) and a Merkle-style subgraph fingerprint (its fingerprint and
   those of its operands and nested regions). The entry functions' parameters are
   paired first (by name, else by position, else by aligning their types), so a
   paired parameter hashes the same on both sides.
3. Ops are matched in passes: identical subgraphs, tallest first, each match mapping
   its whole subgraph (equal small leaves, the many `constant 0`, are left to their
   users first); top-down from matched users to their operands, starting from the
   paired results; bottom-up from matched operands to users of the same kind, by
   similarity; ops of another kind reading the same operands (a kind change); what
   is left by equal fingerprints within matched regions. A `convert` or an
   `optimization_barrier` on one side only, between matched ops, is looked through.
   Calls and fusions are matched last, by where most of their contents went.
4. Functions are matched by what they compute, not by name (`functions`): by the
   votes of their matched ops and call sites, then by their contents, names last. A
   renamed function is the same function: a note and `ModuleDiff.renames`, never a
   change; a function's name is no part of any fingerprint.
5. Each matched pair is compared: op kind, result types (shape or dtype),
   attributes (with compute type, sharding and memory kind named as such),
   operands (wired to the counterpart of the operand or not, or passed through an
   added `convert`), the functions it calls (the counterpart or not), and for
   fusions the set of ops fused. Unmatched ops are added or removed. Equal changes
   are grouped by what changed (kind, op, detail), not by where: the same change in
   40 layers, every call site or every clone of a function is one group with its
   count and its places.

What is normalised, so that StableHLO, its HLO round trip (XLA's printer, converted
back to MLIR), VHLO and Exported artifacts compare equal: `mhlo.`, `hlo.` and
`stablehlo.` op names are one namespace; `stablehlo.dot` is the `dot_general` it
abbreviates; function names lose XLA's `.N` suffixes; reshapes and broadcasts that only
add or drop unit dimensions are transparent (the round trip writes `broadcast_in_dim
64 -> 1x64` as reshapes), and a broadcast's dimensions are read for the operand's
non-unit dimensions; equal subexpressions that one printer merged (CSE) are one; a
`while` loop's carried values may come in another order; commutative ops' operands
may be swapped; the default precision, implied comparison types, channel ids (XLA's
own form's `channel_id` too) and XLA's `xla_shape` attribute are ignored, the
instruction a TPU's `async_collective_name` names is read without its number, and a
function called that computes the same as the counterpart of A's (XLA numbers equal
reduction computations per compile) is no callee change. Unmatched ops that these rules explain are
counted as `normalized`, not as changes. Not normalised: other rewrites (algebraic
simplification, constant folding, XLA's optimizations).

Matching is linear in the number of ops but for bounded candidate lists (the
bottom-up pass looks at a few users of each operand) and sorting. What keeps the
constant small on a large module and a copy with one op changed (where every op after
the change has another subgraph fingerprint, and is matched top-down): what an op is
(kind, normal attributes, own fingerprint) is worked out once per distinct op, shared
by both sides (an unrolled model has a few dozen); subgraph fingerprints are worked
out during the graph's one walk; the exact pass looks only at fingerprints both sides
have; a pair mapped with its whole identical subgraph is not visited again top-down;
the passes after the top-down one look at the ops it left unmatched; a matched pair
with the same kind, types and attributes whose operands are the counterparts of A's
is unchanged without the full comparison; the cyclic garbage collector is paused
while diffing. Each shortcut gives what the long way gives (tests/analyses/
test_diff_shortcuts.py).
"""

from hloscope.analyses.diff.module_diff import diff_modules
from hloscope.analyses.diff.names import normalize_function_name, normalize_kind
from hloscope.analyses.diff.parameters import pair_parameters
from hloscope.analyses.diff.report import (
    ADDED,
    CHANGED,
    NORMALIZED,
    REMOVED,
    SAME,
    Change,
    ChangeGroup,
    ChangeKind,
    FunctionPair,
    FusionChange,
    ModuleDiff,
    ParameterPair,
    ParameterStatus,
    Place,
    Rename,
    Row,
    RowStatus,
    Side,
    Summary,
    Verdict,
)

__all__ = [
    "ADDED",
    "CHANGED",
    "NORMALIZED",
    "REMOVED",
    "SAME",
    "Change",
    "ChangeGroup",
    "ChangeKind",
    "FunctionPair",
    "FusionChange",
    "ModuleDiff",
    "ParameterPair",
    "ParameterStatus",
    "Place",
    "Rename",
    "Row",
    "RowStatus",
    "Side",
    "Summary",
    "Verdict",
    "diff_modules",
    "normalize_function_name",
    "normalize_kind",
    "pair_parameters",
]

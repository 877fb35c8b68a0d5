"""The direct call against the ahead-of-time path: do they compute the same thing?

The same function can compute different things called directly and through
`.lower(...).compile()`: a `compute_on` context entered outside `jax.jit` (the
decorator order) is part of the call but not of what `.lower()` traces, and a
`functools.wraps` wrapper around a jitted function (swapping its arguments, say)
is bypassed when the AOT path takes the inner function's `.lower`. This analysis
compares what the two paths compiled and what they returned, given the modules
each compiled (parsed) and what `hloscope.sources.jax.aot.aot_runs` recorded:

- which program of the call to compare: every module JAX compiled during the call
  is recorded. Modules that the AOT path also compiled while its executable ran
  (host callbacks running JAX code) are paired off first. Of the rest, the one
  named like the AOT module (`jit_f` both: the same jitted function) is the
  call's counterpart; failing that, the only one. The other programs of the call
  are what the AOT path does not run (a wrapper's own ops, run eagerly). When the
  call compiled several programs and none is named like the AOT module (a plain
  function calling two jits, or running op by op), there is no counterpart: the
  call is several XLA programs where the AOT path is one, and placement and op
  counts are compared over all of them together;
- ops: op kinds per module, each function counted once (as it is compiled), calls
  left out, so that a jit nested in the AOT module as a private function compares
  equal to the same jit compiled on its own by the call;
- placement: ops per compute type and op kind (`analyses.placement`), calls left
  out for the same reason;
- parameters: the entry parameters of the counterpart and of the AOT module in
  order (`analyses.params`): count, shapes, used or unused, donation, sharding,
  memory kind; with the AOT lowering, the arguments it pruned;
- text: both modules printed without locations, the module's name and SSA value
  names renumbered in order of appearance; compared only when the counterpart is
  the same jitted function (same module name), since a jit nested in another
  module prints differently;
- results: the output trees, then each leaf's shape, dtype and values, with a
  tolerance by dtype (exact for integers and booleans).

Each difference carries one sentence on its likely cause.
"""

from hloscope.analyses.aot.analysis import compare_paths
from hloscope.analyses.aot.report import (
    AotComparison,
    Check,
    Difference,
    Program,
    ProgramSummary,
    ResultComparison,
    Verdict,
    changed_kinds,
)
from hloscope.analyses.aot.results import compare_result, tolerance
from hloscope.analyses.aot.text import normalized_text

__all__ = [
    "AotComparison",
    "Check",
    "Difference",
    "Program",
    "ProgramSummary",
    "ResultComparison",
    "Verdict",
    "changed_kinds",
    "compare_paths",
    "compare_result",
    "normalized_text",
    "tolerance",
]

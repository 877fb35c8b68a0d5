"""The two readings of an optimized HLO module compared: converted to MLIR (the
default) and XLA's own form (`HLOSCOPE_HLO_FORM=xla`, `hloscope.ir.hlo.xla_form_forced`).

`normalized` is the one normalizer of the differences that are representation only;
each is listed in docs/known-limits.md ("XLA's own form and the converted form") and
nowhere else:

- op names: `hlo.<opcode>` against `stablehlo.*`/`mhlo.*` (`hlo.broadcast` is
  `stablehlo.broadcast_in_dim`, `hlo.dot` `stablehlo.dot_general`, `hlo.reduce-window`
  `stablehlo.reduce_window`), in keys and values alike, and a report's short opcode
  (memory's `opcode`: `dot` against `dot_general`); the `dialects` counts that follow
  from them; a conditional is `stablehlo.if` (on a predicate) or `stablehlo.case`
  converted, and an `after-all` of no operands `stablehlo.create_token`;
- computation names: MLIR symbols spell XLA's `-` as `_`
  (`wrapped_reduce-window_computation` is `wrapped_reduce_window_computation`);
- a parameter: an instruction in XLA's form (a buffer's `opcode: parameter` and its
  `op_name`, in memory's and check's documents), a block argument, with neither, in
  the converted form;
- XLA's `tuple` and `get-tuple-element` in an op count (ops of their own in XLA's
  form, none in the converted form);
- the note naming the form (`shown as XLA's HLO ...`) and the `source` header's
  `ir` (`hlo` against `hlo-native`).

Besides these, what differs from one run to the next is masked as the goldens mask
it: the `environment`, wall times and whether the compile cache answered.
"""

from __future__ import annotations

import contextlib
import difflib
import json
import os
import re
from collections.abc import Iterator
from typing import Any

SWITCH = "HLOSCOPE_HLO_FORM"

_OP = re.compile(r"\b(?:stablehlo|mhlo|hlo)\.([a-z][\w-]*)")
_SPELLINGS = {
    "broadcast_in_dim": "broadcast",
    "dot_general": "dot",
    "if": "conditional",
    "case": "conditional",
    "create_token": "after_all",
}
_NAME_KEYS = frozenset({"name", "callee", "called_by", "function", "functions", "entry"})
_FORM_NOTE = "shown as XLA's HLO"
_TUPLE_OPS = frozenset({"op:tuple", "op:get_tuple_element"})


def _opcode(name: str) -> str:
    name = name.replace("-", "_")
    return "op:" + _SPELLINGS.get(name, name)


def _ops_named(text: str) -> str:
    return _OP.sub(lambda m: _opcode(m.group(1)), text)


def _masked(key: str) -> bool:
    return key in ("environment", "compile_cached") or key.endswith("seconds")


def normalized(value: Any, key: str = "") -> Any:
    """A `--json` document with the representation-only differences of the two forms
    written one way (the module docstring lists them)."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        parameter = "parameter" in (value.get("opcode"), value.get("kind"))
        for name, item in value.items():
            if _masked(name) or name == "dialects":
                continue
            if parameter and name in ("opcode", "op_name"):
                item = None
            if name == "notes" and isinstance(item, list):
                item = [n for n in item if not (isinstance(n, str) and _FORM_NOTE in n)]
            if name == "ir" and item in ("hlo", "hlo-native"):
                item = "hlo"
            if name == "opcode" and isinstance(item, str):
                item = _opcode(item)
            new_name = _ops_named(name)
            if new_name in _TUPLE_OPS and isinstance(item, int):
                continue
            item = normalized(item, name)
            if new_name in out and isinstance(item, int) and isinstance(out[new_name], int):
                out[new_name] += item  # two MLIR spellings of one opcode
            else:
                out[new_name] = item
        return out
    if isinstance(value, list):
        return [normalized(item, key) for item in value]
    if isinstance(value, str):
        text = _ops_named(value)
        return text.replace("-", "_") if key in _NAME_KEYS else text
    return value


@contextlib.contextmanager
def form(xla: bool) -> Iterator[None]:
    """This process reads HLO modules in XLA's own form (`xla`) or converted."""
    before = os.environ.pop(SWITCH, None)
    if xla:
        os.environ[SWITCH] = "xla"
    try:
        yield
    finally:
        os.environ.pop(SWITCH, None)
        if before is not None:
            os.environ[SWITCH] = before


def difference(converted: Any, xla: Any, lines: int = 60) -> str:
    """The two normalized documents' differences, as a unified diff ('' if none)."""
    a = json.dumps(normalized(converted), indent=1, sort_keys=True).splitlines()
    b = json.dumps(normalized(xla), indent=1, sort_keys=True).splitlines()
    diff = list(difflib.unified_diff(a, b, "converted", "xla", n=2, lineterm=""))
    more = f"\n... {len(diff) - lines} more lines" if len(diff) > lines else ""
    return "\n".join(diff[:lines]) + more

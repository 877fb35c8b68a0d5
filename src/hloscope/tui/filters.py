"""Op filters: sets of ops that stand out by colour everywhere in the browser and
that a key narrows the IR view to.

A filter is a key, a colour and a function from the loaded target to op ids,
computed once per module in the loading worker. Host ops exist now; unused or
pruned parameters (from the params analysis) and changed ops (from the diff)
register here when those analyses land.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from rich.style import Style

from hloscope.api import Loaded
from hloscope.ir.model import Op, parse_dict_attribute


@dataclasses.dataclass(frozen=True)
class OpFilter:
    """A set of ops the browser can mark and show alone."""

    id: str
    key: str
    """The key that shows only these ops (and their functions), or everything again."""
    label: str
    """What the ops are, for the help screen and the status line: `host ops`."""
    style: Style
    """Their colour in the tree, the IR view's gutter and op names."""
    ops: Callable[[Loaded], frozenset[int]]
    """The ops, by id (runs in the loading worker)."""


def compute_type(op: Op) -> str | None:
    """The op's own placement mark, `_xla_compute_type` in `mhlo.frontend_attributes`
    (`host`). JAX puts it on the `func.call` of a `compute_on` region and on every op
    inside; XLA keeps it on the ops of a fusion."""
    text = op.attributes.get("mhlo.frontend_attributes")
    if text is None or "_xla_compute_type" not in text:
        return None
    return parse_dict_attribute(text).get("_xla_compute_type")


def host_ops(loaded: Loaded) -> frozenset[int]:
    return frozenset(op.id for op in loaded.module.ops if compute_type(op) == "host")


HOST_OPS = OpFilter(
    id="host",
    key="H",
    label="host ops",
    style=Style(color="bright_magenta", bold=True),
    ops=host_ops,
)

FILTERS: tuple[OpFilter, ...] = (HOST_OPS,)
"""Every filter, in the order of the help screen."""

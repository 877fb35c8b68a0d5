"""hloscope: see what XLA was given and what it made of it.

A command-line tool and terminal browser for JAX/XLA compiler IR (StableHLO and
HLO), and a Python API for interactive debugging (a REPL, a notebook, a pdb
prompt):

    import hloscope
    insp = hloscope.inspect(f, x, y)   # a function and its arguments, a Lowered,
    insp.params                        # Compiled or Exported, module text or bytes,
    hloscope.diff(f, g, x, y)          # a path, a dump folder
    hloscope.compare("step.py:step", ["tpu:v5e:4x4"], vary={"MESH": ["2x8", "4x4"]})
    with hloscope.watch() as w:        # every compilation JAX performs in the block:
        train()                        # why it compiled again, what it cost

Importing `hloscope` imports nothing heavy: `inspect` and `diff` load JAX and
jaxlib when called, and `Inspection.browse` loads textual. The reports the command line
and the API share are built in `hloscope.reports`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hloscope.errors import HloscopeError

if TYPE_CHECKING:
    from hloscope.api import Inspection, Watch, compare, diff, inspect, watch

__version__ = "0.1.0"

__all__ = [
    "HloscopeError",
    "Inspection",
    "Watch",
    "__version__",
    "compare",
    "diff",
    "inspect",
    "watch",
]

_LAZY = {"Inspection", "Watch", "compare", "diff", "inspect", "watch"}


def __getattr__(name: str) -> Any:
    # The API's module is imported on first use, not with the package.
    if name in _LAZY:
        from hloscope import api

        return getattr(api, name)
    raise AttributeError(f"module 'hloscope' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | _LAZY)

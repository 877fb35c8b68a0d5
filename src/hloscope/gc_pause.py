"""Python's cyclic garbage collector paused while a large object graph is built.

Process-wide (the collector is the interpreter's): the model builder pauses it for
the build, and the command line for a whole command, whose process ends after it
(`keep_for_exit`).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def gc_paused(*, keep_for_exit: bool = False) -> Iterator[None]:
    """Pause Python's cyclic garbage collector while a large object graph is built.

    Building the model allocates a few objects per op, all of them kept; each
    collection would walk the whole growing graph again (15 to 30% of the build time
    at 100k ops, more beyond). Reference counting still frees everything else.

    `keep_for_exit` (a command whose process ends after it): what was built is
    frozen out of the collector's reach before it is re-enabled, else the first
    collection after would walk all of it once more on the way out (0.4 s at 100k
    ops). It is released to the collector again when the next such block starts.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    if keep_for_exit and was_enabled:
        gc.unfreeze()
    try:
        yield
    finally:
        if was_enabled:
            if keep_for_exit:
                gc.freeze()
            gc.enable()

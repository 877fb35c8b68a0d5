"""Where the model build's time goes, field by field (issue 39: measure what reading
fields lazily, or a smaller model, would save before building anything).

    python bench/build_phases.py FILE [REPEATS]

Parses FILE (MLIR text or bytecode) once with hloscope's context, then times, in this
process, walks of the parsed module that read more and more of what
`hloscope.ir.build.build_model` reads of each op through jaxlib's bindings, and the
build itself. Each row is the best of REPEATS runs; the difference between two rows
is what reading that field costs. What the build does beyond the last walk is its
own Python work (the ops, blocks and regions it makes, the functions' arguments).
"""

from __future__ import annotations

import functools
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hloscope.gc_pause import gc_paused
from hloscope.ir.build import build_model
from hloscope.ir.context import mlir_context, walk_operations

LEVELS = (
    "walk, op names (the floor's walk)",
    "+ the op's block",
    "+ operands and results (value ids)",
    "+ result types (printed once each)",
    "+ attributes (printed once each)",
    "+ locations (printed once each) and regions",
)


def walk_reading(module: Any, level: int) -> None:
    """Walk `module` reading of each op what LEVELS[: level + 1] name."""
    read: list[Any] = []
    ids: dict[Any, int] = {}
    texts: dict[Any, str] = {}
    get = ids.get

    def printed(thing: Any) -> None:
        if thing not in texts:
            texts[thing] = str(thing)

    def visit(op: Any) -> None:
        read.append(op.name)
        if level >= 1:
            read.append(op.block)
        if level >= 2:
            read.append(tuple(map(get, op.operands)))
            results = op.results
            if len(results):
                if level >= 3:
                    for t in results.types:
                        printed(t)
                for value in results:
                    ids[value] = len(ids)
        if level >= 4:
            attrs = op.attributes
            if len(attrs):
                for _, attr in attrs.items():
                    printed(attr)
        if level >= 5:
            location = op.location
            if location.attr not in texts:
                texts[location.attr] = str(location)
            read.append(op.regions)
        read.clear()

    walk_operations(module.operation, visit)


def _walks() -> list[tuple[str, Callable[[Any], object]]]:
    """(what a walk reads, a function walking a module reading it)."""
    walks: list[tuple[str, Callable[[Any], object]]] = [
        (label, functools.partial(walk_reading, level=level)) for level, label in enumerate(LEVELS)
    ]
    return [*walks, ("build_model (the whole model)", build_model)]


def main(path: str, repeats: int = 3) -> int:
    from jaxlib.mlir import ir

    data = Path(path).read_bytes()
    with mlir_context():
        start = time.perf_counter()
        module = ir.Module.parse(data)
        parse = time.perf_counter() - start
    print("| phase | seconds | more than the row above |\n| --- | ---: | ---: |")
    print(f"| MLIR parse | {parse:.3f} | |")
    before = None
    for label, walk in _walks():
        best = float("inf")
        for _ in range(repeats):
            with gc_paused():
                start = time.perf_counter()
                walk(module)
                best = min(best, time.perf_counter() - start)
        more = f"{best - before:+.3f}" if before is not None else ""
        print(f"| {label} | {best:.3f} | {more} |")
        before = best
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 3))

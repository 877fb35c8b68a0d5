"""Where an op came from: MLIR locations read into frames and names, and which
frames are the user's own code.

jaxlib exposes no accessors for a location's parts, so its printed form
(`loc(callsite(...))`, `loc("name"(...))`, fused locations) is read here, once
per distinct text; `is_user_file` decides, on the path alone, whether a frame's
file is the user's or a library's.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import os
import re
import sys
import sysconfig
from collections.abc import Sequence

# --------------------------------------------------------------------------- locations


@dataclasses.dataclass(frozen=True, slots=True)
class Frame:
    """One Python (or other source) frame of a location's call stack."""

    function: str | None
    """Function name, when the location names one (JAX does)."""
    file: str
    line: int
    column: int

    @property
    def source(self) -> str:
        """`file.py:LINE`."""
        return f"{self.file}:{self.line}"


@dataclasses.dataclass(frozen=True, slots=True)
class Location:
    """Where an op came from: names (JAX op name stack or HLO instruction name)
    and the source frames, innermost first."""

    names: tuple[str, ...] = ()
    """Name locations, outermost first: `jit(f)/jit(inner)/mul`, `fusion.3`."""
    frames: tuple[Frame, ...] = ()
    """Source frames, innermost (the line that made the op) first."""

    @property
    def name(self) -> str | None:
        """The first name: for JAX lowerings the op name stack (`jit(f)/mul`)."""
        return self.names[0] if self.names else None

    @property
    def source(self) -> str | None:
        """`file.py:LINE` of the innermost frame, if any."""
        return self.frames[0].source if self.frames else None

    @property
    def user_source(self) -> str | None:
        """`file.py:LINE` of the innermost frame in the user's own code (`user_frame`),
        else of the innermost frame; None without frames."""
        frame = user_frame(self.frames)
        return frame.source if frame is not None else self.source

    @property
    def is_unknown(self) -> bool:
        return not self.names and not self.frames


UNKNOWN_LOCATION = Location()

PARSED_BUFFER = "-"
"""The file MLIR's parser names for an op of a text without `loc(...)`: the string
buffer it read, a position in the module's text, not a source line."""


def _library_roots() -> tuple[str, ...]:
    """Folders whose files are the Python installation's, not the user's: the
    stdlib (`sysconfig`'s `stdlib`, `platstdlib`), installed packages (`purelib`,
    `platlib`), the `lib/pythonX.Y` folders of `sys.prefix` and `sys.base_prefix`,
    and hloscope's own package."""
    paths = sysconfig.get_paths()
    roots = {paths.get(key) for key in ("stdlib", "platstdlib", "purelib", "platlib")}
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    for prefix in {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}:
        roots.add(os.path.join(prefix, "lib", version))
        roots.add(os.path.join(prefix, "lib64", version))
    roots.add(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    return tuple(sorted(os.path.normpath(r) for r in roots if r))


LIBRARY_ROOTS = _library_roots()
"""Where `is_user_file` finds the installation's files (computed once)."""


def is_user_file(path: str, library_roots: Sequence[str] = LIBRARY_ROOTS) -> bool:
    """Whether a source frame's file is the user's own code, not a library's.

    A file is a library's when it is JAX's (a `jaxlib` folder in its path, or
    `jax/_src`: an editable JAX checkout too), an installed package's (a
    `site-packages` or `dist-packages` folder in its path), one of Python's frozen
    modules (`<frozen runpy>`), or under one of `library_roots` (the stdlib, the
    installation's `lib/pythonX.Y` folders, hloscope itself). Anything else is the
    user's: a script in /tmp, a relative path (`samples/mlp.py`, as a dump's
    metadata may hold), `<stdin>`. Reads no file: the decision is on the path alone.
    """
    if path.startswith("<frozen "):
        return False
    normal = path.replace("\\", "/")
    parts = normal.split("/")
    folders = parts[:-1]
    if "site-packages" in folders or "dist-packages" in folders or "jaxlib" in folders:
        return False
    if any(pair == ("jax", "_src") for pair in itertools.pairwise(folders)):
        return False
    if not os.path.isabs(path):
        return True
    full = os.path.normpath(path)
    return not any(full == root or full.startswith(root + os.sep) for root in library_roots)


def user_frame(frames: Sequence[Frame]) -> Frame | None:
    """The innermost frame (`frames` are innermost first) in the user's own code
    (`is_user_file`), None when every frame is a library's."""
    return next((frame for frame in frames if is_user_file(frame.file)), None)


_LOC_TOKEN = re.compile(
    r"""\s*(?:
        (?P<string>"(?:[^"\\]|\\.)*")
      | (?P<number>\d+)
      | (?P<word>[A-Za-z_][\w.$-]*)
      | (?P<punct>[():,\[\]<>#]|to\b)
    )""",
    re.VERBOSE,
)


def unescape(quoted: str) -> str:
    """The text of an MLIR string literal (`"a\\"b"` -> `a"b`)."""
    body = quoted[1:-1]
    if "\\" not in body:
        return body

    def replace(match: re.Match[str]) -> str:
        esc = match.group(1)
        if esc in ('"', "\\"):
            return esc
        if esc == "n":
            return "\n"
        if esc == "t":
            return "\t"
        try:
            return chr(int(esc, 16))
        except ValueError:
            return esc

    return re.sub(r"\\([0-9A-Fa-f]{2}|.)", replace, body)


class _LocParser:
    """A recursive-descent reader of MLIR's printed location syntax.

    Handles `unknown`, file locations (with ranges `"f.py":3:5 to :9`), name
    locations (`"name"(child)`), `callsite(callee at caller)` and
    `fused[...]` / `fused<#attr>[...]`.
    """

    def __init__(self, text: str) -> None:
        self.tokens: list[tuple[str, str]] = []
        pos = 0
        while pos < len(text):
            match = _LOC_TOKEN.match(text, pos)
            if match is None or match.end() == pos:
                # Unknown syntax (an attribute in fused<...>): skip a character.
                pos += 1
                continue
            kind = match.lastgroup or "punct"
            self.tokens.append((kind, match.group(kind)))
            pos = match.end()
        self.pos = 0
        self.names: list[str] = []
        self.frames: list[Frame] = []

    def peek(self) -> tuple[str, str] | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self) -> tuple[str, str] | None:
        token = self.peek()
        self.pos += 1
        return token

    def accept(self, value: str) -> bool:
        token = self.peek()
        if token is not None and token[1] == value:
            self.pos += 1
            return True
        return False

    def parse(self) -> Location:
        if self.accept("loc"):
            self.accept("(")
        self.location(None)
        return Location(tuple(self.names), tuple(self.frames))

    def location(self, function: str | None) -> None:
        token = self.take()
        if token is None:
            return
        kind, value = token
        if kind == "word" and value == "unknown":
            return
        if kind == "word" and value == "callsite":
            self.accept("(")
            self.location(function)
            self.accept("at")
            self.location(None)
            self.accept(")")
            return
        if kind == "word" and value == "fused":
            if self.accept("<"):
                depth = 1
                while depth and self.peek() is not None:
                    _, inner = self.take()  # type: ignore[misc]
                    depth += {"<": 1, ">": -1}.get(inner, 0)
            if self.accept("["):
                while self.peek() is not None and not self.accept("]"):
                    if not self.accept(","):
                        self.location(function)
            return
        if kind == "string":
            text = unescape(value)
            if self.accept(":"):
                line = self.int()
                column = self.int() if self.accept(":") else 0
                if self.accept("to"):
                    # A range: `to :COL` or `to LINE:COL`; the start is what we keep.
                    self.int()
                    if self.accept(":"):
                        self.int()
                if text != PARSED_BUFFER:
                    self.frames.append(Frame(function, text, line, column))
                return
            if self.accept("("):
                # A name location. JAX nests the frame's function name this way:
                # "f"("file.py":3:4). An op-name stack ("jit(f)/mul") wraps a callsite.
                child = self.peek()
                is_frame_name = (
                    child is not None
                    and child[0] == "string"
                    and self.pos + 1 < len(self.tokens)
                    and self.tokens[self.pos + 1][1] == ":"
                )
                if is_frame_name:
                    self.location(text)
                else:
                    self.names.append(text)
                    self.location(function)
                self.accept(")")
                return
            self.names.append(text)
            return
        # Anything else (an alias `#loc3` printed without its definition): ignore.

    def int(self) -> int:
        token = self.peek()
        if token is not None and token[0] == "number":
            self.pos += 1
            return int(token[1])
        return 0


_SIMPLE_NAME_LOC = re.compile(r'loc\("((?:[^"\\]|\\.)*)"\)')


@functools.lru_cache(maxsize=65536)
def parse_location(text: str) -> Location:
    """Read MLIR's printed form of a location (`loc(...)`)."""
    if text in ("loc(unknown)", ""):
        return UNKNOWN_LOCATION
    simple = _SIMPLE_NAME_LOC.fullmatch(text)
    if simple:
        # By far the most common form in modules converted from HLO: loc("add.3").
        return Location((unescape('"' + simple.group(1) + '"'),))
    try:
        return _LocParser(text).parse()
    except RecursionError:
        return UNKNOWN_LOCATION

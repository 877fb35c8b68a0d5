"""Where each op is in the module's printed text, and what the printer named values.

The browser shows a module as MLIR's printer prints it (`ParsedModule.text()`) and
needs, for every op, the line it is printed on and, for every line, the op it
belongs to. MLIR prints ops in pre-order, one op per line, in the order of
`Module.ops`, so one pass over the lines pairs them: an op line is recognised by
its op name after the results (`%0 = stablehlo.add`, `call @f`, `"mhlo.fusion"(`).
The printer folds some regions into their op's line (the body of a compact
`stablehlo.reduce(...) applies stablehlo.add`); those ops share their parent's
line. Lines that are not ops (block labels, closing braces, `cond {`) belong to
the innermost op around them, found by indentation. XLA's own HLO text (modules
shown without an MLIR conversion) is paired by instruction name instead.

The printer's value names (`%cst`, `%0#1`) are read from the op lines because they
are what the user sees and searches for; the model's numbering is the fallback.

`search` finds the lines a query matches: a `file.py:LINE` query matches the ops
made at that source line, anything else the printed text itself (op names, SSA
values, types, attribute text). Everything here is computed once per printed
text, so a browser can answer keystrokes without walking the module again.
"""

from __future__ import annotations

import bisect
import dataclasses
import functools
import re
from collections.abc import Mapping, Sequence

from hloscope.ir.model import Module, Op

# An op line: indentation, optional results, then the op name (quoted in the
# generic form). Value names: `%0`, `%cst_1`, `%arg0`, with `:N` for N results.
_MLIR_OP_LINE = re.compile(
    r"(?P<indent> *)"
    r"(?:(?P<results>%[\w.$-]+(?::\d+)?(?:, %[\w.$-]+(?::\d+)?)*) = )?"
    r'(?P<name>"[A-Za-z_][\w.$-]*"|[A-Za-z_][\w$-]*(?:\.[\w$-]+)*)'
)
_RESULT = re.compile(r"(%[\w.$-]+)(?::(\d+))?")
_HLO_INSTRUCTION = re.compile(r"(?P<indent> *)(?:ROOT +)?%?(?P<name>[\w.-]+) *= ")
_HLO_COMPUTATION = re.compile(r"(?:ENTRY +)?%?(?P<name>[\w.-]+) *(?:\(.*\))?.*\{\s*$")
_SOURCE_QUERY = re.compile(r"(?P<file>[^\s:]+\.[A-Za-z0-9]+):(?P<line>\d+)")


@dataclasses.dataclass(frozen=True, eq=False)
class PrintedModule:
    """A module's printed text with the pairing of its ops and lines."""

    lines: Sequence[str]
    """The printed text, line by line."""
    op_line: Sequence[int]
    """For each op id, the 0-based line it is printed on. An op without a line of its
    own (folded into its parent's line) gets its nearest printed ancestor's line;
    -1 when there is none."""
    own_line: Sequence[bool]
    """For each op id, whether `op_line` is the op's own line."""
    line_op: Sequence[int]
    """For each line, the innermost op it belongs to (its op line, or a block label
    or closing brace inside that op); -1 outside every op (the module header,
    location aliases)."""
    value_names: Mapping[int, str]
    """Value id -> the name the printer gave it (`%cst`, `%0#1`), for op results."""
    function_lines: Mapping[str, int]
    """Function name -> the line of its header, in module order."""
    width: int
    """The length of the longest line, in characters."""

    @functools.cached_property
    def joined(self) -> tuple[str, list[int]]:
        """The lines joined by newlines, and where each line starts in that text (for
        `search`, which scans it in one pass)."""
        starts: list[int] = []
        offset = 0
        for line in self.lines:
            starts.append(offset)
            offset += len(line) + 1
        return "\n".join(self.lines), starts

    @functools.cached_property
    def folded(self) -> str | None:
        """`joined`'s text in lower case, when lowering keeps every offset (it does
        unless a character lowers to several), for case-insensitive search."""
        text = self.joined[0]
        lowered = text.lower()
        return lowered if len(lowered) == len(text) else None

    def value_name(self, module: Module, value: int) -> str:
        """The value's printed name, or the model's numbering when it is not on an op
        line (block arguments)."""
        name = self.value_names.get(value)
        return name if name is not None else module.value_name(value)


def unpaired(text: str) -> PrintedModule:
    """`text` not yet paired with its module's ops (the model is still being built):
    every line belongs to no op, so it can be shown and scrolled, not yet selected."""
    lines = text.splitlines()
    return PrintedModule(
        lines=lines,
        op_line=(),
        own_line=(),
        line_op=[-1] * len(lines),
        value_names={},
        function_lines={},
        width=max((len(line) for line in lines), default=0),
    )


def index_printed(module: Module, text: str, *, hlo_native: bool = False) -> PrintedModule:
    """Pair `module`'s ops with the lines of `text`, its printed form.

    `hlo_native`: `text` is XLA's HLO text of a module built from XLA's HLO (the
    `hlo-native` format), paired by instruction name.
    """
    lines = text.splitlines()
    if hlo_native:
        op_line, line_op, names = _pair_hlo(module, lines)
    else:
        op_line, line_op, names = _pair_mlir(module, lines)
    own_line = [False] * len(op_line)
    for line, op_id in enumerate(line_op):
        if op_id >= 0 and op_line[op_id] == line:
            own_line[op_id] = True
    # Ops without a line of their own take their nearest printed ancestor's line;
    # ancestors come first in pre-order, so theirs is already final.
    ops = module.ops
    for op_id, line in enumerate(op_line):
        if line < 0:
            parent = ops[op_id].parent
            op_line[op_id] = op_line[parent.id] if parent is not None else -1
    function_lines = {
        name: op_line[function.op.id]
        for name, function in module.functions.items()
        if op_line[function.op.id] >= 0
    }
    return PrintedModule(
        lines=lines,
        op_line=op_line,
        own_line=own_line,
        line_op=line_op,
        value_names=names,
        function_lines=function_lines,
        width=max((len(line) for line in lines), default=0),
    )


def _name_matches(token: str, op_name: str) -> bool:
    """Whether a printed op token names `op_name`. The generic form quotes the name;
    the custom form may drop the default dialect (`call` for `func.call`)."""
    if token.startswith('"'):
        token = token[1:-1]
    return token == op_name or ("." not in token and op_name.endswith("." + token))


def _result_names(results: str, op: Op, names: dict[int, str]) -> None:
    """Record the printed names of `op`'s results from `%a, %b:2 = ...`."""
    printed: list[str] = []
    for match in _RESULT.finditer(results):
        count = match.group(2)
        if count is None:
            printed.append(match.group(1))
        else:
            printed.extend(f"{match.group(1)}#{i}" for i in range(int(count)))
    if len(printed) == len(op.results):
        for value, name in zip(op.results, printed, strict=True):
            names[value] = name


def _pair_mlir(module: Module, lines: Sequence[str]) -> tuple[list[int], list[int], dict[int, str]]:
    """Pair ops and lines by order, name and indentation.

    The printer indents a region's ops two columns deeper than the op holding the
    region, and everything below the (unlisted) top-level module at least two. So a
    line at or left of a printed op's indentation cannot hold one of its
    descendants: when the next op in pre-order is such a descendant, its parent's
    regions were folded into the parent's line, and pairing resumes after them.
    """
    ops = module.ops
    count = len(ops)
    op_line = [-1] * count
    line_op = [-1] * len(lines)
    op_indent = [0] * count
    names: dict[int, str] = {}
    # Printed ops whose regions may still hold lines, innermost last.
    open_ops: list[Op] = []
    next_op = 0
    for number, line in enumerate(lines):
        indent = len(line) - len(line.lstrip(" "))
        match = _MLIR_OP_LINE.match(line) if indent >= 2 else None
        candidate = next_op
        if match is not None:
            while candidate < count:
                parent = ops[candidate].parent
                if parent is None or op_line[parent.id] < 0 or op_indent[parent.id] < indent:
                    break
                candidate = parent.end
        if (
            match is not None
            and candidate < count
            and _name_matches(match.group("name"), ops[candidate].name)
        ):
            placed = ops[candidate]
            while open_ops and open_ops[-1].end <= placed.id:
                open_ops.pop()
            open_ops.append(placed)
            op_line[placed.id] = number
            op_indent[placed.id] = indent
            line_op[number] = placed.id
            results = match.group("results")
            if results and placed.results:
                _result_names(results, placed, names)
            next_op = placed.id + 1
            continue
        # Not an op line: it belongs to the innermost printed op at its indentation
        # or less (a closing brace lines up with its op; deeper ops are finished).
        while open_ops and op_indent[open_ops[-1].id] > indent:
            open_ops.pop()
        if open_ops and line.strip():
            line_op[number] = open_ops[-1].id
    return op_line, line_op, names


def _pair_hlo(module: Module, lines: Sequence[str]) -> tuple[list[int], list[int], dict[int, str]]:
    op_line = [-1] * len(module.ops)
    line_op = [-1] * len(lines)
    names: dict[int, str] = {}
    functions: dict[str, Op] = {}
    instructions: dict[str, Op] = {}
    for op in module.ops:
        # An instruction's location holds its JAX op name where it has metadata.
        name = op.hlo_name or op.location.name
        if name is None:
            continue
        if op.name == "func.func":
            functions.setdefault(name, op)
        else:
            instructions.setdefault(name, op)
    current: Op | None = None
    for number, line in enumerate(lines):
        instruction = _HLO_INSTRUCTION.match(line)
        if instruction is not None and current is not None:
            found = instructions.get(instruction.group("name"))
            if found is not None:
                op_line[found.id] = number
                line_op[number] = found.id
                if len(found.results) == 1:
                    names[found.results[0]] = "%" + instruction.group("name")
                continue
        computation = _HLO_COMPUTATION.match(line)
        if computation is not None and not line.startswith((" ", "HloModule")):
            current = functions.get(computation.group("name"))
            if current is not None:
                op_line[current.id] = number
                line_op[number] = current.id
                continue
        if current is not None and line.strip():
            line_op[number] = current.id
        if line.startswith("}"):
            current = None
    return op_line, line_op, names


# --------------------------------------------------------------------------- search


def source_query(query: str) -> tuple[str, int] | None:
    """`(file, line)` when `query` names a source line (`model.py:42`)."""
    match = _SOURCE_QUERY.fullmatch(query.strip())
    if match is None:
        return None
    return match.group("file"), int(match.group("line"))


def _same_file(path: str, query: str) -> bool:
    """`query` names `path`: equal, or a trailing part of it (`pkg/model.py`)."""
    path = path.replace("\\", "/")
    return path == query or path.endswith("/" + query.lstrip("/"))


def search(module: Module, printed: PrintedModule, query: str) -> tuple[int, ...]:
    """The lines that `query` matches, in order.

    `FILE:LINE` (`model.py:42`, `pkg/model.py:42`) matches the ops whose location has
    a frame at that line of that file (any frame of the call stack). Anything else
    matches lines of the printed text containing it, ignoring case; a value name
    (`%3`, `%arg0`) matches whole names only (`%3` does not find `%30`). An op's name
    as the tree shows it (`hlo.all-reduce`) also matches the lines of those ops, in
    either form.
    """
    query = query.strip()
    if not query:
        return ()
    source = source_query(query)
    if source is not None:
        return _search_source(module, printed, *source)
    named = _search_op_name(module, printed, query)
    text_hits = _search_text(printed, query)
    return tuple(sorted(set(named).union(text_hits))) if named else text_hits


def _search_op_name(module: Module, printed: PrintedModule, query: str) -> tuple[int, ...]:
    """The lines of the ops named `query` (`hlo.all-reduce`, `stablehlo.add`): the names
    the tree and the Overview show, which XLA's own text (`all-reduce(`) does not
    print."""
    wanted = query.lower()
    if "." not in wanted:
        return ()
    lines = {
        printed.op_line[op.id]
        for op in module.ops
        if op.name.lower() == wanted and op.id < len(printed.op_line)
    }
    lines.discard(-1)
    return tuple(sorted(lines))


def _search_text(printed: PrintedModule, query: str) -> tuple[int, ...]:
    text, starts = printed.joined
    folded = printed.folded
    if folded is not None:
        # A case-sensitive scan of the lowered text is many times faster than
        # IGNORECASE's (130 ms against 5 ms over 10 MB).
        text, query = folded, query.lower()
    pattern = re.escape(query)
    if query.startswith("%") and re.match(r"[\w.$-]", query[-1]):
        pattern += r"(?![\w.$-])"
    # One scan of the whole text in the regex engine, then a line number per matching
    # line (not a Python call per line: 120k lines at 100k ops).
    found = re.compile(pattern, 0 if folded is not None else re.IGNORECASE).search
    hits: list[int] = []
    position = 0
    end = len(text)
    while position <= end:
        match = found(text, position)
        if match is None:
            break
        number = bisect.bisect_right(starts, match.start()) - 1
        hits.append(number)
        position = starts[number + 1] if number + 1 < len(starts) else end + 1
    return tuple(hits)


def _search_source(module: Module, printed: PrintedModule, file: str, line: int) -> tuple[int, ...]:
    basename = file.rsplit("/", 1)[-1]
    marker = f":{line}:"
    lines: set[int] = set()
    for op in module.ops:
        text = op.location_text
        # Cheap text tests first: parsing every location of a large module is slow.
        if marker not in text or basename not in text:
            continue
        if any(frame.line == line and _same_file(frame.file, file) for frame in op.location.frames):
            number = printed.op_line[op.id]
            if number >= 0:
                lines.add(number)
    return tuple(sorted(lines))

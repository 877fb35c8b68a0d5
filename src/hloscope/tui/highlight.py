"""Syntax colours for one printed line of MLIR or HLO text.

The IR view highlights only the lines on screen, one at a time, so this is a
single regular-expression pass over one line: no lexer state, no work
proportional to the module.
"""

from __future__ import annotations

import re

from rich.style import Style
from rich.text import Text

OP_NAME = Style(color="bright_blue", bold=True)
VALUE = Style(color="cyan")
SYMBOL = Style(color="yellow", bold=True)
TYPE = Style(color="green")
STRING = Style(color="bright_yellow")
LOCATION = Style(color="bright_black")
KEYWORD = Style(color="magenta", italic=True)
BLOCK = Style(bold=True)
NUMBER = Style(color="bright_magenta")

_MLIR_TOKENS = re.compile(
    r"""
      (?P<location>loc\((?:[^()]|\([^()]*\))*\)|\#loc\d*)
    | (?P<string>"(?:[^"\\]|\\.)*")
    | (?P<value>%[\w.$#-]+)
    | (?P<symbol>@[\w.$-]+)
    | (?P<block>\^bb\d+)
    | (?P<type>(?:tensor|tuple|memref|vector|complex)<(?:[^<>]|<(?:[^<>]|<[^<>]*>)*>)*>
              |![\w.]+(?:<(?:[^<>]|<[^<>]*>)*>)?
              |\b(?:[fiu]\d+|bf16|index)\b)
    | (?P<keyword>\b(?:func\.func|module|attributes|public|private
                  |cond|do|applies|across|dimensions)\b)
    | (?P<number>\b-?\d+(?:\.\d+)?(?:e[+-]?\d+)?\b)
    """,
    re.VERBOSE,
)
_MLIR_OP = re.compile(
    r" *(?:%[\w.$-]+(?::\d+)?(?:, %[\w.$-]+(?::\d+)?)* = )?"
    r'(?P<name>"[\w.$-]+"|[A-Za-z_][\w$-]*(?:\.[\w$-]+)*)'
)
_HLO_TOKENS = re.compile(
    r"""
      (?P<location>\bmetadata=\{(?:[^{}]|\{[^{}]*\})*\})
    | (?P<string>"(?:[^"\\]|\\.)*")
    | (?P<value>%[\w.-]+)
    | (?P<type>\b(?:pred|token|[fsu]\d+|bf16|c64|c128|f8\w*)\[[\d,?]*\](?:\{[^{}]*\})?)
    | (?P<keyword>\b(?:HloModule|ENTRY|ROOT)\b)
    | (?P<number>\b-?\d+(?:\.\d+)?\b)
    """,
    re.VERBOSE,
)
_HLO_OPCODE = re.compile(r" *(?:ROOT +)?%?[\w.-]+ *= *(?:\([^=]*?\)|\S+) +(?P<name>[a-z][\w-]*)\(")
_STYLES = {
    "location": LOCATION,
    "string": STRING,
    "value": VALUE,
    "symbol": SYMBOL,
    "block": BLOCK,
    "type": TYPE,
    "keyword": KEYWORD,
    "number": NUMBER,
}


def highlight_line(
    line: str, *, hlo: bool = False, op_line: bool = True, op_style: Style | None = None
) -> Text:
    """`line` with colours. `op_line`: the line prints an op, whose name stands out;
    `op_style` is added to the name's colour (a marked op)."""
    text = Text(line, no_wrap=True, end="")
    tokens = _HLO_TOKENS if hlo else _MLIR_TOKENS
    for match in tokens.finditer(line):
        kind = match.lastgroup
        if kind is not None:
            text.stylize(_STYLES[kind], match.start(), match.end())
    op = (_HLO_OPCODE if hlo else _MLIR_OP).match(line) if op_line else None
    if op is not None:
        style = OP_NAME if op_style is None else OP_NAME + op_style
        text.stylize(style, op.start("name"), op.end("name"))
    return text

"""Name and value normalisation: what makes StableHLO, XLA's HLO converted back to
MLIR, VHLO and Exported artifacts spell the same op, function and attribute value the
same (`mhlo.`, `hlo.` and `stablehlo.` ops in one namespace, XLA's `.N` suffixes
dropped, channel ids ignored, instruction names in frontend attributes without their
suffixes), and attribute values shortened for a change's detail."""

from __future__ import annotations

import re

# Longest attribute value quoted in a change's detail.
MAX_VALUE_CHARS = 80

_SUFFIX = re.compile(r"(?:\.\d+|\.clone|_\d+)+$")
_SYMBOL = re.compile(r'@("(?:[^"\\]|\\.)*"|[\w.$-]+)')


def normalize_kind(name: str) -> str:
    """One namespace for MHLO, HLO and StableHLO ops; `dot` is a `dot_general`."""
    if name.startswith("mhlo."):
        name = "stablehlo." + name[5:]
    elif name.startswith("hlo."):
        name = "stablehlo." + name[4:].replace("-", "_")
    if name == "stablehlo.dot":
        return "stablehlo.dot_general"
    return name


def normalize_function_name(name: str) -> str:
    """`dense.2` -> `dense`, `region_0.3.clone` -> `region`: XLA's unique suffixes."""
    return _SUFFIX.sub("", name) or name


def _normalize_symbols(text: str) -> str:
    return _SYMBOL.sub(lambda m: "@" + normalize_function_name(m.group(1).strip('"')), text)


_CHANNEL = re.compile(r"handle = \d+, ")


def normalize_value(text: str) -> str:
    if text.startswith("#stablehlo.channel_handle<"):
        # Channel ids number the collectives in order; one inserted op renumbers all.
        return _CHANNEL.sub("", text)
    if "mhlo" in text:
        text = text.replace("#mhlo<", "#stablehlo<").replace("#mhlo.", "#stablehlo.")
    if "@" in text:
        text = _normalize_symbols(text)
    return text


# Frontend attributes whose value is the name of another instruction, numbered per
# compile: the TPU's `async_collective_name` (the async collective a synchronous one
# was made from, `all-gather-start.12`).
INSTRUCTION_NAME_ENTRIES = frozenset({"async_collective_name"})


def normalize_frontend_attribute(entry: str, value: str) -> str:
    """A frontend attribute's value, without the per-compile suffixes of an instruction
    it names (`all-gather-start.12` -> `all-gather-start`)."""
    if entry in INSTRUCTION_NAME_ENTRIES:
        return normalize_function_name(value)
    return value


def short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_VALUE_CHARS else text[: MAX_VALUE_CHARS - 1] + "…"

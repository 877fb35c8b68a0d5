"""JAX 0.8's explanations of a tracing cache miss in the words of JAX 0.9 and newer,
which `hloscope.sources.jax.capture` reads: what differs by release in those
messages (the frames it reads are `private`'s)."""

from __future__ import annotations

import re
from types import FrameType

from hloscope.sources.jax.private import private_static_argnums_on_stack

_OLD_HEADER = re.compile(r"^(?P<head>TRACING CACHE MISS at .*?) costing [\d.]+ ms because:$")
_OLD_PREAMBLES = (
    "all previously seen cache keys are different. Closest previous key:",
    "all previously seen cache keys are different. Several previous keys are closest:",
)
_OLD_WEAK_TYPE_HINT = ("where weak_type=True", "weak_type=False means", "See https://")
_OLD_TREE_PATH = re.compile(r"^(?P<indent>\s*)\* at (?P<side>args|kwargs)(?P<rest>.*)$")
_STATIC_NODE = "<class 'jax._src.tree_util.Static'> with pytree metadata Static(val={})"


def explanation_in_current_words(message: str, frame: FrameType | None = None) -> str:
    """One of JAX's tracing cache-miss explanations in the words of JAX 0.9 and newer,
    which `hloscope.sources.jax.capture` reads. JAX 0.8 (`pjit.explain_tracing_cache_miss`)
    says the same things shaped otherwise: a cost in the first line, each closest key
    as `* key with ...`, pytree paths as `args[0]...`, static arguments as `now 3 and
    before 2` (positional, in the order of `static_argnums`, read from the `jax.jit`
    call on `frame`'s stack) or `now {n: 3} and before {n: 2}` (keywords); those are
    rewritten, and the words of each difference are kept. A message in the newer words
    comes back as it is."""
    lines = message.splitlines()
    header = _OLD_HEADER.match(lines[0]) if lines else None
    if header is None:
        return message
    out = [header["head"] + ":"]
    kind = None
    for line in lines[1:]:
        text = line.strip()
        if text in _OLD_PREAMBLES:
            out.append("  all previously seen cache keys differ. For the closest previous key:")
            continue
        if text.startswith("* key with "):
            if kind is not None:  # several keys are closest: the first, as JAX 0.9 gives one
                break
            kind = text.removeprefix("* key with ")
            if kind not in _OLD_STATIC_KINDS:
                out.append(f"  {kind}")
            continue
        if text.startswith(("types now: ", "now: PyTreeDef", "before: PyTreeDef")):
            continue
        if text.startswith(_OLD_WEAK_TYPE_HINT):
            continue
        if kind in _OLD_STATIC_KINDS:
            changes = _static_changes(kind, text, frame)
            out.extend(["  different input pytree:", *changes] if changes else [f"  {kind}", line])
            continue
        tree_path = _OLD_TREE_PATH.match(line)
        if tree_path:
            side = "[0]" if tree_path["side"] == "args" else "[1]"
            out.append(f"  * at input path {side}{tree_path['rest']}")
            continue
        out.append(line)
    return "\n".join(out)


_OLD_STATIC_KINDS = ("different value of static args:", "different value of static kwargs:")
_OLD_STATIC_VALUES = re.compile(r"^now (?P<now>.*) and before (?P<before>.*)$")


def _static_changes(kind: str, text: str, frame: FrameType | None) -> list[str]:
    """JAX 0.8's changed static values as JAX 0.9 says them, one line per argument
    whose value changed; empty where they cannot be told apart."""
    values = _OLD_STATIC_VALUES.match(text)
    if values is None:
        return []
    if kind == "different value of static kwargs:":
        now = _keyword_values(values["now"].removeprefix("{").removesuffix("}"))
        before = _keyword_values(values["before"].removeprefix("{").removesuffix("}"))
        paths = {key: f"[1][{key!r}]" for key in dict.fromkeys([*now, *before])}
    else:
        # Each value's repr, joined with ', ': one part per static argument, unless a
        # repr holds ', ' itself (then there are more parts than arguments).
        argnums = private_static_argnums_on_stack(frame)
        now_parts, before_parts = values["now"].split(", "), values["before"].split(", ")
        if argnums is None or not len(now_parts) == len(before_parts) == len(argnums):
            return []
        now = {str(i): v for i, v in zip(argnums, now_parts, strict=True)}
        before = {str(i): v for i, v in zip(argnums, before_parts, strict=True)}
        paths = {str(i): f"[0][{i}]" for i in argnums}
    return [
        f"  * at input path {path}, now {_STATIC_NODE.format(now.get(key))} and before "
        f"{_STATIC_NODE.format(before.get(key))}, so the pytree node metadata does not match"
        for key, path in paths.items()
        if now.get(key) != before.get(key)
    ]


def _keyword_values(text: str) -> dict[str, str]:
    """`{n: 3, name: 'a, b'}`'s inside as {"n": "3", "name": "'a, b'"}."""
    parts = re.split(r"(?:^|, )([A-Za-z_]\w*): ", text)
    return {parts[i]: parts[i + 1] for i in range(1, len(parts) - 1, 2)}

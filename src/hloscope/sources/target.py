"""What the user named on the command line, as data: no imports, no I/O but `stat`.

A target is a dump (a file or a folder) or an entrypoint: `pkg.module:attr` or
`path/to/file.py:attr` (`attr` may be dotted: `Model.apply`). Example argument
specs use HLO shape syntax: `f32[8,128]`, `bf16[2,3]`, `i32[]`, `pred[4]`, and JAX's
for typed PRNG keys: `key<fry>[]`, `key<rbg>[4]`.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from hloscope.errors import HloscopeError


@dataclasses.dataclass(frozen=True)
class DumpTarget:
    """A module file or a dump folder."""

    path: Path


@dataclasses.dataclass(frozen=True)
class EntrypointTarget:
    """A Python object to import: `module` (dotted) or `file` (a .py path), and the
    attribute path inside it."""

    text: str
    attribute: str
    module: str | None = None
    file: Path | None = None

    @property
    def label(self) -> str:
        origin = str(self.file) if self.file is not None else self.module
        return f"{origin}:{self.attribute}"


Target = DumpTarget | EntrypointTarget

_IDENTIFIER = r"[A-Za-z_][A-Za-z0-9_]*"
_DOTTED = re.compile(rf"{_IDENTIFIER}(?:\.{_IDENTIFIER})*")

TARGET_FORMS = "a file, a folder, pkg.module:function or path/to/file.py:function"


def parse_target(text: str) -> Target:
    """Decide what `text` names. Raises `HloscopeError` when it names nothing."""
    if not text:
        raise HloscopeError(f"empty target; give {TARGET_FORMS}")
    path = Path(text)
    if path.exists() or path.is_symlink():
        return DumpTarget(path)
    if ":" in text:
        left, _, attribute = text.rpartition(":")
        if not _DOTTED.fullmatch(attribute):
            raise HloscopeError(
                f"'{attribute}' is not a Python attribute name (a target is {TARGET_FORMS})",
                where=text,
            )
        if left.endswith(".py"):
            file = Path(left)
            if not file.exists():
                raise HloscopeError("no such file", where=left)
            if not file.is_file():
                raise HloscopeError("not a Python file", where=left)
            return EntrypointTarget(text=text, attribute=attribute, file=file)
        if _DOTTED.fullmatch(left):
            return EntrypointTarget(text=text, attribute=attribute, module=left)
        raise HloscopeError(f"no such file or directory (a target is {TARGET_FORMS})", where=text)
    raise HloscopeError(f"no such file or directory (a target is {TARGET_FORMS})", where=text)


@dataclasses.dataclass(frozen=True)
class ArgSpec:
    """An example argument given as a shape: `f32[8,128]`."""

    dtype: str
    """NumPy/JAX dtype name: `float32`, `bfloat16`, `int32`, `bool`, ...; a typed PRNG
    key's as JAX prints it: `key<fry>`, `key<rbg>`, `key<urbg>`."""
    shape: tuple[int, ...]
    text: str


# HLO element type (and a few spellings users type) -> JAX dtype name.
DTYPE_ALIASES = {
    "pred": "bool",
    "bool": "bool",
    "i1": "bool",
    "s4": "int4",
    "s8": "int8",
    "s16": "int16",
    "s32": "int32",
    "s64": "int64",
    "i4": "int4",
    "i8": "int8",
    "i16": "int16",
    "i32": "int32",
    "i64": "int64",
    "u4": "uint4",
    "u8": "uint8",
    "u16": "uint16",
    "u32": "uint32",
    "u64": "uint64",
    "ui8": "uint8",
    "ui16": "uint16",
    "ui32": "uint32",
    "ui64": "uint64",
    "f16": "float16",
    "bf16": "bfloat16",
    "f32": "float32",
    "f64": "float64",
    "c64": "complex64",
    "c128": "complex128",
    "f8e4m3fn": "float8_e4m3fn",
    "f8e5m2": "float8_e5m2",
    "f8e4m3b11fnuz": "float8_e4m3b11fnuz",
    "f8e4m3fnuz": "float8_e4m3fnuz",
    "f8e5m2fnuz": "float8_e5m2fnuz",
    "f8e3m4": "float8_e3m4",
    "f8e4m3": "float8_e4m3",
    "f8e8m0fnu": "float8_e8m0fnu",
    "f4e2m1fn": "float4_e2m1fn",
    "s2": "int2",
    "u2": "uint2",
    "i2": "int2",
}

_HLO_NAMES = {
    numpy: hlo for hlo, numpy in DTYPE_ALIASES.items() if not hlo.startswith(("i", "ui", "bool"))
}


def hlo_dtype(numpy_name: str) -> str:
    """HLO spelling of a NumPy/JAX dtype name: `float32` -> `f32`, `bool` -> `pred`,
    `int4` -> `s4`; a name XLA has no element type for (`key<fry>`, `float0`) is
    kept as it is."""
    return _HLO_NAMES.get(numpy_name, numpy_name)


# Typed PRNG keys a shape may name, as JAX prints their dtype (`key<fry>`), and the
# implementation each names (`jax.random.key(..., impl=...)`).
KEY_IMPLS = {"fry": "threefry2x32", "rbg": "rbg", "urbg": "unsafe_rbg"}

_ARG_SPEC = re.compile(
    r"\s*([A-Za-z][A-Za-z0-9]*(?:<[A-Za-z0-9_]*>)?)\s*\[\s*([0-9,\s]*)\]\s*(?:\{[0-9,\s]*\})?\s*"
)


def parse_arg_spec(text: str) -> ArgSpec:
    """Parse `f32[8,128]` (HLO shape syntax; a layout `{1,0}` is allowed and ignored),
    or a typed PRNG key array `key<fry>[]`, `key<rbg>[4]`, `key<urbg>[2]`."""
    match = _ARG_SPEC.fullmatch(text)
    if not match:
        raise HloscopeError(
            f"bad --arg '{text}': expected a shape such as f32[8,128], bf16[2,3], i32[] or pred[4]"
        )
    element = match.group(1)
    if element.lower().startswith("key<"):
        tag = element[4:-1]
        if tag not in KEY_IMPLS:
            keys = ", ".join(f"key<{t}>" for t in KEY_IMPLS)
            raise HloscopeError(
                f"bad --arg '{text}': unknown PRNG key implementation '{tag}' (known: {keys})"
            )
        dtype: str | None = f"key<{tag}>"
    else:
        dtype = DTYPE_ALIASES.get(element.lower())
    if dtype is None:
        known = ", ".join(k for k in DTYPE_ALIASES if not k.startswith(("i", "ui", "bool")))
        known += ", " + ", ".join(f"key<{t}>" for t in KEY_IMPLS)
        raise HloscopeError(
            f"bad --arg '{text}': unknown element type '{element}' (known: {known})"
        )
    dims_text = [d.strip() for d in match.group(2).split(",")]
    if dims_text == [""]:
        dims: tuple[int, ...] = ()
    elif any(not d for d in dims_text):
        raise HloscopeError(f"bad --arg '{text}': empty dimension")
    else:
        dims = tuple(int(d) for d in dims_text)
    return ArgSpec(dtype=dtype, shape=dims, text=text.strip())


def is_script(target: str) -> bool:
    """A Python script to run (`SCRIPT.py`), not an entrypoint (`file.py:function`)."""
    return target.endswith(".py") and Path(target).is_file()

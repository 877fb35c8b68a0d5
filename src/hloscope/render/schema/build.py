"""The pieces a JSON Schema (draft 2020-12) of a document is made of, and the types
they are read from.

A key the JSON renderer copies from a report's dataclass (`"bytes": buffer.bytes`)
takes its schema from that field's annotation (`fields`), and a dataclass the renderer
writes whole (`plain(report.timings)`, `dataclasses.asdict(backend)`) is described
field by field (`dataclass_schema`): when a field changes type, or is added to such a
dataclass, the schema follows. What the renderer computes (a count, a list of names)
is written here by hand, next to the keys read from types.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

Schema = dict[str, Any]

STR: Schema = {"type": "string"}
INT: Schema = {"type": "integer"}
NUM: Schema = {"type": "number"}
BOOL: Schema = {"type": "boolean"}
NULL: Schema = {"type": "null"}
ANY: Schema = {}


def nullable(schema: Schema) -> Schema:
    """`schema` or null."""
    if set(schema) == {"enum"}:
        return {"enum": [*schema["enum"], None]}
    kind = schema.get("type")
    if isinstance(kind, str) and set(schema) <= {"type", "enum", "description"}:
        widened = {**schema, "type": [kind, "null"]}
        if "enum" in schema:
            widened["enum"] = [*schema["enum"], None]
        return widened
    return {"anyOf": [schema, NULL]}


def array(items: Schema) -> Schema:
    return {"type": "array", "items": items}


def mapping(values: Schema) -> Schema:
    """An object used as a map (op name -> count): any keys, values of one schema."""
    return {"type": "object", "additionalProperties": values}


def obj(
    properties: Mapping[str, Schema],
    *,
    optional: Iterable[str] = (),
    title: str | None = None,
    description: str | None = None,
) -> Schema:
    """An object with these keys, all required but `optional` (keys a document has
    only in some cases). Other keys are allowed: the contract adds keys."""
    optional = set(optional)
    unknown = optional - set(properties)
    if unknown:
        raise ValueError(f"optional keys that are not properties: {sorted(unknown)}")
    schema: Schema = {}
    if title is not None:
        schema["title"] = title
    if description is not None:
        schema["description"] = description
    schema["type"] = "object"
    schema["properties"] = dict(properties)
    schema["required"] = [key for key in properties if key not in optional]
    return schema


@functools.cache
def hints(cls: type) -> dict[str, Any]:
    """The resolved annotations of a dataclass's fields."""
    return typing.get_type_hints(cls)


def field_type(cls: type, name: str) -> Any:
    """The annotation of `cls`'s field `name`."""
    return hints(cls)[name]


def element(cls: type, name: str) -> type:
    """The dataclass a field holds: its own type, its items' (`tuple[X, ...]`) or the
    one besides None (`X | None`)."""
    tp = field_type(cls, name)
    while not dataclasses.is_dataclass(tp):
        args = [a for a in typing.get_args(tp) if a is not type(None) and a is not Ellipsis]
        if len(args) != 1:
            raise TypeError(f"{cls.__name__}.{name} holds no one dataclass: {tp}")
        tp = args[0]
    assert isinstance(tp, type)
    return tp


def of_type(tp: Any, *, plain: bool = False) -> Schema:
    """The schema of a value of annotation `tp` as the JSON renderer writes it. With
    `plain`, as `render.json.plain` writes it: a float that is not finite is null."""
    if tp is type(None):
        return NULL
    if tp is bool:
        return BOOL
    if tp is int:
        return INT
    if tp is float:
        return nullable(NUM) if plain else NUM
    if tp is str:
        return STR
    if tp is Any or tp is object:
        return ANY
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        return dataclass_schema(tp, plain=plain)
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is Literal:
        return {"enum": list(args)}
    if origin in (typing.Union, types.UnionType):
        return _union([of_type(a, plain=plain) for a in args])
    if origin in (tuple, list, Sequence):
        if origin is tuple and not (len(args) == 2 and args[1] is Ellipsis):
            return {
                "type": "array",
                "prefixItems": [of_type(a, plain=plain) for a in args],
                "items": False,
            }
        return array(of_type(args[0], plain=plain))
    if origin in (dict, Mapping):
        return mapping(of_type(args[1], plain=plain))
    raise TypeError(f"no JSON schema for the annotation {tp!r}")


def _union(members: list[Schema]) -> Schema:
    """One of `members`: a `type` list where each is a plain type (an enum with null
    stays an enum), else `anyOf`."""
    if all(set(m) == {"type"} and isinstance(m["type"], str) for m in members):
        kinds = [m["type"] for m in members]
        # JSON Schema's "number" takes integers already.
        if "number" in kinds and "integer" in kinds:
            kinds.remove("integer")
        return {"type": kinds}
    enums = [m for m in members if "enum" in m]
    if len(enums) == 1 and len(members) == 2 and NULL in members:
        return {"enum": [*enums[0]["enum"], None]}
    return {"anyOf": members}


def fields(cls: type, *names: str, **renamed: str) -> dict[str, Schema]:
    """The schemas of keys copied from `cls`'s fields: each of `names` under its own
    name, and each `key=field` of `renamed` under `key`."""
    chosen = {name: name for name in names} | renamed
    return {key: of_type(field_type(cls, field)) for key, field in chosen.items()}


def dataclass_schema(cls: type, *, plain: bool = True) -> Schema:
    """A dataclass written whole, every field a required key (`plain`,
    `dataclasses.asdict`)."""
    described = {
        f.name: of_type(field_type(cls, f.name), plain=plain) for f in dataclasses.fields(cls)
    }
    return obj(described, title=cls.__name__)


def closed(schema: Schema) -> Schema:
    """`schema` with no key left undeclared: every object that lists its properties
    gets `additionalProperties: false`. The tests validate every document against
    it, so a key a renderer adds without its schema fails there; the published
    schemas stay open to additions."""
    copy: Schema = {}
    for keyword, value in schema.items():
        if keyword in ("properties", "$defs"):
            copy[keyword] = {name: closed(sub) for name, sub in value.items()}
        elif keyword in ("anyOf", "oneOf", "allOf", "prefixItems"):
            copy[keyword] = [closed(sub) for sub in value]
        elif keyword in ("items", "additionalProperties") and isinstance(value, dict):
            copy[keyword] = closed(value)
        else:
            copy[keyword] = value
    if "properties" in copy and "additionalProperties" not in copy:
        copy["additionalProperties"] = False
    return copy

"""Every JSON document the tests produce, checked against its command's schema
(`hloscope schema COMMAND`).

`conftest.run_cli` calls `validate` on each `--json` document a command prints, so
every test that runs a command with `--json` (the goldens, the contract tests, the
libraries') checks its schema too. The schema is checked in its *closed* form, with no
key left undeclared: a key a renderer adds without adding it to the schema fails here.
"""

from __future__ import annotations

import functools
from typing import Any

import jsonschema

from hloscope.render.schema import schema_of
from hloscope.render.schema.build import Schema, closed


@functools.cache
def validator(command: str, *, strict: bool = True, masked: bool = False) -> Any:
    """The validator of `command`'s documents: `strict`, against the closed schema;
    `masked`, taking `"<seconds>"` for any key ending in `seconds` (the goldens mask
    wall times)."""
    schema = schema_of(command)
    jsonschema.Draft202012Validator.check_schema(schema)
    if strict:
        schema = closed(schema)
    if masked:
        schema = _seconds_masked(schema)
    return jsonschema.Draft202012Validator(schema)


def errors(document: Any, *, strict: bool = True, masked: bool = False) -> list[str]:
    """Where `document` breaks its command's schema, one line per error (none: valid)."""
    if not isinstance(document, dict) or not isinstance(document.get("command"), str):
        return [f"not a document of a command: {str(document)[:80]}"]
    check = validator(document["command"], strict=strict, masked=masked)
    return [
        f"{'/'.join(map(str, e.absolute_path)) or '<document>'}: {e.message[:300]}"
        for e in check.iter_errors(document)
    ]


def validate(document: Any, what: str = "") -> None:
    """Fail, naming every error, where `document` breaks its (closed) schema."""
    found = errors(document)
    assert not found, f"{what}: the JSON breaks its schema:\n" + "\n".join(found[:20])


def _seconds_masked(schema: Schema) -> Schema:
    if not isinstance(schema, dict):
        return schema
    copy: Schema = {}
    for keyword, value in schema.items():
        if keyword == "properties":
            copy[keyword] = {
                name: (
                    {"anyOf": [_seconds_masked(sub), {"const": "<seconds>"}]}
                    if name.endswith("seconds")
                    else _seconds_masked(sub)
                )
                for name, sub in value.items()
            }
        elif keyword in ("anyOf", "oneOf", "allOf", "prefixItems"):
            copy[keyword] = [_seconds_masked(sub) for sub in value]
        elif keyword == "items" and isinstance(value, dict):
            copy[keyword] = _seconds_masked(value)
        elif keyword == "additionalProperties" and isinstance(value, dict):
            # A map's keys may end in `seconds` too (XLA's cost: `optimal_seconds`).
            copy[keyword] = {"anyOf": [_seconds_masked(value), {"const": "<seconds>"}]}
        else:
            copy[keyword] = value
    return copy

"""The JSON Schema (draft 2020-12) of each command's `--json` document
(`hloscope schema COMMAND`).

The schemas are built here, from code, when asked for, not kept as files beside it:
each key the renderers (`render.json`, `render.why_json`) copy from a report's
dataclass takes its type from that field's annotation (`build.fields`), so a schema
cannot drift from the types it describes, and there is no second copy to regenerate.
The test suite validates every document it produces against the *closed* form of its
schema (`build.closed`: no undeclared key), so a key added to a renderer without its
schema fails there.

What a schema promises, as DESIGN.md's JSON contract does: every key listed as
required is in every document, with that type; keys may be added (objects allow
properties they do not list: `additionalProperties` is left open), never renamed or
removed. `schema_version` rises when a key changes meaning.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from hloscope.errors import HloscopeError
from hloscope.render.json import SCHEMA_VERSION, schema_version
from hloscope.render.schema.build import STR, Schema, dataclass_schema, obj

DIALECT = "https://json-schema.org/draft/2020-12/schema"

VERSION_RULE = (
    f"The version of the JSON contract, {SCHEMA_VERSION} today (remat's 2). It rises, for "
    "a command's document, when a key changes meaning (or type, or is renamed or removed); "
    "adding keys, here or in any object, does not change it: consumers should ignore keys "
    "they do not know."
)

# Each command's body: its keys (in the order the document has them) and those of them
# a document has only in some cases.
Body = tuple[dict[str, Schema], tuple[str, ...]]


def _views(name: str) -> Callable[[], Body]:
    def body() -> Body:
        from hloscope.render.schema import views

        made = getattr(views, f"{name}_body")()
        return made if isinstance(made, tuple) else (made, ())

    return body


def _runs(name: str) -> Callable[[], Body]:
    def body() -> Body:
        from hloscope.render.schema import runs

        made = getattr(runs, f"{name}_body")()
        return made if isinstance(made, tuple) else (made, ())

    return body


COMMANDS: dict[str, tuple[str, Callable[[], Body]]] = {
    "inspect": ("the overview of a module", _views("inspect")),
    "params": ("parameter usage", _views("params")),
    "placement": ("compute placement, shardings, collectives (--why)", _views("placement")),
    "fusions": ("the fusion regions of the optimized module", _views("fusions")),
    "aot-check": ("the direct call against the AOT path", _views("aot_check")),
    "diff": ("the structural diff of two targets", _views("diff")),
    "compiles": ("every compilation JAX performs", _runs("compiles")),
    "memory": ("what is live at the peak of memory", _runs("memory")),
    "passes": ("XLA's pipeline pass by pass (--find, --diff)", _runs("passes")),
    "check": ("the compiled program's facts against a baseline", _runs("check")),
    "profile": ("where the run time goes: a function's or a script's", _runs("profile")),
    "platforms": ("what --for compiles for", _views("platforms")),
    "remat": ("what the backward pass keeps from the forward", lambda: _remat_body()),
    "compare": ("configurations of one step side by side on the target", lambda: _compare_body()),
}
"""Every command with `--json`: what its document is, and how to build its body."""


def _remat_body() -> Body:
    from hloscope.render.schema.remat import remat_body

    return remat_body(), ()


def _compare_body() -> Body:
    from hloscope.render.schema.compare import compare_body

    return compare_body(), ()


def command_names() -> tuple[str, ...]:
    return tuple(COMMANDS)


def _environment() -> Schema:
    from hloscope.environment import Environment

    return {
        **dataclass_schema(Environment),
        "description": "What made the document: the versions of hloscope, JAX, jaxlib "
        "and Python, and JAX's default backend.",
    }


def _document(command: str, body: Body, title: str) -> Schema:
    """One form of a command's document: the envelope every document shares around
    `body`."""
    properties, optional = body
    return obj(
        {
            "schema_version": {"const": schema_version(command), "description": VERSION_RULE},
            "command": {"const": command},
            "target": {**STR, "description": "The target(s), as the command line named them."},
            **properties,
            "environment": _environment(),
        },
        optional=optional,
        title=title,
    )


def schema_of(command: str) -> Schema:
    """The JSON Schema of `hloscope COMMAND --json`'s document."""
    if command not in COMMANDS:
        raise HloscopeError(
            f"no JSON schema for {command!r}: the commands with --json are " + ", ".join(COMMANDS)
        )
    what, body = COMMANDS[command]
    header: Schema = {
        "$schema": DIALECT,
        "$id": f"urn:hloscope:schema:{command}:{schema_version(command)}",
        "title": f"hloscope {command} --json",
        "description": f"{what[0].upper()}{what[1:]}. Keys listed as required are in every "
        "document; keys may be added to any object, never renamed or removed. " + VERSION_RULE,
    }
    if command == "profile":
        from hloscope.render.schema import estimate, runs

        return {
            **header,
            "anyOf": [
                _document(command, (runs.profile_body(), ()), "profile of a function"),
                _document(
                    command,
                    (estimate.estimate_body(), ()),
                    "profile of a function estimated for a platform (--for)",
                ),
                _document(command, (runs.script_profile_body(), ()), "profile of a script"),
            ],
        }
    return {**header, **_document(command, body(), header["title"])}


def schema_text(command: str | None) -> str:
    """What `hloscope schema [COMMAND]` prints: the schema as JSON, or with no
    command the commands that have one, one a line."""
    if command is None:
        width = max(len(name) for name in COMMANDS)
        return "".join(f"{name:<{width}}  {what}\n" for name, (what, _) in COMMANDS.items())
    return json.dumps(schema_of(command), indent=2, ensure_ascii=False) + "\n"

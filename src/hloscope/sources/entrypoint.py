"""Import an entrypoint's module and fetch the named attribute.

This runs the user's code (their module's top level), and nothing else does but
lowering. It must run before anything initialises a JAX backend: user modules
often set `XLA_FLAGS` or call `jax.config.update(...)` when imported, and those
settings are ignored once a backend exists.
"""

from __future__ import annotations

import ast
import contextlib
import difflib
import importlib
import importlib.util
import io
import os
import sys
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from hloscope.errors import (
    HloscopeError,
    TimeLimitExceeded,
    describe_exception,
    display_path,
    one_line,
    user_frame,
)
from hloscope.native_stderr import native_stderr_captured
from hloscope.sources.target import EntrypointTarget


@contextlib.contextmanager
def user_code() -> Iterator[list[str]]:
    """Run user code with its prints and warnings kept off our stdout and stderr.

    Yields a list that, when the block ends, holds what the code warned and printed
    (as notes for the report): stdout belongs to the report or the JSON document.
    Python writes no `__pycache__` next to the modules the code imports (hloscope
    writes nothing next to the user's files), and `sys.exit()` or an exception that
    is not an `Exception` (`GeneratorExit`, the user's own `BaseException`) raised by
    the code is a `HloscopeError` naming where, not the end of hloscope.
    """
    caught: list[str] = []
    printed = io.StringIO()
    writes_bytecode = sys.dont_write_bytecode
    sys.dont_write_bytecode = True
    with (
        warnings.catch_warnings(record=True) as records,
        contextlib.redirect_stdout(printed),
        native_stderr_captured(),
    ):
        warnings.simplefilter("always")
        try:
            yield caught
        except SystemExit as exc:
            where = user_frame(exc)
            raise HloscopeError(
                f"the code called sys.exit({exc.code!r})" + (f" at {where}" if where else "")
            ) from exc
        except (Exception, KeyboardInterrupt, TimeLimitExceeded):
            raise
        except BaseException as exc:
            raise HloscopeError(f"the code raised {describe_exception(exc)}") from exc
        finally:
            sys.dont_write_bytecode = writes_bytecode
            for record in records:
                text = one_line(str(record.message), 300)
                if text not in caught:
                    caught.append(text)
            lines = printed.getvalue().splitlines()
            if lines:
                caught.append(
                    f"the code printed {len(lines)} line(s); first: {one_line(lines[0], 200)}"
                )


ProgramEnv = tuple[tuple[str, str], ...]
"""Environment variables set for one load of a program (`NAME`, `VALUE`)."""


def parse_env(given: Sequence[str], option: str = "--env") -> dict[str, str]:
    """`NAME=VALUE` options (`--env`, `diff --env-a`) as {NAME: VALUE}, the value as it
    is, commas too; bad syntax is a `HloscopeError` naming `option`."""
    env: dict[str, str] = {}
    for text in given:
        name, sep, value = text.partition("=")
        name = name.strip()
        if not sep or not (name.isascii() and name.isidentifier()):
            raise HloscopeError(f"{option} {text}: expected NAME=VALUE (an environment variable)")
        env[name] = value
    return env


@contextlib.contextmanager
def environment_set(env: ProgramEnv | None) -> Iterator[None]:
    """`env` in `os.environ` while the block runs (a program reads it when imported,
    its arguments built or it is traced), each name then as it was before: set to its
    old value, or unset. None sets nothing."""
    if not env:
        yield
        return
    before = {name: os.environ.get(name) for name, _ in env}
    os.environ.update(dict(env))
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def forget_imported(targets: Sequence[EntrypointTarget]) -> None:
    """Drop the modules `targets` name from `sys.modules`, so that the next import
    runs them again (under the environment of the moment: a module reads
    `os.environ` when imported). Their parent packages, and what they import, stay."""
    for target in targets:
        if target.module is not None:
            sys.modules.pop(target.module, None)
        elif target.file is not None:
            path = target.file.resolve()
            for name, module in list(sys.modules.items()):
                file = getattr(module, "__file__", None)
                named = name.startswith(("hloscope_entrypoint", path.stem))
                if file and named and Path(file).resolve() == path:
                    del sys.modules[name]


def import_target(target: EntrypointTarget, notes: list[str] | None = None) -> Any:
    """The object `target` names. Raises `HloscopeError` if it cannot be had.

    What the import printed or warned is appended to `notes`.
    """
    with user_code() as caught:
        module = _import_file(target.file) if target.file is not None else _import_module(target)
    if notes is not None:
        notes.extend(caught)
    obj: Any = module
    walked: list[str] = []
    for part in target.attribute.split("."):
        walked.append(part)
        try:
            obj = getattr(obj, part)
        except AttributeError:
            where = display_path(target.file) if target.file is not None else target.module
            available = _suggest(obj, part)
            raise HloscopeError(
                f"has no attribute '{'.'.join(walked)}'{available}", where=where
            ) from None
        except Exception as exc:
            raise HloscopeError(
                f"getting '{'.'.join(walked)}' raised {describe_exception(exc)}",
                where=target.text,
            ) from exc
    return obj


def module_attribute(target: EntrypointTarget, name: str) -> Any:
    """The attribute `name` of the module `target` names an attribute of (None where it
    has none): a module imported already is found, not run again."""
    with user_code():
        module = _import_file(target.file) if target.file is not None else _import_module(target)
    return getattr(module, name, None)


def _suggest(obj: Any, missing: str) -> str:
    """` (did you mean: mlp?)`: the names of `obj` closest to `missing` (a typo, a
    changed case, a shared start), or the names it has when there are few."""
    names = [n for n in dir(obj) if not n.startswith("_")]
    if isinstance(obj, type(sys)):
        # A module's own names: not those it imported (`jax`, `jnp`).
        names = [n for n in names if _defined_in(obj, n)]
    close = difflib.get_close_matches(missing, names, n=5, cutoff=0.6)
    close += [n for n in names if n.lower() == missing.lower() and n not in close]
    close += [n for n in names if n.lower().startswith(missing[:3].lower()) and n not in close][
        : 5 - len(close)
    ]
    if close:
        return f" (did you mean: {', '.join(close)}?)"
    if 0 < len(names) <= 8:
        return f" (it has: {', '.join(sorted(names))})"
    return ""


def _defined_in(module: Any, name: str) -> bool:
    value = getattr(module, name, None)
    origin = getattr(value, "__module__", None)
    return origin is None or origin == module.__name__


def python_file_functions(path: Path) -> list[str]:
    """The top-level functions and classes a Python file defines, read with `ast`
    (nothing runs); empty when it cannot be read or parsed."""
    try:
        tree = ast.parse(path.read_bytes())
    except (OSError, SyntaxError, ValueError):
        return []
    kinds = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    return [node.name for node in tree.body if isinstance(node, kinds)]


def python_file_error(path: Path) -> HloscopeError:
    """What to say when a Python file is named without `:function`: the form that
    works, and the functions it defines."""
    where = display_path(path)
    names = [n for n in python_file_functions(path) if not n.startswith("_")]
    if not names:
        return HloscopeError(
            f"a Python file, not a module: name a function in it, as {where}:FUNCTION",
            where=where,
        )
    shown = ", ".join(names[:8]) + (f", … ({len(names)} in all)" if len(names) > 8 else "")
    return HloscopeError(
        f"a Python file, not a module: name a function in it, as {where}:{names[0]} "
        f"(it defines {shown})",
        where=where,
    )


def _import_module(target: EntrypointTarget) -> Any:
    assert target.module is not None
    # As `python -m` does: the working directory is importable.
    cwd = str(Path.cwd())
    if cwd not in sys.path and "" not in sys.path:
        sys.path.insert(0, cwd)
    try:
        return importlib.import_module(target.module)
    except ModuleNotFoundError as exc:
        if exc.name and target.module.startswith(exc.name):
            raise HloscopeError(
                f"cannot import '{target.module}': no module named '{exc.name}' "
                "(is it installed, or run from the folder that contains it?)"
            ) from exc
        raise _import_failure(target.module, exc) from exc
    except SystemExit as exc:
        raise HloscopeError(f"importing '{target.module}' called sys.exit({exc.code})") from exc
    except BaseException as exc:
        if isinstance(exc, (KeyboardInterrupt, TimeLimitExceeded)):
            raise
        raise _import_failure(target.module, exc) from exc


def _import_file(file: Path) -> Any:
    path = file.resolve()
    directory = str(path.parent)
    # Siblings of the file are importable, as when it runs as a script.
    if directory not in sys.path:
        sys.path.insert(0, directory)
    name = path.stem if path.stem.isidentifier() else "hloscope_entrypoint"
    existing = sys.modules.get(name)
    if existing is not None:
        existing_file = getattr(existing, "__file__", None)
        if existing_file and Path(existing_file).resolve() == path:
            return existing
        name = f"hloscope_entrypoint_{abs(hash(str(path)))}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise HloscopeError("cannot be imported as a Python module", where=display_path(file))
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except SystemExit as exc:
        del sys.modules[name]
        raise HloscopeError(
            f"importing it called sys.exit({exc.code})", where=display_path(file)
        ) from exc
    except BaseException as exc:
        del sys.modules[name]
        if isinstance(exc, (KeyboardInterrupt, TimeLimitExceeded)):
            raise
        if isinstance(exc, SyntaxError):
            where = f"{display_path(exc.filename or file)}:{exc.lineno}"
            raise HloscopeError(f"syntax error: {exc.msg}", where=where) from exc
        raise _import_failure(display_path(file), exc) from exc
    return module


def _import_failure(what: str, exc: BaseException) -> HloscopeError:
    return HloscopeError(f"importing '{what}' raised {describe_exception(exc)}")

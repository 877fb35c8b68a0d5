"""Record every compilation JAX performs while a program runs (`hloscope compiles`,
`hloscope.watch()`).

Nothing here re-implements JAX's caches: each compilation is assembled from what
JAX itself reports while the program runs, in the order JAX reports it.

- its cache-miss explanation (`jax.explain_cache_misses`, turned on for the
  recording thread only), logged by JAX before it traces a function again: the
  function, where it is defined, and which argument changed from what to what.
  hloscope taps JAX's logger with a filter of its own: unless the program itself
  asked for explanations, the records stop there, so the program's own logging sees
  nothing it would not have seen;
- JAX's monitoring events: trace, lowering and compile durations, and hits of the
  persistent compilation cache;
- the module JAX hands XLA (`private.private_compile_observer`), for the op count
  and, within a memory bound, for the browser;
- the Python stack at that moment: the user's call site, and whether a primitive
  runs op by op (`private.private_eager_dispatch`).

Everything is restored when the recording ends: the listeners, the logger, the
thread's setting.
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import functools
import logging
import os
import re
import runpy
import sys
import sysconfig
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import jax
from jax import monitoring

from hloscope.errors import (
    PACKAGE_DIR,
    HloscopeError,
    TimeLimitExceeded,
    describe_exception,
    display_path,
)
from hloscope.ir.model import counts_as_op
from hloscope.runs import ArgumentChange, ChangeKind, CompiledModule, RecordedCompile, RecordedRun
from hloscope.sources.jax import private
from hloscope.sources.jax.arguments import example_value
from hloscope.sources.jax.explain_words import explanation_in_current_words
from hloscope.units import with_article

# The modules kept for the browser: the latest ones, up to both bounds.
KEEP_MODULES = 64
KEEP_MODULE_BYTES = 64 * 1024 * 1024


@dataclasses.dataclass
class _Explanation:
    function: str
    source: str | None
    cause: str
    changes: tuple[ArgumentChange, ...]


@dataclasses.dataclass
class _Pending:
    """A compilation being assembled, event by event."""

    function: str
    started: float
    qualified_name: str | None = None
    signature: str | None = None
    defined_at: str | None = None
    explanation: _Explanation | None = None
    trace_seconds: float | None = None
    lower_seconds: float | None = None
    compiling: bool = False
    call_site: str | None = None
    called_by_hloscope: bool = False
    eager: bool = False
    ops: int | None = None
    module: CompiledModule | None = None
    cache_hit: bool = False


class CompileRecorder:
    """Receives JAX's events while a recording runs; `compiles` holds the result."""

    def __init__(self) -> None:
        self.compiles: list[RecordedCompile] = []
        self.modules_dropped = 0
        self._start = time.perf_counter()
        self._lock = threading.Lock()
        # Per thread: JAX reports one compilation's events in the thread compiling it.
        self._local = threading.local()

    @property
    def _explanations(self) -> list[_Explanation]:
        if not hasattr(self._local, "explanations"):
            self._local.explanations = []
        return self._local.explanations  # type: ignore[no-any-return]

    @property
    def _pending(self) -> _Pending | None:
        return getattr(self._local, "pending", None)

    @_pending.setter
    def _pending(self, pending: _Pending | None) -> None:
        self._local.pending = pending

    @property
    def elapsed(self) -> float:
        return time.perf_counter() - self._start

    # JAX's explanation, logged before the function is traced again (after, in JAX
    # 0.8: then it belongs to the trace just seen).
    def on_explanation(self, message: str) -> None:
        words = explanation_in_current_words(message, sys._getframe(1))
        explanation = parse_explanation(words)
        if explanation is None:
            return
        with self._lock:
            pending = self._pending
            if (
                private.EXPLAINED_AFTER_TRACING
                and pending is not None
                and not pending.compiling
                and pending.explanation is None
                and pending.function == explanation.function
            ):
                pending.explanation = explanation
            else:
                self._explanations.append(explanation)

    def on_duration(self, event: str, seconds: float, **kwargs: str | int) -> None:
        name = str(kwargs.get("fun_name", ""))
        with self._lock:
            if event == private.TRACE_EVENT:
                self._on_trace(name, seconds)
            elif event == private.LOWER_EVENT:
                if self._pending is not None and not self._pending.compiling:
                    self._pending.lower_seconds = seconds
            elif event == private.COMPILE_EVENT:
                self._on_compiled(seconds)

    def on_event(self, event: str, **kwargs: str | int) -> None:
        if event == private.PERSISTENT_CACHE_HIT_EVENT:
            with self._lock:
                if self._pending is not None:
                    self._pending.cache_hit = True

    def _on_trace(self, name: str, seconds: float) -> None:
        # Explanations of functions traced inside this one (nested jits) come first
        # and compile nothing of their own: the last one naming this function is its.
        # JAX 0.9 reports the traces of those nested functions too (and of jnp's
        # jitted functions), before this one's: an explanation naming another
        # function stays for that function's trace, until a compilation ends.
        explanation = next((e for e in reversed(self._explanations) if e.function == name), None)
        self._explanations[:] = [e for e in self._explanations if e.function != name]
        self._pending = _Pending(
            function=name,
            started=self.elapsed - seconds,
            explanation=explanation,
            trace_seconds=seconds,
        )

    def on_compile(self, computation: Any) -> None:
        frame = sys._getframe(1)
        jitted, signature = private.private_jitted_call(frame)
        qualified_name, defined_at, in_jax = _describe_function(jitted)
        eager = private.private_eager_dispatch(frame) or in_jax
        call_site, called_by_hloscope = _user_call_site(frame)
        ops = _count_ops(computation)
        module = private.private_compiled_module(computation)
        with self._lock:
            pending = self._pending
            if pending is None or pending.compiling:
                # Compiled without a trace seen here (an AOT `.compile()` of a stage
                # lowered earlier, a lowering cache hit): named after its module.
                pending = _Pending(function=_function_of_module(module.name), started=self.elapsed)
                self._pending = pending
            pending.compiling = True
            pending.qualified_name = qualified_name
            pending.signature = signature
            pending.defined_at = defined_at
            pending.eager = eager
            pending.call_site = call_site
            pending.called_by_hloscope = called_by_hloscope
            pending.ops = ops
            pending.module = module

    def _on_compiled(self, seconds: float) -> None:
        pending = self._pending
        if pending is None or not pending.compiling:
            return
        self._pending = None
        self._explanations.clear()
        explanation = pending.explanation if not pending.eager else None
        self.compiles.append(
            RecordedCompile(
                function=pending.qualified_name
                or (explanation.function if explanation else pending.function),
                source=(explanation.source if explanation else None) or pending.defined_at,
                call_site=pending.call_site,
                called_by_hloscope=pending.called_by_hloscope,
                eager=pending.eager,
                signature=pending.signature,
                cause=explanation.cause if explanation else None,
                changes=explanation.changes if explanation else (),
                started_seconds=pending.started,
                trace_seconds=pending.trace_seconds,
                lower_seconds=pending.lower_seconds,
                compile_seconds=seconds,
                ops=pending.ops,
                persistent_cache_hit=pending.cache_hit,
                module=pending.module,
                module_name=pending.module.name if pending.module is not None else None,
            )
        )
        self._bound_modules()

    def _bound_modules(self) -> None:
        """Keep the latest modules only, within `KEEP_MODULES` and `KEEP_MODULE_BYTES`."""
        sizes = {i: len(c.module.mlir_bytecode) for i, c in enumerate(self.compiles) if c.module}
        kept = list(sizes)
        total = sum(sizes.values())
        while kept and (len(kept) > KEEP_MODULES or total > KEEP_MODULE_BYTES):
            index = kept.pop(0)
            total -= sizes[index]
            self.compiles[index] = dataclasses.replace(self.compiles[index], module=None)
            self.modules_dropped += 1


def _program_asked() -> bool:
    """Whether the program itself asked JAX to explain cache misses (its global
    setting; hloscope's own is local to the recording thread)."""
    return bool(jax.explain_cache_misses.get_global())


class _ExplanationTap(logging.Filter):
    """A filter on JAX's explanations logger: hands each explanation to the recorder,
    and lets it through to the program's handlers only when the program itself asked
    JAX for explanations (and had not silenced the logger)."""

    def __init__(self, recorder: CompileRecorder, silenced: bool) -> None:
        super().__init__()
        self.recorder = recorder
        self.silenced = silenced

    def filter(self, record: logging.LogRecord) -> bool:
        # An explanation hloscope cannot read is no reason to fail the program.
        with contextlib.suppress(Exception):
            self.recorder.on_explanation(record.getMessage())
        return not self.silenced and _program_asked()


class _RaisedLevelUndone(logging.Filter):
    """A filter on JAX's compiler loggers: while hloscope, not the program, asks JAX
    to explain cache misses, JAX logs its persistent-cache messages at WARNING
    instead of DEBUG; they reach the program's handlers at DEBUG, as they would have,
    and only where the logger is enabled for DEBUG."""

    def filter(self, record: logging.LogRecord) -> bool:
        if (
            record.levelno != logging.WARNING
            or not str(record.msg).startswith(private.EXPLAIN_RAISED_MESSAGES)
            or _program_asked()
        ):
            return True
        if not logging.getLogger(record.name).isEnabledFor(logging.DEBUG):
            return False
        record.levelno, record.levelname = logging.DEBUG, logging.getLevelName(logging.DEBUG)
        return True


@contextlib.contextmanager
def _collector_on() -> Iterator[None]:
    """Python's cyclic garbage collector on, as in a plain run of the program (the
    command line pauses it while it builds its own models), and back as it was."""
    import gc

    was_enabled = gc.isenabled()
    gc.enable()
    try:
        yield
    finally:
        if not was_enabled:
            gc.disable()


@contextlib.contextmanager
def recording() -> Iterator[CompileRecorder]:
    """Record every compilation while the block runs (with JAX's explanations for
    the compilations of this thread: hloscope asks for them in this thread only,
    leaving the program's own setting alone)."""
    recorder = CompileRecorder()
    logger = logging.getLogger(private.EXPLAIN_LOGGER)
    level_before, disabled_before = logger.level, logger.disabled
    silenced = disabled_before or not logger.isEnabledFor(logging.WARNING)
    tap = _ExplanationTap(recorder, silenced=silenced)
    logger.addFilter(tap)
    undo = _RaisedLevelUndone()
    raised = [logging.getLogger(name) for name in private.EXPLAIN_RAISED_LOGGERS]
    for other in raised:
        other.addFilter(undo)
    if silenced:
        logger.setLevel(logging.WARNING)
        logger.disabled = False
    monitoring.register_event_duration_secs_listener(recorder.on_duration)
    monitoring.register_event_listener(recorder.on_event)
    try:
        with (
            jax.explain_cache_misses(True),
            private.private_compile_observer(recorder.on_compile),
        ):
            yield recorder
    finally:
        with contextlib.suppress(AssertionError, ValueError):
            monitoring.unregister_event_duration_listener(recorder.on_duration)
        with contextlib.suppress(AssertionError, ValueError):
            monitoring.unregister_event_listener(recorder.on_event)
        logger.removeFilter(tap)
        for other in raised:
            other.removeFilter(undo)
        logger.setLevel(level_before)
        logger.disabled = disabled_before


# --------------------------------------------------------------------------- programs


def record_script(script: str, argv: Sequence[str], *, stdout_to_stderr: bool) -> RecordedRun:
    """Run `script` as `python SCRIPT ARGV...` would (its `__main__`, `sys.argv`,
    `sys.path[0]`) and record what JAX compiles. The script's `sys.exit(n)` becomes
    the run's exit code; an exception it raises, the run's `error`."""
    path = Path(script)
    if not path.is_file():
        raise HloscopeError("no such script", where=script)
    from hloscope.sources.jax.backend import plugins_loaded_quietly

    # The script's stderr is its own: only the plugins' lines are kept off it.
    plugins_loaded_quietly()
    label = " ".join([script, *argv])
    saved_argv, saved_path0 = sys.argv[:], sys.path[0] if sys.path else None
    sys.argv = [script, *argv]
    folder = str(path.resolve().parent)
    if sys.path:
        sys.path[0] = folder
    else:
        sys.path.insert(0, folder)
    exit_code, error = 0, None
    redirect = (
        contextlib.redirect_stdout(sys.stderr) if stdout_to_stderr else contextlib.nullcontext()
    )
    start = time.perf_counter()
    try:
        with recording() as recorder, redirect, _collector_on():
            try:
                runpy.run_path(str(path), run_name="__main__")
            except SystemExit as exc:
                exit_code = _exit_code(exc)
            except KeyboardInterrupt:
                raise
            except TimeLimitExceeded as exc:  # --timeout: its message says where
                error = str(exc)
            except BaseException as exc:
                error = describe_exception(exc)
            finally:
                with contextlib.suppress(Exception):
                    sys.stdout.flush()
    finally:
        sys.argv = saved_argv
        if saved_path0 is not None and sys.path:
            sys.path[0] = saved_path0
    return RecordedRun(
        label=label,
        compiles=tuple(recorder.compiles),
        wall_seconds=time.perf_counter() - start,
        exit_code=exit_code,
        error=error,
        modules_dropped=recorder.modules_dropped,
    )


def record_target(
    target: str,
    argv: Sequence[str] = (),
    *,
    arg_factories: Sequence[str] = (),
    calls_factory: str | None = None,
    stdout_to_stderr: bool = False,
) -> RecordedRun:
    """Record a script (`SCRIPT.py` run with `argv`) or a function called once per
    argument set (`file.py:function` with `--args` factories, or a `--calls` factory
    returning a list of argument sets)."""
    from hloscope.sources.entrypoint import import_target
    from hloscope.sources.jax.arguments import factory_arguments
    from hloscope.sources.target import EntrypointTarget, parse_target

    parsed = parse_target(target)
    if not isinstance(parsed, EntrypointTarget):
        if arg_factories or calls_factory:
            raise HloscopeError(
                "--args and --calls are for a function (file.py:function); a script "
                "takes its own arguments after its name (after --, when they clash "
                f"with hloscope's options: hloscope compiles {target} -- --args ...)",
                where=target,
            )
        if not str(target).endswith(".py") or not Path(target).is_file():
            raise HloscopeError(
                "expected a Python script (SCRIPT.py) or file.py:function", where=target
            )
        return record_script(target, argv, stdout_to_stderr=stdout_to_stderr)
    if argv:
        raise HloscopeError(
            f"unexpected arguments {' '.join(argv)}: a function's arguments come from "
            "--args or --calls factories",
            where=target,
        )
    if arg_factories and calls_factory:
        raise HloscopeError("give argument sets with --args or with --calls, not both")
    function = import_target(parsed)
    calls: list[tuple[tuple[Any, ...], dict[str, Any]]] = []
    for factory_text in arg_factories:
        factory_target = parse_target(factory_text)
        if not isinstance(factory_target, EntrypointTarget):
            raise HloscopeError(
                f"--args {factory_text}: expected module:callable or file.py:callable"
            )
        calls.append(factory_arguments(import_target(factory_target), factory_text))
    if calls_factory:
        factory_target = parse_target(calls_factory)
        if not isinstance(factory_target, EntrypointTarget):
            raise HloscopeError(
                f"--calls {calls_factory}: expected module:callable or file.py:callable"
            )
        calls.extend(_argument_sets(import_target(factory_target), calls_factory))
    if not calls:
        calls.append(((), {}))
    return record_calls(function, calls, target)


def _argument_sets(factory: Any, label: str) -> list[tuple[tuple[Any, ...], dict[str, Any]]]:
    """A `--calls` factory's list: each item a tuple of positional arguments or a pair
    `(args, kwargs)`."""
    from hloscope.sources.entrypoint import user_code
    from hloscope.sources.jax.arguments import factory_arguments

    try:
        with user_code():
            value = factory() if callable(factory) else factory
    except HloscopeError:
        raise
    except Exception as exc:
        raise HloscopeError(
            f"the --calls factory raised {describe_exception(exc)}", where=label
        ) from exc
    if not isinstance(value, list):
        raise HloscopeError(
            f"the --calls factory returned {with_article(type(value).__name__)}; expected a "
            "list of "
            "argument sets (each a tuple, or a pair (args_tuple, kwargs_dict))",
            where=label,
        )
    return [factory_arguments(item, label) for item in value]


def _exit_code(exc: SystemExit) -> int:
    code = exc.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    sys.stderr.write(f"{code}\n")  # as Python does with sys.exit("message")
    return 1


def record_calls(
    function: Any, calls: Sequence[tuple[tuple[Any, ...], dict[str, Any]]], label: str
) -> RecordedRun:
    """Call `function` once per argument set and record what JAX compiles."""
    if not callable(function):
        raise HloscopeError(f"{type(function).__name__} is not callable", where=label)
    error = None
    # Values for shapes are made before the recording starts: making them (zeros,
    # keys split from a seed) compiles JAX ops the function does not run.
    prepared: list[tuple[Any, Any, Exception | None]] = []
    for args, kwargs in calls:
        try:
            prepared.append((_concrete(args), _concrete(kwargs), None))
        except Exception as exc:
            prepared.append(((), {}, exc))
            break
    start = time.perf_counter()
    with recording() as recorder, _collector_on():
        for args, kwargs, failure in prepared:
            try:
                if failure is not None:
                    raise failure
                jax.block_until_ready(function(*args, **kwargs))
            except Exception as exc:
                error = describe_exception(exc)
                break
    return RecordedRun(
        label=label,
        compiles=tuple(recorder.compiles),
        wall_seconds=time.perf_counter() - start,
        exit_code=0,
        error=error,
        modules_dropped=recorder.modules_dropped,
    )


def _concrete(tree: Any) -> Any:
    """Zeros for `jax.ShapeDtypeStruct` leaves (placed as they say), the rest as is."""

    def leaf(x: Any) -> Any:
        if isinstance(x, jax.ShapeDtypeStruct):
            return example_value(x)
        return x

    return jax.tree_util.tree_map(leaf, tree, is_leaf=lambda x: isinstance(x, jax.ShapeDtypeStruct))


# --------------------------------------------------------------------------- JAX's words

# A source may hold spaces (`<doctest README.md[1]>:1`, a folder's name).
_NEVER_SEEN = re.compile(r"^\s*(?P<name>\S+?) id=\d+(?: defined at (?P<source>.+?))?\s*$")
_FOR = re.compile(r"^\s*for (?P<name>\S+?)(?: defined at (?P<source>.+?))?\s*$")
_CHANGE = re.compile(
    r"^\s*\* at (?P<input_path>input path )?(?P<path>.+?), now (?P<after>.+?) and before "
    r"(?P<before>.+?)(?:, so (?P<why>.+))?$"
)
_PREAMBLE = "all previously seen cache keys differ. For the closest previous key:"
_URL = re.compile(r"https?://\S+$")
_STATIC = re.compile(r"^<class '[\w.]*Static'> with pytree metadata Static\(val=(?P<value>.*)\)$")
_NODE = re.compile(r"^<class '(?:[\w.]*\.)?(?P<type>[\w]+)'>(?P<rest>.*)$")


def parse_explanation(message: str) -> _Explanation | None:
    """Read one of JAX's tracing cache-miss explanations: the function, its
    definition, the cause on one line, and the arguments that changed."""
    lines = [_URL.sub("", line).rstrip() for line in message.splitlines()]
    if not lines or not lines[0].startswith("TRACING CACHE MISS"):
        return None
    body = lines[1:]
    name, source = None, None
    cause_parts: list[str] = []
    changes: list[ArgumentChange] = []
    for index, line in enumerate(body):
        text = line.strip()
        if text == "never seen function:" and index + 1 < len(body):
            match = _NEVER_SEEN.match(body[index + 1])
            if match:
                name, source = match["name"], match["source"]
            cause_parts.append("never seen function")
            continue
        if name is None and (match := _FOR.match(line)):
            name, source = match["name"], match["source"]
            continue
        if _NEVER_SEEN.match(line) or text == _PREAMBLE or not text:
            continue
        change = _CHANGE.match(line)
        if change:
            changes.append(_change(change, source))
            cause_parts.append(text.removeprefix("* "))
        else:
            cause_parts.append(text)
    if name is None:
        return None
    cause = " ".join(cause_parts)
    return _Explanation(
        function=name,
        source=display_source(source) if source else None,
        cause=_clean_cause(cause),
        changes=tuple(changes),
    )


def _change(match: re.Match[str], source: str | None) -> ArgumentChange:
    before, after = _value(match["before"]), _value(match["after"])
    kind: ChangeKind = "type"
    path = match["path"]
    if match["input_path"]:
        static_before = _STATIC.match(match["before"])
        static_after = _STATIC.match(match["after"])
        kind = "static" if static_before or static_after else "pytree"
        path = _input_path(path, source)
    return ArgumentChange(path=path, before=before, after=after, kind=kind)


def _value(text: str) -> str:
    """JAX's spelling of a type or node, with what adds nothing removed: an empty
    sharding `({})`, the class path of a pytree node."""
    static = _STATIC.match(text)
    if static:
        return static["value"]
    node = _NODE.match(text)
    if node:
        return f"{node['type']}{node['rest']}"
    return text.replace("({})", "")


def _clean_cause(text: str) -> str:
    return re.sub(r"\s+", " ", text.replace("({})", "")).strip()


_INPUT_INDEX = re.compile(r"^\[(?P<side>[01])\]\[(?P<key>\d+|'[^']*')\](?P<rest>.*)$")


def _input_path(path: str, source: str | None) -> str:
    """JAX's `[0][1]['a']` (positional argument 1) or `[1]['n']` (keyword `n`) as the
    argument's name, read from the function's definition when JAX names its line."""
    match = _INPUT_INDEX.match(path)
    if not match:
        return path
    key, rest = match["key"], match["rest"]
    if match["side"] == "1":
        return key.strip("'") + rest
    names = _parameter_names(source) if source else ()
    position = int(key)
    name = names[position] if position < len(names) else f"args[{position}]"
    return name + rest


def _parameter_names(source: str) -> tuple[str, ...]:
    file, _, line = source.rpartition(":")
    if not line.isdigit():
        return ()
    return _function_parameters(file, int(line))


@functools.lru_cache(maxsize=256)
def _function_parameters(file: str, line: int) -> tuple[str, ...]:
    """Positional parameter names of the function defined at `file:line` (its `def`
    or a decorator's line)."""
    try:
        tree = ast.parse(Path(file).read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return ()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            lines = {node.lineno} | {d.lineno for d in getattr(node, "decorator_list", [])}
            if line in lines:
                arguments = node.args
                return tuple(a.arg for a in (*arguments.posonlyargs, *arguments.args))
    return ()


def display_source(source: str) -> str:
    file, _, line = source.rpartition(":")
    return f"{display_path(file)}:{line}" if file else source


# --------------------------------------------------------------------------- the stack

_NOT_USER = tuple(
    str(Path(p).resolve()) + os.sep
    for p in {
        sysconfig.get_paths().get("stdlib", ""),
        sysconfig.get_paths().get("purelib", ""),
        sysconfig.get_paths().get("platlib", ""),
        PACKAGE_DIR.rstrip(os.sep),  # hloscope itself
    }
    if p
)


def _user_call_site(frame: Any) -> tuple[str | None, bool]:
    """`file:line` of the innermost frame of the user's own code, and whether hloscope
    made the call itself (a target called on `--args`): then the frames above the
    library's are hloscope's, and above them its launcher (`bin/hloscope`), none of them
    the user's, and the site is None."""
    past_hloscope = False
    while frame is not None:
        filename = frame.f_code.co_filename
        in_hloscope = _in_hloscope(filename)
        if in_hloscope and past_hloscope:
            return None, True
        past_hloscope = past_hloscope or not in_hloscope
        if not filename.startswith("<") and not _library_file(filename):
            return f"{display_path(filename)}:{frame.f_lineno}", False
        frame = frame.f_back
    return None, False


@functools.lru_cache(maxsize=1024)
def _in_hloscope(filename: str) -> bool:
    try:
        return str(Path(filename).resolve()).startswith(PACKAGE_DIR)
    except (OSError, RuntimeError):
        return False


@functools.lru_cache(maxsize=1024)
def _library_file(filename: str) -> bool:
    try:
        resolved = str(Path(filename).resolve())
    except (OSError, RuntimeError):
        return True
    return resolved.startswith(_NOT_USER) or f"{os.sep}site-packages{os.sep}" in resolved


def _describe_function(fun: Any) -> tuple[str | None, str | None, bool]:
    """The qualified name of a jitted Python function, where it is defined, and
    whether it is JAX's own (`jnp.sin` called outside any jit: an op run eagerly)."""
    if fun is None:
        return None, None, False
    import inspect

    try:
        unwrapped = inspect.unwrap(fun)
    except ValueError:
        unwrapped = fun
    while isinstance(unwrapped, functools.partial):
        unwrapped = unwrapped.func
    module = str(getattr(unwrapped, "__module__", "") or "")
    in_jax = module == "jax" or module.startswith(("jax.", "jaxlib."))
    name = getattr(unwrapped, "__qualname__", None)
    code = getattr(unwrapped, "__code__", None)
    defined_at = (
        f"{display_path(code.co_filename)}:{code.co_firstlineno}"
        if code is not None and not in_jax
        else None
    )
    return (str(name) if name else None), defined_at, in_jax


def _count_ops(computation: Any) -> int | None:
    """Ops of an MLIR module's functions, nested regions included, as every view counts
    them (`ir.model.counts_as_op`: functions and terminators are not ops; what lies
    outside the functions, a Shardy mesh, is not either)."""
    try:
        stack = [
            op
            for function in computation.body.operations
            if function.operation.name == "func.func"
            for region in function.regions
            for block in region.blocks
            for op in block.operations
        ]
        count = 0
        while stack:
            # `.operation.name`: an op's own name; a function's `.name` is its symbol's.
            op = stack.pop().operation
            if counts_as_op(op.name):
                count += 1
            for region in op.regions:
                for block in region.blocks:
                    stack.extend(block.operations)
        return count
    except Exception:
        return None


def _function_of_module(module_name: str) -> str:
    """`jit_step` -> `step`."""
    return module_name.removeprefix("jit_")

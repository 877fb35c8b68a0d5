"""JAX's private APIs: every use in hloscope of `jax._src` and of underscored JAX
attributes, each behind a small `private_*` function (and `describe_sharding`, which
knows JAX's internal sharding placeholders by name). JAX may change them in any
release: `private_api_ok()`, run by the tests, then fails loudly, naming what changed.
"""

from __future__ import annotations

import contextlib
import inspect
import io
import threading
import weakref
from collections.abc import Callable, Iterator, Mapping
from types import FrameType
from typing import Any

import jax
import numpy as np
from jax._src import ad_checkpoint as _jax_ad_checkpoint
from jax._src import api_util as _jax_api_util
from jax._src import compilation_cache as _jax_compilation_cache
from jax._src import compiler as _jax_compiler
from jax._src import core as _jax_core
from jax._src import dispatch as _jax_dispatch
from jax._src import pjit as _jax_pjit
from jax._src import source_info_util as _jax_source_info
from jax._src import xla_bridge as _jax_xla_bridge
from jax._src.interpreters import ad as _jax_ad
from jax._src.interpreters import partial_eval as _jax_partial_eval
from jax._src.lib import xla_client as _xla_client

from hloscope.native_stderr import native_stderr_captured
from hloscope.runs import CompiledModule
from hloscope.sources.jax.arguments import aval_bytes, aval_memory_kind, aval_shape
from hloscope.stages import ArgumentLeaf


def _private_compile_args(lowered: Any) -> Mapping[str, Any]:
    """`Lowered._lowering.compile_args`: JAX's record of kept arguments and shardings."""
    return lowered._lowering.compile_args  # type: ignore[no-any-return]


# What JAX warned while lowering, per lowering object (`private_lowering_notes`).
_LOWERING_NOTES: weakref.WeakKeyDictionary[Any, tuple[str, ...]] = weakref.WeakKeyDictionary()


def private_lowering_notes(lowered: Any, caught: tuple[str, ...]) -> tuple[str, ...]:
    """What JAX warned while making `lowered` (`caught`), or, when it warned nothing,
    what it warned when it first made the same lowering. JAX caches lowerings: the
    same function lowered on the same shapes again hands back the same
    `Lowered._lowering` without tracing or warning again ("Some donated buffers
    were not usable"), so without this a report's notes and reasons would depend on
    what the process lowered before."""
    try:
        key = lowered._lowering
        if caught:
            _LOWERING_NOTES[key] = caught
            return caught
        return _LOWERING_NOTES.get(key, caught)
    except (AttributeError, TypeError):
        return caught


def private_static_argnums(jitted: Any) -> tuple[int, ...]:
    """`jax.jit(f, static_argnums=...)`'s resolved static argument positions (static
    keyword names are resolved to positions too). `Lowered` does not record them."""
    return tuple(int(i) for i in jitted._jit_info.static_argnums)


def private_compile_options(
    *,
    num_replicas: int,
    num_partitions: int,
    backend: Any,
    env_options_overrides: Mapping[str, str] | None = None,
    device_assignment: Any = None,
) -> Any:
    """`jax._src.compiler.get_compile_options`: XLA's compile options for a module run
    on `num_replicas` x `num_partitions` devices of `backend`, with XLA debug options
    (`xla_dump_to`, ...) for this compilation; `device_assignment`, an array of
    devices (replicas x partitions), where given."""
    return _jax_compiler.get_compile_options(
        num_replicas=num_replicas,
        num_partitions=num_partitions,
        device_assignment=device_assignment,
        backend=backend,
        env_options_overrides=dict(env_options_overrides) if env_options_overrides else None,
    )


def private_propagation(lowered: Any) -> tuple[tuple[bool, ...], tuple[bool, ...]] | None:
    """Whether XLA may choose each parameter's and each result's sharding
    (`allow_spmd_sharding_propagation_to_parameters` / `_output`), as JAX sets them
    when it compiles `lowered` itself (`pxla.create_compile_options`); None where the
    lowering does not record them."""
    try:
        args = _private_compile_args(lowered)
        from jax._src.interpreters import pxla as _jax_pxla

        to_inputs, to_outputs = _jax_pxla.get_prop_to_input_output(
            args["in_shardings"], args["out_shardings"], len(args["ordered_effects"])
        )
        return tuple(bool(b) for b in to_inputs), tuple(bool(b) for b in to_outputs)
    except (AttributeError, KeyError, TypeError, ImportError):
        return None


def private_module_devices(lowered: Any) -> tuple[int, tuple[Any, ...] | None]:
    """How many devices JAX lowered `lowered` for, and which, in order (`_device_list`)."""
    try:
        listed = lowered._lowering._device_list  # None where no sharding names devices
        return int(_private_compile_args(lowered)["num_devices"]), tuple(listed or ()) or None
    except (AttributeError, KeyError, TypeError, ValueError):
        return 1, None


def private_compile_devices(lowered: Any) -> tuple[tuple[int, ...], tuple[tuple[str, Any], ...]]:
    """Ids of the devices JAX compiles `lowered` over, in order; its jit's compiler_options."""
    kvs = getattr(getattr(lowered, "_lowering", None), "_compiler_options_kvs", None) or ()
    ids = tuple(int(d.id) for d in private_module_devices(lowered)[1] or ())
    return ids, tuple((str(k), v) for k, v in kvs)


def private_parse_module(module: bytes | str) -> Any:
    """A StableHLO module (bytecode or text) as the `ir.Module` of JAX's MLIR context
    (`jax._src.interpreters.mlir`): what a compile-only client's `compile` takes (it
    refuses bytes and text)."""
    from jax._src.interpreters import mlir as _jax_mlir

    context = _jax_mlir.make_ir_context()
    with context:
        return _jax_mlir.ir.Module.parse(module)


def private_device_assignment(assignment: Any) -> Any:
    """`jax._src.lib.xla_client.DeviceAssignment.create`: the devices of a
    replicas x partitions array of device ids."""
    return _xla_client.DeviceAssignment.create(assignment)


def private_device_list(devices: tuple[Any, ...]) -> Any:
    """`jax._src.lib.xla_client.DeviceList`: the devices an executable is loaded on."""
    return _xla_client.DeviceList(devices)


def private_execute(executable: Any, arguments: list[Any]) -> list[Any]:
    """`LoadedExecutable.execute_sharded` (jaxlib's, no public API runs a module JAX did
    not lower): run a one-device executable `compile_executable` made on arrays placed
    on its device, and hand back its results' arrays."""
    results = executable.execute_sharded(arguments)
    per_device = results.disassemble_into_single_device_arrays()
    return [array for arrays in per_device for array in arrays]


def private_backends_started() -> bool:
    """Whether JAX has started its backends in this process
    (`jax._src.xla_bridge.backends_are_initialized`): asking for the default backend
    before then starts them, which a report must not do for a dump it only reads."""
    return bool(_jax_xla_bridge.backends_are_initialized())


def private_accelerators_here() -> bool:
    """Whether this machine has a TPU (`jax._src.hardware_utils`, as JAX's own Cloud
    TPU set-up asks) or an NVIDIA GPU (its driver's device file)."""
    import os

    from jax._src import hardware_utils as _jax_hardware_utils

    chips, _ = _jax_hardware_utils.num_available_tpu_chips_and_device_id()
    return bool(chips) or os.path.exists("/dev/nvidiactl")


def private_load_plugins() -> None:
    """Register JAX's PJRT plugins (`xla_bridge._discover_and_register_pjrt_plugins`,
    idempotent) and load and initialize libtpu's, as `make_pjrt_tpu_topology` does,
    without starting a backend."""
    _jax_xla_bridge._discover_and_register_pjrt_plugins()
    path = _jax_xla_bridge.get_tpu_library_path()
    if path is None:
        return
    if not _xla_client.pjrt_plugin_loaded("tpu"):
        _xla_client.load_pjrt_plugin_dynamically("tpu", path)
    if not _xla_client.pjrt_plugin_initialized("tpu"):
        _xla_client.initialize_pjrt_plugin("tpu")


def private_function_name(lowered: Any) -> str | None:
    try:
        info = _private_compile_args(lowered)["all_args_info"].debug_info
        src = str(info.func_src_info or "")
        return src.split(" at ", 1)[0] or None
    except Exception:
        return None


def private_argument_leaves(lowered: Any) -> tuple[ArgumentLeaf, ...]:
    """Every flattened argument leaf, with its HLO parameter index when kept."""
    compile_args = _private_compile_args(lowered)
    all_args = compile_args["all_args_info"]
    kept = sorted(compile_args["kept_var_idx"])
    hlo_of = {flat: hlo for hlo, flat in enumerate(kept)}
    names = list(all_args.debug_info.arg_names or ())
    avals = list(all_args.in_avals)
    flat_info = jax.tree_util.tree_leaves(lowered.args_info)
    shardings = list(compile_args.get("in_shardings") or ())
    in_module = _lowered_donations(lowered, len(kept))
    leaves = []
    for position, aval in enumerate(avals):
        info = flat_info[position] if position < len(flat_info) else None
        hlo_index = hlo_of.get(position)
        sharding = (
            shardings[hlo_index] if hlo_index is not None and hlo_index < len(shardings) else None
        )
        sharding_text, memory_kind = describe_sharding(sharding)
        leaves.append(
            ArgumentLeaf(
                position=position,
                path=names[position]
                if position < len(names) and names[position]
                else f"arg{position}",
                shape=aval_shape(aval),
                nbytes=aval_bytes(aval),
                donated=bool(getattr(info, "donated", False)),
                donated_in_module=in_module[hlo_index]
                if in_module is not None and hlo_index is not None
                else None,
                hlo_index=hlo_index,
                sharding=sharding_text,
                memory_kind=memory_kind or aval_memory_kind(aval),
            )
        )
    return tuple(leaves)


def _lowered_donations(lowered: Any, kept: int) -> tuple[bool, ...] | None:
    """Per kept argument, whether the lowered module JAX holds donates its parameter
    (JAX's implicit parameters, which come first, left out); None when unknown."""
    from hloscope.ir.donation import entry_donations

    try:
        flags = entry_donations(lowered.compiler_ir("stablehlo"))
    except Exception:
        return None
    if flags is None or len(flags) < kept:
        return None
    return flags[len(flags) - kept :]


def describe_sharding(sharding: Any) -> tuple[str | None, str | None]:
    if sharding is None or type(sharding).__name__ in ("UnspecifiedValue", "AUTO"):
        return None, None
    memory_kind = getattr(sharding, "memory_kind", None)
    spec = getattr(sharding, "spec", None)
    if spec is not None:
        mesh = getattr(sharding, "mesh", None)
        axes = getattr(mesh, "shape", None)
        mesh_text = ", ".join(f"{k}={v}" for k, v in dict(axes).items()) if axes else ""
        text = f"{spec}" + (f" over mesh({mesh_text})" if mesh_text else "")
    else:
        text = str(sharding)
    return text, (str(memory_kind) if memory_kind else None)


@contextlib.contextmanager
def private_caller_frames_hidden(obj: Any) -> Iterator[None]:
    """Keep the frames of whoever called hloscope (its command line, typer, a test
    runner) out of the source locations JAX records while tracing `obj`, as JAX
    keeps its own frames out: an op made by a `jax.jit` that hloscope wrapped
    around a plain function, or a `shard_map` called from JAX's code only, then has
    no source rather than the line that called `.lower()`. The file defining `obj`
    stays in, even when it is on the stack."""
    import sys

    try:
        keep = inspect.getsourcefile(inspect.unwrap(obj))
    except (TypeError, ValueError):
        keep = None
    files: set[str] = set()
    frame = sys._getframe(1)
    while frame is not None:
        files.add(frame.f_code.co_filename)
        frame = frame.f_back  # type: ignore[assignment]
    added = [f for f in sorted(files) if f != keep]
    for name in added:
        _jax_source_info.register_exclusion(name)
    try:
        yield
    finally:
        for name in added:
            _jax_source_info._exclude_paths.remove(name)
        _jax_source_info._exclude_path_regex.cache_clear()
        _jax_source_info.is_user_filename.cache_clear()


@contextlib.contextmanager
def private_compiled_modules() -> Iterator[list[CompiledModule]]:
    """Record every module JAX hands XLA while the block runs.

    Every compilation of `jax.jit` (and of an op run eagerly, which JAX jits) goes
    through `jax._src.compiler.compile_or_get_cached`, called as a module attribute
    from `jax._src.interpreters.pxla`; wrapping it there sees persistent-cache hits
    too. The original is restored when the block ends, whatever happens."""
    captured: list[CompiledModule] = []
    with private_compile_observer(
        lambda computation: captured.append(_compiled_module(computation))
    ):
        yield captured


@contextlib.contextmanager
def private_compile_observer(on_compile: Callable[[Any], None]) -> Iterator[None]:
    """Call `on_compile(computation)` (the MLIR module) before every compilation JAX
    asks of XLA while the block runs, persistent-cache hits included (see
    `private_compiled_modules`). Blocks nest: each restores what it replaced."""
    original = _jax_compiler.compile_or_get_cached

    def observed(backend: Any, computation: Any, *args: Any, **kwargs: Any) -> Any:
        on_compile(computation)
        return original(backend, computation, *args, **kwargs)

    _jax_compiler.compile_or_get_cached = observed
    try:
        yield
    finally:
        _jax_compiler.compile_or_get_cached = original


def private_compiled_module(computation: Any) -> CompiledModule:
    """The module `private_compile_observer` saw, as bytecode."""
    return _compiled_module(computation)


# JAX's monitoring events around one compilation, and its cache-miss explanations'
# logger: names JAX keeps in private modules.
TRACE_EVENT = _jax_dispatch.JAXPR_TRACE_EVENT
LOWER_EVENT = _jax_dispatch.JAXPR_TO_MLIR_MODULE_EVENT
COMPILE_EVENT = _jax_dispatch.BACKEND_COMPILE_EVENT
PERSISTENT_CACHE_HIT_EVENT = "/jax/compilation_cache/cache_hits"


def _explain_function() -> Any:
    """JAX's function that explains a tracing cache miss: `partial_eval.explain`
    (JAX 0.9 and newer), `pjit.explain_tracing_cache_miss` (JAX 0.8); None when
    neither is there."""
    for module, name in ((_jax_partial_eval, "explain"), (_jax_pjit, "explain_tracing_cache_miss")):
        function = getattr(module, name, None)
        if callable(function):
            return function
    return None


def _explain_logger_name() -> str:
    """The logger JAX's explanations go to: the `logger` of the module that defines
    the explaining function (found, not assumed: JAX 0.8 explained from `pjit`)."""
    function = _explain_function()
    logger = getattr(function, "__globals__", {}).get("logger")
    name = getattr(logger, "name", None)
    return name if isinstance(name, str) else _jax_partial_eval.__name__


EXPLAIN_LOGGER = _explain_logger_name()
# Whether JAX explains a cache miss after tracing the function (JAX 0.8, whose
# explanation says what the tracing cost) rather than before (0.9 and newer).
EXPLAINED_AFTER_TRACING = "elapsed_sec" in getattr(
    getattr(_explain_function(), "__code__", None), "co_varnames", ()
)
# Loggers whose persistent-cache messages JAX raises from DEBUG to WARNING while it
# explains cache misses, and those messages' format strings.
EXPLAIN_RAISED_LOGGERS = (_jax_compiler.logger.name, _jax_compilation_cache.logger.name)
EXPLAIN_RAISED_MESSAGES = (
    "PERSISTENT COMPILATION CACHE MISS",
    "Not writing persistent cache entry",
    "Writing %s to persistent compilation cache",
    "_get_cache: Unsupported runtime",
)


def private_static_argnums_on_stack(frame: FrameType | None) -> tuple[int, ...] | None:
    """The `static_argnums` of the `jax.jit` call tracing on `frame`'s stack."""
    jit_info = _jitted_call_locals(frame)[1]
    try:
        return tuple(int(i) for i in jit_info.static_argnums)
    except (AttributeError, TypeError, ValueError):
        return None


def private_eager_dispatch(frame: FrameType | None) -> bool:
    """Whether `frame`'s stack runs a primitive op by op (`jax._src.dispatch.
    apply_primitive`: an op outside any jit, which JAX compiles on its own)."""
    while frame is not None:
        if frame.f_code is _APPLY_PRIMITIVE_CODE:
            return True
        frame = frame.f_back
    return False


_APPLY_PRIMITIVE_CODE = getattr(_jax_dispatch.apply_primitive, "__code__", None)


def private_jitted_call(frame: FrameType | None) -> tuple[Any | None, str | None]:
    """The Python function a `jax.jit` call on `frame`'s stack is compiling, and the
    signature JAX traced it for (argument avals with weak types and shardings, and
    the input pytree, static values included): the `fun` and `p` of
    `jax._src.pjit._run_python_pjit`. (None, None) when no such call is on the stack."""
    local, jit_info = _jitted_call_locals(frame)
    if local is None:
        return None, None
    statics = _static_values(jit_info, local.get("args"), local.get("kwargs"))
    return local.get("fun"), _signature(local.get("p"), statics)


def _jitted_call_locals(frame: FrameType | None) -> tuple[Mapping[str, Any] | None, Any]:
    """The locals of the `jax.jit` call tracing or compiling on `frame`'s stack (see
    `_run_python_pjit_code`), and its `jit_info`; (None, None) when there is none."""
    while frame is not None:
        if frame.f_code is _RUN_PYTHON_PJIT_CODE:
            local = frame.f_locals
            jit_info = local.get("jit_info")
            if jit_info is None and frame.f_back is not None:
                jit_info = frame.f_back.f_locals.get("jit_info")
            return local, jit_info
        frame = frame.f_back
    return None, None


def _static_values(jit_info: Any, args: Any, kwargs: Any) -> list[str]:
    """`static args[1]=3`, `static n=3`: the static arguments of a jitted call."""
    try:
        values = [
            f"static args[{i}]={args[i]!r}"
            for i in jit_info.static_argnums
            if isinstance(args, tuple) and i < len(args)
        ]
        values += [
            f"static {k}={kwargs[k]!r}"
            for k in jit_info.static_argnames
            if isinstance(kwargs, dict) and k in kwargs
        ]
        return values
    except Exception:
        return []


def _signature(params: Any, statics: list[str]) -> str | None:
    try:
        names = list(params.arg_names or ())
        parts = []
        for index, aval in enumerate(params.in_avals):
            text = aval.str_short(True, True).replace("({})", "")
            if getattr(aval, "weak_type", False):
                text += "{weak_type=True}"
            name = names[index] if index < len(names) and names[index] else f"arg{index}"
            parts.append(f"{name}: {text}")
        return f"({', '.join(parts + statics)}) {params.in_tree}"
    except Exception:
        return None


def _run_python_pjit_code() -> Any:
    """The code of the function a `jax.jit` call runs when it traces and compiles:
    `_run_python_pjit(p, args_flat, fun, args, kwargs)` (JAX 0.9 and newer, with
    `jit_info` in its caller), `_python_pjit_helper(fun, jit_info, *args, **kwargs)`
    (JAX 0.8, which makes `p` itself)."""
    for name in ("_run_python_pjit", "_python_pjit_helper"):
        code = getattr(getattr(_jax_pjit, name, None), "__code__", None)
        if code is not None:
            return code
    return None


_RUN_PYTHON_PJIT_CODE = _run_python_pjit_code()


def _compiled_module(computation: Any) -> CompiledModule:
    buffer = io.BytesIO()
    with native_stderr_captured():
        computation.operation.write_bytecode(file=buffer)
    name = str(computation.operation.attributes["sym_name"]).strip('"')
    return CompiledModule(name=name, mlir_bytecode=buffer.getvalue())


def private_api_ok() -> list[str]:
    """Names of the private JAX APIs hloscope reads that are missing (for a test)."""
    missing = []
    lowered = jax.jit(lambda a, b: a).lower(np.float32(1), np.float32(2))
    try:
        compile_args = _private_compile_args(lowered)
    except AttributeError:
        return ["Lowered._lowering.compile_args"]
    keys = ("kept_var_idx", "all_args_info", "in_shardings")  # then --for's three
    for key in (*keys, "num_devices", "out_shardings", "ordered_effects"):
        if key not in compile_args:
            missing.append(f"compile_args[{key!r}]")
    info = compile_args.get("all_args_info")
    if info is not None:
        for attr in ("in_avals", "debug_info"):
            if not hasattr(info, attr):
                missing.append(f"AllArgsInfo.{attr}")
        if hasattr(info, "debug_info") and not hasattr(info.debug_info, "arg_names"):
            missing.append("DebugInfo.arg_names")
    try:
        if private_static_argnums(jax.jit(lambda a, n: a, static_argnums=1)) != (1,):
            missing.append("jit(f)._jit_info.static_argnums (changed meaning)")
    except AttributeError:
        missing.append("jit(f)._jit_info.static_argnums")
    for name in ("register_exclusion", "_exclude_paths", "_exclude_path_regex"):
        if not hasattr(_jax_source_info, name):
            missing.append(f"jax._src.source_info_util.{name}")
    if not hasattr(getattr(_jax_source_info, "is_user_filename", None), "cache_clear"):
        missing.append("jax._src.source_info_util.is_user_filename.cache_clear")
    missing.extend(_compile_capture_missing())
    missing.extend(_remat_missing())
    missing.extend(_saving_everything_missing())
    missing.extend(_compile_events_missing())
    options = getattr(_jax_compiler, "get_compile_options", None)
    if options is None or "env_options_overrides" not in inspect.signature(options).parameters:
        missing.append("jax._src.compiler.get_compile_options(env_options_overrides=)")
    if not callable(getattr(_jax_xla_bridge, "backends_are_initialized", None)):
        missing.append("jax._src.xla_bridge.backends_are_initialized")
    missing += [
        f"xla_client.{n}" for n in ("DeviceAssignment", "DeviceList") if not hasattr(_xla_client, n)
    ]
    wanted = ("num_devices", "out_shardings", "ordered_effects")  # what `--for` reads
    missing += [f"compile_args[{key!r}]" for key in wanted if key not in compile_args]
    missing += [] if hasattr(lowered._lowering, "_device_list") else ["_lowering._device_list"]
    if private_propagation(lowered) is None:
        missing.append("jax._src.interpreters.pxla.get_prop_to_input_output")
    try:
        private_parse_module(lowered.as_text())
    except Exception:
        missing.append("jax._src.interpreters.mlir.make_ir_context / ir.Module.parse")
    return missing


def _compile_capture_missing() -> list[str]:
    """What `private_compiled_modules` needs: `compile_or_get_cached(backend,
    computation, ...)` in `jax._src.compiler`, called through that module by
    `pxla`, seeing what a jitted call compiles, and restored afterwards."""
    from jax._src.interpreters import pxla

    compiler: Any = _jax_compiler
    function = getattr(compiler, "compile_or_get_cached", None)
    if function is None:
        return ["jax._src.compiler.compile_or_get_cached"]
    parameters = list(inspect.signature(function).parameters)
    if parameters[:2] != ["backend", "computation"]:
        return [f"jax._src.compiler.compile_or_get_cached{tuple(parameters)} (changed)"]
    if getattr(pxla, "compiler", None) is not compiler:
        return ["jax._src.interpreters.pxla.compiler (pxla no longer compiles through it)"]
    jax.clear_caches()
    with private_compiled_modules() as modules:
        jax.block_until_ready(jax.jit(lambda a: a * 2)(np.float32(1)))
    missing = []
    if [m.name for m in modules] != ["jit__lambda"]:
        missing.append(
            "jax._src.compiler.compile_or_get_cached (a jitted call compiled "
            f"{[m.name for m in modules]} through it, expected ['jit__lambda'])"
        )
    if getattr(_jax_compiler, "compile_or_get_cached", None) is not function:
        missing.append("jax._src.compiler.compile_or_get_cached (not restored)")
    return missing


def _compile_events_missing() -> list[str]:
    """What `hloscope.sources.jax.capture` reads: the monitoring event names, the
    explanations' logger, and the eager dispatch function."""
    missing = []
    for name in ("JAXPR_TRACE_EVENT", "JAXPR_TO_MLIR_MODULE_EVENT", "BACKEND_COMPILE_EVENT"):
        if not isinstance(getattr(_jax_dispatch, name, None), str):
            missing.append(f"jax._src.dispatch.{name}")
    if _APPLY_PRIMITIVE_CODE is None:
        missing.append("jax._src.dispatch.apply_primitive")
    if _RUN_PYTHON_PJIT_CODE is None or not {"fun", "p", "args", "kwargs"} <= set(
        _RUN_PYTHON_PJIT_CODE.co_varnames
    ):
        missing.append(
            "jax._src.pjit._run_python_pjit(p, args_flat, fun, args, kwargs) "
            "(_python_pjit_helper(fun, jit_info, *args, **kwargs) before JAX 0.9)"
        )
    fields = getattr(getattr(_jax_pjit, "PjitParams", None), "_fields", ())
    for field in ("in_avals", "in_tree", "arg_names"):
        if field not in fields:
            missing.append(f"jax._src.pjit.PjitParams.{field}")
    code = _jax_pjit._cpp_pjit.__code__
    if "jit_info" not in code.co_cellvars + code.co_varnames:
        missing.append("jax._src.pjit._cpp_pjit(fun, jit_info)")
    if _explain_function() is None:
        missing.append(
            "jax._src.interpreters.partial_eval.explain "
            "(jax._src.pjit.explain_tracing_cache_miss before JAX 0.9)"
        )
    elif not hasattr(_explain_function().__globals__.get("logger"), "name"):
        missing.append("the logger of JAX's cache-miss explanations")
    for module in (_jax_compiler, _jax_compilation_cache):
        if not hasattr(getattr(module, "logger", None), "name"):
            missing.append(f"{module.__name__}.logger")
    if "jax_explain_cache_misses" not in jax.config.values:
        missing.append("jax.config jax_explain_cache_misses")
    return missing


# --------------------------------------------------------------------------- remat


def private_vjp_residuals(
    f: Callable[..., Any], diff: tuple[Any, ...], rest: tuple[Any, ...]
) -> tuple[Any, list[Any]]:
    """The forward jaxpr of `jax.vjp(f)` and its residual variables, as
    `jax._src.ad_checkpoint.saved_residuals` makes them: `f(diff, rest)` traced with
    `make_jaxpr`, differentiated with respect to the leaves `diff` only (the leaves
    `rest` are inputs too, not differentiated); the residuals are the pullback's
    leaves, the last outputs of the jaxpr. Invars: `diff`, then `rest`."""
    nd = len(diff)

    def forward(*leaves: Any) -> Any:
        return jax.vjp(lambda *d: f(d, leaves[nd:]), *leaves[:nd])

    jaxpr, shape = jax.make_jaxpr(forward, return_shape=True)(*diff, *rest)
    jaxpr = jaxpr.jaxpr
    count = jax.tree_util.tree_structure(shape[1]).num_leaves
    return jaxpr, list(jaxpr.outvars[len(jaxpr.outvars) - count :])


def private_argument_names(f: Callable[..., Any], args: tuple[Any, ...], kwargs: Any) -> Any:
    """JAX's names of the flattened arguments (`params['w']`), as `saved_residuals`
    names them (`jax._src._jax_api_util.debug_info(...).arg_names`); None where unknown."""
    try:
        return _jax_api_util.debug_info("remat", f, args, kwargs).arg_names
    except Exception:
        return None


def private_eqn_frames(eqn: Any) -> list[tuple[str, str, int, int]]:
    """An equation's Python frames, innermost first: (file, function, line, column)."""
    traceback = eqn.source_info.traceback
    if traceback is None:
        return []
    codes, lastis = traceback.raw_frames()
    frames = []
    for code, lasti in zip(codes, lastis, strict=False):
        frame = _jax_source_info.raw_frame_to_frame(code, lasti)
        frames.append((frame.file_name, frame.function_name, frame.start_line, frame.start_column))
    return frames


def private_is_checkpoint(eqn: Any) -> bool:
    """Whether an equation is a `jax.checkpoint` region (`remat_p`)."""
    return bool(eqn.primitive is _jax_ad_checkpoint.remat_p)


def private_checkpoint_name(eqn: Any) -> str | None:
    """The name `checkpoint_name` gives the value an equation makes (`name_p`)."""
    if eqn.primitive is _jax_ad_checkpoint.name_p:
        return str(eqn.params["name"])
    return None


def _remat_missing() -> list[str]:
    """What `hloscope remat` reads of JAX, used on a checkpointed loss as remat uses it."""
    ac = _jax_ad_checkpoint
    wanted = [(ac, "remat_p"), (ac, "name_p"), (ac, "saved_residuals"), (_jax_ad, "jvp_jaxpr")]
    wanted += [(_jax_api_util, "debug_info"), (_jax_source_info, "raw_frame_to_frame")]
    for name in (
        "partial_eval_jaxpr_custom",
        "dce_jaxpr",
        "close_jaxpr",
        "convert_constvars_jaxpr",
    ):
        wanted.append((_jax_partial_eval, name))
    if missing := [f"{m.__name__}.{name}" for m, name in wanted if not hasattr(m, name)]:
        return missing
    policy = jax.checkpoint_policies.save_only_these_names("h")
    block = jax.checkpoint(lambda v: jax.numpy.sin(ac.checkpoint_name(v * 2, "h")), policy=policy)
    loss: Callable[[Any], Any] = lambda w: jax.numpy.sum(block(w))  # noqa: E731
    w = np.ones(3, np.float32)
    try:
        eqns = [e for e in jax.make_jaxpr(loss)(w).jaxpr.eqns if private_is_checkpoint(e)]
        body = eqns[0].params["jaxpr"].eqns if eqns else []
        recomputed = [e.primitive.name for e in private_recomputed(eqns[0])]
        residuals = private_vjp_residuals(lambda d, _: loss(*d), (w,), ())[1]
        grad = private_grad_target(jax.jit(jax.grad(loss)))
        checks = {
            "remat_p": len(eqns) == 1,
            "name_p": [private_checkpoint_name(e) for e in body].count("h") == 1,
            "policy": private_policy(policy) == ("save_only_these_names", ("h",), None),
            "raw_frame_to_frame": any(f[0] == __file__ for f in private_eqn_frames(body[0])),
            "debug_info().arg_names": private_argument_names(loss, (w,), {}) == ("w",),
            "partial_eval_jaxpr_custom": recomputed == ["cos"],
            "residuals": len(residuals) == len(ac.saved_residuals(loss, w)) == 1,
            "jax.grad's closure": grad is not None and grad[0] is loss,
        }
    except Exception as exc:
        return [f"remat: {type(exc).__name__}: {str(exc)[:200]}"]
    return [f"remat: {what} (changed)" for what, ok in checks.items() if not ok]


def _closure(function: Any) -> dict[str, Any]:
    code = getattr(function, "__code__", None)
    cells = getattr(function, "__closure__", None) or ()
    if code is None:
        return {}
    values = {}
    for name, cell in zip(code.co_freevars, cells, strict=False):
        with contextlib.suppress(ValueError):
            values[name] = cell.cell_contents
    return values


def private_policy(policy: Any) -> tuple[str, tuple[str, ...], str | None]:
    """A checkpoint policy's name, the checkpoint names it mentions (sorted), and where
    it offloads to (`pinned_host`), read from JAX's policy objects and closures
    (`jax.checkpoint_policies`); a policy of the user's own is named by its qualname."""
    if policy is None:
        return "nothing_saveable", (), None
    kind = type(policy).__name__
    if kind == "SaveOnlyTheseNames":
        return "save_only_these_names", tuple(sorted(policy.saveable_names)), None
    if kind == "SaveAnyNamesButThese":
        return "save_any_names_but_these", tuple(sorted(policy.names)), None
    if kind == "DotsSaveable":
        batch = "_with_no_batch_dims" if policy.only_if_no_batch_dims else ""
        return f"dots{batch}_saveable", (), None
    qualname = getattr(policy, "__qualname__", kind)
    outer = qualname.split(".<locals>")[0]
    cells = _closure(policy)
    if outer == "save_from_both_policies":
        first = private_policy(cells.get("policy_1"))
        second = private_policy(cells.get("policy_2"))
        names = tuple(sorted(set(first[1]) | set(second[1])))
        return f"save_from_both_policies({first[0]}, {second[0]})", names, first[2] or second[2]
    mentioned: set[str] = set()
    for key in ("names_which_can_be_saved", "names_which_can_be_offloaded"):
        mentioned |= {str(n) for n in cells.get(key, ())}
    dst = cells.get("offload_dst")
    return outer, tuple(sorted(mentioned)), (str(dst) if dst is not None else None)


def private_recomputed(region: Any) -> list[Any]:
    """The equations of a `jax.checkpoint` region (an equation) that its backward
    runs again: JAX's own split of the region's JVP by its policy
    (`partial_eval_jaxpr_custom`, as `remat_partial_eval` does), the staged
    equations that read no tangent, after dead code is dropped."""
    params = region.params
    jaxpr = params["jaxpr"]
    policy = params["policy"] or (lambda *_, **__: False)
    n = len(jaxpr.invars)
    closed = _jax_partial_eval.close_jaxpr(jaxpr)
    jvp, _ = _jax_ad.jvp_jaxpr(closed, [True] * n, False)
    body = _jax_partial_eval.convert_constvars_jaxpr(jvp.jaxpr)
    consts = len(body.invars) - 2 * n
    unknowns = [False] * (consts + n) + [True] * n
    _, staged, out_unknowns, out_inst, _ = _jax_partial_eval.partial_eval_jaxpr_custom(
        body, unknowns, [True] * len(unknowns), False, False, policy
    )
    keep = [u for u, i in zip(out_unknowns, out_inst, strict=False) if i]
    staged, _ = _jax_partial_eval.dce_jaxpr(staged, keep)
    tangent = set(staged.invars[len(staged.invars) - n :])
    recomputed = []
    for eqn in staged.eqns:
        if any(isinstance(v, _jax_core.Var) and v in tangent for v in eqn.invars):
            tangent.update(eqn.outvars)
        else:
            recomputed.append(eqn)
    return recomputed


_SAVING_EVERYTHING = threading.Lock()


@contextlib.contextmanager
def private_checkpoints_saving_everything() -> Iterator[None]:
    """While inside, every `jax.checkpoint` region traced saves everything
    (`jax.checkpoint_policies.everything_saveable`, as if its policy said so), so that
    a gradient recomputes nothing: `remat_p`'s bind, which `jax.checkpoint` calls with
    its policy, is wrapped, and JAX's caches are cleared on the way in and out, so
    that nothing traced before is reused with its own policy, nor anything traced
    here after. Only what this thread traces meanwhile is changed."""
    remat_p = _jax_ad_checkpoint.remat_p
    with _SAVING_EVERYTHING:
        original = remat_p.bind
        tracing = threading.get_ident()  # another thread (a browser's worker) keeps its own

        def bind(*args: Any, **params: Any) -> Any:
            if threading.get_ident() == tracing and not params.get("differentiated", True):
                params = {**params, "policy": jax.checkpoint_policies.everything_saveable}
            return original(*args, **params)

        jax.clear_caches()
        remat_p.bind = bind
        try:
            yield
        finally:
            remat_p.bind = original
            jax.clear_caches()


def _saving_everything_missing() -> list[str]:
    """The gradient of a checkpointed `sin(sin(v))` runs the inner `sin` again in its
    backward pass, and inside `private_checkpoints_saving_everything` does not."""

    def sines(w: Any) -> int:
        twice = jax.checkpoint(lambda v: jax.numpy.sin(jax.numpy.sin(v)))
        loss = lambda v: jax.numpy.sum(twice(v))  # noqa: E731
        jaxpr = jax.make_jaxpr(jax.grad(loss))(w)
        return str(jaxpr).count(" sin ")

    w = np.ones(3, np.float32)
    try:
        recomputing = sines(w)
        with private_checkpoints_saving_everything():
            saving = sines(w)
    except Exception as exc:
        return [f"remat_p.bind: {type(exc).__name__}: {str(exc)[:200]}"]
    return [] if saving < recomputing else ["remat_p.bind (a policy no longer set at bind)"]


def private_grad_target(obj: Any) -> tuple[Any, tuple[int, ...] | None, bool] | None:
    """What a gradient function differentiates: `(loss, argnums, filtered)` for
    `jax.grad`/`jax.value_and_grad` (jitted or not), `nnx.grad`/`nnx.value_and_grad`
    and `eqx.filter_grad`/`eqx.filter_value_and_grad` (`filtered`: with respect to the
    inexact arrays of the first argument, as Equinox does); None for anything else.
    Read from their wrappers' closures (`value_and_grad_f`'s `fun` and `argnums`,
    Flax's `grad_wrapper`'s `f`) and Equinox's wrapper classes."""
    seen: Any = obj
    for _ in range(12):
        if type(seen).__name__ in ("_GradWrapper", "_ValueAndGradWrapper"):
            return inspect.unwrap(seen), (0,), True
        found = _grad_closure(seen, 0)
        if found is not None:
            return found
        nxt = getattr(seen, "__wrapped__", None) or getattr(seen, "_fun", None)
        if nxt is None or nxt is seen:
            return None
        seen = nxt
    return None


def _grad_closure(function: Any, depth: int) -> tuple[Any, tuple[int, ...] | None, bool] | None:
    code = getattr(function, "__code__", None)
    if code is None or depth > 6:
        return None
    cells = _closure(function)
    if code.co_name == "value_and_grad_f" and "fun" in cells:
        return cells["fun"], _argnums(cells.get("argnums", 0)), False
    if code.co_name == "grad_wrapper" and "jax_argnums" in cells and "f" in cells:
        return cells["f"], _argnums(cells.get("argnums", 0)), False
    for value in cells.values():
        if callable(value):
            found = _grad_closure(value, depth + 1)
            if found is not None:
                return found
    return None


def _argnums(argnums: Any) -> tuple[int, ...] | None:
    with contextlib.suppress(TypeError):
        return (argnums,) if isinstance(argnums, int) else tuple(int(a) for a in argnums)
    return None

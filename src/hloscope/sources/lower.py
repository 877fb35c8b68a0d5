"""The JAX adapter: the only module in hloscope that imports `jax`.

It turns what an entrypoint names (a function, jitted or not, a
`jax.stages.Lowered` or `Compiled`, a `jax.export.Exported`, or a zero-argument
callable returning one of those) into a `Lowering`: the StableHLO bytecode JAX
produced plus what only JAX knows about it (the Python argument tree, which
arguments were kept, donation, shardings, timings). `compile_lowering` and
`compile_module` produce a `Compilation`: the optimized HLO module and XLA's cost
and memory analyses (both plain data, defined in `hloscope.sources.stages`).

JAX private APIs (`jax._src...` and underscored attributes) are read only in the
`_private_*` functions below; `tests/test_jax_private.py` fails loudly when a JAX
release changes them.
"""

from __future__ import annotations

import contextlib
import inspect
import io
import time
from collections.abc import Mapping, Sequence
from typing import Any

import jax
import jax.extend
import numpy as np
from jax._src import compiler as _jax_compiler
from jax._src.lib import xla_client as _xla_client

from hloscope.errors import (
    HloscopeError,
    describe_exception,
    native_stderr_captured,
    one_line,
)
from hloscope.sources.entrypoint import user_code
from hloscope.sources.stages import ArgumentLeaf, Compilation, Lowering
from hloscope.sources.target import ArgSpec, hlo_dtype

# --------------------------------------------------------------------------- arguments


def example_arguments(specs: Sequence[ArgSpec]) -> tuple[Any, ...]:
    """`jax.ShapeDtypeStruct`s for `--arg` specs."""
    out = []
    for spec in specs:
        try:
            dtype = np.dtype(getattr(jax.numpy, spec.dtype))
        except (AttributeError, TypeError) as exc:
            raise HloscopeError(f"bad --arg '{spec.text}': JAX has no dtype {spec.dtype}") from exc
        out.append(jax.ShapeDtypeStruct(spec.shape, dtype))
    return tuple(out)


def factory_arguments(factory: Any, label: str) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """Call an `--args` factory; accept a tuple of arguments or `(args, kwargs)`."""
    if not callable(factory):
        value = factory
    else:
        try:
            with user_code():
                value = factory()
        except HloscopeError:
            raise
        except Exception as exc:
            raise HloscopeError(
                f"the --args factory raised {describe_exception(exc)}", where=label
            ) from exc
    if (
        isinstance(value, tuple)
        and len(value) == 2
        and isinstance(value[0], (tuple, list))
        and isinstance(value[1], dict)
    ):
        return tuple(value[0]), dict(value[1])
    if isinstance(value, list):
        value = tuple(value)
    if not isinstance(value, tuple):
        raise HloscopeError(
            f"the --args factory returned a {type(value).__name__}; expected a tuple of "
            "positional arguments or a pair (args_tuple, kwargs_dict)",
            where=label,
        )
    return value, {}


# --------------------------------------------------------------------------- lowering


def is_stage(obj: Any) -> bool:
    """A `Lowered`, `Compiled` or `Exported`: something already traced."""
    return isinstance(obj, (jax.stages.Lowered, jax.stages.Compiled, jax.export.Exported))


def needs_arguments(obj: Any) -> list[str] | None:
    """Names of required parameters of a callable (None when it cannot be told)."""
    try:
        signature = inspect.signature(obj)
    except (TypeError, ValueError):
        return None
    return [
        p.name
        for p in signature.parameters.values()
        if p.default is inspect.Parameter.empty
        and p.kind not in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    ]


def lower(
    obj: Any, args: tuple[Any, ...], kwargs: dict[str, Any], label: str, given_args: bool
) -> Lowering:
    """Lower what an entrypoint names. `given_args` says whether the user gave
    example arguments (a zero-argument callable returning a stage is called)."""
    if not is_stage(obj) and callable(obj) and not given_args and not _is_jitted(obj):
        required = needs_arguments(obj)
        if required == []:
            try:
                with user_code():
                    produced = obj()
            except HloscopeError:
                raise
            except Exception as exc:
                raise HloscopeError(
                    f"calling it raised {describe_exception(exc)}", where=label
                ) from exc
            if is_stage(produced):
                obj = produced
            elif _is_jitted(produced) or callable(produced):
                raise HloscopeError(
                    f"it returned a {type(produced).__name__}; a zero-argument target must "
                    "return a jax.stages.Lowered, Compiled or jax.export.Exported",
                    where=label,
                )
    if isinstance(obj, jax.stages.Lowered):
        return _from_lowered(obj, "lowered", label, None, kwargs)
    if isinstance(obj, jax.stages.Compiled):
        return _from_compiled(obj, label)
    if isinstance(obj, jax.export.Exported):
        return from_exported(obj, label)
    if not callable(obj):
        raise HloscopeError(
            f"it is a {type(obj).__name__}, not a function, a jax.stages.Lowered or "
            "Compiled, or a jax.export.Exported",
            where=label,
        )
    if not args and not kwargs:
        required = needs_arguments(obj)
        if required:
            raise HloscopeError(
                f"it takes {len(required)} argument{'s' if len(required) > 1 else ''} "
                f"({', '.join(required)}) but no example arguments were given: pass "
                "--arg SHAPE once per argument (--arg f32[8,128]) or --args "
                "module:factory returning a tuple of arguments",
                where=label,
            )
    kind = "jitted" if _is_jitted(obj) else "function"
    jitted = obj if kind == "jitted" else jax.jit(obj)
    start = time.perf_counter()
    try:
        with user_code() as caught:
            lowered = jitted.lower(*args, **kwargs)
    except HloscopeError:
        raise
    except Exception as exc:
        raise HloscopeError(f"tracing it raised {describe_exception(exc)}", where=label) from exc
    elapsed = time.perf_counter() - start
    return _from_lowered(lowered, kind, label, elapsed, kwargs, tuple(caught))


def _is_jitted(obj: Any) -> bool:
    return callable(getattr(obj, "lower", None)) and callable(getattr(obj, "trace", None))


def _from_lowered(
    lowered: Any,
    kind: str,
    label: str,
    elapsed: float | None,
    kwargs: Mapping[str, Any],
    notes: tuple[str, ...] = (),
) -> Lowering:
    with native_stderr_captured():
        module = lowered.compiler_ir("stablehlo")
        buffer = io.BytesIO()
        module.operation.write_bytecode(file=buffer)
        cost = _cost(lowered)
    leaves = _private_argument_leaves(lowered)
    in_tree_kwargs = _kwarg_names(lowered)
    static = tuple(sorted(k for k in kwargs if k not in in_tree_kwargs))
    return Lowering(
        kind=kind,
        name=_private_function_name(lowered) or label.rpartition(":")[2],
        mlir_bytecode=buffer.getvalue(),
        arguments=leaves,
        static_arguments=static,
        lower_seconds=elapsed,
        cost=cost,
        notes=notes,
        handle=lowered,
    )


def _from_compiled(compiled: Any, label: str) -> Lowering:
    return Lowering(
        kind="compiled",
        name=label.rpartition(":")[2],
        mlir_bytecode=None,
        arguments=(),
        static_arguments=(),
        lower_seconds=None,
        cost=None,
        notes=("a jax.stages.Compiled carries no lowered module; showing the optimized one",),
        handle=compiled,
    )


def from_exported(exported: Any, label: str) -> Lowering:
    """A `Lowering` for a `jax.export.Exported` (its module is a portable artifact)."""
    leaves: list[ArgumentLeaf] = []
    kept = sorted(getattr(exported, "module_kept_var_idx", ()) or range(len(exported.in_avals)))
    hlo_of = {flat: hlo for hlo, flat in enumerate(kept)}
    paths = _tree_paths(exported.in_tree, None)
    shardings = getattr(exported, "in_shardings_hlo", ()) or ()
    for position, aval in enumerate(exported.in_avals):
        sharding = shardings[position] if position < len(shardings) else None
        leaves.append(
            ArgumentLeaf(
                position=position,
                path=paths[position] if position < len(paths) else f"arg{position}",
                shape=_aval_shape(aval),
                nbytes=_aval_bytes(aval),
                donated=False,
                hlo_index=hlo_of.get(position),
                sharding=str(sharding) if sharding is not None else None,
                memory_kind=_aval_memory_kind(aval),
            )
        )
    return Lowering(
        kind="exported",
        name=str(exported.fun_name),
        mlir_bytecode=bytes(exported.mlir_module_serialized),
        arguments=tuple(leaves),
        static_arguments=(),
        lower_seconds=None,
        cost=None,
        notes=(),
        handle=exported,
    )


def deserialize_exported(data: bytes, label: str) -> Lowering:
    """Read a serialized `jax.export.Exported` (flatbuffer). Raises `HloscopeError`."""
    try:
        exported = jax.export.deserialize(bytearray(data))
    except ImportError as exc:
        raise HloscopeError(f"cannot read a serialized Exported: {exc}", where=label) from exc
    except Exception as exc:
        raise HloscopeError(
            f"not a valid serialized jax.export.Exported ({one_line(str(exc), 200)})",
            where=label,
        ) from exc
    return from_exported(exported, label)


# --------------------------------------------------------------------------- compiling


def compile_lowering(lowering: Lowering, label: str) -> Compilation:
    """Compile (or, for a `Compiled`, read) the optimized module of a lowering."""
    handle = lowering.handle
    if isinstance(handle, jax.stages.Compiled):
        return _compilation(handle, None, label)
    if isinstance(handle, jax.stages.Lowered):
        start = time.perf_counter()
        try:
            with user_code():
                compiled = handle.compile()
        except Exception as exc:
            raise HloscopeError(
                f"XLA failed to compile it: {one_line(str(exc), 300)}", where=label
            ) from exc
        return _compilation(compiled, time.perf_counter() - start, label)
    if lowering.mlir_bytecode is not None:
        return compile_module(lowering.mlir_bytecode, label)
    raise HloscopeError("nothing to compile", where=label)


def compile_module(
    mlir: bytes | str, label: str, partitions: int = 1, replicas: int = 1
) -> Compilation:
    """Compile a StableHLO module (text or bytecode) for the local backend."""
    with native_stderr_captured():
        # The first call starts the backend, and XLA logs that on stderr.
        backend = jax.extend.backend.get_backend()
    needed = partitions * replicas
    devices = backend.local_devices()
    if needed > len(devices):
        raise HloscopeError(
            f"the module needs {needed} devices ({replicas} replicas x {partitions} "
            f"partitions) and this {backend.platform} backend has {len(devices)}; on the CPU, "
            f"set XLA_FLAGS=--xla_force_host_platform_device_count={needed}",
            where=label,
        )
    options = _jax_compiler.get_compile_options(
        num_replicas=replicas, num_partitions=partitions, backend=backend
    )
    if needed > 1:
        assignment = np.arange(needed).reshape(replicas, partitions)
        options.device_assignment = _xla_client.DeviceAssignment.create(assignment)
    start = time.perf_counter()
    try:
        with native_stderr_captured():
            executable = backend.compile_and_load(
                mlir if isinstance(mlir, bytes) else mlir.encode(),
                _xla_client.DeviceList(tuple(devices[:needed])),
                options,
            )
    except Exception as exc:
        raise HloscopeError(
            f"XLA failed to compile it: {one_line(str(exc), 300)}", where=label
        ) from exc
    elapsed = time.perf_counter() - start
    module = executable.hlo_modules()[0]
    cost = None
    with contextlib.suppress(Exception):
        cost = _normalise_cost(executable.cost_analysis())
    memory = None
    with contextlib.suppress(Exception):
        memory = _memory(executable.get_compiled_memory_stats())
    return Compilation(
        hlo_proto=module.as_serialized_hlo_module_proto(),
        hlo_text=str(module.to_string()),
        compile_seconds=elapsed,
        cost=cost,
        memory=memory,
        platform=backend.platform,
    )


def _compilation(compiled: Any, elapsed: float | None, label: str) -> Compilation:
    with native_stderr_captured():
        executable = compiled.runtime_executable()
        modules = executable.hlo_modules() if executable is not None else []
        if not modules:
            raise HloscopeError("the compiled executable has no HLO module", where=label)
        module = modules[0]
        cost = None
        with contextlib.suppress(Exception):
            cost = _normalise_cost(compiled.cost_analysis())
        memory = None
        with contextlib.suppress(Exception):
            memory = _memory(compiled.memory_analysis())
        return Compilation(
            hlo_proto=module.as_serialized_hlo_module_proto(),
            hlo_text=str(module.to_string()),
            compile_seconds=elapsed,
            cost=cost,
            memory=memory,
            platform=jax.extend.backend.get_backend().platform,
        )


def _cost(lowered: Any) -> Mapping[str, float] | None:
    try:
        return _normalise_cost(lowered.cost_analysis())
    except Exception:
        return None


def _normalise_cost(raw: Any) -> Mapping[str, float] | None:
    if isinstance(raw, (list, tuple)):
        raw = raw[0] if raw else None
    if not isinstance(raw, Mapping):
        return None
    out: dict[str, float] = {}
    for key in ("flops", "transcendentals", "bytes accessed", "optimal_seconds"):
        if key in raw:
            out[key.replace(" ", "_")] = float(raw[key])
    return out or None


def _memory(stats: Any) -> Mapping[str, int] | None:
    if stats is None:
        return None
    fields = (
        "argument_size_in_bytes",
        "output_size_in_bytes",
        "alias_size_in_bytes",
        "temp_size_in_bytes",
        "generated_code_size_in_bytes",
        "host_argument_size_in_bytes",
        "host_output_size_in_bytes",
        "host_temp_size_in_bytes",
    )
    out = {f: int(getattr(stats, f)) for f in fields if hasattr(stats, f)}
    return out or None


# --------------------------------------------------------------------------- avals & trees


def _aval_shape(aval: Any) -> str:
    hlo = hlo_dtype(np.dtype(aval.dtype).name)
    dims = ",".join(str(d) for d in aval.shape)
    return f"{hlo}[{dims}]"


def _aval_bytes(aval: Any) -> int | None:
    try:
        return int(np.prod(aval.shape, dtype=np.int64)) * int(np.dtype(aval.dtype).itemsize)
    except Exception:
        return None


def _aval_memory_kind(aval: Any) -> str | None:
    space = getattr(aval, "memory_space", None)
    if space is None:
        return None
    name = str(space).rpartition(".")[2].lower()
    return None if name in ("device", "any") else name


def _tree_paths(in_tree: Any, parameter_names: Sequence[str] | None) -> list[str]:
    """Readable pytree paths of the leaves of an `(args, kwargs)` tree."""
    try:
        count = in_tree.num_leaves
        skeleton = jax.tree_util.tree_unflatten(in_tree, list(range(count)))
        with_paths, _ = jax.tree_util.tree_flatten_with_path(skeleton)
    except Exception:
        return []
    paths: list[str] = []
    for path, _leaf in with_paths:
        paths.append(_format_path(path, parameter_names))
    return paths


def _format_path(path: Sequence[Any], parameter_names: Sequence[str] | None) -> str:
    if len(path) >= 2 and isinstance(path[0], jax.tree_util.SequenceKey):
        head, second, rest = path[0], path[1], path[2:]
        if head.idx == 0 and isinstance(second, jax.tree_util.SequenceKey):
            index = second.idx
            if parameter_names and index < len(parameter_names):
                name = str(parameter_names[index])
            else:
                name = f"args[{index}]"
            return name + str(jax.tree_util.keystr(tuple(rest)))
        if head.idx == 1 and isinstance(second, jax.tree_util.DictKey):
            return str(second.key) + str(jax.tree_util.keystr(tuple(rest)))
    return str(jax.tree_util.keystr(tuple(path)))


def _kwarg_names(lowered: Any) -> set[str]:
    try:
        _args, kwargs = jax.tree_util.tree_unflatten(
            lowered.in_tree, [None] * lowered.in_tree.num_leaves
        )
        return set(kwargs)
    except Exception:
        return set()


# --------------------------------------------------------------------------- JAX private API


def _private_compile_args(lowered: Any) -> Mapping[str, Any]:
    """`Lowered._lowering.compile_args`: JAX's record of kept arguments and shardings."""
    return lowered._lowering.compile_args  # type: ignore[no-any-return]


def _private_function_name(lowered: Any) -> str | None:
    try:
        info = _private_compile_args(lowered)["all_args_info"].debug_info
        src = str(info.func_src_info or "")
        return src.split(" at ", 1)[0] or None
    except Exception:
        return None


def _private_argument_leaves(lowered: Any) -> tuple[ArgumentLeaf, ...]:
    """Every flattened argument leaf, with its HLO parameter index when kept."""
    compile_args = _private_compile_args(lowered)
    all_args = compile_args["all_args_info"]
    kept = sorted(compile_args["kept_var_idx"])
    hlo_of = {flat: hlo for hlo, flat in enumerate(kept)}
    names = list(all_args.debug_info.arg_names or ())
    avals = list(all_args.in_avals)
    flat_info = jax.tree_util.tree_leaves(lowered.args_info)
    shardings = list(compile_args.get("in_shardings") or ())
    leaves = []
    for position, aval in enumerate(avals):
        info = flat_info[position] if position < len(flat_info) else None
        hlo_index = hlo_of.get(position)
        sharding = (
            shardings[hlo_index] if hlo_index is not None and hlo_index < len(shardings) else None
        )
        sharding_text, memory_kind = _describe_sharding(sharding)
        leaves.append(
            ArgumentLeaf(
                position=position,
                path=names[position]
                if position < len(names) and names[position]
                else f"arg{position}",
                shape=_aval_shape(aval),
                nbytes=_aval_bytes(aval),
                donated=bool(getattr(info, "donated", False)),
                hlo_index=hlo_index,
                sharding=sharding_text,
                memory_kind=memory_kind or _aval_memory_kind(aval),
            )
        )
    return tuple(leaves)


def _describe_sharding(sharding: Any) -> tuple[str | None, str | None]:
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


def private_api_ok() -> list[str]:
    """Names of the private JAX APIs hloscope reads that are missing (for a test)."""
    missing = []
    lowered = jax.jit(lambda a, b: a).lower(np.float32(1), np.float32(2))
    try:
        compile_args = _private_compile_args(lowered)
    except AttributeError:
        return ["Lowered._lowering.compile_args"]
    for key in ("kept_var_idx", "all_args_info", "in_shardings"):
        if key not in compile_args:
            missing.append(f"compile_args[{key!r}]")
    info = compile_args.get("all_args_info")
    if info is not None:
        for attr in ("in_avals", "debug_info"):
            if not hasattr(info, attr):
                missing.append(f"AllArgsInfo.{attr}")
        if hasattr(info, "debug_info") and not hasattr(info.debug_info, "arg_names"):
            missing.append("DebugInfo.arg_names")
    if not hasattr(_jax_compiler, "get_compile_options"):
        missing.append("jax._src.compiler.get_compile_options")
    for name in ("DeviceAssignment", "DeviceList"):
        if not hasattr(_xla_client, name):
            missing.append(f"jax._src.lib.xla_client.{name}")
    return missing

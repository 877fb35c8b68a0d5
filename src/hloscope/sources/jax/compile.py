"""Compiling: the optimized module XLA makes of a lowering, of a given
`jax.stages.Compiled` or of a StableHLO module, with XLA's cost and memory analyses
where the backend has them (a `Compilation`).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

import jax
import jax.extend
import numpy as np

from hloscope.environment import package_version, xla_of_jaxlib
from hloscope.errors import DoesNotFit, HloscopeError, one_line
from hloscope.ir.custom_calls import outside_xla, unrunnable_custom_calls
from hloscope.native_stderr import native_stderr_captured
from hloscope.sources.compile_cache import cached_compilation, compile_key
from hloscope.sources.entrypoint import user_code
from hloscope.sources.jax.backend import local_backend
from hloscope.sources.jax.private import (
    private_compile_devices,
    private_compile_options,
    private_device_assignment,
    private_device_list,
)
from hloscope.stages import (
    LOCAL_LOWERING,
    Compilation,
    CompiledFor,
    CompilerOptions,
    Lowering,
)

if TYPE_CHECKING:
    from hloscope.compile_for import CompileFor


def compile_lowering(
    lowering: Lowering,
    label: str,
    compiler_options: CompilerOptions = (),
    compile_for: CompileFor | None = None,
    cache: bool = True,
) -> Compilation:
    """Compile (or, for a `Compiled`, read) the optimized module of a lowering.
    `compiler_options`: XLA debug options for this compilation only (`xla_dump_to`).
    `compile_for`: a TPU topology or GPU spec to compile for instead of the local
    backend. `cache`: read and keep it in hloscope's compile cache
    (`sources.compile_cache`); a `Compiled` is read as it is."""
    handle = lowering.handle
    if compile_for is not None:
        return _compile_lowering_for(lowering, label, compiler_options, compile_for, cache)
    if isinstance(handle, jax.stages.Compiled):
        if compiler_options:
            raise HloscopeError(
                "this is a jax.stages.Compiled, already compiled, and this view needs XLA "
                "to compile it again with its dump options: give the function or its "
                "jax.stages.Lowered",
                where=label,
            )
        return _compilation(handle, None, label)
    if isinstance(handle, jax.stages.Lowered):
        key = _lowered_key(lowering, compiler_options) if cache else None
        return _through_cache(
            key, compiler_options, lambda options: _compile_lowered(handle, label, options)
        )
    if lowering.mlir_bytecode is not None:
        return compile_module(
            lowering.mlir_bytecode, label, compiler_options=compiler_options, cache=cache
        )
    raise HloscopeError("nothing to compile", where=label)


def _compile_lowered(handle: Any, label: str, compiler_options: CompilerOptions) -> Compilation:
    start = time.perf_counter()
    try:
        with user_code(), _compiled_by_xla(compiler_options):
            compiled = handle.compile(compiler_options=dict(compiler_options) or None)
    except Exception as exc:
        raise HloscopeError(
            f"{xla_of_jaxlib()} failed to compile it: {one_line(str(exc), 300)}", where=label
        ) from exc
    return _compilation(compiled, time.perf_counter() - start, label)


@contextlib.contextmanager
def _compiled_by_xla(compiler_options: CompilerOptions) -> Iterator[None]:
    """JAX's persistent compilation cache off while a compile that XLA is to dump runs:
    where the user turned it on (`jax_compilation_cache_dir`), it hands back the
    executable of an earlier compile (its key leaves the dump options out), and XLA
    then writes no buffer assignment or per-pass file."""
    dumps = any(name == "xla_dump_to" for name, _ in compiler_options)
    if not dumps or not jax.config.jax_enable_compilation_cache:
        yield
        return
    jax.config.update("jax_enable_compilation_cache", False)
    try:
        yield
    finally:
        jax.config.update("jax_enable_compilation_cache", True)


def _through_cache(
    key: str | None,
    compiler_options: CompilerOptions,
    compile_with: Callable[[CompilerOptions], Compilation],
) -> Compilation:
    """`cached_compilation`, but compiled as without the cache where XLA_FLAGS name a
    dump folder (`--xla_dump_to`): XLA writes the user's files only when it compiles,
    and the cache's own dump folder (its default dump) would take their folder's
    place."""
    if key is not None and _flags_dump_folder():
        key = None
    return cached_compilation(key, compiler_options, compile_with)


def _flags_dump_folder() -> str:
    """The folder XLA_FLAGS' `--xla_dump_to` names, as XLA reads its flags into every
    compile's options ("" for none)."""
    options = private_compile_options(num_replicas=1, num_partitions=1, backend=local_backend())
    return str(options.executable_build_options.debug_options.xla_dump_to)


def _lowered_key(lowering: Lowering, compiler_options: CompilerOptions) -> str | None:
    """The cache key of JAX compiling a `Lowered` for the local backend: its module,
    the devices and options JAX compiles it with."""
    from hloscope.sources.jax.private import private_module_devices, private_propagation

    handle = lowering.handle
    if lowering.mlir_bytecode is None:
        return None
    devices, jit_options = private_compile_devices(handle)
    return compile_key(
        lowering.mlir_bytecode,
        _local_target(),
        devices,
        (*compiler_options, *sorted((f"jit:{k}", str(v)) for k, v in jit_options)),
        private_module_devices(handle)[0],
        1,
        private_propagation(handle),
        _versions(),
    )


def module_key(
    mlir: bytes | str,
    label: str,
    partitions: int,
    replicas: int,
    compiler_options: CompilerOptions,
    compile_for: CompileFor | None,
    propagation: Any = None,
    device_order: Any = None,
) -> str:
    """The cache key of compiling a StableHLO module over partitions x replicas
    devices, for the local backend or for `compile_for` (over the devices
    `compile_devices` gives, by id and in order)."""
    if compile_for is None:
        target = _local_target()
        devices: Iterable[int] = range(partitions * replicas)
    else:
        from hloscope.sources.jax.platforms import compile_devices

        target = {
            "spec": compile_for.spec,
            "topology": compile_for.topology,
            "gpu_config": compile_for.gpu_config,
            "chip_config_name": compile_for.chip_config_name,
        }
        chosen, _ = compile_devices(compile_for, partitions, replicas, label, device_order)
        devices = (int(device.id) for device in chosen)
    return compile_key(
        mlir, target, devices, compiler_options, partitions, replicas, propagation, _versions()
    )


def _local_target() -> dict[str, Any]:
    backend = local_backend()
    devices = backend.devices()
    return {
        "platform": str(backend.platform),
        "platform_version": str(getattr(backend, "platform_version", "")),
        "device_kind": str(devices[0].device_kind),
        "devices": len(devices),
    }


_COMPILERS = ("jax", "jaxlib", "libtpu", "jax-cuda12-plugin", "jax-cuda12-pjrt")
"""What compiles: their versions are in every cache key."""
_COMPILE_SETTINGS = (
    "effort",
    "optimization_level",
    "fitting_level",
    "remat_pass",
    "xla_profile_version",
    "shardy",
)
"""Words naming JAX's settings that go into XLA's compile options
(`jax._src.compiler.get_compile_options` reads them): in every cache key too."""


def _versions() -> dict[str, str | None]:
    versions = {name: package_version(name) for name in _COMPILERS}
    for name, value in jax.config.values.items():
        if any(word in name for word in _COMPILE_SETTINGS):
            versions[name] = str(value)
    return versions


def _compile_lowering_for(
    lowering: Lowering,
    label: str,
    compiler_options: CompilerOptions,
    target: CompileFor,
    cache: bool = True,
) -> Compilation:
    from hloscope.sources.jax.platforms import compile_for_platform
    from hloscope.sources.jax.private import private_module_devices, private_propagation
    from hloscope.sources.jax.slice_mesh import lowered_device_order

    handle = lowering.handle
    order = None
    jit_options: tuple[tuple[str, Any], ...] = ()
    if isinstance(handle, jax.stages.Compiled):
        raise HloscopeError(
            f"this is a jax.stages.Compiled, compiled already for this machine: give the "
            f"function or its jax.stages.Lowered to compile it for {target.spec}",
            where=label,
        )
    if isinstance(handle, jax.stages.Lowered):
        module: Any = handle.compiler_ir("stablehlo")
        # jax.jit's compiler_options, applied as JAX applies them: before the view's own.
        jit_options = private_compile_devices(handle)[1]
        partitions, devices = private_module_devices(handle)
        propagation = private_propagation(handle)
        # The slice's devices in the order the program's mesh holds them: a value of
        # the compile, as the module is.
        order = lowered_device_order(devices, target, partitions)
    elif lowering.mlir_bytecode is not None:
        module, partitions, propagation = lowering.mlir_bytecode, 1, None
    else:
        raise HloscopeError("nothing to compile", where=label)
    key = None
    if cache and lowering.mlir_bytecode is not None:
        key = module_key(
            lowering.mlir_bytecode,
            label,
            partitions,
            1,
            (*compiler_options, *((f"jit:{k}", str(v)) for k, v in jit_options)),
            target,
            propagation,
            order,
        )

    def compile_on_platform(options: CompilerOptions) -> Compilation:
        executable, elapsed, compiled_for = compile_for_platform(
            module, target, label, partitions, 1, options, propagation, order, jit_options
        )
        return executable_compilation(executable, elapsed, target.platform, compiled_for)

    try:
        return _through_cache(key, compiler_options, compile_on_platform)
    except DoesNotFit:
        raise
    except HloscopeError as exc:
        # A program lowered for this machine's platform may fail for that reason alone
        # (a CPU-only custom call), or for an option of its jit the platform's compiler
        # does not know: the refusal says so too.
        why = [n for n in lowering.notes if LOCAL_LOWERING in n][:1]
        named = [k for k, _ in jit_options if repr(k) in exc.message or f" {k}" in exc.message]
        if named:
            why.append(f"{', '.join(named)}: from its jax.jit(..., compiler_options=...)")
        if not why:
            raise
        raise HloscopeError(f"{exc.message} ({'; '.join(why)})", where=exc.where) from exc


def compile_module(
    mlir: bytes | str,
    label: str,
    partitions: int = 1,
    replicas: int = 1,
    compiler_options: CompilerOptions = (),
    custom_call_targets: Iterable[str] = (),
    compile_for: CompileFor | None = None,
    cache: bool = True,
) -> Compilation:
    """Compile a StableHLO module (text or bytecode) for the local backend or for
    `compile_for`, with XLA debug options for this compilation only, through
    hloscope's compile cache when `cache`. `custom_call_targets`: the targets the
    module calls; one the backend cannot run is refused before compiling."""
    key = None
    if cache:
        key = module_key(mlir, label, partitions, replicas, compiler_options, compile_for)
    return _through_cache(
        key,
        compiler_options,
        lambda options: executable_compilation(
            *compile_executable_for(
                mlir,
                label,
                partitions,
                replicas,
                options,
                custom_call_targets,
                compile_for,
            )
        ),
    )


def compile_executable_for(
    mlir: bytes | str,
    label: str,
    partitions: int = 1,
    replicas: int = 1,
    compiler_options: CompilerOptions = (),
    custom_call_targets: Iterable[str] = (),
    compile_for: CompileFor | None = None,
) -> tuple[Any, float, str, CompiledFor]:
    """`compile_executable`'s executable for the local backend, or, for `compile_for`,
    the platform's compiler's (`compile_for_platform`), with the seconds XLA took, the
    platform, and what it was compiled for: what `executable_compilation` reads."""
    if compile_for is not None:
        from hloscope.sources.jax.platforms import compile_for_platform

        executable, elapsed, compiled_for = compile_for_platform(
            mlir, compile_for, label, partitions, replicas, compiler_options
        )
        return executable, elapsed, compile_for.platform, compiled_for
    executable, elapsed, platform = compile_executable(
        mlir, label, partitions, replicas, compiler_options, custom_call_targets
    )
    return executable, elapsed, platform, _local(partitions * replicas)


def compile_executable(
    mlir: bytes | str,
    label: str,
    partitions: int = 1,
    replicas: int = 1,
    compiler_options: CompilerOptions = (),
    custom_call_targets: Iterable[str] = (),
) -> tuple[Any, float, str]:
    """`compile_module`'s executable, loaded on the local backend's first devices, with
    the seconds XLA took and the backend's platform: what `profile` runs."""
    backend = local_backend()
    refusal = _custom_call_refusal(custom_call_targets, backend.platform)
    if refusal is not None:
        raise HloscopeError(refusal, where=label)
    needed = partitions * replicas
    devices = backend.local_devices()
    if needed > len(devices):
        raise HloscopeError(
            f"the module needs {needed} devices ({replicas} replicas x {partitions} "
            f"partitions) and this {backend.platform} backend has {len(devices)}; on the CPU, "
            f"set XLA_FLAGS=--xla_force_host_platform_device_count={needed}",
            where=label,
        )
    options = private_compile_options(
        num_replicas=replicas,
        num_partitions=partitions,
        backend=backend,
        env_options_overrides=dict(compiler_options),
    )
    if needed > 1:
        assignment = np.arange(needed).reshape(replicas, partitions)
        options.device_assignment = private_device_assignment(assignment)
    start = time.perf_counter()
    try:
        with native_stderr_captured():
            executable = backend.compile_and_load(
                mlir if isinstance(mlir, bytes) else mlir.encode(),
                private_device_list(tuple(devices[:needed])),
                options,
            )
    except Exception as exc:
        raise HloscopeError(
            f"{xla_of_jaxlib()} failed to compile it: {one_line(str(exc), 300)}", where=label
        ) from exc
    return executable, time.perf_counter() - start, str(backend.platform)


def executable_compilation(
    executable: Any, elapsed: float, platform: str, compiled_for: CompiledFor | None = None
) -> Compilation:
    """The optimized module of an executable `compile_executable` (or
    `compile_for_platform`) made, with XLA's analyses."""
    return _with_analyses(
        executable.hlo_modules()[0],
        elapsed,
        platform,
        executable.cost_analysis,
        executable.get_compiled_memory_stats,
        compiled_for,
    )


def _local(used: int) -> CompiledFor:
    from hloscope.sources.jax.platforms import local_compiled_for

    return local_compiled_for(local_backend(), used)


def custom_call_refusal(custom_call_targets: Iterable[str]) -> str | None:
    """Why a module calling `custom_call_targets` cannot be compiled for the local
    backend, known without compiling it (`hloscope.ir.custom_calls`); None when
    nothing says so. The local backend is started only for a module that needs
    implementations registered with it (starting one takes a TPU's lock, a GPU's
    memory)."""
    if not outside_xla(custom_call_targets):
        return None
    return _custom_call_refusal(custom_call_targets, local_backend().platform)


def _custom_call_refusal(custom_call_targets: Iterable[str], platform: str) -> str | None:
    unrunnable = unrunnable_custom_calls(custom_call_targets, platform)
    if not unrunnable:
        return None
    names = ", ".join(unrunnable[:_NAMED_TARGETS])
    if len(unrunnable) > _NAMED_TARGETS:
        names += f" and {len(unrunnable) - _NAMED_TARGETS} more"
    which = "a custom call" if len(unrunnable) == 1 else "custom calls"
    return (
        f"the module holds {which} the local {platform} backend cannot run ({names}): "
        "compile it on the backend it was written for"
    )


_NAMED_TARGETS = 6
"""How many targets a refusal names before `and N more`."""


def _compilation(compiled: Any, elapsed: float | None, label: str) -> Compilation:
    with native_stderr_captured():
        executable = compiled.runtime_executable()
        modules = executable.hlo_modules() if executable is not None else []
        if not modules:
            raise HloscopeError("the compiled executable has no HLO module", where=label)
        return _with_analyses(
            modules[0],
            elapsed,
            jax.extend.backend.get_backend().platform,
            compiled.cost_analysis,
            compiled.memory_analysis,
            _local(_device_count(executable)),
        )


def _device_count(executable: Any) -> int:
    """How many devices a loaded executable runs on."""
    try:
        return len(executable.local_devices())
    except Exception:
        return 1


def _with_analyses(
    module: Any,
    elapsed: float | None,
    platform: str,
    cost_analysis: Callable[[], Any],
    memory_analysis: Callable[[], Any],
    compiled_for: CompiledFor | None = None,
) -> Compilation:
    """The optimized module with XLA's cost and memory analyses, where the backend
    has them (they raise on backends and executables that do not)."""
    cost = None
    with contextlib.suppress(Exception):
        cost = normalise_cost(cost_analysis())
    memory = None
    with contextlib.suppress(Exception):
        memory = _memory(memory_analysis())
    return Compilation(
        hlo_proto=module.as_serialized_hlo_module_proto(),
        hlo_text=str(module.to_string()),
        compile_seconds=elapsed,
        cost=cost,
        memory=memory,
        platform=platform,
        compiled_for=compiled_for,
    )


def normalise_cost(raw: Any) -> Mapping[str, float] | None:
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
        "peak_memory_in_bytes",
    )
    out = {f: int(getattr(stats, f)) for f in fields if hasattr(stats, f)}
    return out or None


def shardy_partitioner() -> bool:
    """Whether JAX partitions with Shardy (`jax_use_shardy_partitioner`), as the
    target left it when it was imported."""
    return bool(jax.config.jax_use_shardy_partitioner)

"""Compiling for a TPU topology or a GPU spec on this machine, without the device
(`--for`): the compile-only devices JAX makes for it (`jax.experimental.topologies`,
with libtpu or JAX's CUDA plugin), the program given as many host devices as the
platform has, and a module compiled by that platform's compiler over a device
assignment of its devices. What it was compiled for is recorded as a `CompiledFor`;
the analyses read the optimized module as they read any other.

A `Lowered`'s own `.compile()` would compile for the CPU whatever platform it was
lowered for, so the module is compiled through the topology's client.
"""

from __future__ import annotations

import dataclasses
import os
import re
import time
from typing import Any

import jax
import numpy as np

from hloscope.compile_for import COMPILERS, CompileFor, compiler_installed
from hloscope.environment import package_version
from hloscope.errors import DoesNotFit, HloscopeError, one_line
from hloscope.native_stderr import native_stderr_captured
from hloscope.sources.jax.private import (
    private_backends_started,
    private_compile_options,
    private_device_list,
    private_parse_module,
)
from hloscope.stages import CompiledFor, CompilerOptions


@dataclasses.dataclass(frozen=True)
class DeviceOrder:
    """The platform's devices a program is compiled over, in its device assignment's
    order: a value of the compile (`compile_for_platform`), as its module is."""

    positions: tuple[int, ...]
    """Each device's position in the platform's device list (JAX's order of the
    topology's devices), partition by partition."""
    slice_mesh: bool
    """Whether it is the order of a mesh JAX's mesh helpers made over the platform's
    devices (`jax.make_mesh`, `mesh_utils.create_device_mesh`) while the program was
    loaded (`slice_mesh`); False where it is the program's own device list."""


_devices: dict[str, tuple[Any, ...]] = {}
"""The compile-only devices of each spec made in this process."""


def platform_devices(target: CompileFor) -> tuple[Any, ...]:
    """The compile-only devices of `target`'s TPU topology or GPU spec (made once per
    process). Without the package that compiles for it: one line naming hloscope's
    extra."""
    made = _devices.get(target.spec)
    if made is not None:
        return made
    compiler = COMPILERS[target.platform]
    if not compiler_installed(target.platform):
        raise HloscopeError(
            f"--for {target.spec}: compiling for a {target.platform.upper()} without one "
            f"needs {compiler.distribution}: pip install 'hloscope[{compiler.extra}]'"
        )
    if target.platform == "gpu":
        plugin, jaxlib = package_version("jax-cuda12-plugin"), package_version("jaxlib")
        if plugin != jaxlib:
            raise HloscopeError(
                f"--for {target.spec}: jax-cuda12-plugin {plugin} does not match jaxlib "
                f"{jaxlib}: pip install 'jax-cuda12-plugin=={jaxlib}' 'jax-cuda12-pjrt=={jaxlib}'"
            )
    from jax.experimental import topologies

    from hloscope.sources.jax.backend import flags_checked

    flags_checked()  # libtpu reads LIBTPU_INIT_ARGS as it makes the topology
    try:
        with native_stderr_captured():
            if target.platform == "tpu":
                kwargs: dict[str, Any] = {}
                if target.slices > 1:
                    kwargs["num_slices"] = target.slices
                if target.chip_config_name is not None:
                    kwargs["chip_config_name"] = target.chip_config_name
                topology = topologies.get_topology_desc(target.topology, "tpu", **kwargs)
            else:
                topology = topologies.get_topology_desc(
                    platform="cuda", target_config=target.gpu_config, topology=target.topology
                )
            devices = tuple(topology.devices)
    except Exception as exc:
        raise HloscopeError(
            f"--for {target.spec}: JAX could not make its devices: {one_line(str(exc), 300)}"
        ) from exc
    _devices[target.spec] = devices
    return devices


def give_program_devices(target: CompileFor) -> int | None:
    """Before the user's module is imported: as many host (CPU) devices as `target`
    has, so that a program building its mesh from `jax.devices()` builds it for the
    platform's count. Returns that count; None where JAX's backends are started already
    (the count is then what it is). The platform's compiler is not started here: a
    program may set its flags (LIBTPU_INIT_ARGS) when imported."""
    global _flags_before_import
    count = target.devices
    if private_backends_started():
        return None
    _flags_before_import = os.environ.get("XLA_FLAGS", "")
    jax.config.update("jax_num_cpu_devices", count)
    return count


_flags_before_import: str | None = None
"""XLA_FLAGS as they were before the program was imported: a device count in them is
the environment's (our count overrides it), not the program's."""


def program_device_count(target: CompileFor, given: int | None) -> None:
    """After the user's module is imported: a program that set its own device count
    (`jax_num_cpu_devices`, or XLA_FLAGS' `--xla_force_host_platform_device_count`)
    other than the platform's is refused in one line naming both."""
    if given is None:
        return  # JAX's backends were started before: the count is what it was
    own: tuple[int, str] | None = None
    configured = int(jax.config.jax_num_cpu_devices)
    flags = os.environ.get("XLA_FLAGS", "")
    match = re.search(r"--xla_force_host_platform_device_count=(\d+)", flags)
    if configured not in (given, -1):
        own = (configured, "jax_num_cpu_devices")
    elif match and configured == given and flags != _flags_before_import:
        # The program's own XLA_FLAGS, which our jax_num_cpu_devices would override.
        own = (int(match[1]), "XLA_FLAGS=--xla_force_host_platform_device_count")
    if own is not None and own[0] != target.devices:
        raise HloscopeError(
            f"the program sets {own[0]} devices ({own[1]}) and {target.spec} has "
            f"{target.devices}: compile for a platform with {own[0]} devices, or let the "
            "program take the platform's count (jax.devices())"
        )


def lowering_platform(target: CompileFor) -> str:
    """The platform name JAX lowers for: `tpu`, `cuda`."""
    return "tpu" if target.platform == "tpu" else "cuda"


def compile_for_platform(
    module: Any,
    target: CompileFor,
    label: str,
    partitions: int = 1,
    replicas: int = 1,
    compiler_options: CompilerOptions = (),
    propagation: tuple[tuple[bool, ...], tuple[bool, ...]] | None = None,
    device_order: DeviceOrder | None = None,
    jit_options: tuple[tuple[str, Any], ...] = (),
) -> tuple[Any, float, CompiledFor]:
    """Compile a StableHLO module (an `ir.Module` of JAX's context, bytecode or text)
    for `target` with its platform's compiler, over partitions x replicas of its
    devices in `device_order` (the program's device assignment, `slice_mesh`), or
    over the first of them without one: the executable (not loaded: there is no
    device), the seconds XLA took, and what it was compiled for. `jit_options`: the
    program's `jax.jit(..., compiler_options=...)`, as given (XLA takes a bool only
    as a bool), applied before `compiler_options`, as JAX applies them. XLA refusing
    a program that does not fit the device's memory is a `DoesNotFit`."""
    devices = platform_devices(target)
    chosen, device_order = compile_devices(target, partitions, replicas, label, device_order)
    client = chosen[0].client
    options = private_compile_options(
        num_replicas=replicas,
        num_partitions=partitions,
        backend=client,
        env_options_overrides={**dict(jit_options), **dict(compiler_options)},
        device_assignment=np.array(chosen, dtype=object).reshape(replicas, partitions),
    )
    if propagation is not None:
        build = options.executable_build_options
        build.allow_spmd_sharding_propagation_to_parameters = list(propagation[0])
        build.allow_spmd_sharding_propagation_to_output = list(propagation[1])
    computation = module if not isinstance(module, (bytes, str)) else private_parse_module(module)
    start = time.perf_counter()
    try:
        with native_stderr_captured():
            executable = client.compile(computation, private_device_list(chosen), options)
    except Exception as exc:
        message = one_line(str(exc), 400)
        if "RESOURCE_EXHAUSTED" in message:
            raise DoesNotFit(
                message.removeprefix("RESOURCE_EXHAUSTED: "),
                target.spec,
                where=label,
                compiled_for=compiled_for_record(target, chosen, len(devices), device_order),
            ) from exc
        compiler = COMPILERS[target.platform].distribution
        raise HloscopeError(
            f"{compiler} {package_version(compiler) or ''} failed to compile it for "
            f"{target.spec}: {message}",
            where=label,
        ) from exc
    elapsed = time.perf_counter() - start
    record = compiled_for_record(target, chosen, len(devices), device_order)
    return executable, elapsed, record


def compile_devices(
    target: CompileFor,
    partitions: int,
    replicas: int,
    label: str,
    device_order: DeviceOrder | None = None,
) -> tuple[tuple[Any, ...], DeviceOrder]:
    """The devices of `target` a module of partitions x replicas is compiled over, in
    the device assignment's order (`device_order`, the program's on the slice; the
    first devices without one), and that order: what `compile_for_platform` compiles
    over, and the compile cache's key names by id."""
    devices = platform_devices(target)
    needed = partitions * replicas
    if needed > len(devices):
        raise HloscopeError(
            f"the program runs on {needed} devices and {target.spec} has {len(devices)}: "
            "compile it for a platform with as many",
            where=label,
        )
    if (
        device_order is None
        or len(device_order.positions) != needed
        or max(device_order.positions) >= len(devices)
    ):
        device_order = DeviceOrder(tuple(range(needed)), slice_mesh=False)
    return tuple(devices[k] for k in device_order.positions), device_order


def compiled_for_record(
    target: CompileFor, used: tuple[Any, ...], total: int, order: DeviceOrder
) -> CompiledFor:
    """What compiling over `used` (of `total` devices of `target`, in `order`)
    compiled for."""
    compiler = COMPILERS[target.platform].distribution
    return CompiledFor(
        platform=target.platform,
        name=target.name,
        spec=target.spec,
        topology=target.topology,
        devices=len(used),
        platform_devices=total,
        device_kind=str(used[0].device_kind),
        compiler=compiler,
        compiler_version=package_version(compiler),
        deviceless=True,
        autotuned=False if target.platform == "gpu" else None,
        memory_bytes=target.memory_bytes,
        memory_name=target.memory_name,
        slices=target.slices,
        device_ids=tuple(int(device.id) for device in used),
        slice_mesh_order=order.slice_mesh,
    )


def local_compiled_for(backend: Any, used: int) -> CompiledFor:
    """What a compilation for the local backend over `used` of its devices compiled
    for."""
    devices = backend.devices()
    return CompiledFor(
        platform=str(backend.platform),
        name=str(devices[0].device_kind),
        spec=None,
        topology=None,
        devices=used,
        platform_devices=len(devices),
        device_kind=str(devices[0].device_kind),
        compiler="jaxlib",
        compiler_version=package_version("jaxlib"),
        deviceless=False,
        autotuned=None,
    )

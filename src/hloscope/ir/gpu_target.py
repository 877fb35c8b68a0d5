"""The facts a report names from a GPU spec: XLA's `GpuTargetConfigProto` in text form
(the file `--for gpu:PATH.txtpb` names, and the specs hloscope ships). The whole text
goes to JAX's CUDA plugin as it is; only the device's memory and its description are
read here, for "will it fit" and for the report's header, and for `profile --for` its
memory bandwidth, clock and cores. jaxlib ships no Python class
of the proto, so its scalar fields are read from the text format's lines.
"""

from __future__ import annotations

import contextlib
import dataclasses

from hloscope.errors import HloscopeError


@dataclasses.dataclass(frozen=True)
class GpuTargetFacts:
    """What a GPU spec says of its device."""

    memory_bytes: int | None
    """`gpu_device_info.device_memory_size`."""
    description: str | None
    """`device_description_str`: `NVIDIA H100 80GB HBM3`."""
    memory_bandwidth: int | None = None
    """`gpu_device_info.memory_bandwidth`, bytes per second (`profile --for`)."""
    clock_rate_ghz: float | None = None
    """`gpu_device_info.clock_rate_ghz`."""
    core_count: int | None = None
    """`gpu_device_info.core_count`: streaming multiprocessors."""


def gpu_target_facts(text: str, where: str) -> GpuTargetFacts:
    """The facts of a `GpuTargetConfigProto` in text form; text that holds no
    `gpu_device_info` is not one (a `HloscopeError` naming `where`)."""
    memory: int | None = None
    description: str | None = None
    numbers: dict[str, float] = {}
    seen_device_info = False
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if line.startswith("gpu_device_info"):
            seen_device_info = True
        key, sep, value = line.partition(":")
        if not sep:
            continue
        key, value = key.strip(), value.strip()
        if key == "device_memory_size" and value.isdigit():
            memory = int(value)
        elif key in ("memory_bandwidth", "clock_rate_ghz", "core_count"):
            with contextlib.suppress(ValueError):
                numbers[key] = float(value)
        elif key == "device_description_str" and len(value) >= 2 and value[0] == '"':
            description = value.strip('"')
    if not seen_device_info:
        raise HloscopeError(
            "not a GPU spec: a GpuTargetConfigProto in text form has a gpu_device_info "
            "block, as the files of XLA's xla/tools/hlo_opt/gpu_specs/ do",
            where=where,
        )
    bandwidth, cores = numbers.get("memory_bandwidth"), numbers.get("core_count")
    return GpuTargetFacts(
        memory,
        description,
        memory_bandwidth=int(bandwidth) if bandwidth else None,
        clock_rate_ghz=numbers.get("clock_rate_ghz") or None,
        core_count=int(cores) if cores else None,
    )

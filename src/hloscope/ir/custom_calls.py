"""Which custom calls the local backend can run, decided before compiling.

A module written for a GPU (cuBLAS and cuDNN calls, Triton kernels, Transformer
Engine's attention) compiles on the CPU for as long as XLA's whole pipeline takes and
then fails on its first custom call. The answer is known before that: XLA runs a
custom call through the implementation registered for the target and the platform,
and jaxlib shows that registry (`xla_client.custom_call_targets(platform)`: JAX's
LAPACK kernels, Python callbacks, a user's `jax.ffi` targets). The registry is filled
when JAX starts its backends, so it is read after that.

Some targets have no implementation and need none: XLA's own passes rewrite them
away before code is generated (shardings, host offloading, layout constraints, the
expanders of `TopK`, `Qr`, `Eigh`, the legalization of `mhlo.*` calls). Those are
listed here by hand, as jaxlib has no way to ask for them: the names XLA's CPU
compiler accepted when each was compiled alone with jaxlib 0.10 (a target no
pass knows fails with `No registered implementation for custom call to NAME`).

Only the CPU is checked: a GPU or TPU backend is a PJRT plugin holding its own
registry, which jaxlib does not show, and its compiler handles many more targets.
"""

from __future__ import annotations

from collections.abc import Iterable

from hloscope.ir.model import Module

_CHECKED_PLATFORMS = {"cpu": "Host"}
"""The platforms whose registry jaxlib shows: JAX's platform name, XLA's name."""

XLA_OWN_TARGETS = frozenset(
    {
        # Shardings and the SPMD partitioner.
        "Sharding",
        "SPMDFullToShardShape",
        "SPMDShardToFullShape",
        "ShardBarrierFrom",
        "ShardBarrierTo",
        # Memory spaces and host offloading.
        "annotate_device_placement",
        "MoveToHost",
        "MoveToDevice",
        "Pin",
        "Unpin",
        "CreateBuffer",
        # Layouts, dynamic shapes, random seeds.
        "LayoutConstraint",
        "PadToStatic",
        "SliceToDynamic",
        "GetRngSeed",
        # Expanded into HLO ops by XLA's passes.
        "TopK",
        "ApproxTopK",
        "Qr",
        "Eigh",
        "ProductOfElementaryHouseholderReflectors",
    }
)
"""Targets XLA's CPU compiler rewrites itself (see the module docstring)."""

XLA_OWN_PREFIXES = ("mhlo.", "xla.sdy.", "__onednn$")
"""Families of targets XLA handles itself: `mhlo.*` calls legalized to HLO ops,
Shardy's round trip through HLO (`xla.sdy.*`), the CPU's oneDNN rewrites."""


def module_custom_call_targets(module: Module) -> frozenset[str]:
    """Every custom-call target the module names, in any function."""
    targets = set()
    for op in module.ops:
        target = op.custom_call_target
        if target is not None:
            targets.add(target)
    return frozenset(targets)


HOST_WAITING_OPS = frozenset({"infeed", "outfeed", "recv", "send"})
"""Ops that wait on another party to run: the host feeds an infeed and drains an
outfeed; a send waits for its receiver, a recv for its sender."""

HOST_CALLBACK_TARGETS = frozenset(
    {
        f"xla_{kind}python_{device}_callback"
        for kind in ("", "ffi_", "ffi_partitioned_", "buffer_")
        for device in ("cpu", "gpu")
    }
)
"""JAX's host callbacks (`jax.pure_callback`, `io_callback`, `debug.print`, ...): the
custom call runs a Python function of the process that compiled it, by its index in
that process's registry."""


def host_waits(module: Module) -> tuple[str, ...]:
    """What in the module needs the host program that ran it (sorted, once each):
    `infeed` and the other `HOST_WAITING_OPS`, or a host callback's target. Run on
    its own (a dump), such a module waits for ever or calls a function not there."""
    found = set()
    for op in module.ops:
        if op.short_name in HOST_WAITING_OPS and op.dialect in ("stablehlo", "mhlo"):
            found.add(op.short_name)
        target = op.custom_call_target
        if target in HOST_CALLBACK_TARGETS:
            found.add(target)
    return tuple(sorted(found))


def unrunnable_custom_calls(targets: Iterable[str], platform: str) -> tuple[str, ...]:
    """The targets (sorted) that the `platform` backend cannot run: neither registered
    for it nor rewritten by XLA itself. Empty for platforms that are not checked."""
    registry_name = _CHECKED_PLATFORMS.get(platform)
    needed = set(outside_xla(targets))
    if registry_name is None or not needed:
        return ()
    registered = registered_custom_call_targets(registry_name)
    if registered is None:
        return ()
    return tuple(sorted(needed - registered))


def outside_xla(targets: Iterable[str]) -> tuple[str, ...]:
    """The targets that XLA does not rewrite itself: those that need an implementation
    registered for the platform."""
    return tuple(
        target
        for target in targets
        if target not in XLA_OWN_TARGETS and not target.startswith(XLA_OWN_PREFIXES)
    )


def registered_custom_call_targets(platform: str) -> frozenset[str] | None:
    """The targets registered with XLA for `platform` (XLA's name: `Host`), None when
    this jaxlib cannot say."""
    from jaxlib import xla_client

    listing = getattr(xla_client, "custom_call_targets", None)
    if listing is None:
        return None
    try:
        return frozenset(str(name) for name in listing(platform))
    except Exception:
        return None

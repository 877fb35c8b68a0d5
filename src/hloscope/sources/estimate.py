"""What `profile --for` estimates from: the module compiled for the target (read,
never compiled twice), its kernels as XLA's text has them, and XLA's own cost
analysis of each kernel alone, computed here with the local CPU client (the cost
analysis counts flops and bytes of HLO; it runs nothing)."""

from __future__ import annotations

from typing import Any

from hloscope.errors import HloscopeError
from hloscope.ir.hlo_kernels import KernelModule, read_kernels
from hloscope.ir.kernel_costs import kernel_costs
from hloscope.sources.loader import Loaded, LoadOptions, load


def estimate_loaded(target: str, options: LoadOptions) -> Loaded:
    """The target compiled for what `--for` names, as the other `--for` views load it."""
    import dataclasses

    if options.compile_for is None:
        raise HloscopeError("an estimate is of a program compiled for a platform: give --for")
    return load(target, dataclasses.replace(options, optimized=True))


def kernels_and_costs(loaded: Loaded) -> tuple[KernelModule, dict[str, Any]]:
    """The compiled module's kernels and XLA's cost analysis of each."""
    compilation = loaded.compilation
    if compilation is None or not compilation.hlo_text:
        raise HloscopeError(
            "profile --for estimates a program compiled here for the platform: this "
            "module was not (an optimized dump is read as it is)",
            where=loaded.label,
        )
    module = read_kernels(compilation.hlo_text)
    from hloscope.sources.jax.backend import cpu_client

    wanted = [
        kernel
        for computation in module.control
        for kernel in module.computations[computation]
        if kernel.runs_kernel and kernel.collective is None
    ]
    return module, kernel_costs(compilation.hlo_proto, [k.name for k in wanted], cpu_client())

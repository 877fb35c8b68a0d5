"""XLA's own cost analysis of each kernel of a compiled module, alone (jaxlib's
`hlo_module_cost_analysis` of a module holding the kernel, its operands made
parameters: `hlo_kernels.KernelModule.kernel_module`). Apart from `hlo_kernels`, which
the analyses read, since it runs XLA."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hloscope.ir.hlo_kernels import Kernel, KernelModule


def kernel_costs(module: KernelModule, kernels: Sequence[Kernel], client: Any) -> dict[str, Any]:
    """XLA's cost analysis (`hlo_module_cost_analysis`: flops, bytes accessed) of each
    kernel, alone in a module of its own, by name; a kernel XLA cannot read alone is
    left out."""
    from hloscope.ir.context import xla_hlo

    try:
        from jaxlib import _jax as bindings
    except ImportError:  # pragma: no cover - jaxlib before 0.8
        return {}
    hlo = xla_hlo()
    costs: dict[str, Any] = {}
    for kernel in kernels:
        try:
            parsed = hlo.hlo_module_from_text(module.kernel_module(kernel))
            costs[kernel.name] = dict(bindings.hlo_module_cost_analysis(client, parsed))
        except Exception:  # XLA's parser or cost analysis refusing one kernel
            continue
    return costs

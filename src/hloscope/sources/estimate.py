"""What `profile --for` estimates from: the module compiled for the target (read,
never compiled twice), and XLA's own cost analysis of each of its kernels alone,
computed here with the local CPU client from the compiled module's proto (the cost
analysis counts flops and bytes of HLO; it runs nothing); for MFU, the same step
traced again with every `jax.checkpoint` saving everything, compiled for the target
(`everything_saved`)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from hloscope.errors import HloscopeError
from hloscope.ir.kernel_costs import kernel_costs
from hloscope.sources.loader import Call, Loaded, LoadOptions, load, load_object


def estimate_loaded(target: str, options: LoadOptions) -> Loaded:
    """The target compiled for what `--for` names, as the other `--for` views load it."""
    import dataclasses

    if options.compile_for is None:
        raise HloscopeError("an estimate is of a program compiled for a platform: give --for")
    return load(target, dataclasses.replace(options, optimized=True))


def compiled_kernel_costs(loaded: Loaded, names: Iterable[str]) -> dict[str, Any]:
    """XLA's cost analysis of each of the compiled module's instructions `names`
    lists, alone, by name."""
    compilation = loaded.compilation
    if compilation is None or not compilation.hlo_proto:
        raise HloscopeError(
            "profile --for estimates a program compiled here for the platform: this "
            "module was not (an optimized dump is read as it is)",
            where=loaded.label,
        )
    from hloscope.sources.jax.backend import cpu_client

    return kernel_costs(compilation.hlo_proto, names, cpu_client())


def everything_saved(loaded: Loaded) -> Loaded:
    """The step `loaded` lowered, traced again with every `jax.checkpoint` region
    saving everything (`jax.checkpoint_policies.everything_saveable`: its backward
    pass recomputes nothing) and compiled for the same target: the flops it executes
    are the model's. Refused where `loaded` was not lowered here from a function."""
    from hloscope.sources.jax.private import private_checkpoints_saving_everything

    lowering = loaded.lowering
    if lowering is None or lowering.runnable is None:
        raise HloscopeError("no function to trace again (a dump, or a stage given as it is)")
    jitted, args, kwargs = lowering.runnable
    options = LoadOptions(
        optimized=True,
        compiler_options=loaded.options.compiler_options,
        compile_for=loaded.options.compile_for,
        env=loaded.options.env,  # traced again: under the environment it was traced in
    )
    with private_checkpoints_saving_everything():
        return load_object(jitted, loaded.label, options, Call(tuple(args), dict(kwargs)))

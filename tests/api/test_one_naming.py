"""One answer everywhere (issue 37): every view names an argument as `params`
does, and the user's mesh axes as the lowered module declares them."""

from __future__ import annotations

import hloscope
from samples import why_nnx


def argument_names(report):
    return [s.name for s in report.placement.shardings if s.kind == "argument"]


def test_an_nnx_models_placement_names_its_arguments_as_params_does():
    # The module's own locations say `model.states[0][0]`: what nnx.jit hands jax.jit.
    insp = hloscope.inspect(why_nnx.forward, *why_nnx.example_args())
    paths = [p.path for p in insp.params.usage.parameters]
    assert paths[0] == "model.blocks[0].down.kernel"
    assert argument_names(insp.placement) == paths
    assert argument_names(insp.optimized().placement) == paths

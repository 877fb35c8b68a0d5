"""The Python API on Flax NNX and Equinox objects in hand: library-jitted
functions, their stages, bound methods, and `aot_check` through a library's own
`.lower`."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest

import hloscope
from hloscope import HloscopeError
from samples import equinox_model, flax_nnx


def test_an_nnx_train_step_in_hand():
    params = hloscope.inspect(flax_nnx.train_step, *flax_nnx.example_args()).params
    paths = [p.path for p in params.usage.parameters]
    assert paths[0] == "model.blocks[0].linear.bias"
    assert paths[-2:] == ["x", "y"]
    assert all(p.donated for p in params.usage.parameters[:-2])


def test_library_stages_in_hand():
    lowered = flax_nnx.forward.lower(*flax_nnx.forward_args())
    paths = [p.path for p in hloscope.inspect(lowered).params.usage.parameters]
    assert paths[0] == "model.blocks[0].linear.bias"
    compiled = equinox_model.forward.lower(*equinox_model.example_args()).compile()
    assert hloscope.inspect(compiled).source.stage == "optimized"
    with pytest.raises(HloscopeError, match="already traced"):
        hloscope.inspect(lowered, jnp.ones(3))


def test_an_equinox_function_on_its_arguments_and_its_aot_path():
    args, kwargs = equinox_model.loss_args()
    insp = hloscope.inspect(equinox_model.loss, *args, **kwargs)
    assert [s.path for s in insp.params.usage.static] == [
        "model.activation",
        "model.label",
        "weight",
    ]
    report = insp.aot_check()
    assert report.verdict == "same"
    assert report.comparison.entry.via == "own"


def test_a_jax_traced_in_hand():
    traced = jax.jit(lambda a, b: a + b).trace(jnp.ones(3), jnp.ones(3))
    assert [p.path for p in hloscope.inspect(traced).params.usage.parameters] == ["a", "b"]


def test_an_unknown_object_is_refused_in_one_line():
    with pytest.raises(HloscopeError) as caught:
        hloscope.inspect(object())
    message = str(caught.value)
    assert "object" in message and "nnx.jit" in message
    assert "\n" not in message

"""`insp.remat()`: the `remat` report from the Python API, for a loss in hand, a
gradient of it and a target string, agreeing with the command's JSON; a module is
refused in one line."""

from __future__ import annotations

import importlib.util

import pytest

import hloscope
from conftest import SAMPLES, run_cli, sample
from hloscope import HloscopeError


def _sample():
    spec = importlib.util.spec_from_file_location("remat_api", SAMPLES / "remat_policies.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_remat_of_a_loss_in_hand_agrees_with_the_command():
    module = _sample()
    insp = hloscope.inspect(module.loss_typo, *module.example_args())
    report = insp.remat()
    assert insp.remat() is report  # kept
    assert [u.name for u in report.analysis.unmatched] == ["hiden"]
    assert "matches no checkpoint_name" in str(report)
    doc = report.to_json()
    command = run_cli("remat", *sample("remat_policies", "loss_typo"), "--json").json()
    for key in ("residuals", "groups", "device_bytes", "host_bytes", "regions", "unmatched_names"):
        assert doc[key] == command[key], key


def test_remat_of_a_jitted_gradient_and_of_a_target_string_compiled():
    module = _sample()
    by_object = hloscope.inspect(module.grad_step, *module.example_args()).remat(compile=True)
    assert by_object.analysis.differentiated == ("ws",)
    assert by_object.analysis.host_bytes > 0
    peak = by_object.analysis.peak
    assert peak is not None and 0 < peak.residual_bytes <= peak.peak_bytes
    by_target = hloscope.inspect("samples/remat_policies.py:loss", *module.example_args()).remat()
    assert by_target.analysis.peak is None
    assert by_target.analysis.host_bytes == by_object.analysis.host_bytes


def test_remat_of_a_module_says_why_not():
    text = hloscope.inspect("samples/dumps/mlp.stablehlo.mlir").text()
    with pytest.raises(HloscopeError, match="differentiates a function"):
        hloscope.inspect(text).remat()

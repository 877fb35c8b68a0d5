"""`placement --why` through a scanned stack of layers (issue 60, item 6):
tests/fixtures/why_scanned_steps.py's training steps, FSDP and tensor-parallel, whose
layers run in `jax.lax.scan`, Linen's `nn.scan` and NNX's `nnx.scan`, compiled on 8
CPU devices and for `tpu:v5e:2x4`.

The per-layer collectives are inside the loop's body. Shardy's dump holds the body's
ops inside its `stablehlo.while`; before, only the entry's own ops were read, and
every collective of the body read "no origins". Each per-layer all-gather must now
name the stacked weight it gathers, by the path `params` prints, at the line inside
the layer that reads it (the fixture's own text), with the sharding JAX gave the
weight, even where several weights share one sharding (Linen's `q`, `k`, `v`: Shardy's
origins may name a neighbour); and Shardy's own dump must agree on which argument the
loop's weight is."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from typing import Any

import pytest

from conftest import ROOT, line_of
from why_support import ENV, hloscope_json, shardy_dump

FIXTURE = "tests/fixtures/why_scanned_steps.py"
STEPS = ("lax", "linen", "nnx")
WEIGHT_LINES = {
    "lax": {
        "gate": 'gate = jax.nn.relu(x @ layer["gate"])',
        "up": 'hidden = gate * (x @ layer["up"])',
        "down": 'return x + hidden @ layer["down"]',
    },
    "linen": {
        "q": "queries = q(h)",
        "k": "keys = k(h)",
        "v": "values = v(h)",
        "o": "x = x + o(",
        "up": "hidden = nn.gelu(up(",
        "down": "return x + down(hidden), None",
    },
    "nnx": {
        "gate": "gate = nnx.relu(x @ self.gate[...])",
        "up": "hidden = gate * (x @ self.up[...])",
        "down": "return x + hidden @ self.down[...]",
    },
}
"""Per step, the line inside the layer that reads each weight."""
TPU_ENV = {
    **{k: v for k, v in os.environ.items() if k != "XLA_FLAGS"},
    "ALLOW_MULTIPLE_LIBTPU_LOAD": "1",
    "JAX_SKIP_CUDA_CONSTRAINTS_CHECK": "1",
}


def target(step: str) -> tuple[str, ...]:
    return (f"{FIXTURE}:{step}_step", "--args", f"{FIXTURE}:{step}_args")


def jax_shardings(step: str) -> dict[str, list[Any]]:
    """JAX's own partition spec of each argument leaf, by `jax.tree_util.keystr` path
    (`[0]['layers']['up']`), from the fixture's arguments in a child process."""
    code = textwrap.dedent(
        f"""
        import importlib.util, json, jax
        spec = importlib.util.spec_from_file_location("steps", {FIXTURE!r})
        m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
        leaves = jax.tree_util.tree_leaves_with_path(m.{step}_args())
        print(json.dumps({{jax.tree_util.keystr(p): list(l.sharding.spec) for p, l in leaves}}))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=ENV, timeout=300
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def weight_of(origin: dict[str, Any]) -> str | None:
    """The argument path an origin names: the argument's, or the one XLA's open
    constraint on a loop's input is put on."""
    return origin["argument"] if origin["origin"] == "argument" else origin["constrains"]


def sites(document: dict[str, Any]) -> list[dict[str, Any]]:
    """Every collective's sites, each with its collective's `op`."""
    return [{**site, "op": c["op"]} for c in document["collectives"] for site in c["sites"]]


def check_scanned_step(step: str, document: dict[str, Any], specs: dict[str, list[Any]]) -> None:
    every = sites(document)
    explained = [s for s in every if s["causes"]]
    assert every and len(explained) / len(every) >= 0.9, [s["sentence"] for s in every]
    for site in every:
        assert site["causes"] or site["note"], site
    lines = {
        f"{FIXTURE}:{line_of(ROOT / FIXTURE, needle)}": weight
        for weight, needle in WEIGHT_LINES[step].items()
    }
    gathers = [s for s in every if s["op"] == "all_gather"]
    # Forward and backward, each weight gathered once per layer.
    assert len(gathers) >= 2 * len(lines)
    for site in gathers:
        assert site["source"] is not None, site["sentence"]
        (line,) = [line for line in lines if site["source"].endswith(line)]
        weight = lines[line]
        assert site["meets"].endswith(line), site["sentence"]
        (cause,) = site["causes"]
        assert cause["axis"] == "data"
        named = {weight_of(o): o for o in cause["sharded_by"]}
        (path,) = [p for p in named if p and p.startswith("params['layers']")]
        # The weight the layer's line reads, and JAX's own sharding of it: the stacked
        # dimension whole, the gathered axis on one of the others.
        assert re.search(rf"\['{weight}'\]", path), (path, site["sentence"])
        spec = specs[f"[0]{path.removeprefix('params')}"]
        assert spec[0] is None and "data" in spec
        # As the argument's spec, or on the mesh where XLA's loop constraint names it.
        assert named[path]["sharding"] in (
            "P(" + ", ".join(repr(axis) for axis in spec) + ")",
            "[" + ", ".join("{}" if axis is None else f'{{"{axis}"}}' for axis in spec) + "]",
        )
        assert f"`{path}`" in site["sentence"]
    # A plain `x @ w` is a `stablehlo.dot` in Shardy's dump, a gradient's contraction
    # a `dot_general`: the dot `jax.checkpoint` (Linen's `nn.remat`) runs again in the
    # backward pass is the user's own, not a gradient.
    for site in every:
        if site["meets_op"] == "stablehlo.dot":
            assert site["gradient_of"] is None, site["sentence"]
    # Every sharded weight's argument is credited with the axes JAX's sharding gives
    # it, and with collectives.
    origins = {o["argument"]: o for o in document["why"]["origins"] if o["origin"] == "argument"}
    for path, origin in origins.items():
        spec = specs.get(f"[0]{path.removeprefix('params')}") if path else None
        if path and path.startswith("params['layers']") and spec and any(spec):
            assert set(origin["axes"]) == {axis for axis in spec if axis}, origin
            assert origin["values"] > 0 and origin["collectives"], origin


@pytest.mark.parametrize("step", STEPS)
def test_per_layer_collectives_name_the_weight_and_the_layers_line(step):
    document = hloscope_json("placement", *target(step), "--why")
    check_scanned_step(step, document, jax_shardings(step))


def test_shardy_agrees_which_argument_the_loop_reads(tmp_path):
    """Shardy's own dump: the constraint each per-layer all-gather names is the one
    XLA put on the argument the report names (`sdy.reshard %argN ... constraint_K`)."""
    code = textwrap.dedent(
        f"""
        import importlib.util
        spec = importlib.util.spec_from_file_location("steps", {FIXTURE!r})
        m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
        m.lax_step.lower(*m.lax_args()).compile(compiler_options={{
            "xla_dump_to": {str(tmp_path)!r}, "xla_dump_hlo_pass_re": "shardy-verbose"}})
        """
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT, timeout=300, env=ENV)
    constrained = {
        name: int(argument)
        for argument, name in re.findall(
            r'sdy\.reshard %arg(\d+) [^\n]*sdy\.sharding_origin_name = "(constraint_\d+)"',
            shardy_dump(tmp_path),
        )
    }
    paths = {
        p["hlo_index"]: p["path"]
        for p in hloscope_json("params", *target("lax"))["parameters"]
        if p["hlo_index"] is not None
    }
    document = hloscope_json("placement", *target("lax"), "--why")
    checked = 0
    for site in sites(document):
        if site["op"] != "all_gather":
            continue
        for origin in site["causes"][0]["sharded_by"]:
            if origin["origin"] == "constraint":
                assert origin["xla_loop_constraint"] is True
                assert paths[constrained[origin["name"]]] == origin["constrains"]
                checked += 1
    assert checked >= 4


@pytest.mark.slow
@pytest.mark.parametrize("step", STEPS)
def test_scanned_steps_compiled_for_a_tpu_slice(step):
    """`--for tpu:v5e:2x4`: the TPU's async collective fusions and its
    all-reduce-scatter fusion (whose all-reduce XLA leaves without a line: the
    fusion's is taken) explained alike."""
    document = hloscope_json(
        "placement", *target(step), "--why", "--for", "tpu:v5e:2x4", env=TPU_ENV
    )
    assert document["compiled_for"]["platform"] == "tpu"
    check_scanned_step(step, document, jax_shardings(step))
    scatters = [s for s in sites(document) if s["op"] == "reduce_scatter"]
    assert all(s["source"] and s["causes"] for s in scatters), scatters


@pytest.mark.slow
def test_llm_step_compiled_for_a_tpu_slice():
    """samples/llm_step.py (reduced), attention and an MLP in a rematerialized
    `jax.lax.scan`, for `tpu:v5e:2x4`: nine in ten collectives explained; each of
    the others says which ops at its line Shardy's shardings leave it unexplained at."""
    step = "samples/llm_step.py"
    document = hloscope_json(
        "placement",
        f"{step}:train_step",
        "--args",
        f"{step}:example_args",
        "--why",
        "--for",
        "tpu:v5e:2x4",
        env={**TPU_ENV, "LLM_STEP": "2,256,128,8"},
    )
    every = sites(document)
    explained = [s for s in every if s["causes"]]
    assert len(explained) / len(every) >= 0.9, [s["sentence"] for s in every if s["note"]]
    for site in every:
        if not site["causes"]:
            assert re.search(r"at its line \([a-z_, ]+\) disagrees", site["note"]), site["note"]

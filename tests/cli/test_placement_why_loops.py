"""`placement --why` on an LLM-shaped train step (samples/llm_step.py, reduced, on 8
CPU devices), compared with Shardy's own dumps of the same compilation (issue 53,
section 4).

The step writes no `with_sharding_constraint`, yet Shardy names origins
`constraint_N`: XLA's `xla-sdy-open-while-free-vars-sharding` pass put a fully open
sharding constraint on each value the scan's `while` reads from outside it (the
stacked layers' parameters), which `01.before_propagation.mlir` shows and the module
JAX lowered does not. The report names them so, with the argument and the loop's
line. Its loops' collectives explained alike are one line with their count."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from conftest import ROOT
from why_support import source_line

SAMPLE = "samples/llm_step.py"
TARGET = [f"{SAMPLE}:train_step", "--args", f"{SAMPLE}:example_args"]
ENV = {
    **os.environ,
    "XLA_FLAGS": "--xla_force_host_platform_device_count=8",
    "LLM_STEP": "2,256,128,8",
    "COLUMNS": "400",
}


def hloscope(*argv: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "hloscope", *argv],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
        env=ENV,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture(scope="module")
def dumps(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Shardy's dumps of the step, compiled in a child process as JAX compiles it."""
    folder = tmp_path_factory.mktemp("llm_step")
    code = textwrap.dedent(
        f"""
        import importlib.util
        spec = importlib.util.spec_from_file_location("llm_step", {SAMPLE!r})
        m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
        lowered = m.train_step.lower(*m.example_args())
        open({str(folder / "lowered.mlir")!r}, "w").write(lowered.as_text())
        lowered.compile(compiler_options={{
            "xla_dump_to": {str(folder)!r}, "xla_dump_hlo_pass_re": "shardy-verbose"}})
        """
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT, timeout=600, env=ENV)
    return folder


@pytest.fixture(scope="module")
def why() -> dict[str, Any]:
    return json.loads(hloscope("placement", *TARGET, "--compile", "--why", "--json"))


def xla_loop_constraints(folder: Path) -> dict[str, int]:
    """Shardy's name of each constraint XLA put on an entry argument, by the
    argument's index: the open constraints before propagation, named after it."""
    (before,) = folder.glob("shardy/*/01.before_propagation.mlir")
    opened = re.findall(
        r"sdy\.sharding_constraint %arg(\d+) <@\w+, \[(?:\{\?\}(?:, )?)+\]>", before.read_text()
    )
    assert opened, "no open constraint before propagation"
    (after,) = folder.glob("shardy/*/02.after_propagation.mlir")
    named = re.findall(
        r'sdy\.reshard %arg(\d+) [^\n]*sdy\.sharding_origin_name = "(constraint_\d+)"',
        after.read_text(),
    )
    assert sorted(int(a) for a, _ in named) == sorted(int(a) for a in opened)
    return {name: int(argument) for argument, name in named}


def test_the_step_constrains_nothing_itself(dumps):
    lowered = (dumps / "lowered.mlir").read_text()
    assert "sharding_constraint" not in lowered and "@Sharding" not in lowered


def test_xlas_constraints_on_a_loops_inputs_are_named_so(dumps, why):
    expected = xla_loop_constraints(dumps)
    origins = why["why"]["origins"]
    paths = {o["index"]: o["argument"] for o in origins if o["origin"] == "argument"}
    constraints = {o["name"]: o for o in origins if o["origin"] == "constraint"}
    assert set(constraints) == set(expected)
    scan = source_line(SAMPLE, "jax.lax.scan(")
    for name, origin in constraints.items():
        assert origin["xla_loop_constraint"] is True, name
        assert origin["constrains"] == paths[expected[name]], name
        assert origin["constrains"].startswith("params['layers']"), name
        assert origin["source"].endswith(scan), name
    # One forward loop and its backward pass, each reading every stacked parameter.
    backward = [o["constrains"] for o in constraints.values() if o["backward_loop"]]
    forward = [o["constrains"] for o in constraints.values() if not o["backward_loop"]]
    assert sorted(backward) == sorted(forward) and len(forward) == len(constraints) // 2
    # The sentences say it in those words, never `constraint_N`.
    sentences = [s["sentence"] for c in why["collectives"] for s in c["sites"]]
    assert not any(re.search(r"constraint constraint_\d", s) for s in sentences)
    assert any(
        "XLA's open sharding constraint on argument `params['layers']" in s for s in sentences
    )


def test_collectives_explained_alike_are_one_line_with_their_count(why):
    groups = why["why"]["groups"]
    sites = [s for c in why["collectives"] for s in c["sites"]]
    assert (
        sum(g["count"] for g in groups) == len(sites) == sum(c["count"] for c in why["collectives"])
    )
    assert len({g["sentence"] for g in groups}) == len(groups)
    assert any(g["count"] > 1 for g in groups)
    for group in groups:
        alike = [s for s in sites if s["sentence"] == group["sentence"]]
        assert sorted(s["instruction"] for s in alike) == sorted(group["instructions"])
    text = hloscope("placement", *TARGET, "--compile", "--why")
    bullets = [line for line in text.splitlines() if line.startswith("• ")]
    assert len(bullets) == len(groups)
    for group in groups:
        if group["count"] > 1:
            assert any(line.startswith(f"• {group['count']}× ") for line in bullets)


def test_the_collectives_inside_the_layers_are_explained(why):
    """The scan's body holds the layers' ops (attention, the MLP, the norms): their
    collectives are tied to Shardy's ops inside the loop, at the layer's own lines."""
    sites = [s for c in why["collectives"] for s in c["sites"]]
    explained = [s for s in sites if s["causes"]]
    assert len(explained) / len(sites) >= 0.9, [s["sentence"] for s in sites if s["note"]]
    text = (ROOT / SAMPLE).read_text().splitlines()
    first = next(i for i, line in enumerate(text, 1) if line.startswith("def attention("))
    last = next(i for i, line in enumerate(text, 1) if line.startswith("def loss_fn("))
    inside = [s for s in sites if first < int(s["source"].rpartition(":")[2]) < last]
    assert inside and all(s["causes"] for s in inside), [s["sentence"] for s in inside]
    for site in inside:
        assert site["meets"] == site["source"], site["sentence"]

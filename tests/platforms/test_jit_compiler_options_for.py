"""`--for` compiles with the program's own `jax.jit(..., compiler_options=...)`, as JAX
applies them when it compiles for that platform itself: an option changes the
program the TPU compiler makes (told not to keep bf16 values in f32, XLA rounds them:
reduce-precision ops, counted in JAX's `compiled.as_text()` in a process of its own),
and one the platform's compiler does not know is refused in one line naming it.
Before, `--for` dropped them without a word (issue 60)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from test_compile_for import ROOT, child_env, hloscope, needs, one_line_error

pytestmark = pytest.mark.slow

TARGETS = "tests/platforms/targets.py"
SPEC = "tpu:v5e:2x4"

JAX_TRUTH = """
import json, re, sys
sys.path.insert(0, "tests/platforms")
import jax
from jax.experimental import topologies
from jax.sharding import SingleDeviceSharding
import targets as t

one = SingleDeviceSharding(topologies.get_topology_desc("v5e:2x4", "tpu").devices[0])
args = [jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=one) for a in t.bf16_block_args()]
facts = {}
for name in ("bf16_block", "exact_bf16_block", "unknown_option_block"):
    try:
        text = getattr(t, name).lower(*args).compile().as_text()
        facts[name] = len(re.findall(r" reduce-precision\\(", text))
    except Exception as exc:
        facts[name] = str(exc).splitlines()[0]
print(json.dumps(facts))
"""


@pytest.fixture(scope="module")
def truth() -> dict[str, int | str]:
    needs("tpu")
    run = subprocess.run(
        [sys.executable, "-c", JAX_TRUTH],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**child_env(), "ALLOW_MULTIPLE_LIBTPU_LOAD": "1"},
        stdin=subprocess.DEVNULL,
        timeout=600,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-4000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


def _rounded(name: str) -> int:
    run = hloscope(
        "inspect",
        f"{TARGETS}:{name}",
        "--args",
        f"{TARGETS}:bf16_block_args",
        "--for",
        SPEC,
        "--json",
    )
    assert run.code == 0, run.stderr
    counts = run.json()["op_counts"]
    return sum(
        n for op, n in counts.items() if op.endswith(("reduce_precision", "reduce-precision"))
    )


def test_the_jits_compiler_options_are_applied_for_the_platform(truth) -> None:
    assert truth["exact_bf16_block"] > truth["bf16_block"] == 0, truth
    assert _rounded("exact_bf16_block") == truth["exact_bf16_block"]
    assert _rounded("bf16_block") == truth["bf16_block"]


def test_an_option_the_platforms_compiler_does_not_know_is_one_line(truth) -> None:
    assert "xla_no_such_option" in truth["unknown_option_block"], truth
    line = one_line_error(
        hloscope(
            "fusions",
            f"{TARGETS}:unknown_option_block",
            "--args",
            f"{TARGETS}:bf16_block_args",
            "--for",
            SPEC,
        )
    )
    assert "xla_no_such_option" in line and "jax.jit(..., compiler_options=...)" in line, line
    assert SPEC in line, line

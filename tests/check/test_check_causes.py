"""A regression report leads with its cause (issue 61, items 11 and 12).

A small CI project (a pyproject with [tool.hloscope.check], a model whose `--args`
factory shards its parameters with jax.sharding on 8 CPU devices) records a baseline;
then `params['w1']` turns from `P('data', 'model')` to replicated. Every device then
holds all of w1: XLA's memory analysis says the arguments (and the updated w1 the
step returns) grew. The check names that change first, at the factory's line that
builds w1's sharding, and pins the memory regressions it moved there, in the
annotations, the Markdown and the text. And a collective's annotation gives why that
collective is there, not why its neighbours on the same line are.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT


def unescape(text: str) -> str:
    """GitHub's reading of a workflow command's escaped value (`%25` last)."""
    for escaped, char in (("%0D", "\r"), ("%0A", "\n"), ("%3A", ":"), ("%2C", ","), ("%25", "%")):
        text = text.replace(escaped, char)
    return text


def errors(stdout: str) -> list[tuple[dict[str, str], str]]:
    """Each `::error file=F,line=L::MESSAGE` printed, in order: its properties and message."""
    found = []
    for line in stdout.splitlines():
        if not line.startswith("::error"):
            continue
        head, _, message = line[2:].partition("::")
        _, _, props = head.partition(" ")
        properties = dict(p.split("=", 1) for p in props.split(",")) if props else {}
        found.append(({k: unescape(v) for k, v in properties.items()}, unescape(message)))
    return found


PYPROJECT = """\
[project]
name = "ci-project"
version = "0"

[tool.hloscope.check]

[[tool.hloscope.check.targets]]
name = "train_step"
target = "model.py:train_step"
args = "model.py:example_args"
"""

MODEL = """\
import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

MESH = Mesh(np.array(jax.devices()[:8]).reshape(2, 4), ("data", "model"))


def loss(params, batch):
    hidden = jnp.tanh(batch @ params["w1"])
    return jnp.mean((hidden @ params["w2"]) ** 2)


@jax.jit
def train_step(params, batch):
    grads = jax.grad(loss)(params, batch)
    return jax.tree.map(lambda p, g: p - 0.1 * g, params, grads)


def example_args():
    w1 = jax.device_put(jnp.ones((1024, 1024)), NamedSharding(MESH, W1_SPEC))
    w2 = jax.device_put(jnp.ones((1024, 512)), NamedSharding(MESH, P("model", None)))
    batch = jax.device_put(jnp.ones((256, 1024)), NamedSharding(MESH, P("data", None)))
    return {"w1": w1, "w2": w2}, batch
"""
W1_LINE = (
    MODEL.splitlines().index(
        "    w1 = jax.device_put(jnp.ones((1024, 1024)), NamedSharding(MESH, W1_SPEC))"
    )
    + 1
)
UPDATE_LINE = (
    MODEL.splitlines().index("    return jax.tree.map(lambda p, g: p - 0.1 * g, params, grads)") + 1
)


def hloscope(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The console script in `folder` (a fresh process: the model is imported anew)."""
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT / "src"),
        "XLA_FLAGS": "--xla_force_host_platform_device_count=8",
        "HLOSCOPE_CACHE_DIR": str(folder / ".cache"),
        "COLUMNS": "200",
    }
    env.pop("GITHUB_STEP_SUMMARY", None)
    env.pop("GITHUB_WORKSPACE", None)
    return subprocess.run(
        [sys.executable, "-m", "hloscope", *args],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def write_model(folder: Path, w1_spec: str) -> None:
    (folder / "model.py").write_text(MODEL.replace("W1_SPEC", w1_spec))


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("ci-project")
    (folder / "pyproject.toml").write_text(PYPROJECT)
    write_model(folder, 'P("data", "model")')
    recorded = hloscope(folder, "check", "--update")
    assert recorded.returncode == 0, recorded.stderr
    stored = json.loads((folder / "hloscope-baselines" / "train_step.cpu.json").read_text())
    (w1,) = [a for a in stored["arguments"] if a["path"] == "params['w1']"]
    assert w1["source"] == f"model.py:{W1_LINE}"
    write_model(folder, "P()")
    return folder


@pytest.mark.slow
def test_the_annotations_lead_with_the_changed_sharding_at_its_line(project: Path) -> None:
    run = hloscope(project, "check", "--format", "github")
    assert run.returncode == 1, run.stderr
    found = errors(run.stdout)
    # First: the cause, at the factory's line that builds w1's sharding.
    props, message = found[0]
    assert props == {"file": "model.py", "line": str(W1_LINE)}
    assert message.startswith("params['w1']'s sharding: P('data', 'model') over mesh(")
    assert "→ P() over mesh(" in message
    # XLA's memory analysis: every device holds all of w1 now, as an argument and as
    # the updated w1 the step returns. Those regressions are the cause's, pinned there
    # (before: at model.py:UPDATE_LINE, the SGD update, or no line at all).
    memory = {m.split(" ")[0]: p for p, m in found[1:] if m.startswith("memory.")}
    assert {"memory.argument_bytes", "memory.output_bytes"} <= set(memory)
    for fact, where in memory.items():
        assert where == {"file": "model.py", "line": str(W1_LINE)}, fact
    assert all("moved by params['w1']'s sharding" in m for _, m in found if m.startswith("memory."))
    assert "memory.argument_bytes" in message
    # The regressions no sharding moved keep their own lines (the update's ops).
    ops = [p for p, m in found if m.startswith("ops.optimized.")]
    assert {"file": "model.py", "line": str(UPDATE_LINE)} in ops


@pytest.mark.slow
def test_the_text_markdown_and_json_name_the_cause_first(project: Path) -> None:
    text = hloscope(project, "check").stdout.splitlines()
    assert text[2].startswith("cause: params['w1']'s sharding: P('data', 'model')"), text[:4]
    assert f"(model.py:{W1_LINE})" in text[2]
    markdown = hloscope(project, "check", "--format", "markdown").stdout
    first = next(line for line in markdown.splitlines() if line.startswith(("**", "|")))
    assert first.startswith("**Cause**: params['w1']'s sharding") and first.endswith(
        f"(`model.py:{W1_LINE}`)"
    )
    document = json.loads(hloscope(project, "check", "--json").stdout)
    (cause,) = document["targets"][0]["causes"]
    assert (cause["kind"], cause["argument"], cause["source"]) == (
        "sharding",
        "params['w1']",
        f"model.py:{W1_LINE}",
    )
    argument_bytes = next(c for c in document["changes"] if c["fact"] == "memory.argument_bytes")
    assert argument_bytes["cause"] == "params['w1']"
    assert argument_bytes["sources"][0] == f"model.py:{W1_LINE}"
    # XLA's own answer: the arguments grew by what replicating w1 costs each device,
    # all of its f32[1024,1024] (4 MiB) where it held an eighth.
    assert argument_bytes["after"] - argument_bytes["before"] == 4 * 2**20 * 7 // 8


SHIFTED = """\
import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

MESH = Mesh(np.array(jax.devices()[:8]), ("data",))


@jax.jit
def plain(x, w):
    return x @ w


@jax.jit
def shifted(x, w):
    return jnp.roll(x, 1, axis=0) @ w


def args():
    x = jax.device_put(jnp.ones((64, 32)), NamedSharding(MESH, P("data", None)))
    w = jax.device_put(jnp.ones((32, 16)), NamedSharding(MESH, P("data", None)))
    return x, w
"""


@pytest.mark.slow
def test_a_collective_s_annotation_gives_its_own_why(tmp_path: Path) -> None:
    # On one line, the dot XLA gathers for (an all-gather, in both programs) and the
    # roll that shifts rows across devices (a collective-permute, new): the
    # collective-permute's annotation gave the all-gather's why first.
    (tmp_path / "m.py").write_text(SHIFTED)
    line = SHIFTED.splitlines().index("    return jnp.roll(x, 1, axis=0) @ w") + 1
    common = ["--args", "m.py:args", "--baseline", "b.json"]
    assert hloscope(tmp_path, "check", "m.py:plain", *common, "--update").returncode == 0
    run = hloscope(tmp_path, "check", "m.py:shifted", *common, "--format", "github")
    assert run.returncode == 1, run.stderr
    (message,) = [
        m for _, m in errors(run.stdout) if m.startswith("collectives.collective-permute.count ")
    ]
    whys = [part for part in message.splitlines() if part.startswith("why: ")]
    assert whys and all(w.startswith("why: collective-permute over `data`") for w in whys)
    assert f"m.py:{line}" in whys[0]
    # The all-gather is there (placement --why says so at that line): its why is not.
    why = hloscope(tmp_path, "placement", "m.py:shifted", "--args", "m.py:args", "--why")
    assert f"all-gather over `data` at m.py:{line}" in why.stdout


DONATING = """\
import jax
import jax.numpy as jnp


def update(params, x):
    return {"w": params["w"] - 0.1 * jnp.tanh(x @ params["w"]).mean()}


donating = jax.jit(update, donate_argnums=0)
not_donating = jax.jit(update)


def args():
    return {"w": jnp.ones((512, 512))}, jnp.ones((8, 512))
"""


@pytest.mark.slow
def test_a_dropped_donation_is_named_first_with_what_it_moved(tmp_path: Path) -> None:
    # XLA aliases the donated w to the updated one; without the donation the update
    # needs a buffer of its own: XLA's memory analysis says so (alias bytes gone).
    (tmp_path / "d.py").write_text(DONATING)
    common = ["--args", "d.py:args", "--baseline", "b.json"]
    assert hloscope(tmp_path, "check", "d.py:donating", *common, "--update").returncode == 0
    document = json.loads(
        hloscope(tmp_path, "check", "d.py:not_donating", *common, "--json").stdout
    )
    (cause,) = document["targets"][0]["causes"]
    assert (cause["kind"], cause["argument"]) == ("donation", "params['w']")
    alias = next(c for c in document["changes"] if c["fact"] == "memory.alias_bytes")
    assert (alias["before"], alias.get("after") or 0) == (512 * 512 * 4, 0)
    assert alias["cause"] == "params['w']" and "memory.alias_bytes" in cause["facts"]
    text = hloscope(tmp_path, "check", "d.py:not_donating", *common).stdout.splitlines()
    assert text[2].startswith("cause: params['w']'s donation: donated → not donated"), text[:4]

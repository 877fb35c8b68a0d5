"""`diff` of one step under two meshes (`--for tpu:v5e:2x4`): an all-reduce whose
device groups changed is a change, compared by the devices in each group (XLA's own
text of each compile says which), not by the mesh-axes text the converted module
names them with; the changed mesh is one change with its axes."""

from __future__ import annotations

import re

import numpy as np
import pytest
from test_compile_for import hloscope, needs, run_truth

pytestmark = pytest.mark.slow

FIXTURE = "tests/fixtures/diff_meshes.py"


def _xla_groups(args: str) -> str:
    """The all-reduce's replica_groups in XLA's own text of the step's compile."""
    case = {
        "platform": "tpu",
        "topology": "v5e:2x4",
        "module": FIXTURE,
        "function": "step",
        "args": args,
        "sharded": True,
        "text": True,
    }
    text = run_truth({"step": case})["step"]["text"]
    (line,) = [line for line in text.splitlines() if " all-reduce(" in line]
    explicit = re.search(r"replica_groups=(\{[\d,{}]*\})", line)
    if explicit:
        return explicit[1]
    # XLA's mesh-axes form: `mesh['axis_0'=4,'axis_1'=1,'axis_2'=2] {'axis_0'}`, the
    # devices in the mesh's order (iota); a group varies along the axes named.
    found = re.search(r"replica_groups=mesh\[([^\]]*)\] \{([^}]*)\}", line)
    assert found is not None, line
    axes = [(name, int(size)) for name, size in re.findall(r"'(\w+)'=(\d+)", found[1])]
    names = [name for name, _ in axes]
    grouped = [names.index(name) for name in re.findall(r"'(\w+)'", found[2])]
    ids = np.arange(np.prod([size for _, size in axes])).reshape([size for _, size in axes])
    moved = np.moveaxis(ids, grouped, list(range(-len(grouped), 0)))
    rows = moved.reshape(-1, int(np.prod([ids.shape[i] for i in grouped])))
    return "{" + ", ".join("{" + ",".join(map(str, row)) + "}" for row in rows) + "}"


def test_an_all_reduce_over_other_groups_is_a_change():
    needs("tpu")
    a, b = _xla_groups("data_args"), _xla_groups("data_model_args")
    assert a != b, "XLA made the same groups: the case tests nothing"
    run = hloscope(
        "diff", f"{FIXTURE}:on_data", f"{FIXTURE}:on_data_model", "--for", "tpu:v5e:2x4", "--json"
    )
    assert run.code == 1, run.stderr
    changes = run.json()["changes"]
    (reduce,) = [c for c in changes if c["op"].endswith("all_reduce")]
    written = reduce["detail"].replace(" ", "")
    assert f"replica_groups{a}→{b}".replace(" ", "") in written, (written, a, b)
    (mesh,) = [c for c in changes if c["op"] == "sdy.mesh"]
    assert mesh["function"] == "(module)" and "{" not in mesh["detail"]

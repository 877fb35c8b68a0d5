"""`placement --why` on a Flax NNX MLP sharded through `nnx.with_partitioning`
(samples/why_nnx.py, 8 CPU devices): each all-reduce's cause named by the paths
`params` prints, compared with Shardy's own dump of the same program (which
argument set `model` on the operands of each reducing dot), read here from the file.

Both blocks' ops have the same innermost frame (Flax's `Linear`), the same user line
(the loop) and the same op name: the second all-reduce was blamed on the first
block's weights before the join took them in order."""

import re
import subprocess
import sys

from conftest import ROOT, line_of
from why_support import ENV, compile_in_child, hloscope_json, shardy_dump

SAMPLE = "samples/why_nnx.py"


def reducing_dots(dump):
    """Per dot that contracts the `model` axis away, in order: the argument index of
    its kernel and the `input: N` Shardy gives its other operand's `model` axis."""
    origins = {}
    out = []
    for line in dump.splitlines():
        found = re.match(r"\s*%(\d+) = .*sdy\.sharding_origins = \[\{([^}]*)\}\]", line)
        if not found:
            continue
        value, axes = found.groups()
        origins[value] = dict(re.findall(r'(\w+) = "([^"]+)"', axes))
        dot = re.match(r"\s*%\d+ = stablehlo\.dot %(\d+), %arg(\d+)", line)
        if dot and "model" not in origins[value]:
            left, kernel = dot.groups()
            (source,) = re.fullmatch(r"input: (\d+)", origins[left]["model"]).groups()
            out.append((int(kernel), int(source)))
    return out


def test_nnx_all_reduces_named_by_parameter_paths(tmp_path):
    line = line_of(ROOT / SAMPLE, "return self.down(")
    compile_in_child(SAMPLE, "forward", "example_args", verbose=tmp_path)
    dots = reducing_dots(shardy_dump(tmp_path))
    assert len(dots) == 2
    target = (f"{SAMPLE}:forward", "--args", f"{SAMPLE}:example_args")
    paths = {p["hlo_index"]: p["path"] for p in hloscope_json("params", *target)["parameters"]}
    document = hloscope_json("placement", *target, "--why")
    (group,) = [c for c in document["collectives"] if c["op"] == "all_reduce"]
    assert len(group["sites"]) == len(dots)
    for block, (site, (kernel, source)) in enumerate(zip(group["sites"], dots, strict=True)):
        assert site["axes"] == ["model"]
        (cause,) = site["causes"]
        named = {o["argument"] for o in cause["sharded_by"]}
        assert named == {paths[kernel], paths[source]}
        assert named == {f"model.blocks[{block}].down.kernel", f"model.blocks[{block}].up.kernel"}
        assert site["source"].endswith(f"{SAMPLE}:{line}")
        assert f"argument `model.blocks[{block}].down.kernel`" in site["sentence"]


def test_the_collectives_table_names_the_users_line_not_flaxs():
    # The all-reduces' innermost frame is Flax's `Linear` (flax/nnx/nn/linear.py); the
    # table shows the user's line that called it, as the why sentences do.
    call = line_of(ROOT / SAMPLE, "self.down(nnx.relu(self.up(x)))")
    document = hloscope_json(
        "placement", f"{SAMPLE}:forward", "--args", f"{SAMPLE}:example_args", "--compile"
    )
    (group,) = document["collectives"]
    assert group["op"] == "all_reduce"
    assert any("flax" in s and "linear.py" in s for s in group["sources"])
    assert group["user_sources"] == [f"{ROOT / SAMPLE}:{call}"]
    argv = ["placement", f"{SAMPLE}:forward", "--args", f"{SAMPLE}:example_args", "--compile"]
    done = subprocess.run(
        [sys.executable, "-m", "hloscope", *argv],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
        env={**ENV, "COLUMNS": "200"},
    )
    assert done.returncode == 0, done.stderr
    table = done.stdout[done.stdout.index("Collectives") :]
    row = next(line for line in table.splitlines() if line.strip().startswith("all_reduce"))
    assert row.split()[-1] == f"{SAMPLE}:{call}"

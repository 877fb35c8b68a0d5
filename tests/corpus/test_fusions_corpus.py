"""`hloscope fusions` on the shared corpus' scheduled after-optimization modules
(`is_scheduled=true`, many of them GPU modules), read as they are, without compiling.

The oracle is XLA's own view of each module: the fusion instructions of its
non-fusion computations (`HloModule.make_nonfusion_computations`) and their
`backend_config`.
"""

import json
import re

import pytest

from conftest import CORPUS, run_cli

SCHEDULED = re.compile(r"^\s*HloModule\b[^\n]*\bis_scheduled=true", re.MULTILINE)


def scheduled_modules():
    if not CORPUS.is_dir():
        return []
    found = []
    for path in sorted(CORPUS.rglob("*.hlo")):
        if SCHEDULED.search(path.read_text(errors="replace")[:65536]):
            found.append(path)
    return found


def xla_fusions(path):
    """{fusion instruction name: backend kind or None} per XLA, or None if XLA's parser
    refuses the file."""
    import jaxlib._hlo as hlo

    from hloscope.native_stderr import native_stderr_captured

    with native_stderr_captured():
        try:
            module = hlo.hlo_module_from_text(path.read_text())
        except Exception:
            return None
        fusions = {}
        for computation in module.make_nonfusion_computations():
            for instruction in computation.instructions():
                if instruction.opcode == hlo.HloOpcode.kFusion:
                    kind = re.search(r'"kind"\s*:\s*"([^"]+)"', instruction.to_string())
                    fusions[instruction.name] = kind.group(1) if kind else None
    return fusions


@pytest.mark.corpus
def test_scheduled_modules_are_read_without_compiling(corpus):
    paths = scheduled_modules()
    assert len(paths) >= 40
    read = with_fusions = 0
    failures = []
    for path in paths:
        expected = xla_fusions(path)
        run = run_cli("fusions", str(path), "--json")
        name = path.relative_to(corpus)
        if expected is None:
            if run.code != 2 or len(run.stderr.splitlines()) != 1:
                failures.append(f"{name}: XLA refuses it; exit {run.code}: {run.stderr[:200]}")
            continue
        if run.code != 0:
            failures.append(f"{name}: exit {run.code}: {run.stderr[:200]}")
            continue
        read += 1
        doc = json.loads(run.stdout)
        if doc["source"]["stage"] != "optimized" or doc["timings"]["compile_seconds"] is not None:
            failures.append(f"{name}: not read as an optimized module")
        found = {f["name"]: f for f in doc["fusions"]}
        with_fusions += bool(found)
        if doc["source"]["ir"] == "hlo":
            if set(found) != set(expected):
                failures.append(f"{name}: fusions {sorted(found)} != XLA's {sorted(expected)}")
                continue
            for fusion_name, kind in expected.items():
                if found[fusion_name]["backend_kind"] != kind:
                    failures.append(f"{name}: {fusion_name} backend kind != {kind}")
        for fusion in found.values():
            if not fusion["ops"] or not re.fullmatch(r"k[A-Z]\w+", fusion["kind"]):
                failures.append(f"{name}: {fusion['name']} has no ops or no kind")
        if doc["unfused_ops"] != len(doc["unfused"]):
            failures.append(f"{name}: unfused_ops does not count the unfused list")
    assert not failures, "\n".join(failures)
    assert read >= 35
    assert with_fusions >= 8


@pytest.mark.corpus
def test_gpu_backend_kinds(corpus):
    path = corpus / "xla/xla/backends/gpu/tests/triton_calling_convention.hlo"
    doc = run_cli("fusions", str(path), "--json").json()
    [fusion] = doc["fusions"]
    assert (fusion["name"], fusion["kind"], fusion["backend_kind"]) == (
        "triton_softmax",
        "kCustom",
        "__triton",
    )
    assert fusion["ops"] == ["stablehlo.exponential"]
    assert doc["summary"]["by_kind"] == {"__triton": 1}

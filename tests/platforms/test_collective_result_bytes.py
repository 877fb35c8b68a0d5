"""A collective's bytes are what it makes, on every platform: XLA's asynchronous
`-start` ops (a GPU's all-gathers, reduce-scatters and permutes) hold their inputs in
their result too (`all-gather-start = (bf16[512,64], bf16[1024,64])`, combined ones
`((3 x f32[512,256]), (3 x f32[512,512]))`); the bytes are their `-done`'s, as XLA's
own text of the same compile says (jax_truth.py)."""

from __future__ import annotations

import pytest
from test_compile_for import child_env, hloscope, needs, run_truth

pytestmark = pytest.mark.slow

STEP = "samples/llm_step.py"
SIZE = "1,256,128,8"
SPEC = "gpu:h100x8"


def test_async_collectives_count_their_results_bytes():
    needs("gpu")
    case = {
        "platform": "gpu",
        "topology": "1x1x8",
        "gpu_config": "src/hloscope/gpu_specs/h100_sxm.txtpb",
        "module": STEP,
        "function": "train_step",
        "args": "example_args",
        "make_mesh": ["data", "model"],
        "loops": True,
    }
    env = {"LLM_STEP": SIZE, "JAX_SKIP_CUDA_CONSTRAINTS_CHECK": "1"}
    truth = run_truth({"step": case}, **env)["step"]["loops"]["collectives"]
    assert any(c["async"] for c in truth.values()), "no async collective: the case tests nothing"
    target = [f"{STEP}:train_step", "--args", f"{STEP}:example_args", "--for", SPEC, "--json"]
    document = hloscope("placement", *target, env={**child_env(), **env}).json()
    found = {c["op"]: c["bytes"] for c in document["collectives"]}
    assert found == {op: c["bytes"] for op, c in truth.items()}

"""`hloscope remat` against JAX's own `saved_residuals` (what
`jax.ad_checkpoint.print_saved_residuals` prints) on the same function: the
residuals' count, names, bytes and lines are JAX's."""

from __future__ import annotations

import contextlib
import io
import os
import re

import jax
import numpy as np
import pytest
from jax.ad_checkpoint import print_saved_residuals

from conftest import run_cli
from fixtures import remat_targets as targets
from hloscope.analyses.remat import analyze_remat
from hloscope.sources.jax.residuals import remat_facts

FIXTURE = "tests/fixtures/remat_targets.py"


ITEM_BYTES = {"f32": 4, "f16": 2, "bf16": 2, "i32": 4, "s32": 4, "bool": 1}


def _jax_view(loss, args):
    """(type, bytes, name, file:line, on the host) of each residual, as JAX's
    `print_saved_residuals` (its `saved_residuals`) says."""
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        print_saved_residuals(loss, *args)
    out = []
    for text in printed.getvalue().splitlines():
        kind, _, rest = text.partition(" ")
        dtype, host, dims = re.fullmatch(r"(\w+)(<host>)?\[([\d,]*)\]", kind).groups()
        shape = [int(d) for d in dims.split(",") if d]
        name = re.search(r"named '([^']+)'", rest)
        line = re.search(r"from (\S+):(\d+):\d+", rest)
        out.append(
            (
                # JAX prints a boolean as bool, HLO (and hloscope) as pred.
                f"{'pred' if dtype == 'bool' else dtype}[{dims}]",
                int(np.prod(shape, dtype=np.int64)) * ITEM_BYTES[dtype],
                name.group(1) if name else None,
                f"{_relative(line.group(1))}:{line.group(2)}" if line else None,
                host is not None,
            )
        )
    return out


def _relative(file: str) -> str:
    """JAX's file relative to the working directory, as hloscope names every line."""
    root = os.getcwd() + os.sep
    return file[len(root) :] if file.startswith(root) else file


def _ours(loss, args):
    facts = remat_facts(loss, args, {}, "test")
    return facts, _view(facts)


def _view(facts):
    out = []
    for r in facts.residuals:
        # JAX names the value the primitive it saves made: its name where that is a
        # `name`; its line is that primitive's.
        name = r.name if r.primitive in ("name", "reduce_precision") else None
        out.append((r.type, r.bytes, name, r.primitive_line, r.memory == "pinned_host"))
    return out


ARGS = tuple(np.ones(s.shape, s.dtype) for s in targets.example_args())
SCAN_ARGS = tuple(np.ones(s.shape, s.dtype) for s in targets.scanned_args())


def test_a_custom_jvp_residual_keeps_its_line() -> None:
    # The output of jax.nn.relu (a custom_jvp_call) is made on the user's line, as
    # print_saved_residuals says; it had none, and its line's group split in two.
    facts, ours = _ours(targets.relu_loss, ARGS)
    assert ours == _jax_view(targets.relu_loss, ARGS)
    relu = [r for r in facts.residuals if r.primitive == "custom_jvp_call"]
    assert relu and all(r.line == r.primitive_line is not None for r in relu)
    made = [r for r in facts.residuals if r.made_by == "op"]
    assert all(r.line is not None for r in made), [(r.type, r.op) for r in made]
    groups = analyze_remat(facts).groups
    assert all(g.source is not None or g.path is not None for g in groups), groups


@pytest.mark.parametrize(
    ("loss", "args"),
    [
        (targets.by_name, ARGS),
        (targets.offload, ARGS),
        (targets.typo, ARGS),
        (targets.no_checkpoint, ARGS),
        (targets.scanned, SCAN_ARGS),
        (targets.log_softmax_outside, SCAN_ARGS),
    ],
    ids=["by_name", "offload", "typo", "no_checkpoint", "scanned", "log_softmax_outside"],
)
def test_residuals_are_jaxs(loss, args) -> None:
    facts, ours = _ours(loss, args)
    assert ours == _jax_view(loss, args)
    analysis = analyze_remat(facts)
    assert analysis.device_bytes + analysis.host_bytes == sum(r[1] for r in ours)
    assert sum(g.bytes for g in analysis.groups) == sum(r[1] for r in ours)
    assert sum(g.count for g in analysis.groups) == len(ours)


def test_an_offloaded_residual_is_the_one_saving_would_keep() -> None:
    # JAX names an offloaded residual `output of device_put`: looked through, it is
    # the value (name, line) that saving the same name keeps.
    facts, _ = _ours(targets.offload, ARGS)
    saved = {(n, line) for _, _, n, line, _ in _jax_view(targets.offload_saved, ARGS) if n}
    offloaded = [r for r in facts.residuals if r.offloaded]
    assert [(r.name, r.memory) for r in offloaded] == [("projected", "pinned_host")]
    assert ("projected", offloaded[0].line) in saved
    analysis = analyze_remat(facts)
    assert analysis.host_bytes == offloaded[0].bytes
    assert [r.detail for r in analysis.residuals if r.name == "projected"] == ["offloaded"]
    assert analysis.regions[0].fact.offload_to == "pinned_host"


def test_a_typo_is_unmatched_with_the_closest_names() -> None:
    facts, _ = _ours(targets.typo, ARGS)
    analysis = analyze_remat(facts)
    assert [(u.name, u.closest[0]) for u in analysis.unmatched] == [("hiden", "hidden")]
    assert not analyze_remat(_ours(targets.by_name, ARGS)[0]).unmatched


def test_a_scanned_residual_names_its_layer_line_and_loop() -> None:
    facts, _ = _ours(targets.scanned, SCAN_ARGS)
    hidden = [r for r in facts.residuals if r.name == "hidden"]
    assert len(hidden) == 1 and hidden[0].type == "f32[4,16,32]"
    assert hidden[0].line.endswith("remat_targets.py:13")
    assert hidden[0].stacked_by.endswith("remat_targets.py:48")
    assert facts.regions[0].in_loop.endswith("remat_targets.py:48")


def test_a_residual_saved_outside_every_checkpoint_is_in_no_region() -> None:
    # log_softmax is a jitted function: its body, like jnp.where's inside the
    # checkpoint, has no frame of the user's; the two matched, and its residuals were
    # counted in region #0.
    loss = targets.log_softmax_outside
    facts, ours = _ours(loss, SCAN_ARGS)
    assert ours == _jax_view(loss, SCAN_ARGS)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        print_saved_residuals(loss, *SCAN_ARGS)
    jitted = [i for i, text in enumerate(printed.getvalue().splitlines()) if "jitted" in text]
    assert len(jitted) == 2
    analysis = analyze_remat(facts)
    assert all(analysis.residuals[i].region is None for i in jitted)
    assert {analysis.residuals[i].detail for i in jitted} == {"not checkpointed"}
    # The region saves what JAX saves for the checkpointed block alone (less its
    # arguments), stacked by the loop: one dot's output per layer.
    ws, x = SCAN_ARGS
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        print_saved_residuals(_block_alone, x, ws[0])
    alone = [t for t in printed.getvalue().splitlines() if "from the argument" not in t]
    assert len(alone) == 1 and alone[0].startswith("f32[16,32] output of dot_general")
    (region,) = analysis.regions
    in_region = [r for r in analysis.residuals if r.region == 0]
    assert [r.type for r in in_region] == [f"f32[{len(ws)},16,32]"]
    assert (region.saved, region.saved_bytes) == (1, in_region[0].bytes)
    # Applied where the loop calls it: the block's first op is in a helper it calls,
    # whose line the region was given.
    assert region.fact.source == region.fact.in_loop == in_region[0].stacked_by


def _block_alone(x, w):
    block = jax.checkpoint(
        targets._where_block, policy=targets.policies.dots_with_no_batch_dims_saveable
    )
    return block(x, w)[0].sum()


def test_a_jitted_gradient_is_unwrapped_to_its_loss() -> None:
    facts = remat_facts(targets.grad_by_name, ARGS, {}, "t")
    assert facts.function == "loss" and facts.differentiated == ("w",)
    # With respect to w only, as jax.grad differentiates; the same residuals as the loss's.
    assert [r.type for r in facts.residuals] == [t for t, *_ in _jax_view(targets.by_name, ARGS)]


def test_a_gradient_saving_a_float_literal_is_read() -> None:
    # Issue 60: a literal residual (the 2.0 of `* 2.0`) is unhashable, and remat
    # failed with `TypeError: unhashable type: 'Literal'`.
    facts = remat_facts(targets.grad_scaled, ARGS[:1], {}, "t")
    assert _view(facts) == _jax_view(targets.scaled_loss, ARGS[:1])
    assert [r.made_by for r in facts.residuals] == ["literal", "constant", "op"]


def test_policies_are_named_with_their_names() -> None:
    facts, _ = _ours(targets.offload, ARGS)
    region = facts.regions[0]
    assert region.policy == "save_and_offload_only_these_names"
    assert region.policy_names == ("hidden", "projected")
    assert region.names == ("hidden", "projected")
    assert {op.primitive for op in region.recomputed} >= {"dot_general", "tanh"}


def test_a_library_checkpoint_wrapper_is_named_for_the_users_function() -> None:
    # eqx.filter_checkpoint checkpoints a wrapper of its own (fun_checkpoint); the
    # region is the user's function it wraps, as jax.checkpoint's is.
    run = run_cli(
        "remat",
        "tests/fixtures/remat_targets.py:eqx_named_loss",
        "--args",
        "tests/fixtures/remat_targets.py:eqx_model_args",
        "--json",
    )
    assert run.code == 0, run.stderr
    (region,) = run.json()["regions"]
    assert region["function"] == "_eqx_block"


@pytest.mark.parametrize(
    ("target", "factory", "message"),
    [
        ("not_scalar", "example_args", "not a scalar"),
        ("integers_only", "integer_args", "no argument to differentiate"),
        ("vjp_step", "example_args", "takes a gradient inside"),
        ("not_differentiable", "example_args", "JAX cannot differentiate it"),
    ],
)
def test_bad_input_is_one_line_exit_2(target: str, factory: str, message: str) -> None:
    run = run_cli("remat", f"{FIXTURE}:{target}", "--args", f"{FIXTURE}:{factory}")
    assert run.code == 2
    lines = [line for line in run.stderr.splitlines() if line.startswith("hloscope")]
    assert len(lines) == 1 and message in lines[0], run.stderr


def test_strict_exits_1_on_an_unmatched_name_and_json_lists_it() -> None:
    run = run_cli(
        "remat", f"{FIXTURE}:typo", "--args", f"{FIXTURE}:example_args", "--json", "--strict"
    )
    assert run.code == 1
    doc = run.json()
    assert doc["unmatched_names"][0]["name"] == "hiden"
    assert doc["unmatched_names"][0]["closest"][0] == "hidden"
    ok = run_cli("remat", f"{FIXTURE}:by_name", "--args", f"{FIXTURE}:example_args", "--strict")
    assert ok.code == 0, ok.stderr


def test_compile_counts_the_residuals_at_the_peak() -> None:
    run = run_cli(
        "remat",
        f"{FIXTURE}:grad_scanned",
        "--args",
        f"{FIXTURE}:scanned_args",
        "--compile",
        "--json",
    )
    assert run.code == 0, run.stderr
    peak = run.json()["peak"]
    assert 0 < peak["residual_bytes"] <= peak["peak_bytes"]
    assert sum(p["bytes"] for p in peak["by_line"]) == peak["residual_bytes"]
    # Not the arguments alone: the values the forward saved, on their lines (as the
    # memory report names them, relative to the working directory), live at the peak.
    lines = {r["source"] for r in run.json()["residuals"] if r["source"]}
    assert {p["source"] for p in peak["by_line"]} & lines, peak


def _compiled_residuals(target: str, factory: str) -> dict:
    run = run_cli(
        "remat", f"{FIXTURE}:{target}", "--args", f"{FIXTURE}:{factory}", "--compile", "--json"
    )
    assert run.code == 0, run.stderr
    return run.json()


@pytest.mark.parametrize("target", ["scanned", "sharded_step"])
def test_a_sharded_arguments_bytes_per_device_are_xlas(target: str) -> None:
    # Global and per-device sizes were mixed, unsaid: the argument's global bytes in
    # the residuals, its shard's at the peak.
    if jax.device_count() < 2:
        pytest.skip("one device: nothing is partitioned")
    doc = _compiled_residuals(target, "sharded_args")
    assert doc["devices"] == jax.device_count()
    (ws,) = [r for r in doc["residuals"] if r["path"] == "ws"]
    # What XLA holds of it on one device: its buffer at the peak, and the shard of the
    # sharding XLA compiled the gradient's first argument with.
    (at_peak,) = [p for p in doc["peak"]["by_line"] if p["path"] == "ws"]
    args = targets.sharded_args()
    compiled = jax.jit(jax.grad(targets.scanned)).lower(*args).compile()
    shard = compiled.input_shardings[0][0].shard_shape(args[0].shape)
    assert ws["bytes_per_device"] == at_peak["bytes"] == 4 * int(np.prod(shard))
    assert ws["bytes"] == 4 * int(np.prod(args[0].shape)) > ws["bytes_per_device"]
    # The values XLA shards as it compiles (Auto axes) say nothing they do not know.
    made = [r for r in doc["residuals"] if r["kind"] != "argument"]
    assert made and all(r["bytes_per_device"] is None for r in made)
    assert doc["device_bytes_per_device"] is None
    assert (doc["known_per_device"], doc["known_bytes_per_device"]) == (1, ws["bytes_per_device"])


def test_explicit_shardings_give_every_residuals_bytes_per_device() -> None:
    if jax.device_count() < 2:
        pytest.skip("one device: nothing is partitioned")
    doc = _compiled_residuals("scanned", "explicit_args")
    residuals = doc["residuals"]
    assert all(r["bytes_per_device"] is not None for r in residuals)
    assert doc["device_bytes_per_device"] == sum(r["bytes_per_device"] for r in residuals)
    # XLA's buffers of one device at the peak: the replicated argument whole, and the
    # loop's stacked values as the batch's sharding splits them.
    peak = {p["path"] or p["source"]: p["bytes"] for p in doc["peak"]["by_line"]}
    (ws,) = [r for r in residuals if r["path"] == "ws"]
    assert peak["ws"] == ws["bytes_per_device"] == ws["bytes"]
    loop = residuals[-1]["stacked_by"] or residuals[-1]["source"]
    stacked = [
        r for r in residuals if loop in (r["stacked_by"], r["source"]) and "[4," in r["type"]
    ]
    assert (
        peak[loop] == sum(r["bytes_per_device"] for r in stacked) < sum(r["bytes"] for r in stacked)
    )


def test_a_partitioned_programs_text_says_which_bytes_are_global() -> None:
    if jax.device_count() < 2:
        pytest.skip("one device: nothing is partitioned")
    run = run_cli("remat", f"{FIXTURE}:scanned", "--args", f"{FIXTURE}:sharded_args", "--compile")
    assert run.code == 0, run.stderr
    header = next(line for line in run.stdout.splitlines() if line.startswith("residuals"))
    assert f"global (the whole arrays, over {jax.device_count()} devices)" in header
    assert "per device      8.0 KiB of the 1 whose sharding is known" in run.stdout
    assert re.search(r"^ +global +per device +type", run.stdout, re.M), run.stdout
    assert "live at the compiled program's peak on one device" in run.stdout
    assert "Residuals live at one device's peak, by line" in run.stdout


@pytest.mark.parametrize("step", ["step", "jitted_step", "aux_step"])
def test_a_step_taking_the_gradient_inside_is_read_at_its_gradient(step: str) -> None:
    # The loss the step differentiates (with respect to w, as its value_and_grad
    # does), on the arguments the step calls it with: the residuals of the jitted
    # gradient of the same loss, which are JAX's own.
    facts = remat_facts(getattr(targets, step), ARGS, {}, "t")
    gradient = remat_facts(targets.grad_by_name, ARGS, {}, "t")
    assert facts.residuals == gradient.residuals
    assert facts.regions == gradient.regions
    assert facts.differentiated == ("w",)
    assert _view(facts) == _jax_view(targets.by_name, ARGS)
    assert facts.unwrapped.startswith("a training step, jax.value_and_grad at ")


def test_a_step_traced_before_is_read_at_its_gradient() -> None:
    # Issue 60: JAX keeps the jaxpr of a step it traced (the browser lowers the step
    # before its Remat tab reads it), and a trace read from that cache called no
    # gradient: remat said "it takes a gradient inside ... give the loss".
    targets.aux_step.lower(*ARGS)
    first = remat_facts(targets.aux_step, ARGS, {}, "t")
    again = remat_facts(targets.aux_step, ARGS, {}, "t")
    assert first.residuals == again.residuals
    assert _view(again) == _jax_view(targets.by_name, ARGS)


def test_an_nnx_step_is_read_at_its_nnx_value_and_grad() -> None:
    args = targets.nnx_step_args()
    facts = remat_facts(targets.nnx_step, args, {}, "t")
    assert _view(facts) == _ours(targets.nnx_loss, args)[1] == _jax_view(targets.nnx_loss, args)
    assert facts.function == "nnx_loss"
    assert facts.unwrapped.startswith("a training step, nnx.value_and_grad at ")
    assert [r.policy for r in facts.regions] == ["nothing_saveable"]


def test_a_step_compiles_whole_and_says_where_its_gradient_is() -> None:
    run = run_cli(
        "remat",
        f"{FIXTURE}:jitted_step",
        "--args",
        f"{FIXTURE}:example_args",
        "--compile",
        "--json",
    )
    assert run.code == 0, run.stderr
    doc = run.json()
    assert doc["function"] == "loss"
    assert doc["peak"]["residual_bytes"] > 0
    assert any("a training step, jax.value_and_grad at" in n for n in doc["notes"]), doc["notes"]


def test_arguments_are_named_as_params_names_them() -> None:
    # An NNX model's parameters: params names them without the `.value` level a Flax
    # Variable adds to JAX's own names; remat names the same leaves the same way.
    target = ("samples/flax_nnx.py:train_step", "--args", "samples/flax_nnx.py:example_args")
    remat = run_cli("remat", *target, "--json").json()
    params = run_cli("params", *target, "--json").json()
    paths = {p["path"] for p in params["parameters"]}
    assert remat["differentiated"] and set(remat["differentiated"]) <= paths
    arguments = {r["path"] for r in remat["residuals"] if r["kind"] == "argument"}
    assert arguments and arguments <= paths
    assert not any(name.endswith(".value") for name in remat["differentiated"])

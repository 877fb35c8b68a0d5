"""Typed PRNG keys (and the other leaf kinds JAX accepts) through every command, on
real models: a Flax NNX model with `nnx.Dropout` and stored `nnx.Rngs` (a train
step and a call in train mode, `nnx.jit`), an Equinox model called with a key
(`eqx.filter_jit`), and `jax.jit` functions taking and returning keys
(`samples/dropout.py`). Every `--json` is checked against JAX's and XLA's own
answers: JAX's kept arguments, avals and the lowered module's parameters
(`leaf_support.check_params_doc`), XLA's argument bytes and fusions of the
compiled executable, and the results of calling the function.

Before keys were handled, each of these commands stopped with `internal error:
TypeError: Cannot interpret 'key<fry>' as a data type`.
"""

from __future__ import annotations

import importlib.util
import json
import textwrap
from pathlib import Path
from typing import Any

import jax
import jaxlib._hlo as hlo
import numpy as np
import pytest

from conftest import run_cli, sample
from leaf_support import check_params_doc
from samples import dropout

TRAIN_STEP = sample("dropout", "train_step")
FORWARD = sample("dropout", "forward", "forward_args")
NOISY = sample("dropout", "noisy", "noisy_args")
EQX_FORWARD = sample("dropout", "eqx_forward", "eqx_args")

# (target, the jitted function and its example arguments) of each real model.
MODELS = {
    "nnx train_step": (TRAIN_STEP, dropout.train_step, dropout.example_args),
    "nnx forward": (FORWARD, dropout.forward, dropout.forward_args),
    "jax.jit noisy": (NOISY, dropout.noisy, dropout.noisy_args),
    "eqx forward": (EQX_FORWARD, dropout.eqx_forward, dropout.eqx_args),
}


def ok(*argv: str, code: int = 0) -> dict[str, Any]:
    run = run_cli(*argv, "--json")
    assert run.code == code, run.stderr
    assert "internal error" not in run.stderr
    return run.json()  # type: ignore[no-any-return]


def jax_lowered(function: Any, args: tuple[Any, ...]) -> Any:
    """JAX's `Lowered` (the one a Flax NNX or Equinox stage wraps)."""
    lowered = function.lower(*args)
    return lowered if isinstance(lowered, jax.stages.Lowered) else lowered.lowered


def key_parameter(doc: dict[str, Any], path: str) -> dict[str, Any]:
    return next(p for p in doc["parameters"] if p["path"] == path)


@pytest.mark.parametrize("model", list(MODELS))
def test_params_of_models_with_keys_are_jax_s(model: str) -> None:
    target, function, make_args = MODELS[model]
    doc = ok("params", *target)
    check_params_doc(doc, jax_lowered(function, make_args()))
    keys = [p for p in doc["parameters"] if p["shape"].startswith("key<")]
    assert len(keys) == 1
    assert (keys[0]["shape"], keys[0]["hlo_shape"], keys[0]["status"]) == (
        "key<fry>[]",
        "u32[2]",
        "used",
    )
    assert keys[0]["bytes"] == jax.random.key_data(jax.random.key(0)).nbytes == 8


def test_nnx_dropout_keys_are_named_as_the_model_holds_them() -> None:
    doc = ok("params", *TRAIN_STEP)
    model = dropout.example_args()[0]
    key = key_parameter(doc, "model.dropout.rngs.key")
    count = key_parameter(doc, "model.dropout.rngs.count")
    assert key["bytes"] == jax.random.key_data(model.dropout.rngs.key.get_value()).nbytes
    assert (count["shape"], count["bytes"]) == ("u32[]", 4)
    # The step donates the model: its key comes back as the new state's key.
    assert key["donated"] and key["aliases_output"] is not None


@pytest.mark.parametrize("model", ["nnx train_step", "eqx forward"])
def test_compiled_parameters_are_xla_s(model: str) -> None:
    """The optimized module: each parameter's bytes sum to XLA's own argument size,
    and `memory` reports the same."""
    target, function, make_args = MODELS[model]
    compiled = jax_lowered(function, make_args()).compile()
    xla_bytes = compiled.memory_analysis().argument_size_in_bytes
    doc = ok("params", *target, "--compile")
    assert doc["source"]["stage"] == "optimized"
    key = next(p for p in doc["parameters"] if p["shape"] == "key<fry>[]")
    assert key["hlo_shape"] == "u32[2]"
    assert doc["totals"]["bytes_passed"] == xla_bytes
    memory = ok("memory", *target)
    assert memory["totals"]["argument_bytes"] == xla_bytes


@pytest.mark.parametrize("model", ["nnx train_step", "eqx forward"])
def test_fusions_are_xla_s(model: str) -> None:
    target, function, make_args = MODELS[model]
    compiled = jax_lowered(function, make_args()).compile()
    module = compiled.runtime_executable().hlo_modules()[0]
    expected = {
        instruction.name
        for computation in module.make_nonfusion_computations()
        for instruction in computation.instructions()
        if instruction.opcode == hlo.HloOpcode.kFusion
    }
    doc = ok("fusions", *target)
    assert expected and {f["name"] for f in doc["fusions"]} == expected
    assert any(s.startswith("samples/dropout.py:") for f in doc["fusions"] for s in f["sources"])


@pytest.mark.parametrize("model", list(MODELS))
def test_inspect_and_placement_summarise_jax_s_map(model: str) -> None:
    target, function, make_args = MODELS[model]
    lowered = jax_lowered(function, make_args())
    info = lowered._lowering.compile_args
    doc = ok("inspect", *target)
    totals = doc["params"]["totals"]
    assert totals["arguments"] == len(info["all_args_info"].in_avals)
    assert totals["arguments"] - totals["pruned"] == len(info["kept_var_idx"])
    placement = ok("placement", *target)
    assert placement["command"] == "placement"


@pytest.mark.parametrize("model", list(MODELS))
def test_aot_check_runs_models_with_keys(model: str) -> None:
    target, function, make_args = MODELS[model]
    doc = ok("aot-check", *target)
    assert doc["verdict"] == "same", doc["differences"]
    # The call's result is what calling the function on the same inputs gives:
    # keys given by the factory reach both paths unchanged (copied, not shared,
    # since the train step donates them).
    expected = jax.tree_util.tree_leaves(function(*make_args()))
    results = doc["results"]
    assert len(results) == len(expected)
    for result, value in zip(results, expected, strict=True):
        assert result["same"]
        assert result["call_shape"] == result["aot_shape"]
        assert result["call_shape"].startswith(
            {"float32": "f32", "uint32": "u32"}[np.dtype(value.dtype).name]
        )
    inputs = {leaf["path"]: leaf for leaf in doc["inputs"]}
    assert any(leaf["shape"] == "key<fry>[]" for leaf in inputs.values()), inputs


KEYS_MODULE = textwrap.dedent(
    """
    import functools
    import jax, jax.numpy as jnp

    @jax.jit
    def split(key, x):
        keys = jax.random.split(key, 3)
        return keys, x + jax.random.normal(keys[0], x.shape)

    @jax.jit
    def split_again(key, x):
        keys = jax.random.split(key, 3)
        return keys, x + jax.random.normal(keys[0], x.shape)

    @jax.jit
    def split_scaled(key, x):
        keys = jax.random.split(key, 3)
        return keys, x * jax.random.normal(keys[0], x.shape)

    def shapes():
        return (jax.ShapeDtypeStruct((), jax.random.key(0).dtype),
                jax.ShapeDtypeStruct((4,), jnp.float32))

    def rbg_shapes():
        return (jax.ShapeDtypeStruct((), jax.random.key(0, impl="rbg").dtype),
                jax.ShapeDtypeStruct((4,), jnp.float32))

    def concrete():
        return (jax.random.key(7, impl="unsafe_rbg"), jnp.ones(4))

    def folding(function):
        @functools.wraps(function)
        def call(key, x):
            return function(jax.random.fold_in(key, 1), x)
        return call

    # A wrapper that changes the key before the jitted function: the AOT path
    # (`.__wrapped__`) bypasses it, so the keys it returns differ.
    folded = folding(split)

    @jax.jit
    def refused(key):
        return key + 1

    def one_key():
        return (jax.random.key(0),)

    @jax.jit
    def key_data(key, x):
        return jax.random.key_data(key), x * 2
    """
)


@pytest.fixture
def keys_module(tmp_path: Path) -> Path:
    path = tmp_path / "keys_mod.py"
    path.write_text(KEYS_MODULE)
    return path


@pytest.mark.parametrize(
    ("factory", "shape", "origin"),
    [
        ("shapes", "key<fry>[]", "generated"),
        ("rbg_shapes", "key<rbg>[]", "generated"),
        ("concrete", "key<urbg>[]", "given"),
    ],
)
def test_aot_check_makes_keys_for_shapes_and_compares_key_results(
    keys_module: Path, factory: str, shape: str, origin: str
) -> None:
    doc = ok("aot-check", f"{keys_module}:split", "--args", f"{keys_module}:{factory}")
    assert doc["verdict"] == "same", doc["differences"]
    key_input = doc["inputs"][0]
    assert (key_input["path"], key_input["shape"], key_input["origin"]) == ("key", shape, origin)
    keys_result = doc["results"][0]
    assert keys_result["call_shape"] == shape.replace("[]", "[3]")
    assert keys_result["same"] and keys_result["rtol"] == 0 and keys_result["atol"] == 0


def test_aot_check_sees_keys_that_differ(keys_module: Path) -> None:
    """Key results are compared by their key data: a wrapper that folds the key in
    before the jitted function gives other keys than its bypassing AOT path."""
    doc = ok("aot-check", f"{keys_module}:folded", "--args", f"{keys_module}:concrete", code=1)
    assert doc["verdict"] != "same"
    keys_result = doc["results"][0]
    assert keys_result["call_shape"] == "key<urbg>[3]"
    assert not keys_result["same"]
    # JAX's own answer: the keys differ in their data.
    key = jax.random.key(7, impl="unsafe_rbg")
    wrapped = jax.random.split(jax.random.fold_in(key, 1), 3)
    bypassed = jax.random.split(key, 3)
    differing = np.count_nonzero(
        jax.random.key_data(wrapped).reshape(-1) != jax.random.key_data(bypassed).reshape(-1)
    )
    assert keys_result["mismatched"] == differing > 0


def test_diff_and_compiles_with_keys(keys_module: Path) -> None:
    same = ok(
        "diff",
        f"{keys_module}:split",
        f"{keys_module}:split_again",
        "--args",
        f"{keys_module}:shapes",
    )
    assert same["verdict"] == "same", same["verdict"]
    assert [(p["a_name"], p["status"]) for p in same["parameters"]] == [
        ("key", "same"),
        ("x", "same"),
    ]
    changed = ok(
        "diff",
        f"{keys_module}:split",
        f"{keys_module}:split_scaled",
        "--args",
        f"{keys_module}:shapes",
        code=1,
    )
    assert changed["summary"]["changed"] == 1, changed["summary"]
    calls = keys_module.parent / "calls.py"
    calls.write_text(
        "import jax, jax.numpy as jnp\n"
        "def calls():\n"
        "    return [(jax.random.key(0), jnp.ones(4)),\n"
        "            (jax.random.key(0, impl='rbg'), jnp.ones(4)),\n"
        "            (jax.ShapeDtypeStruct((), jax.random.key(0).dtype), jnp.ones(4))]\n"
    )
    doc = ok("compiles", f"{keys_module}:split", "--calls", f"{calls}:calls")
    compiles = [c for c in doc["compiles"] if c["function"] == "split"]
    # JAX compiles it once per key type: the third call's shape is a key<fry>
    # again, made before the recording (no eager compilations of its own).
    assert [c["signature"].split(")")[0] for c in compiles] == [
        "(key: key<fry>[], x: f32[4]",
        "(key: key<rbg>[], x: f32[4]",
    ]
    change = compiles[1]["changes"][0]
    assert (change["path"], change["before"], change["after"]) == (
        "key",
        "key<fry>[]",
        "key<rbg>[]",
    )
    assert not [c for c in doc["compiles"] if c["eager"]]


def test_what_jax_refuses_is_one_line(keys_module: Path) -> None:
    """Adding an integer to a key is refused by JAX: one line, exit 2."""
    run = run_cli("params", f"{keys_module}:refused", "--args", f"{keys_module}:one_key")
    assert run.code == 2
    assert len(run.stderr.strip().splitlines()) == 1
    assert "internal error" not in run.stderr


def test_json_is_one_document_for_each_command() -> None:
    """Every command's --json on the NNX step is one JSON document (no stray
    output from the key handling)."""
    for command in ("params", "inspect", "placement"):
        run = run_cli(command, *TRAIN_STEP, "--json")
        assert run.code == 0, run.stderr
        json.loads(run.stdout)


def load_module(path: Path) -> Any:
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    ("spec", "impl", "shape"),
    [
        ("key<fry>[]", "threefry2x32", ()),
        ("key<rbg>[2]", "rbg", (2,)),
        ("key<urbg>[3,2]", "unsafe_rbg", (3, 2)),
    ],
)
def test_arg_spec_of_a_typed_key(keys_module: Path, spec: str, impl: str, shape: tuple) -> None:
    """`--arg key<fry>[]` stands for a typed key array of that implementation."""
    target = f"{keys_module}:key_data"
    doc = ok("params", target, "--arg", spec, "--arg", "f32[4]")
    dtype = jax.random.key(0, impl=impl).dtype
    args = (jax.ShapeDtypeStruct(shape, dtype), jax.ShapeDtypeStruct((4,), np.float32))
    check_params_doc(doc, load_module(keys_module).key_data.lower(*args), ["key", "x"])
    assert doc["parameters"][0]["shape"] == spec
    run = ok("aot-check", target, "--arg", spec, "--arg", "f32[4]")
    assert run["verdict"] == "same"
    assert run["inputs"][0]["shape"] == spec and run["inputs"][0]["origin"] == "generated"


def test_arg_spec_of_an_unknown_key_is_one_line(keys_module: Path) -> None:
    run = run_cli("params", f"{keys_module}:key_data", "--arg", "key<philox>[]", "--arg", "f32[4]")
    assert run.code == 2
    assert run.stderr.strip() == (
        "hloscope: error: bad --arg 'key<philox>[]': unknown PRNG key implementation "
        "'philox' (known: key<fry>, key<rbg>, key<urbg>)"
    )

"""Real Flax NNX, Flax Linen, Equinox and Optax models through every command, and
every form of entrypoint JAX and these libraries make: `nnx.jit`, `eqx.filter_jit`,
their stages, `functools.wraps` wrappers around them, `jax.pmap`, a
`jax.stages.Traced`, bound methods and partials. Parameter maps are checked leaf by
leaf against JAX's own lowering (`kept_var_idx`, `tf.aliasing_output`)."""

import importlib.util
import json
import re
import subprocess
import sys

import pytest

from conftest import FIXTURES, ROOT, sample
from samples import equinox_model, flax_nnx

TARGETS = FIXTURES / "library_targets.py"


def target(name):
    return f"{TARGETS.relative_to(TARGETS.parents[2])}:{name}"


def fixture_module():
    spec = importlib.util.spec_from_file_location("library_targets", TARGETS)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def fixture_args(factory):
    return ["--args", target(factory)]


def jax_parameter_map(lowered):
    """JAX's own map of a lowering: for each flattened argument leaf, its HLO
    parameter (None when pruned) and the output its buffer aliases (None when not
    donated), read from `kept_var_idx` and the module's `tf.aliasing_output`."""
    stage = getattr(lowered, "lowered", lowered)
    kept = sorted(stage._lowering.compile_args["kept_var_idx"])
    hlo_of = {flat: hlo for hlo, flat in enumerate(kept)}
    text = stage.as_text()
    signature = re.search(r"func\.func public @main\((.*?)\) ->", text, re.S).group(1)
    aliases = {}
    for match in re.finditer(r"%arg(\d+): [^%]*", signature):
        alias = re.search(r"tf\.aliasing_output = (\d+)", match.group(0))
        aliases[int(match.group(1))] = int(alias.group(1)) if alias else None
    leaves = stage.in_tree.num_leaves
    return [(hlo_of.get(i), aliases.get(hlo_of[i]) if i in hlo_of else None) for i in range(leaves)]


def hloscope_parameter_map(doc):
    return [(p["hlo_index"], p["aliases_output"]) for p in doc["parameters"]]


def assert_readable(paths):
    for path in paths:
        assert not re.search(r"\.states\[|\.value\b|dynamic_|flat_args|^args\[", path), path


# --------------------------------------------------------------------------- params


def test_nnx_train_step_params_match_jax_leaf_by_leaf(cli):
    run = cli("params", *sample("flax_nnx", "train_step"), "--json")
    assert run.code == 0, run.stderr
    doc = run.json()
    lowered = flax_nnx.train_step.lower(*flax_nnx.example_args())
    assert hloscope_parameter_map(doc) == jax_parameter_map(lowered)
    paths = [p["path"] for p in doc["parameters"]]
    assert_readable(paths)
    assert paths[:2] == ["model.blocks[0].linear.bias", "model.blocks[0].linear.kernel"]
    assert "optimizer.opt_state[0].trace.head.kernel" in paths
    assert "optimizer.step" in paths
    assert paths[-2:] == ["x", "y"]
    # The model and the optimizer are donated; the batch is not.
    assert all(p["donated"] for p in doc["parameters"][:-2])
    assert not any(p["donated"] for p in doc["parameters"][-2:])


HLO_TYPES = {"float32": "f32", "int32": "s32", "uint32": "u32"}


def flax_names(*arguments, names):
    """Flax's own names for the leaves `nnx.jit` passes for `arguments`, split together
    as nnx.jit splits them (a Variable several reach is passed once, at its first
    path), and, per first path, the other paths each argument reaches it by."""
    from flax import nnx

    def dotted(root, path):
        return root + "".join(f"[{k}]" if isinstance(k, int) else f".{k}" for k in path)

    _graphdef, flat = nnx.graph.flatten(tuple(arguments), with_paths=True)
    first = {}
    order = []
    for path, variable in flat:
        name = dotted(names[path[0]], path[1:])
        first[id(variable)] = name
        value = variable[...]
        order.append((name, f"{HLO_TYPES[str(value.dtype)]}{list(value.shape)}".replace(" ", "")))
    also = {}
    for root, argument in zip(names, arguments, strict=True):
        for path, variable in nnx.to_flat_state(nnx.variables(argument)):
            name = dotted(root, path)
            if first.get(id(variable), name) != name:
                also.setdefault(first[id(variable)], []).append(name)
    return order, also


@pytest.mark.parametrize(
    ("step", "factory", "also_under"),
    [
        ("nnx_fsdp_step", "nnx_fsdp_args", "optimizer.params"),
        ("nnx_model_and_optimizer_step", "nnx_model_and_optimizer_args", "optimizer.model"),
    ],
)
def test_nnx_variables_shared_by_model_and_optimizer_keep_their_names(
    cli, step, factory, also_under
):
    # The optimizer holds the model's own Variables (Flax's FSDP example builds it from
    # `nnx.variables(model, nnx.Param)`; `nnx.ModelAndOptimizer` holds the model).
    # nnx.jit passes each once: it is named by its first path, with the others beside.
    run = cli("params", target(step), *fixture_args(factory), "--json")
    assert run.code == 0, run.stderr
    doc = run.json()
    model, optimizer, x, y = getattr(fixture_module(), factory)()
    lowered = getattr(fixture_module(), step).lower(model, optimizer, x, y)
    assert hloscope_parameter_map(doc) == jax_parameter_map(lowered)
    order, also = flax_names(model, optimizer, names=("model", "optimizer"))
    parameters = doc["parameters"]
    assert [(p["path"], p["shape"]) for p in parameters[: len(order)]] == order
    assert_readable([p["path"] for p in parameters])
    assert {p["path"]: p["also"] for p in parameters if p["also"]} == also
    assert sorted(also) == ["model.b1", "model.w1", "model.w2"]
    assert also["model.w1"] == [f"{also_under}.w1"]
    assert all(p["also"] == [] for p in parameters if not p["path"].startswith("model."))
    text = cli("params", target(step), *fixture_args(factory))
    assert "Passed once, reachable by several paths (named by the first)" in text.stdout
    assert re.search(rf"model\.w1\s+{re.escape(also_under)}\.w1", text.stdout)


def test_equinox_params_match_jax_and_list_non_array_fields_as_static(cli):
    run = cli("params", *sample("equinox_model", "loss", "loss_args"), "--json")
    assert run.code == 0, run.stderr
    doc = run.json()
    args, kwargs = equinox_model.loss_args()
    lowered = equinox_model.loss.lower(*args, **kwargs)
    assert hloscope_parameter_map(doc) == jax_parameter_map(lowered)
    paths = [p["path"] for p in doc["parameters"]]
    assert_readable(paths)
    assert paths == [
        "model.layers[0].weight",
        "model.layers[0].bias",
        "model.layers[1].weight",
        "model.layers[1].bias",
        "model.unused",
        "x",
        "y",
    ]
    assert doc["parameters"][4]["status"] == "pruned"
    static = {s["path"]: s["value"] for s in doc["static_arguments"]}
    assert static == {
        "model.activation": "<function gelu>",
        "model.label": "'mlp'",
        "weight": "0.5",
    }


def test_linen_and_optax_state_params_match_jax(cli):
    run = cli("params", target("linen_train_step"), *fixture_args("linen_args"), "--json")
    assert run.code == 0, run.stderr
    doc = run.json()
    targets = fixture_module()
    lowered = targets.linen_train_step.lower(*targets.linen_args())
    assert hloscope_parameter_map(doc) == jax_parameter_map(lowered)
    paths = [p["path"] for p in doc["parameters"]]
    assert paths[0] == "variables['params']['hidden']['bias']"
    assert "opt_state[0].trace['params']['out']['kernel']" in paths
    assert all(p["aliases_output"] is not None for p in doc["parameters"][:-1])


@pytest.mark.parametrize(
    ("name", "extra"),
    [
        ("nnx_lowered", []),
        ("nnx_traced", []),
        ("nnx_module_plain_jit", fixture_args("nnx_module_args")),
        ("nnx_tree_mode", ["--args", "samples/flax_nnx.py:forward_args"]),
        ("nnx_no_graph_updates", ["--args", "samples/flax_nnx.py:forward_args"]),
    ],
)
def test_nnx_stages_and_modules_under_plain_jit_have_readable_paths(cli, name, extra):
    run = cli("params", target(name), *extra, "--json")
    assert run.code == 0, run.stderr
    paths = [p["path"] for p in run.json()["parameters"]]
    assert_readable(paths)
    assert paths[0] == "model.blocks[0].linear.bias"
    assert paths[-1] == "x"


def test_nnx_state_argument(cli):
    run = cli("params", target("nnx_state_forward"), *fixture_args("nnx_state_args"), "--json")
    assert run.code == 0, run.stderr
    paths = [p["path"] for p in run.json()["parameters"]]
    assert paths[0] == "state['blocks'][0]['linear']['bias']"
    assert_readable(paths)


def test_pmap_arguments_are_named(cli):
    run = cli("params", target("pmapped"), *fixture_args("pmap_args"), "--json")
    assert run.code == 0, run.stderr
    assert [p["path"] for p in run.json()["parameters"]] == ["a", "b['w']"]


def test_a_traced_attribute_is_lowered(cli):
    run = cli("params", target("traced"), "--json")
    assert run.code == 0, run.stderr
    assert [p["path"] for p in run.json()["parameters"]] == ["a", "b['w']"]


@pytest.mark.parametrize(
    ("name", "factory", "paths", "static"),
    [
        ("scale_by_two", "scale_args", ["a", "b['w']"], []),
        ("holder_method", "vector_args", ["x"], ["self"]),
        ("eqx_method", "scaler_args", ["self.weight", "x"], ["self.name"]),
        ("scaler", "scaler_args", ["self.weight", "x"], ["self.name"]),
    ],
)
def test_partials_bound_methods_and_jitted_module_calls(cli, name, factory, paths, static):
    run = cli("params", target(name), *fixture_args(factory), "--json")
    assert run.code == 0, run.stderr
    doc = run.json()
    assert [p["path"] for p in doc["parameters"]] == paths
    assert [s["path"] for s in doc["static_arguments"]] == static


def test_a_plain_wrapper_taking_an_equinox_module_is_lowered_with_filter_jit(cli):
    """`jax.jit` cannot take the module's non-array fields; `eqx.filter_jit` keeps
    them static."""
    run = cli(
        "params", target("eqx_doubled"), "--args", "samples/equinox_model.py:example_args", "--json"
    )
    assert run.code == 0, run.stderr
    doc = run.json()
    assert [p["path"] for p in doc["parameters"]][:2] == [
        "model.layers[0].weight",
        "model.layers[0].bias",
    ]
    assert [s["path"] for s in doc["static_arguments"]] == ["model.activation", "model.label"]


# --------------------------------------------------------------------------- aot-check


@pytest.mark.parametrize(
    ("arguments", "code", "via", "expression"),
    [
        (sample("flax_nnx", "train_step"), 0, "own", "train_step"),
        (sample("equinox_model", "loss", "loss_args"), 0, "own", "loss"),
        (
            [target("eqx_passthrough"), "--args", "samples/equinox_model.py:example_args"],
            0,
            "__wrapped__",
            "eqx_passthrough.__wrapped__",
        ),
        (
            [target("eqx_doubled"), "--args", "samples/equinox_model.py:example_args"],
            1,
            "__wrapped__",
            "eqx_doubled.__wrapped__",
        ),
        (
            [target("nnx_swapped"), "--args", "samples/flax_nnx.py:example_args"],
            1,
            "__wrapped__",
            "nnx_swapped.__wrapped__",
        ),
        (
            [target("holder_method"), *fixture_args("vector_args")],
            0,
            "own",
            "holder_method.__func__",
        ),
        ([target("scale_by_two"), *fixture_args("scale_args")], 0, "own", "scale_by_two.func"),
        ([target("pmapped"), *fixture_args("pmap_args")], 0, "own", "pmapped"),
        ([target("scaler"), *fixture_args("scaler_args")], 0, "own", "scaler.__call__.func"),
    ],
)
def test_aot_check_verdicts(cli, arguments, code, via, expression):
    run = cli("aot-check", *arguments, "--json")
    assert run.code == code, run.stderr
    doc = run.json()
    assert doc["verdict"] == ("same" if code == 0 else "different")
    assert doc["aot"]["via"] == via
    assert doc["aot"]["expression"] == expression
    assert_readable([i["path"] for i in doc["inputs"]])


def test_aot_check_through_a_library_lowered(cli):
    run = cli(
        "aot-check",
        *sample("equinox_model", "forward"),
        "--aot",
        target("eqx_lowered"),
        "--json",
    )
    assert run.code == 0, run.stderr
    assert run.json()["aot"]["via"] == "--aot"


# --------------------------------------------------------------------------- every command


MODELS = [
    sample("flax_nnx", "train_step"),
    sample("equinox_model", "forward"),
    [target("linen_train_step"), *fixture_args("linen_args")],
]


@pytest.mark.parametrize("command", ["inspect", "placement", "fusions"])
@pytest.mark.parametrize("arguments", MODELS, ids=["nnx", "equinox", "linen"])
def test_every_view_of_each_model(cli, command, arguments):
    run = cli(command, *arguments, "--json")
    assert run.code == 0, run.stderr
    assert "internal error" not in run.stderr
    assert run.json()["schema_version"] == 1


@pytest.mark.parametrize("name", ["nnx_compiled", "eqx_compiled", "eqx_lowered"])
def test_library_stages_given_as_they_are(cli, name):
    run = cli("inspect", target(name), "--json")
    assert run.code == 0, run.stderr


def test_diff_of_two_library_targets(cli):
    run = cli(
        "diff",
        target("nnx_forward"),
        target("nnx_lowered"),
        "--args",
        "samples/flax_nnx.py:forward_args",
        "--json",
    )
    assert run.code == 0, run.stderr
    assert run.json()["verdict"] == "same"


def test_equinox_function_on_shapes(cli):
    """`eqx.filter_jit` keeps anything but arrays static, so shapes are made arrays."""
    run = cli("params", target("eqx_shapes"), "--arg", "f32[4]", "--json")
    assert run.code == 0, run.stderr
    assert [p["shape"] for p in run.json()["parameters"]] == ["f32[4]"]


# --------------------------------------------------------------------------- refused


@pytest.mark.parametrize(
    ("name", "named"),
    [
        ("an_optimizer", "GradientTransformationExtraArgs"),
        ("a_dict", "it is a dict, not a function"),
    ],
)
def test_unknown_objects_get_one_line(cli, name, named):
    run = cli("params", target(name))
    assert run.code == 2
    assert "internal error" not in run.stderr
    assert len(run.stderr.strip().splitlines()) == 1
    assert named in run.stderr
    assert "nnx.jit" in run.stderr and "jax.stages.Traced" in run.stderr


def test_a_plain_target_imports_neither_library():
    """hloscope runs where Flax and Equinox are not installed: it imports them only
    for their own objects."""
    code = (
        "import sys\n"
        "from hloscope.cli import main\n"
        "try:\n"
        "    main(['params', 'samples/params.py:train_step', '--args',\n"
        "          'samples/params.py:train_step_args', '--json'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "sys.stderr.write(repr(sorted({'flax', 'equinox', 'optax'} & set(sys.modules))))\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        check=True,
    )
    assert json.loads(run.stdout)["parameters"]
    assert run.stderr.endswith("[]")

"""Parameter usage on real lowerings and real dumps: every argument leaf mapped to
its HLO parameter, with status, donation, sharding and memory kind."""

import pytest

from conftest import DUMPS
from hloscope.analyses.params import analyze_params
from hloscope.ir.attributes import parse_hlo_sharding, parse_mesh, parse_sdy_sharding
from hloscope.sources import loader


def usage_of(target, factory=None, compile=False):
    options = loader.LoadOptions(args_factory=factory, optimized=compile)
    loaded = loader.load(target, options)
    return analyze_params(loaded.module, loaded.lowering)


def sample_usage(module, attr, factory="example_args", compile=False):
    return usage_of(f"samples/{module}.py:{attr}", f"samples/{module}.py:{factory}", compile)


def rows(usage):
    return [(p.path, p.hlo_index, p.status) for p in usage.parameters]


# --------------------------------------------------------------------------- pruning


def test_jit_prunes_the_leaves_the_loss_ignores():
    usage = sample_usage("params", "loss")
    assert rows(usage) == [
        ("params['b']", 0, "used"),
        ("params['unused_scale']", None, "pruned"),
        ("params['w']", 1, "used"),
        ("batch['mask']", None, "pruned"),
        ("batch['x']", 2, "used"),
        ("batch['y']", 3, "used"),
    ]
    assert [p.shape for p in usage.parameters] == [
        "f32[4]",
        "f32[]",
        "f32[16,4]",
        "pred[8]",
        "f32[8,16]",
        "f32[8,4]",
    ]
    totals = usage.totals
    assert (totals.arguments, totals.used, totals.unused, totals.pruned) == (6, 4, 0, 2)
    assert totals.hlo_parameters == 4
    assert totals.bytes_passed == 16 + 256 + 512 + 128
    assert totals.bytes_pruned == 4 + 8
    assert usage.from_python and usage.entry == "main"


def test_keep_unused_turns_pruned_leaves_into_unused_parameters():
    usage = sample_usage("params", "loss_keep_unused")
    assert rows(usage) == [
        ("params['b']", 0, "used"),
        ("params['unused_scale']", 1, "unused"),
        ("params['w']", 2, "used"),
        ("batch['mask']", 3, "unused"),
        ("batch['x']", 4, "used"),
        ("batch['y']", 5, "used"),
    ]
    unused = usage.with_status("unused")
    assert [p.uses for p in unused] == [0, 0]
    assert usage.totals.bytes_unused == 4 + 8
    assert usage.totals.pruned == 0


def test_grad_with_respect_to_params_only_still_needs_the_targets():
    usage = sample_usage("params", "grad_w")
    status = {p.path: p.status for p in usage.parameters}
    assert status == {
        "params['b']": "used",
        "params['unused_scale']": "pruned",
        "params['w']": "used",
        "batch['mask']": "pruned",
        "batch['x']": "used",
        "batch['y']": "used",
    }


def test_donation_and_keyword_arguments():
    usage = sample_usage("params", "train_step", "train_step_args")
    by_path = {p.path: p for p in usage.parameters}
    assert [p.path for p in usage.parameters][-1] == "lr"
    assert by_path["lr"].status == "used" and not by_path["lr"].donated
    for i, name in enumerate(["params['b']", "params['unused_scale']", "params['w']"]):
        assert by_path[name].donated
        assert by_path[name].aliases_output == i  # tf.aliasing_output
    assert by_path["batch['mask']"].status == "pruned"
    assert not by_path["batch['x']"].donated
    assert usage.totals.bytes_donated == 16 + 4 + 256


# --------------------------------------------------------------------------- static, implicit


def test_static_arguments_are_listed_apart_with_their_values():
    usage = sample_usage("params_static", "static_args", "static_args_example")
    assert rows(usage) == [("x", 0, "used"), ("scale", 1, "used")]
    assert [(s.path, s.value, s.position) for s in usage.static] == [
        ("n", "3", 1),
        ("mode", "'max'", None),
    ]
    assert usage.totals.static == 2


def test_ordered_effect_tokens_shift_the_hlo_indices():
    usage = sample_usage("params_static", "ordered_print", "ordered_print_example")
    assert rows(usage) == [("x", 1, "used"), ("y", 2, "used")]
    assert [(q.hlo_index, q.kind, q.status) for q in usage.implicit] == [(0, "token", "used")]
    assert usage.totals.hlo_parameters == 3


# --------------------------------------------------------------------------- nested, loops


def test_a_nested_jit_that_ignores_an_argument():
    usage = sample_usage("params_nested", "ignored_by_callee")
    assert rows(usage) == [("x", 0, "used"), ("y", 1, "unused")]
    # y is read (passed to the call) but feeds nothing.
    assert usage.parameters[1].uses == 1
    [scaled] = usage.functions
    assert scaled.name == "scaled"
    assert [(p.index, p.status) for p in scaled.parameters] == [(0, "used"), (1, "unused")]
    assert usage.totals.private_unused == 1


def test_arguments_reaching_a_used_parameter_of_a_callee_are_used():
    usage = sample_usage("params_nested", "callee_used_twice")
    assert rows(usage) == [("x", 0, "used"), ("y", 1, "used")]
    [scaled] = usage.functions
    assert scaled.call_sites == 2
    assert [p.index for p in scaled.unused] == [1]


def test_values_only_carried_through_a_loop_are_unused():
    usage = sample_usage("params_nested", "carried_through_loop", "loop_args")
    assert rows(usage) == [("x", 0, "used"), ("y", 1, "unused"), ("z", 2, "used")]


def test_an_embedded_export_keeps_a_parameter_it_ignores():
    usage = sample_usage("params_nested", "exported_call")
    assert rows(usage) == [("x", 0, "used"), ("y", 1, "unused")]
    [callee] = usage.functions
    assert callee.name.startswith("call_exported")
    assert [(p.name, p.status) for p in callee.parameters] == [("a", "used"), ("b", "unused")]


# --------------------------------------------------------------------------- shardings, memory


SHARDED_ROWS = [("x", 0, "used"), ("w", 1, "used"), ("b", 2, "used"), ("step", 3, "unused")]


def test_arguments_sharded_over_eight_devices():
    usage = sample_usage("params_sharded", "sharded_step", "sharded_step_args")
    by_path = {p.path: p for p in usage.parameters}
    assert rows(usage) == [
        ("x", 0, "used"),
        ("w", 1, "used"),
        ("b", 2, "used"),
        ("step", 3, "unused"),
    ]
    assert by_path["x"].sharding == "P('data', None) over mesh(data=4, model=2)"
    assert by_path["x"].sharding_attribute == '#sdy.sharding<@mesh, [{"data"}, {}]>'
    assert by_path["w"].sharding == "P(None, 'model') over mesh(data=4, model=2)"
    assert by_path["w"].donated
    assert by_path["x"].memory_kind == "device"


def test_the_optimized_module_holds_per_device_shards():
    usage = sample_usage("params_sharded", "sharded_step", "sharded_step_args", compile=True)
    by_path = {p.path: p for p in usage.parameters}
    assert rows(usage) == [
        ("x", 0, "used"),
        ("w", 1, "used"),
        ("b", 2, "used"),
        ("step", 3, "unused"),
    ]
    assert (by_path["x"].shape, by_path["x"].hlo_shape) == ("f32[16,8]", "f32[4,8]")
    assert (by_path["w"].shape, by_path["w"].hlo_shape) == ("f32[8,8]", "f32[8,4]")
    # XLA chose where the donated buffer goes: the updated weights, result 1.
    assert by_path["w"].aliases_output == 1
    assert by_path["x"].sharding_attribute == "{devices=[4,1,2]<=[8] last_tile_dim_replicate}"
    # The sharding the caller gave reads the same as before optimization.
    assert by_path["x"].sharding == "P('data', None) over mesh(data=4, model=2)"


def test_memory_kinds_of_host_arguments():
    usage = sample_usage("params_sharded", "host_offloaded", "host_offloaded_args")
    by_path = {p.path: p for p in usage.parameters}
    assert rows(usage) == [("x", 0, "used"), ("cache", 1, "used"), ("scratch", None, "pruned")]
    assert by_path["cache"].memory_kind == "pinned_host"
    assert by_path["x"].memory_kind == "device"


# --------------------------------------------------------------------------- dumps


def test_a_dump_names_parameters_from_their_locations():
    usage = usage_of(str(DUMPS / "mlp.stablehlo.mlir"))
    assert not usage.from_python
    assert [p.path for p in usage.parameters][:2] == ["params[0]['b']", "params[0]['w']"]
    assert [p.position for p in usage.parameters] == list(range(len(usage.parameters)))
    assert all(p.status == "used" for p in usage.parameters)
    assert {f.name for f in usage.functions} == {"dense", "head", "relu"}


def test_an_optimized_hlo_dump_has_no_private_calls_to_check():
    usage = usage_of(str(DUMPS / "mlp.after_optimizations.hlo"))
    assert usage.totals.arguments == 7
    assert all(p.status == "used" for p in usage.parameters)
    # The fused computations beside the fusions are never called.
    assert usage.functions == ()


@pytest.fixture
def jax_exports(corpus):
    return corpus / "jax" / "export_back_compat_test_data"


@pytest.mark.corpus
def test_an_exported_artifact_with_a_platform_index(jax_exports):
    path = jax_exports / "export_with_multiple_meshes" / "serialization_v12.jax_exported.fb"
    usage = usage_of(str(path))
    assert usage.from_python
    assert [(q.hlo_index, q.kind) for q in usage.implicit] == [(0, "platform index")]
    assert [p.hlo_index for p in usage.parameters] == list(range(1, 9))
    assert [p.path for p in usage.parameters][:2] == ["inputs[0]", "inputs[1]"]
    assert usage.parameters[0].sharding == "P(None, 'x2') over mesh(x1=1, x2=2)"
    assert usage.parameters[4].sharding == "P('y2', None) over mesh(y2=2, y1=1)"


@pytest.mark.corpus
def test_an_unused_platform_index_and_a_host_argument(jax_exports):
    path = jax_exports / "export_with_memory_space" / "serialization_v12.jax_exported.fb"
    usage = usage_of(str(path))
    # The module returns its argument: nothing depends on the platform.
    assert [(q.kind, q.status) for q in usage.implicit] == [("platform index", "unused")]
    [x] = usage.parameters
    assert (x.path, x.hlo_index, x.memory_kind) == ("x", 1, "pinned_host")


@pytest.mark.corpus
def test_a_shape_polymorphic_export_whose_wrapped_main_ignores_an_argument(jax_exports):
    # JAX's old shape-polymorphic wrapper: main reads `a` only for its dimension
    # sizes and passes it on to `_wrapped_jax_export_main`, which never reads it.
    path = jax_exports / "stablehlo_dynamic_rng_bit_generator" / "data_2023_06_17.mlir"
    usage = usage_of(str(path))
    # Named from `jax.arg_info` (the locations are unknown).
    assert rows(usage) == [("key", 0, "used"), ("a", 1, "used")]
    [wrapped] = usage.functions
    assert wrapped.name == "_wrapped_jax_export_main"
    assert [(p.index, p.name, p.shape) for p in wrapped.unused] == [(3, "a", "f32[?,?]")]


@pytest.mark.corpus
@pytest.mark.parametrize(
    ("name", "sharding"),
    [
        ("data_2025_06_30_tpu_shardy.mlir", "P('a',) over mesh(a=1)"),  # sdy.mesh op
        ("data_2025_04_07_tpu_shardy.mlir", "P('a',) over mesh(a=1)"),  # round-trip form
        ("data_2025_06_30_tpu_gspmd.mlir", "replicated"),  # mhlo.sharding
    ],
)
def test_shardings_and_memory_kinds_of_jax_exports(jax_exports, name, sharding):
    usage = usage_of(str(jax_exports / "annotate_data_placement" / name))
    assert [(p.path, p.sharding, p.memory_kind) for p in usage.parameters] == [
        ("x", sharding, "device"),
        ("y", sharding, "pinned_host"),
    ]


@pytest.mark.corpus
def test_input_output_alias_of_a_module_converted_from_hlo(corpus):
    usage = usage_of(str(corpus / "xla" / "xla" / "tools" / "data" / "must_alias.hlo"))
    [a] = usage.parameters
    assert (a.path, a.donated, a.aliases_output) == ("a", True, 0)


@pytest.mark.corpus
def test_donation_attributes_of_an_mpmd_module(corpus):
    path = (
        corpus / "shardy/shardy/dialect/mpmd/transforms/export/test/mark_aliasing_and_donation.mlir"
    )
    usage = usage_of(str(path))
    assert [(p.donated, p.aliases_output) for p in usage.parameters] == [
        (True, 1),
        (False, None),
        (True, 0),
    ]


@pytest.mark.corpus
def test_a_real_model_train_step(corpus):
    # Llama 3.1 8B's train step (XLA's benchmark HLO): every parameter is a weight,
    # an optimizer state or a step counter, aliased to the output of the same index
    # (`input_output_alias={ {0}: (0, {}, may-alias), ... }` in the header).
    path = corpus / "xla/xla/tools/benchmarks/hlo/hlo_llama31_8b_bf16_1x8.hlo"
    usage = usage_of(str(path))
    assert usage.totals.arguments == 881
    assert usage.totals.unused == 0
    first = usage.parameters[:3]
    assert [(p.path, p.shape, p.sharding) for p in first] == [
        ("param", "s32[]", "replicated"),
        ("param.1", "f32[4096]", "replicated"),
        ("param.13", "f32[512,14336]", "tiled [8,1]"),
    ]
    assert usage.parameters[4].sharding == "tiled [1,8]"
    aliased = [p for p in usage.parameters if p.aliases_output is not None]
    header = path.read_text().partition("\n")[0]
    assert len(aliased) == header.count("may-alias") == 876
    assert all(p.aliases_output == p.hlo_index for p in aliased)
    assert usage.parameters[2].bytes == 512 * 14336 * 4


@pytest.mark.corpus
def test_bf16_parameters_have_a_size(corpus):
    path = corpus / "xla/xla/tools/benchmarks/hlo/hlo_mixtral_8x7b_bf16_2x8.hlo"
    usage = usage_of(str(path))
    bf16 = [p for p in usage.parameters if p.shape.startswith("bf16")]
    assert bf16 and all(p.bytes is not None for p in bf16)
    assert bf16[0].shape == "bf16[4096]" and bf16[0].bytes == 8192


# --------------------------------------------------------------------------- readable shardings


@pytest.mark.parametrize(
    ("text", "readable"),
    [
        ("{replicated}", "replicated"),
        ("{maximal device=3}", "device 3"),
        ("{manual}", "manual"),
        ("{devices=[8,1]<=[8]}", "tiled [8,1]"),
        ("{devices=[4,1,2]<=[8] last_tile_dim_replicate}", "tiled [4,1], replicated ×2"),
        ("{devices=[2,1,4]<=[8] last_tile_dims={manual}}", "tiled [2,1], manual ×4"),
        ('{devices=[2,2]0,1,2,3 metadata={op_name="x"}}', "tiled [2,2]"),
        ("{{replicated}, {maximal device=0}}", "(replicated; device 0)"),
    ],
)
def test_hlo_shardings_read_as_tiles(text, readable):
    assert parse_hlo_sharding(text).words == readable


@pytest.mark.parametrize(
    ("text", "readable"),
    [
        ('#sdy.sharding<@mesh, [{"a"}, {}]>', "P('a', None) over mesh(a=2, b=4)"),
        ('#sdy.sharding<@mesh, [{"a", "b"}]>', "P(('a', 'b'),) over mesh(a=2, b=4)"),
        ("#sdy.sharding<@mesh, [{}, {}]>", "P() over mesh(a=2, b=4)"),
        (
            '#sdy.sharding<@mesh, [{"a"}, {}], replicated={"b"}>',
            "P('a', None) replicated(b) over mesh(a=2, b=4)",
        ),
        ('#sdy.sharding<@mesh, [{"a", ?}]>', "P('a',) (? open) over mesh(a=2, b=4)"),
        ('#sdy.sharding<mesh<["x"=8]>, [{"x"}]>', "P('x',) over mesh(x=8)"),
        ("#sdy.sharding<@maximal_mesh_0, []>", "P() on device 0"),
    ],
)
def test_sdy_shardings_read_as_partition_specs(text, readable):
    meshes = {
        "mesh": parse_mesh("mesh", '#sdy.mesh<["a"=2, "b"=4]>'),
        "maximal_mesh_0": parse_mesh("maximal_mesh_0", "#sdy.mesh<[], device_ids=[0]>"),
    }
    assert parse_sdy_sharding(text).words(meshes) == readable

"""Compute placement, memory kinds, transfers, shardings and collectives, on real
lowerings of the samples and on corpus modules."""

import re

import pytest

from conftest import CORPUS, SAMPLES, line_of, require_corpus
from hloscope.analyses.placement import analyze_placement
from hloscope.ir import layout as ir_layout
from hloscope.ir import parse
from hloscope.ir.types import type_bytes
from hloscope.sources import loader

COMPUTE_ON = SAMPLES / "compute_on.py"
MEMORY_KINDS = SAMPLES / "memory_kinds.py"
SHARDED_MLP = SAMPLES / "sharded_mlp.py"


def placement_of(target, factory=None, compile=False):
    options = loader.LoadOptions(args_factory=factory, optimized=compile)
    return analyze_placement(loader.load(target, options).module)


def sample_placement(name, attr, factory="example_args", compile=False):
    path = f"samples/{name}.py"
    return placement_of(f"{path}:{attr}", f"{path}:{factory}" if factory else None, compile)


def corpus_placement(relative):
    path = require_corpus() / relative
    data = path.read_bytes()
    if path.suffix == ".hlo":
        parsed = parse.parse_hlo_text(data.decode(), str(path))
    else:
        parsed = parse.parse_mlir(data, str(path))
    return analyze_placement(parsed.model), parsed


def at(path, needle):
    """`samples/x.py:LINE` of the line holding `needle`."""
    return f"samples/{path.name}:{line_of(path, needle)}"


def has_source(sources, expected):
    return any(source.endswith(expected) for source in sources if source)


# --------------------------------------------------------------------------- compute_on


def test_compute_on_inside_jit_marks_the_host_ops_with_their_source_line():
    placement = sample_placement("compute_on", "host_inside_jit")
    assert placement.compute_types == {"device": 3, "host": 4}
    assert {p.op for p in placement.placed_ops} == {
        "stablehlo.broadcast_in_dim",
        "stablehlo.multiply",
        "stablehlo.add",
    }
    assert all(p.via == "mark" and p.function == "main" for p in placement.placed_ops)
    (region,) = placement.host_regions
    assert region.function == "main" and region.called_from is None and region.ops == 4
    assert region.sources and has_source(region.sources, at(COMPUTE_ON, "x * 2.0 + 1.0"))
    # It reads x (f32[8,128]) from the device; the scalar constants do not count.
    assert region.device_input_bytes == 8 * 128 * 4
    assert not placement.warnings


def test_a_marked_call_places_the_whole_callee_on_the_host():
    placement = sample_placement("compute_on", "host_call_inside_jit")
    (region,) = placement.host_regions
    assert region.function == "host_helper"
    assert region.called_from == "main"
    assert region.call_source is not None
    assert region.call_source.endswith(at(COMPUTE_ON, "y = host_helper(x)"))
    assert has_source(region.sources, at(COMPUTE_ON, "jnp.sin(x) * 3.0"))
    # The call and all four ops of the callee, the unmarked constant included.
    assert region.ops == 5
    constant = next(p for p in placement.placed_ops if p.op == "stablehlo.constant")
    assert constant.function == "host_helper" and constant.via == "call"
    assert placement.compute_types["device"] == 2  # tanh and add stay on the device


def test_decorator_order_bug_direct_call_is_host_but_the_aot_path_is_device():
    # compute_on outside jax.jit: calling it runs under the host context...
    direct = sample_placement("compute_on", "host_outside_jit")
    assert set(direct.compute_types) == {"host"}
    (region,) = direct.host_regions
    assert region.function == "host_outside_jit" and region.called_from == "main"
    assert has_source(region.sources, at(COMPUTE_ON, "return x * 2.0 + 1.0"))
    # ...and the call that hloscope's own jit made has no user frame, not a line of
    # hloscope's lower.py.
    assert region.call_source is None
    # ...but the jit it wraps, which is what `.lower()` reaches, is all device.
    aot = sample_placement("compute_on", "host_outside_jit.__wrapped__")
    assert set(aot.compute_types) == {"device"}
    assert not aot.regions and not aot.placed_ops


def test_device_only_is_plain():
    placement = sample_placement("compute_on", "device_only")
    assert set(placement.compute_types) == {"device"}
    assert placement.is_plain


def test_placement_after_optimization_keeps_the_host_marks():
    placement = sample_placement("compute_on", "host_call_inside_jit", compile=True)
    # On the CPU, XLA fuses host and device ops together, but the marks survive
    # and the fused_computation copies are not counted twice.
    marked = {p.op for p in placement.placed_ops}
    assert {"stablehlo.sine", "stablehlo.multiply"} <= marked
    assert all(p.via == "mark" for p in placement.placed_ops)
    assert placement.compute_types["host"] == len(placement.placed_ops)


# --------------------------------------------------------------------------- memory kinds


def test_out_shardings_in_host_memory():
    placement = sample_placement("memory_kinds", "host_output")
    (result,) = placement.memory
    assert (result.kind, result.memory_kind, result.host) == ("result", "pinned_host", True)
    (transfer,) = placement.transfers
    assert transfer.kind == "annotate_device_placement"
    assert (transfer.source_memory, transfer.target_memory) == ("device", "pinned_host")
    assert transfer.moves and transfer.bytes == 256 * 1024 * 4
    assert "device -> pinned_host" in transfer.detail


def test_host_memory_result_after_optimization_is_s5():
    # XLA's converter drops the entry layout's memory space; hloscope recovers it.
    placement = sample_placement("memory_kinds", "host_output", compile=True)
    (result,) = placement.memory
    assert (result.memory_kind, result.memory_space, result.host) == ("S(5)", 5, True)


def test_device_compute_on_a_host_memory_argument_is_warned_about():
    placement = sample_placement("memory_kinds", "host_input")
    argument = next(m for m in placement.memory if m.kind == "argument")
    assert (argument.value, argument.name, argument.memory_kind) == ("%arg0", "x", "pinned_host")
    (warning,) = placement.warnings
    assert warning.kind == "device_compute_on_host_memory"
    assert "argument x" in warning.message and "stablehlo.multiply" in warning.message
    assert has_source(warning.sources, at(MEMORY_KINDS, "return x * 2.0"))
    # The annotation that keeps the result on the device moves nothing.
    (transfer,) = placement.transfers
    assert transfer.target_memory == "device" and not transfer.moves
    # After optimization the argument is in S(5) and the fusion still reads it.
    compiled = sample_placement("memory_kinds", "host_input", compile=True)
    (argument,) = [m for m in compiled.memory if m.kind == "argument"]
    assert argument.memory_kind == "S(5)" and argument.host
    assert [w.kind for w in compiled.warnings] == ["device_compute_on_host_memory"]


def test_device_put_to_host_memory_and_back():
    # On the CPU, device_put inside jit lowers to nothing...
    cpu = sample_placement("memory_kinds", "offload")
    assert not cpu.transfers
    # ...lowered for the TPU, both moves are there, each with its line.
    placement = placement_of("samples/memory_kinds.py:offload_for_tpu")
    to_host, to_device = placement.transfers
    assert (to_host.source_memory, to_host.target_memory) == ("device", "pinned_host")
    assert (to_device.source_memory, to_device.target_memory) == ("pinned_host", "device")
    assert has_source(to_host.sources, at(MEMORY_KINDS, "Space.Host)"))
    assert has_source(to_device.sources, at(MEMORY_KINDS, "Space.Device)"))
    kinds = {m.name: m.memory_kind for m in placement.memory}
    assert kinds == {"result[0]": "device", "result[1]": "pinned_host"}
    # Compiled for the CPU: the annotations are gone, the host output is in S(5).
    compiled = placement_of("samples/memory_kinds.py:offload_for_tpu", compile=True)
    assert [(m.value, m.memory_kind) for m in compiled.memory] == [("result 1", "S(5)")]


def test_compute_on2_host_region_writing_to_host_memory():
    placement = sample_placement("memory_kinds", "host_compute_to_host_memory")
    (region,) = placement.host_regions
    assert region.function == "compute_on" and region.called_from == "main"
    assert has_source(region.sources, at(MEMORY_KINDS, "jnp.sin(x) * 2.0"))
    (transfer,) = placement.transfers
    assert transfer.target_memory == "pinned_host"
    # 1 MiB of device values feed the host region: a copy on every call.
    assert region.device_input_bytes == 1 << 20
    assert [w.kind for w in placement.warnings] == ["large_host_input"]
    quiet = analyze_placement(
        loader.load(
            "samples/memory_kinds.py:host_compute_to_host_memory",
            loader.LoadOptions(args_factory="samples/memory_kinds.py:example_args"),
        ).module,
        large_host_input_bytes=(1 << 20) + 1,
    )
    assert not quiet.warnings


def test_python_callback_is_a_round_trip_to_the_host():
    placement = sample_placement("memory_kinds", "with_callback")
    (transfer,) = placement.transfers
    assert transfer.kind == "host_callback"
    assert (transfer.source_memory, transfer.target_memory) == ("device", "host")
    assert transfer.bytes == 256 * 1024 * 4
    assert "python_cpu_callback" in transfer.detail and "receives 4 B" in transfer.detail
    assert has_source(transfer.sources, at(MEMORY_KINDS, "jax.pure_callback("))


# --------------------------------------------------------------------------- sharding


def test_sharded_mlp_before_compilation_has_mesh_and_shardings():
    placement = sample_placement("sharded_mlp", "mlp")
    (mesh,) = placement.meshes
    assert (mesh.name, mesh.axes, mesh.devices) == ("mesh", (("data", 4), ("model", 2)), 8)
    assert placement.partitions == 8
    arguments = {s.name: s.sharding for s in placement.shardings if s.kind == "argument"}
    assert arguments == {
        "x": '#sdy.sharding<@mesh, [{"data"}, {}]>',
        "w1": '#sdy.sharding<@mesh, [{}, {"model"}]>',
        "w2": '#sdy.sharding<@mesh, [{"model"}, {}]>',
    }
    (result,) = [s for s in placement.shardings if s.kind == "result"]
    assert result.sharding == '#sdy.sharding<@mesh, [{"data"}, {}]>'
    (constraint,) = [s for s in placement.shardings if s.kind == "constraint"]
    assert constraint.source is not None
    assert constraint.source.endswith(at(SHARDED_MLP, "with_sharding_constraint"))
    assert not placement.collectives  # the partitioner has not run yet


def test_sharded_mlp_after_compilation_has_collectives():
    placement = sample_placement("sharded_mlp", "mlp", compile=True)
    (collective,) = placement.collectives
    assert (collective.op, collective.count, collective.async_count) == ("all_reduce", 1, 0)
    # Per device: 32/4 rows of 64 floats.
    assert collective.bytes == 8 * 64 * 4
    assert has_source(collective.sources, at(SHARDED_MLP, "return h @ w2"))
    shardings = {s.name or s.value: s.sharding for s in placement.shardings}
    assert shardings["x"] == "{devices=[4,1,2]<=[8] last_tile_dim_replicate}"
    # The result's sharding comes from the module's spmd_output_sharding.
    assert shardings["result 0"] == "{devices=[4,1,2]<=[8] last_tile_dim_replicate}"


def test_shard_map_is_a_manual_computation_with_an_explicit_all_reduce():
    placement = sample_placement("sharded_mlp", "mlp_shard_map")
    (manual,) = placement.manual_computations
    assert '"data", "model"' in manual.manual_axes
    assert manual.in_shardings.count("@mesh") == 3
    (collective,) = placement.collectives
    assert collective.op == "all_reduce"
    assert has_source(collective.sources, at(SHARDED_MLP, 'psum(h @ w2, "model")'))


# --------------------------------------------------------------------------- corpus


@pytest.mark.corpus
def test_corpus_s5_entry_parameter_is_host_memory():
    placement, parsed = corpus_placement(
        "xla-cc-embedded-hlo/xla/hlo/transforms/host_offloader_test.008.hlo"
    )
    (argument,) = placement.memory
    assert (argument.value, argument.memory_kind, argument.host) == ("%arg0", "S(5)", True)
    entry = parsed.model.entry
    assert entry is not None
    assert entry.arguments[0].attributes[ir_layout.ENTRY_SHAPE_ATTRIBUTE] == (
        '"bf16[2,16,16]{2,1,0:T(8,128)(2,1)S(5)}"'
    )
    # The MoveToDevice inside the while body.
    (move,) = [t for t in placement.transfers if t.kind == "MoveToDevice"]
    assert (move.source_memory, move.target_memory) == ("host", "device")


@pytest.mark.corpus
def test_corpus_s5_in_a_tuple_result_and_in_xla_own_form():
    placement, _ = corpus_placement("xla/xla/backends/gpu/tests/offload_scan_output.hlo")
    assert [(m.value, m.memory_kind) for m in placement.memory] == [("result 0", "S(5)")]
    # A module whose MLIR conversion fails is read in XLA's own form; its S(5)
    # parameter is recovered too.
    native, parsed = corpus_placement(
        "xla-cc-embedded-hlo/xla/hlo/transforms/host_offloader_test.051.hlo"
    )
    assert parsed.format == "hlo-native"
    assert [(m.value, m.memory_kind) for m in native.memory] == [("%arg0", "S(5)")]


@pytest.mark.corpus
def test_corpus_async_copies_between_memory_spaces():
    placement, _ = corpus_placement(
        "xla-cc-embedded-hlo/xla/backends/gpu/transforms/stream_attribute_annotator_test.003.hlo"
    )
    moves = [(t.kind, t.source_memory, t.target_memory) for t in placement.transfers]
    assert moves.count(("copy-start", "device", "S(5)")) == 2
    assert moves.count(("copy-start", "S(5)", "device")) == 2
    assert all(t.bytes == 1024 * 4 for t in placement.transfers)


@pytest.mark.corpus
def test_corpus_move_to_host_and_device():
    placement, _ = corpus_placement(
        "xla-cc-embedded-hlo/xla/hlo/transforms/host_offloader_test.046.hlo"
    )
    assert [t.kind for t in placement.transfers] == ["MoveToHost", "MoveToHost", "MoveToDevice"]
    assert all(t.shape == "f32[16,256]" for t in placement.transfers)


@pytest.mark.corpus
def test_corpus_host_call_places_callees_transitively():
    placement, _ = corpus_placement("xla/xla/backends/cpu/tests/thunk_coverage/host_offload.hlo")
    # Only the call is marked; every op of cpu_main and of what it calls is host.
    assert set(placement.compute_types) == {"host"}
    (region,) = placement.host_regions
    assert (region.function, region.called_from) == ("cpu_main", "main")
    assert {p.function for p in placement.placed_ops} >= {"cpu_main", "called_computation"}
    (warning,) = placement.warnings
    assert warning.kind == "call_mark_not_in_body" and "@cpu_main" in warning.message
    (collective,) = placement.collectives
    assert collective.op == "all_reduce" and collective.functions == ("cpu_main",)


@pytest.mark.corpus
def test_corpus_execution_thread_host():
    placement, _ = corpus_placement("xla-cc-embedded-hlo/xla/service/gpu/gpu_compiler_test.046.hlo")
    host = [p for p in placement.placed_ops if p.compute_type == "host"]
    assert {p.function for p in host} == {"host_fn", "async_wrapped"}
    assert all(p.via == "thread" for p in host)


@pytest.mark.corpus
def test_corpus_jax_export_with_memory_kinds_and_placement_annotation():
    placement, _ = corpus_placement(
        "jax/export_back_compat_test_data/annotate_data_placement/data_2025_06_30_tpu_shardy.mlir"
    )
    kinds = [(m.value, m.name, m.memory_kind) for m in placement.memory]
    assert kinds == [
        ("%arg0", "x", "device"),
        ("%arg1", "y", "pinned_host"),
        ("result 0", "result", "pinned_host"),
    ]
    (transfer,) = placement.transfers
    assert transfer.target_memory == "pinned_host"
    (mesh,) = placement.meshes
    assert mesh.axes == (("a", 1),)
    (warning,) = placement.warnings
    assert warning.kind == "device_compute_on_host_memory" and "argument y" in warning.message


@pytest.mark.corpus
def test_corpus_gspmd_sharding_custom_calls():
    placement, _ = corpus_placement(
        "jax/export_back_compat_test_data/tpu_Sharding/data_2025_06_30_gspmd.mlir"
    )
    kinds = [s.kind for s in placement.shardings]
    assert kinds.count("constraint") == 4
    assert kinds.count("full_to_shard") == 1 and kinds.count("shard_to_full") == 1
    (full_to_shard,) = [s for s in placement.shardings if s.kind == "full_to_shard"]
    assert full_to_shard.sharding == "{manual}" and full_to_shard.function == "wrapped"
    assert [(c.op, c.count) for c in placement.collectives] == [("collective_permute", 1)]


@pytest.mark.corpus
def test_corpus_shardy_manual_computation_and_meshes():
    placement, _ = corpus_placement(
        "jax/export_back_compat_test_data/tpu_Sharding/data_2025_06_30_shardy.mlir"
    )
    (manual,) = placement.manual_computations
    assert '"a"' in manual.manual_axes
    multiple, _ = corpus_placement(
        "jax/export_back_compat_test_data/export_with_multiple_meshes/serialization_v12.mlirbc"
    )
    assert [m.name for m in multiple.meshes] == ["mesh", "mesh_0"]


@pytest.mark.corpus
def test_corpus_async_collectives():
    placement, _ = corpus_placement(
        "xla-cc-embedded-hlo/xla/hlo/transforms/collectives/async_collective_replacer_test.003.hlo"
    )
    assert [(c.op, c.count, c.async_count) for c in placement.collectives] == [("all_reduce", 1, 1)]
    # XLA's own form (the conversion fails): an async group calling a computation.
    native, parsed = corpus_placement(
        "xla-cc-embedded-hlo/xla/service/gpu/execution_stream_assignment_test.008.hlo"
    )
    assert parsed.format == "hlo-native"
    assert sorted((c.op, c.count, c.async_count) for c in native.collectives) == [
        ("all_gather", 1, 1),
        ("collective_permute", 1, 1),
    ]


@pytest.mark.corpus
def test_corpus_large_model_collectives_match_the_hlo_text():
    relative = "xla/xla/tools/benchmarks/hlo/hlo_llama31_8b_bf16_1x8.hlo"
    placement, _ = corpus_placement(relative)
    text = (CORPUS / relative).read_text()
    counts = {c.op: c.count for c in placement.collectives}
    assert counts["all_reduce"] == len(re.findall(r"\ball-reduce\(", text))
    assert counts["all_gather"] == len(re.findall(r"\ball-gather\(", text))
    assert all(c.bytes is not None and c.bytes > 0 for c in placement.collectives)
    parameters = len(re.findall(r"=\s*\S+\s+parameter\(\d+\), sharding=", text.split("\nENTRY")[1]))
    assert sum(1 for s in placement.shardings if s.kind == "argument") == parameters


# --------------------------------------------------------------------------- pieces


def test_bf16_has_a_size():
    # type_bytes returned None for bf16, so collectives of bf16 models had no size.
    assert type_bytes("tensor<4x8xbf16>") == 64


@pytest.mark.parametrize(
    ("header", "params", "results"),
    [
        (
            "HloModule m, entry_computation_layout={(f32[8]{0:S(5)}, s32[])->f32[8]{0}}, x={1}",
            ["f32[8]{0:S(5)}", "s32[]"],
            ["f32[8]{0}"],
        ),
        (
            "HloModule m, entry_computation_layout={()->(f32[4]{0:S(5)}, f32[4]{0})}",
            [],
            ["f32[4]{0:S(5)}", "f32[4]{0}"],
        ),
        (
            "HloModule m, entry_computation_layout={((f32[2]{0}, /*index=1*/f32[<=3]{0}))->()}",
            ["f32[2]{0}", "f32[<=3]{0}"],
            [],
        ),
    ],
)
def test_entry_computation_layout(header, params, results):
    layout = ir_layout.entry_computation_layout(header + "\n\nENTRY main {}")
    assert layout is not None
    assert ir_layout.entry_layout_shapes(layout) == (params, results)


def test_no_entry_layout():
    assert ir_layout.entry_computation_layout("HloModule m\n") is None


SHARED_CALLEE = """
module @m {
  func.func public @main(%x: tensor<4xf32>) -> tensor<4xf32> {
    %0 = func.call @helper(%x) {mhlo.frontend_attributes = {_xla_compute_type = "host"}}
        : (tensor<4xf32>) -> tensor<4xf32>
    %1 = func.call @helper(%0) : (tensor<4xf32>) -> tensor<4xf32>
    %2 = stablehlo.sine %1 {mhlo.frontend_attributes = {_xla_stream_annotation = "2"}}
        : tensor<4xf32>
    %3 = stablehlo.cosine %2 {mhlo.frontend_attributes = {_xla_compute_type = "sparse"}}
        : tensor<4xf32>
    return %3 : tensor<4xf32>
  }
  func.func private @helper(%x: tensor<4xf32>) -> tensor<4xf32> {
    %0 = stablehlo.exponential %x : tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}
"""


def test_shared_callee_stream_annotation_and_unknown_compute_types():
    module = parse.parse_mlir(SHARED_CALLEE, "shared.mlir").model
    placement = analyze_placement(module)
    # helper is reached by a host call and by a device call: it runs in both.
    assert placement.compute_types == {
        "device": 1,
        "device|host": 1,
        "gpu_stream:2": 1,
        "host": 1,
        "sparse": 1,
    }
    by_op = {p.op: p for p in placement.placed_ops}
    assert by_op["stablehlo.exponential"].compute_type == "device|host"
    assert by_op["stablehlo.exponential"].via == "call"
    assert by_op["stablehlo.sine"].compute_type == "gpu_stream:2"
    assert by_op["stablehlo.cosine"].compute_type == "sparse"
    (host,) = placement.host_regions
    assert (host.function, host.called_from, host.ops) == ("helper", "main", 2)
    assert {r.compute_type for r in placement.other_regions} == {"gpu_stream:2", "sparse"}
    # The host call's body has no host mark of its own.
    assert [w.kind for w in placement.warnings] == ["call_mark_not_in_body"]

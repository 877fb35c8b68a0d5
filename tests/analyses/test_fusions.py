"""Fusions of optimized modules: HLO names recovered through the MLIR conversion, the
fusion analysis on the samples (source lines, op names, kinds), and the jit
granularity question (the outer jit against the inner jits alone)."""

import re

import pytest

from conftest import DUMPS, SAMPLES, line_of, sample
from forms_support import form
from hloscope import reports
from hloscope.analyses.fusions import (
    analyze_fusions,
    jit_owners,
    jit_path,
    split_op_name,
    user_jit_path,
)
from hloscope.ir import hlo_names, parse
from hloscope.sources import loader

NESTED = SAMPLES / "nested_jits.py"
GRANULARITY = SAMPLES / "jit_granularity.py"


def hlo_fusion_names(hlo_text: str) -> list[str]:
    """Names of the fusion instructions of the ENTRY computation of an HLO text."""
    entry = hlo_text[hlo_text.index("\nENTRY") :]
    return re.findall(r"^\s*(?:ROOT\s+)?%?([\w.-]+) = \S+ fusion\(", entry, re.MULTILINE)


def compiled(target: str, factory: str):
    """The optimized module of a sample entrypoint, compiled here."""
    return loader.load(target, loader.LoadOptions(args_factory=factory, optimized=True))


def source(path, needle):
    return f"samples/{path.name}:{line_of(path, needle)}"


# --------------------------------------------------------------------------- HLO names


def test_hlo_names_of_fusions_are_recovered_from_hlo_text():
    text = (DUMPS / "mlp.after_optimizations.hlo").read_text()
    model = parse.parse_hlo_text(text, "mlp").model
    fusions = [op for op in model.ops if op.name == "mhlo.fusion"]
    # The conversion names ops after their metadata (jit(mlp)/jit(dense)/...), so only
    # the recovered HLO names say which fusion is which.
    assert sorted(op.hlo_name for op in fusions) == sorted(hlo_fusion_names(text))
    assert "broadcast_maximum_fusion" not in {op.location.name for op in fusions}
    tanh = next(op for op in model.ops if op.name == "stablehlo.tanh" and op.function == "main")
    assert tanh.hlo_name == "tanh.2"
    assert tanh.location.name == "jit(mlp)/jit(head)/tanh"
    # Terminators come from no instruction.
    assert all(op.hlo_name is None for op in model.ops if op.name == "mhlo.return")


def test_backend_kinds_of_fusions_are_kept():
    text = (DUMPS / "mlp.after_optimizations.hlo").read_text()
    model = parse.parse_hlo_text(text, "mlp").model
    configs = model.backend_configs
    assert set(configs) == {"ynn_fusion", "ynn_fusion.1", "ynn_fusion.2"}
    assert all('"kind":"__ynn_fusion"' in config for config in configs.values())


def test_the_same_names_through_every_hlo_path():
    proto = (DUMPS / "mlp.after_optimizations.hlo.pb").read_bytes()
    text = (DUMPS / "mlp.after_optimizations.hlo").read_text()
    child = parse.parse_hlo_proto(proto, "mlp").model
    in_process = parse.parse_hlo_proto(proto, "mlp", trusted=True).model
    from_text = parse.parse_hlo_text(text, "mlp").model
    names = [op.hlo_name for op in child.ops]
    assert names == [op.hlo_name for op in in_process.ops]
    assert sum(name is not None for name in names) > len(names) // 2

    def by_function(model):
        return {
            name: [op.hlo_name for op in model.function_ops(function)]
            for name, function in model.functions.items()
        }

    # The text lists the computations in another order; each one's ops are the same.
    assert by_function(child) == by_function(from_text)


def test_metadata_is_removed_and_nothing_else():
    import jaxlib._hlo as hlo

    proto = (DUMPS / "mlp.after_optimizations.hlo.pb").read_bytes()
    rewritten = hlo_names.without_metadata(proto)
    assert rewritten is not None
    stripped, configs, _opcodes, _async_types = rewritten
    original = hlo.HloModule.from_serialized_hlo_module_proto(proto).to_string()
    module = hlo.HloModule.from_serialized_hlo_module_proto(stripped).to_string()
    assert "metadata=" in original and "metadata=" not in module

    def computations(text):
        # XLA prints the stack frame index (FileNames, ...) only when metadata uses it.
        blocks = (block.strip() for block in text.split("\n\n"))
        return [block for block in blocks if block.startswith(("%", "ENTRY"))]

    assert computations(re.sub(r",? metadata=\{[^}]*\}", "", original)) == computations(module)
    assert set(configs) == {"ynn_fusion", "ynn_fusion.1", "ynn_fusion.2"}
    assert hlo_names.without_metadata(b"\xff\xff not a proto") is None


@pytest.mark.corpus
def test_names_in_xlas_own_form(corpus):
    # Its MLIR conversion does not verify. The fusion is started asynchronously in a
    # while body, which XLA prints as `start = ... fusion-start(...)`.
    path = (
        corpus / "xla-cc-embedded-hlo/xla/backends/gpu/tests/dynamic_slice_fusion_v2_test.013.hlo"
    )
    loaded = loader.load(str(path))
    assert loaded.source.ir == "hlo-native"
    analysis = analyze_fusions(loaded.module)
    assert [(f.name, f.kind, f.backend_kind) for f in analysis.fusions] == [
        ("start", "kCustom", "__custom_fusion")
    ]
    fusion = analysis.fusions[0]
    # The loop's body is part of the while, in main, as its region is once converted.
    assert fusion.function == "main"
    assert fusion.op_counts["hlo.custom-call"] == 1
    assert fusion.op_counts["hlo.dynamic-update-slice"] == 1
    assert "hlo.parameter" not in fusion.op_counts
    unfused = {(u.name, u.category) for u in analysis.unfused}
    assert {("fused", "async"), ("while", "control-flow"), ("next_i", "compute")} <= unfused
    # The fused computation's ops run inside the fusion, not on their own.
    assert not any(u.function == "dsf_computation" for u in analysis.unfused)


# --------------------------------------------------------------------------- op names


def test_op_names_split_into_jits():
    assert split_op_name("jit(f)/jit(g)/while/body/add") == [
        "jit(f)",
        "jit(g)",
        "while",
        "body",
        "add",
    ]
    assert split_op_name("jit(f)/slice[start=(0,) limit=(1/2,)]") == [
        "jit(f)",
        "slice[start=(0,) limit=(1/2,)]",
    ]
    assert jit_path("jit(mlp)/jit(dense)/jit(relu)/max") == "jit(mlp)/jit(dense)/jit(relu)"
    assert jit_path("call.3/jit(f)/transpose(jvp(g))/mul") == "jit(f)"
    assert jit_path("reduce_sum") is None


# --------------------------------------------------------------------------- the samples


def test_after_optimization_dump_fusions_carry_the_sample_lines():
    text = (DUMPS / "mlp.after_optimizations.hlo").read_text()
    analysis = analyze_fusions(parse.parse_hlo_text(text, "mlp").model)
    relu = source(NESTED, "return jax.nn.relu(x @ w + b)")
    tanh = source(NESTED, "return jnp.tanh(h).sum(axis=-1)")
    by_name = {f.name: f for f in analysis.fusions}
    assert set(by_name) == set(hlo_fusion_names(text))
    dot = by_name["ynn_fusion"]
    assert (dot.kind, dot.backend_kind) == ("kCustom", "__ynn_fusion")
    assert dot.ops == ("stablehlo.dot",)
    assert dot.sources == (relu,)
    assert dot.op_names == ("jit(mlp)/jit(dense)/dot_general",)
    assert dot.operands == ("f32[8,64]", "f32[64,64]") and dot.results == ("f32[8,64]",)
    assert (dot.operand_bytes, dot.result_bytes) == (8 * 64 * 4 + 64 * 64 * 4, 8 * 64 * 4)
    merged = by_name["maximum_tanh_fusion"]
    assert merged.kind == "kLoop" and merged.backend_kind is None
    assert merged.sources == (relu, tanh)
    assert merged.crosses_jits
    assert merged.jits == (
        "jit(mlp)/jit(dense)",
        "jit(mlp)/jit(dense)/jit(relu)",
        "jit(mlp)/jit(head)",
    )
    assert [f.name for f in analysis.crossing_jits] == ["maximum_tanh_fusion"]
    assert analysis.unfused == ()
    assert analysis.by_kind == {"kLoop": 5, "__ynn_fusion": 3}


def test_sample_mlp_fusions_carry_the_right_lines():
    loaded = compiled("samples/jit_granularity.py:mlp", "samples/jit_granularity.py:example_args")
    analysis = analyze_fusions(loaded.module, source_root=str(SAMPLES.parent))
    matmul = source(GRANULARITY, "y = x @ w")
    bias = source(GRANULARITY, "y = y + b")
    gelu = source(GRANULARITY, "return jax.nn.gelu(y)")
    scale = source(GRANULARITY, "h = jnp.tanh(h * scale)")
    reduction = source(GRANULARITY, "return h.sum(axis=-1)")
    # XLA's metadata gives the constants of gelu (hoisted out of the inner jit) the
    # line that called `layer`.
    call = source(GRANULARITY, "x = layer(x, w, b)")
    dots = [f for f in analysis.fusions if "stablehlo.dot" in f.op_counts]
    assert len(dots) == 2  # one per layer
    for fusion in dots:
        assert fusion.sources == (matmul,)
        assert fusion.op_names == ("jit(mlp)/jit(layer)/dot_general",)
    activations = [f for f in analysis.fusions if "stablehlo.tanh" in f.op_counts]
    assert activations and all({bias, gelu} <= set(f.sources) for f in activations)
    assert all(f.name for f in analysis.fusions)
    assert not any(f.name.startswith("%") for f in analysis.fusions)
    # Every source line is a line of the sample, and the per-line view agrees with the
    # fusions' own sources.
    lines = {line.source: line for line in analysis.lines}
    assert set(lines) == {matmul, bias, gelu, scale, reduction, call}
    for fusion in analysis.fusions:
        for line in fusion.sources:
            assert fusion.name in lines[line].fusions
    assert lines[matmul].fusions == tuple(f.name for f in dots)
    assert sum(line.fused_ops for line in analysis.lines) <= analysis.fused_ops


def test_jit_granularity_outer_jit_fuses_across_inner_jits():
    """How big a jit should be: under the outer jit, XLA fuses the end of the last layer with
    the head; called without it, `layer` and `head` are separate programs and no
    fusion spans both."""
    import jax

    from samples import jit_granularity as sample

    gelu = source(GRANULARITY, "return jax.nn.gelu(y)")
    scale = source(GRANULARITY, "h = jnp.tanh(h * scale)")
    layer_lines = {source(GRANULARITY, n) for n in ("y = x @ w", "y = y + b")} | {gelu}
    head_lines = {scale, source(GRANULARITY, "return h.sum(axis=-1)")}

    # Without the outer jit, the programs that run are the inner jits, in this order.
    jaxpr = jax.make_jaxpr(sample.mlp_without_outer_jit)(*sample.example_args())
    programs = [eqn.params["name"] for eqn in jaxpr.eqns]
    assert programs == ["layer", "layer", "head"]

    root = str(SAMPLES.parent)
    outer = analyze_fusions(
        compiled(
            "samples/jit_granularity.py:mlp", "samples/jit_granularity.py:example_args"
        ).module,
        root,
    )
    alone = {
        name: analyze_fusions(
            compiled(
                f"samples/jit_granularity.py:{name}", f"samples/jit_granularity.py:{args}"
            ).module,
            root,
        )
        for name, args in (("layer", "layer_args"), ("head", "head_args"))
    }

    # Under the outer jit: one fusion holds the last activation and the head's scaling.
    crossing = outer.crossing_jits
    assert len(crossing) == 1
    assert {gelu, scale} <= set(crossing[0].sources)
    assert "jit(mlp)/jit(head)" in crossing[0].jits
    assert any(j.startswith("jit(mlp)/jit(layer)") for j in crossing[0].jits)

    # The inner jits alone: each program's fusions hold only its own lines.
    assert not alone["layer"].crossing_jits and not alone["head"].crossing_jits
    assert all(set(f.sources) <= layer_lines for f in alone["layer"].fusions)
    assert all(set(f.sources) <= head_lines for f in alone["head"].fusions)
    assert not any({gelu, scale} <= set(f.sources) for a in alone.values() for f in a.fusions)

    # Fewer kernels under the outer jit than the three programs run between them.
    separate = [len(alone[name].fusions) for name in programs]
    assert len(outer.fusions) < sum(separate)


def test_nested_jit_samples(cli):
    """Both nested-jit samples compile to the same program under hloscope (it jits what
    it is given); for the one without an outer jit, the report says that calling it
    runs each jit as its own program."""
    outer = cli("fusions", *sample("nested_jits", "mlp"), "--json").json()
    bare = cli("fusions", *sample("nested_jits", "mlp_without_outer_jit"), "--json").json()
    assert [f["ops"] for f in outer["fusions"]] == [f["ops"] for f in bare["fusions"]]
    assert [f["name"] for f in outer["fusions"] if f["crosses_jits"]] == ["maximum_tanh_fusion"]
    assert not any("not jitted" in note for note in outer["notes"])
    note = next(note for note in bare["notes"] if "not jitted" in note)
    assert "(dense, head)" in note and "separate XLA programs" in note
    relu = source(NESTED, "return jax.nn.relu(x @ w + b)")
    assert {line["source"] for line in outer["lines"]} >= {relu}
    line = next(line for line in outer["lines"] if line["source"] == relu)
    assert line["code"] == "return jax.nn.relu(x @ w + b)"


@pytest.mark.slow
@pytest.mark.parametrize("xla", [False, True], ids=["converted", "xla-form"])
def test_fusions_are_listed_in_xlas_schedule(xla):
    """The fusions are listed as the program runs them: in the order XLA's own text of
    the same compile prints the entry's fusion instructions (a scheduled module's
    computations print in schedule order), read converted (whose ops the converter
    orders by their dependencies, not by the schedule) and in XLA's own form."""
    with form(xla):
        loaded = compiled("samples/params.py:train_step", "samples/params.py:train_step_args")
    module = loaded.module
    assert module.entry is not None
    assert loaded.compilation is not None
    truth = hlo_fusion_names(loaded.compilation.hlo_text)
    assert len(truth) > 2
    listed = [f.name for f in analyze_fusions(module).fusions if f.function == module.entry.name]
    assert listed == truth
    if not xla:
        # The converter's order is not the schedule here: the order is the analysis's.
        built = [
            op.hlo_name
            for op in module.function_ops(module.entry)
            if op.name == "mhlo.fusion" and op.parent is module.entry.op
        ]
        assert built != truth and sorted(built) == sorted(truth)


# --------------------------------------------------------------------------- corpus


@pytest.mark.corpus
@pytest.mark.slow
def test_real_model_compiled_for_the_cpu_has_named_fusions(corpus):
    path = corpus / "xla/xla/backends/cpu/benchmarks/hlo/resnet50_keras_jax_f32.hlo"
    loaded = loader.load(str(path), loader.LoadOptions(optimized=True))
    assert loaded.source.stage == "optimized" and loaded.source.ir == "hlo"
    analysis = analyze_fusions(loaded.module)
    assert len(analysis.fusions) > 100
    assert {"kLoop", "__ynn_fusion"} <= set(analysis.by_kind)
    names = [f.name for f in analysis.fusions]
    assert len(set(names)) == len(names)
    assert not any(name.startswith("%") for name in names)
    named = [f for f in analysis.fusions if f.op_names]
    assert len(named) > 0.9 * len(analysis.fusions)
    assert any(name.startswith("jit(predict_step)/conv") for f in named for name in f.op_names)
    # Names like `broadcast.6`, which XLA writes into metadata, are not op names.
    assert not any(re.fullmatch(r"[\w-]+\.\d+", n) for f in named for n in f.op_names)


@pytest.mark.corpus
@pytest.mark.slow
def test_real_jax_module_compiled_for_the_cpu_maps_fusions_to_lines(corpus):
    path = (
        corpus
        / "xla/xla/backends/cpu/benchmarks/hlo/jax.issue.33666.linx.frag_0428.module_0004.hlo"
    )
    loaded = loader.load(str(path), loader.LoadOptions(optimized=True))
    analysis = analyze_fusions(loaded.module)
    assert analysis.fusions
    script = "/pscratch/sd/c/carag/LINX/scripts/frag_mwe_short.py"
    assert {line.source.rpartition(":")[0] for line in analysis.lines} == {script}
    assert any(f"{script}:8" in f.sources for f in analysis.fusions)
    assert any("jit(_uniform)" in name for f in analysis.fusions for name in f.op_names)
    # The random-number loop stays a while loop; XLA copies its carried values.
    assert analysis.unfused_by_category.get("control-flow", 0) >= 1
    assert analysis.unfused_by_category.get("copy", 0) >= 1


def test_python_api_compiles_what_it_is_given():
    # The command line asks for --compile before compiling a dump; the API compiles.
    report = reports.fusions_report(loader.load("samples/dumps/mlp.stablehlo.mlir"))
    assert report.source.stage == "optimized"
    assert report.timings.compile_seconds is not None
    assert report.module == "jit_mlp"
    assert {f.name for f in report.analysis.crossing_jits} == {"maximum_tanh_fusion"}
    relu = source(NESTED, "return jax.nn.relu(x @ w + b)")
    assert report.line_texts[relu] == "return jax.nn.relu(x @ w + b)"


# --------------------------------------------------------------------------- whose jits

OWNED = """
#user = loc("main"("/home/me/train.py":10:3))
#lib = loc("helper"("/env/lib/python3.11/site-packages/lib/h.py":4:1))
#mine = loc("inner"("/home/me/train.py":20:5))
#in_lib = loc(callsite(#lib at #user))
#in_mine = loc(callsite(#mine at #user))
module @m {
  func.func public @main(%x: tensor<4xf32>) -> tensor<4xf32> {
    %0 = stablehlo.add %x, %x : tensor<4xf32> loc("jit(main)/jit(helper)/add"(#in_lib))
    %1 = stablehlo.multiply %0, %0 : tensor<4xf32> loc("jit(main)/jit(inner)/mul"(#in_mine))
    %2 = stablehlo.tanh %1 : tensor<4xf32> loc("jit(main)/jit(dynamic_slice_in_dim)/tanh"(#user))
    %3 = stablehlo.exponential %2 : tensor<4xf32> loc("jit(main)/jit(nameless)/exp")
    return %3 : tensor<4xf32>
  }
}
"""


def test_whose_jit_is_read_from_the_frames_of_its_ops():
    module = parse.parse_mlir(OWNED, "owned.mlir").model
    owners = jit_owners(module)
    assert owners == {
        "jit(main)": "user",
        "jit(main)/jit(helper)": "library",  # its function's frame is in site-packages
        "jit(main)/jit(inner)": "user",
        # No frame is its function's: JAX leaves its own frames out.
        "jit(main)/jit(dynamic_slice_in_dim)": "library",
    }
    # No named frames at all: unknown, counted as the user's.
    assert "jit(main)/jit(nameless)" not in owners
    assert user_jit_path("jit(main)/jit(helper)", owners) == "jit(main)"
    assert user_jit_path("jit(main)/jit(inner)", owners) == "jit(main)/jit(inner)"
    assert user_jit_path("jit(main)/jit(nameless)", owners) == "jit(main)/jit(nameless)"

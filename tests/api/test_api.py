"""The Python API (`hloscope.inspect`, `hloscope.diff`): every input kind, every
report, the reprs, agreement with the command line's JSON, and errors raised to the
caller."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import pytest
from rich.console import Console

import hloscope
from conftest import DUMPS, ROOT, sample
from hloscope import HloscopeError
from hloscope.sources import loader
from hloscope.sources.entrypoint import import_target
from hloscope.sources.target import EntrypointTarget, parse_target

MLP_MLIR = DUMPS / "mlp.stablehlo.mlir"
MLP_REL = str(MLP_MLIR.relative_to(ROOT))
WRAPPED = "samples/wrapped.py"


def sample_object(target: str):
    """The object an entrypoint target names, imported as the command line does."""
    parsed = parse_target(target)
    assert isinstance(parsed, EntrypointTarget)
    return import_target(parsed)


def loss(params, batch):
    pred = batch["x"] @ params["w"] + params["b"]
    return jnp.mean((pred - batch["y"]) ** 2)


PARAMS = {"w": jnp.zeros((16, 4)), "b": jnp.zeros(4), "scale": jnp.ones(())}
BATCH = {"x": jnp.ones((8, 16)), "y": jnp.ones((8, 4)), "mask": jnp.ones(8, bool)}


def scaled(x, n, *, scale):
    return jnp.tanh(x * scale) * n


# --------------------------------------------------------------------------- input kinds


def test_a_plain_function_is_lowered_on_its_arguments():
    insp = hloscope.inspect(jax.grad(loss), PARAMS, BATCH)
    assert isinstance(insp, hloscope.Inspection)
    assert insp.label == f"{__name__}:loss"
    assert insp.source.kind == "entrypoint"
    assert insp.source.format == "python-object"
    assert insp.source.stage == "lowered"
    assert insp.loaded.lowering is not None and insp.loaded.lowering.kind == "function"
    statuses = {p.path: p.status for p in insp.params.usage.parameters}
    assert statuses == {
        "params['b']": "used",
        "params['scale']": "pruned",
        "params['w']": "used",
        "batch['mask']": "pruned",
        "batch['x']": "used",
        "batch['y']": "used",
    }
    assert insp.structure.op_counts["stablehlo.dot_general"] == 2


def test_a_jitted_function_with_static_and_keyword_arguments():
    jitted = jax.jit(scaled, static_argnums=1)
    x = jax.ShapeDtypeStruct((4, 8), jnp.float32)
    insp = hloscope.inspect(jitted, x, 3, scale=jnp.float32(0.5))
    assert insp.loaded.lowering is not None and insp.loaded.lowering.kind == "jitted"
    usage = insp.params.usage
    assert [(p.path, p.status) for p in usage.parameters] == [("x", "used"), ("scale", "used")]
    assert [(s.path, s.value) for s in usage.static] == [("n", "3")]


def test_lowered_compiled_and_exported_objects():
    jitted = jax.jit(scaled, static_argnums=1)
    x = jnp.ones((4, 8))
    lowered = jitted.lower(x, 2, scale=1.5)

    from_lowered = hloscope.inspect(lowered)
    assert from_lowered.loaded.lowering is not None
    assert from_lowered.loaded.lowering.kind == "lowered"
    assert from_lowered.source.stage == "lowered"
    assert from_lowered.label == "<Lowered>"
    assert "stablehlo.tanh" in from_lowered.text()

    from_compiled = hloscope.inspect(lowered.compile())
    assert from_compiled.source.stage == "optimized"
    assert any("carries no lowered module" in note for note in from_compiled.loaded.notes)
    assert from_compiled.optimized() is from_compiled
    assert from_compiled.fusions().analysis.fusions

    exported = jax.export.export(jitted, platforms=["cpu", "cuda"])(x, 2, scale=1.5)
    from_exported = hloscope.inspect(exported)
    assert from_exported.loaded.lowering is not None
    assert from_exported.loaded.lowering.kind == "exported"
    kinds = [p.kind for p in from_exported.params.usage.implicit]
    assert kinds == ["platform index"]
    assert [p.path for p in from_exported.params.usage.parameters] == ["x", "scale"]


def test_a_zero_argument_callable_returning_a_stage_is_called():
    make = sample_object("tests/fixtures/entrypoints.py:make_lowered")
    insp = hloscope.inspect(make)
    assert insp.loaded.lowering is not None and insp.loaded.lowering.kind == "lowered"
    assert insp.structure.op_counts["stablehlo.sine"] == 1


def test_module_text_and_bytes_of_every_format():
    by_file = hloscope.inspect(MLP_MLIR)
    expected = by_file.structure.op_counts

    text = hloscope.inspect(MLP_MLIR.read_text())
    assert text.label == "<string>"
    assert (text.source.kind, text.source.format, text.source.path) == ("dump", "mlir-text", None)
    assert text.structure.op_counts == expected

    for name, fmt in [
        ("mlp.mlirbc", "mlir-bytecode"),
        ("mlp.vhlo.mlirbc", "mlir-bytecode"),
        ("mlp.exported.bin", "jax-exported"),
        ("mlp.after_optimizations.hlo.pb", "hlo-proto"),
        ("mlp.before_optimizations.hlo", "hlo-text"),
    ]:
        insp = hloscope.inspect((DUMPS / name).read_bytes())
        assert insp.label == "<bytes>"
        assert insp.source.format == fmt, name
        assert insp.module.name == "jit_mlp", name
    # The stage comes from the content when there is no file name to go by.
    proto = hloscope.inspect((DUMPS / "mlp.after_optimizations.hlo.pb").read_bytes())
    assert proto.source.stage == "optimized"
    hlo_text = (DUMPS / "mlp.after_optimizations.hlo").read_text()
    assert hloscope.inspect(hlo_text).source.stage == "optimized"


def test_paths_as_str_and_pathlib():
    as_str = hloscope.inspect(MLP_REL)
    as_path = hloscope.inspect(Path(MLP_REL))
    assert as_str.label == as_path.label == MLP_REL
    assert as_str.source.path == MLP_REL
    assert as_str.to_json() == {**as_path.to_json(), "timings": as_str.to_json()["timings"]}


def test_an_entrypoint_string_takes_python_arguments():
    factory = sample_object("samples/nested_jits.py:example_args")
    insp = hloscope.inspect("samples/nested_jits.py:mlp", *factory())
    assert insp.label == "samples/nested_jits.py:mlp"
    assert insp.source.format == "entrypoint"
    assert insp.structure.function("dense") is not None


@pytest.fixture(scope="module")
def xla_dump(tmp_path_factory):
    folder = tmp_path_factory.mktemp("xla_dump")
    script = folder.parent / "make_dump.py"
    script.write_text(
        "import jax, jax.numpy as jnp\n"
        "def step(x, y):\n"
        "    return jnp.tanh(x @ y).sum()\n"
        "def tiny(x):\n"
        "    return x + 1\n"
        "jax.jit(step)(jnp.ones((8, 8)), jnp.ones((8, 8)))\n"
        "jax.jit(tiny)(jnp.ones(3))\n"
    )
    env = {**os.environ, "XLA_FLAGS": f"--xla_dump_to={folder} --xla_dump_hlo_as_text"}
    subprocess.run([sys.executable, str(script)], check=True, env=env, cwd=folder.parent)
    return folder


def test_a_dump_folder_and_its_modules(xla_dump):
    insp = hloscope.inspect(xla_dump)
    assert insp.module.name == "jit_step"
    assert any("--module" in note for note in insp.loaded.notes)
    assert insp.source.stage == "lowered"
    picked = hloscope.inspect(str(xla_dump), module="jit_tiny")
    assert picked.module.name == "jit_tiny"
    assert picked.source.folder_module in insp.source.folder_modules
    # --compile on a folder reads its after-optimization file, not a compilation here.
    optimized = insp.optimized()
    assert optimized.source.stage == "optimized"
    assert optimized.loaded.compilation is None
    assert "after_optimizations" in (optimized.source.path or "")
    assert optimized.fusions() is insp.fusions()


def test_an_inspection_is_taken_as_it_is():
    insp = hloscope.inspect(MLP_MLIR)
    assert hloscope.inspect(insp) is insp


# --------------------------------------------------------------------------- reports


def test_reports_are_computed_once():
    insp = hloscope.inspect(MLP_MLIR)
    assert insp.params is insp.params
    assert insp.placement is insp.placement
    assert insp.overview is insp.overview
    assert insp.structure is insp.overview.structure
    optimized = insp.optimized()
    assert insp.optimized() is optimized
    assert optimized.source.stage == "optimized"
    assert optimized.loaded.compilation is not None
    assert insp.fusions() is insp.fusions()
    assert insp.fusions().source.stage == "optimized"


def test_text_with_and_without_locations():
    insp = hloscope.inspect(jax.jit(scaled, static_argnums=1), jnp.ones(4), 2, scale=1.0)
    plain = insp.text()
    located = insp.text(locations=True)
    assert plain.startswith("module @jit_scaled")
    assert "loc(" not in plain
    assert "test_api.py" in located


def test_aot_check_of_a_wrapper_that_swaps_arguments():
    difference = sample_object("samples/wrapped.py:difference")
    args = sample_object("samples/wrapped.py:example_args")()
    report = hloscope.inspect(difference, *args).aot_check()
    assert report.verdict == "different"
    assert [d.kind for d in report.comparison.differences] == ["results"]
    assert report.comparison.entry.via == "__wrapped__"
    # Naming the AOT object: the jit the wrapper wraps, in hand or as a target string.
    inner = sample_object("samples/wrapped.py:plain_difference")
    named = hloscope.inspect(difference, *args).aot_check(aot=inner)
    assert named.comparison.entry.via == "--aot"
    assert named.aot_target == "wrapped:plain_difference"
    by_string = hloscope.inspect(difference, *args).aot_check(aot=f"{WRAPPED}:plain_difference")
    assert by_string.aot_target == f"{WRAPPED}:plain_difference"
    assert by_string.verdict == "different"


def test_aot_check_agrees_for_a_plain_jit():
    x = jax.ShapeDtypeStruct((4, 8), jnp.float32)
    report = hloscope.inspect(jax.jit(jnp.tanh), x).aot_check()
    assert report.verdict == "same"
    assert report.inputs[0].origin == "generated"


def test_diff_between_functions_reuses_the_arguments():
    insp = hloscope.inspect(jax.grad(loss), PARAMS, BATCH)
    doubled = jax.grad(lambda p, b: loss(p, b) * 2)
    report = insp.diff(doubled)
    assert not report.same
    assert report.diff.summary.added == 1
    assert [c.op for c in report.diff.changes if c.kind == "added"] == ["stablehlo.multiply"]
    assert insp.diff(insp).same
    same = hloscope.diff(jax.grad(loss), jax.jit(jax.grad(loss)), PARAMS, BATCH)
    assert same.same
    # B without arguments of its own is lowered on A's.
    assert hloscope.diff(insp, jax.jit(jax.grad(loss))).same


def test_diff_of_a_module_against_its_hlo():
    report = hloscope.diff(MLP_MLIR, (DUMPS / "mlp.before_optimizations.hlo").read_bytes())
    assert report.same
    assert report.b.format == "hlo-text"


def test_diff_of_a_function_against_a_dump():
    insp = hloscope.inspect(jax.jit(jnp.sin), jnp.ones(4))
    report = insp.diff(MLP_MLIR)
    assert not report.same
    assert report.a.format == "python-object" and report.b.path == MLP_REL


# --------------------------------------------------------------------------- the CLI agrees


def without_timings(doc):
    if isinstance(doc, dict):
        return {k: without_timings(v) for k, v in doc.items() if k != "timings"}
    if isinstance(doc, list):
        return [without_timings(v) for v in doc]
    return doc


def test_json_equals_the_command_lines_for_a_dump(cli):
    insp = hloscope.inspect(MLP_REL)
    for command, report in [
        ("inspect", insp),
        ("params", insp.params),
        ("placement", insp.placement),
    ]:
        run = cli(command, MLP_REL, "--json")
        assert run.code == 0, run.stderr
        assert without_timings(report.to_json()) == without_timings(run.json()), command
    run = cli("inspect", MLP_REL, "--compile", "--json")
    assert without_timings(insp.optimized().to_json()) == without_timings(run.json())
    run = cli("fusions", MLP_REL, "--compile", "--json")
    assert without_timings(insp.fusions().to_json()) == without_timings(run.json())


def test_json_equals_the_command_lines_for_an_entrypoint(cli):
    target, _, factory = sample("nested_jits", "mlp")
    args = sample_object(factory)()
    insp = hloscope.inspect(target, *args)
    for command, report in [
        ("inspect", insp),
        ("params", insp.params),
        ("placement", insp.placement),
        ("fusions", insp.fusions()),
    ]:
        run = cli(command, *sample("nested_jits", "mlp"), "--json")
        assert run.code == 0, run.stderr
        assert without_timings(report.to_json()) == without_timings(run.json()), command


def test_json_equals_the_command_lines_for_aot_check_and_diff(cli):
    target, _, factory = sample("wrapped", "difference")
    args = sample_object(factory)()
    api_doc = hloscope.inspect(target, *args).aot_check().to_json()
    run = cli("aot-check", *sample("wrapped", "difference"), "--json")
    assert run.code == 1, run.stderr
    assert without_timings(api_doc) == without_timings(run.json())

    b = "samples/dumps/mlp.before_optimizations.hlo"
    run = cli("diff", MLP_REL, b, "--json")
    assert run.code == 0, run.stderr
    assert without_timings(hloscope.diff(MLP_REL, b).to_json()) == without_timings(run.json())


# --------------------------------------------------------------------------- reprs


def test_the_inspection_prints_as_the_overview(monkeypatch):
    insp = hloscope.inspect(MLP_MLIR)
    monkeypatch.setenv("COLUMNS", "100")
    assert repr(insp) == str(insp) == insp.render(100) == insp.render()
    text = insp.render(width=100)
    lines = text.splitlines()
    assert lines[0] == f"target   {MLP_MLIR}"
    assert "Functions (4)" in text and "Call graph" in text
    more = ".params .placement .fusions() .diff(other) .text() .browse() .to_json()"
    assert lines[-1] == f"more: {more}"
    assert all(len(line) <= 100 and line == line.rstrip() for line in lines)
    # A function can also run both ways.
    fn = hloscope.inspect(jax.jit(jnp.sin), jnp.ones(4))
    assert ".aot_check()" in fn.render(100).splitlines()[-1]


def test_reports_print_as_the_command_prints_them(cli):
    insp = hloscope.inspect(MLP_REL)
    run = cli("params", MLP_REL)
    assert run.code == 0
    printed = "\n".join(line.rstrip() for line in run.stdout.splitlines()).rstrip()
    assert insp.params.render(width=120) == printed
    assert str(insp.params).startswith(f"target  {MLP_REL}")
    # What a pdb prompt shows (`p insp.params`, or `insp.params` alone) is the report.
    assert repr(insp.params) == str(insp.params)
    assert repr(insp.optimized().fusions()).startswith(f"target   {MLP_REL}")


def test_rich_renders_in_the_consoles_width_and_colours():
    insp = hloscope.inspect(MLP_MLIR)
    plain = Console(file=io.StringIO(), width=90, color_system=None)
    plain.print(insp)
    drawn = plain.file.getvalue()  # type: ignore[attr-defined]
    assert [line.rstrip() for line in drawn.splitlines()] == insp.render(90).splitlines()

    colour = Console(file=io.StringIO(), width=90, color_system="truecolor", force_terminal=True)
    colour.print(insp.params)
    coloured = colour.file.getvalue()  # type: ignore[attr-defined]
    assert "\x1b[" in coloured
    assert "Parameters" in coloured and "params[0]" in coloured


def test_html_for_notebooks():
    insp = hloscope.inspect(MLP_MLIR)
    html = insp._repr_html_()
    assert html.startswith("<pre style=")
    assert "Functions (4)" in html and "<span style=" in html
    assert "<html" not in html
    assert insp.placement._repr_html_().startswith("<pre")


def test_ipython_pretty_printing():
    class Printer:
        """The part of IPython's pretty printer `_repr_pretty_` uses."""

        def __init__(self) -> None:
            self.out: list[str] = []

        def text(self, text: str) -> None:
            self.out.append(text)

    printer = Printer()
    insp = hloscope.inspect(MLP_MLIR)
    insp.params._repr_pretty_(printer, False)
    assert printer.out == [str(insp.params)]


# --------------------------------------------------------------------------- errors


def test_errors_are_raised_to_the_caller():
    needs_two = sample_object("tests/fixtures/entrypoints.py:needs_two")
    with pytest.raises(HloscopeError) as caught:
        hloscope.inspect(needs_two)
    message = str(caught.value)
    assert "it takes 2 arguments (a, b) but no example arguments were given" in message
    assert "hloscope.inspect(f, *args, **kwargs)" in message
    assert "--arg" not in message

    raises = sample_object("tests/fixtures/entrypoints.py:raises_while_tracing")
    with pytest.raises(HloscopeError, match="tracing it raised ValueError: expected a matrix"):
        hloscope.inspect(raises, jnp.ones(3))
    with pytest.raises(HloscopeError, match=r"^<string>:1:\d+: malformed MLIR"):
        hloscope.inspect("module { nope.op }")
    with pytest.raises(HloscopeError, match="it is an int, not a function"):
        hloscope.inspect(42)
    with pytest.raises(HloscopeError, match="no such file or directory"):
        hloscope.inspect(Path("samples/dumps/missing.mlir"))
    with pytest.raises(HloscopeError, match="no such file or directory"):
        hloscope.inspect("samples/dumps/missing.mlir")
    with pytest.raises(HloscopeError, match="example arguments are for functions"):
        hloscope.inspect(MLP_MLIR, jnp.ones(3))
    with pytest.raises(HloscopeError, match="example arguments are for functions"):
        hloscope.inspect(MLP_MLIR.read_bytes(), jnp.ones(3))
    with pytest.raises(HloscopeError, match="already traced"):
        hloscope.inspect(jax.jit(jnp.sin).lower(jnp.ones(3)), jnp.ones(3))
    with pytest.raises(HloscopeError, match="picks a module of a dump folder"):
        hloscope.inspect(MLP_MLIR, module="jit_mlp")
    with pytest.raises(HloscopeError, match="the module is empty"):
        hloscope.inspect(b"  \n")
    with pytest.raises(HloscopeError, match=r"aot_check\(\) calls a function"):
        hloscope.inspect(MLP_MLIR).aot_check()
    with pytest.raises(HloscopeError, match="neither side is one"):
        hloscope.diff(MLP_MLIR, MLP_MLIR, jnp.ones(3))
    with pytest.raises(HloscopeError, match="the module is empty"):
        loader.load_data("", "<string>")


def test_a_failure_is_not_a_system_exit():
    # The command line turns errors into exit code 2; the API must not exit the REPL.
    with pytest.raises(HloscopeError, match="no such file"):
        hloscope.inspect("samples/dumps/missing.mlir")


# --------------------------------------------------------------------------- import cost


def test_importing_hloscope_is_light():
    code = (
        "import sys, json\n"
        "import hloscope\n"
        "from hloscope import inspect, diff, Inspection, HloscopeError\n"
        "assert callable(inspect) and callable(diff)\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    run = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    loaded = {name.split(".")[0] for name in json.loads(run.stdout)}
    assert not loaded & {"jax", "jaxlib", "numpy", "textual", "rich", "typer"}

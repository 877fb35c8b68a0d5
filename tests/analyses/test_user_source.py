"""Source lines on real models whose ops are mostly made inside libraries (a Flax NNX
GPT step with Optax AdamW, a Linen `nn.scan(nn.remat)` stack): every line XLA's
metadata gives a fusion's instructions, bitcasts included, and `user_source`, the
line of the user's own file, checked against what XLA and JAX wrote themselves
(the compiled module's stack frames, the lowered module's debug locations)."""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

import pytest

from conftest import FIXTURES
from hloscope import reports
from hloscope.analyses.fusions import analyze_fusions
from hloscope.ir.locations import is_user_file
from hloscope.sources import loader
from hloscope.sources.memory import memory_dumps

MODELS = FIXTURES / "user_source_models.py"
GPT = (f"{MODELS}:gpt_train_step", f"{MODELS}:gpt_args")
SCAN = (f"{MODELS}:scan_mlp_step", f"{MODELS}:scan_mlp_args")


def xla_fusion_lines(hlo_text: str) -> dict[str, set[str]]:
    """`file:LINE` of the innermost frame of every instruction of each fusion (the
    fusion instruction, its fused computation, nested ones and reducers included), read from
    XLA's printed module: its `StackFrames` tables and each instruction's
    `stack_frame_id` (or `source_file`/`source_line`)."""
    files = dict(re.findall(r'^(\d+) "(.*)"$', _section(hlo_text, "FileNames"), re.M))
    table = _section(hlo_text, "FileLocations")
    locations = {
        number: (files[file], line)
        for number, file, line in re.findall(
            r"^(\d+) \{file_name_id=(\d+) .*?\bline=(\d+)", table, re.M
        )
    }
    frames = {
        number: locations[location]
        for number, location in re.findall(
            r"^(\d+) \{file_location_id=(\d+)", _section(hlo_text, "StackFrames"), re.M
        )
    }
    computations: dict[str, list[str]] = defaultdict(list)
    current = None
    for line in hlo_text.splitlines():
        header = re.match(r"^(?:ENTRY )?%?([\w.-]+) .*\{$", line)
        if header:
            current = header.group(1)
        elif current is not None and " = " in line:
            computations[current].append(line)

    def line_of(instruction: str) -> str | None:
        frame = re.search(r"stack_frame_id=(\d+)", instruction)
        if frame:
            file, number = frames[frame.group(1)]
            return f"{file}:{number}"
        source = re.search(r'source_file="([^"]*)" source_line=(\d+)', instruction)
        return f"{source.group(1)}:{source.group(2)}" if source else None

    def lines_of(computation: str) -> set[str]:
        found: set[str] = set()
        for instruction in computations[computation]:
            line = line_of(instruction)
            if line:
                found.add(line)
            # Fused computations, and the reducers applied inside them.
            for called in re.findall(r"(?:calls|to_apply)=%?([\w.-]+)", instruction):
                found |= lines_of(called)
        return found

    fused = {
        called
        for lines in computations.values()
        for instruction in lines
        if " fusion(" in instruction
        for called in re.findall(r"calls=%?([\w.-]+)", instruction)
    }
    result: dict[str, set[str]] = {}
    for computation, lines in computations.items():
        if computation in fused:
            continue
        for instruction in lines:
            if " fusion(" not in instruction:
                continue
            name = re.match(r"^\s*(?:ROOT )?%?([\w.-]+) = ", instruction).group(1)
            called = re.search(r"calls=%?([\w.-]+)", instruction).group(1)
            own = line_of(instruction)
            result[name] = lines_of(called) | ({own} if own else set())
    return result


def _section(text: str, title: str) -> str:
    match = re.search(rf"^{title}\n(.*?)(?:\n\n|\Z)", text, re.S | re.M)
    return match.group(1) if match else ""


def _optimized(target: tuple[str, str]) -> loader.Loaded:
    return loader.load(target[0], loader.LoadOptions(args_factory=target[1], optimized=True))


@pytest.fixture(scope="module")
def gpt() -> loader.Loaded:
    return _optimized(GPT)


@pytest.fixture(scope="module")
def scan() -> loader.Loaded:
    return _optimized(SCAN)


def _compiled_text(loaded: loader.Loaded) -> str:
    compilation = loaded.compilation
    assert compilation is not None
    text = compilation.hlo_text
    assert text
    return text


@pytest.mark.slow
@pytest.mark.parametrize("model", ["gpt", "scan"])
def test_fusion_sources_are_every_line_xla_metadata_gives(model, request):
    """Each fusion's `sources` are the innermost lines XLA's metadata gives the fusion
    and all its fused instructions: bitcasts, often the only instruction that carries
    a reshape's line, included (46 of this GPT step's fusions once lost lines)."""
    loaded = request.getfixturevalue(model)
    expected = xla_fusion_lines(_compiled_text(loaded))
    analysis = analyze_fusions(loaded.module)
    assert {f.name for f in analysis.fusions} == set(expected)
    for fusion in analysis.fusions:
        assert set(fusion.sources) == expected[fusion.name], fusion.name
    assert any("mhlo.bitcast" in f.op_counts and len(f.sources) > 1 for f in analysis.fusions)


def _lowered_user_lines(target: tuple[str, str]) -> set[int]:
    """Lines of the fixture file in the callsite chains JAX wrote into the lowered
    module (`as_text(debug_info=True)`): JAX's own record of which user lines made
    which ops."""
    from tests.fixtures import user_source_models as models

    function = getattr(models, target[0].rpartition(":")[2])
    args = getattr(models, target[1].rpartition(":")[2])()
    text = function.lower(*args).as_text(debug_info=True)
    return {int(n) for n in re.findall(re.escape(str(MODELS)) + r'":(\d+):', text)}


@pytest.mark.slow
def test_user_source_names_the_users_line_for_a_flax_training_step(gpt):
    """For a Flax NNX step with Optax, most fusions' innermost frames are Flax's or
    Optax's; `user_source` is the line of the user's file that made them, for at
    least 90% of fusions, and each is a line JAX's own locations record."""
    analysis = reports.fusions_report(gpt).analysis
    fusions = analysis.fusions
    library_only = [f for f in fusions if f.sources and not any(is_user_file(s) for s in f.sources)]
    assert len(library_only) > len(fusions) // 2  # the case this is for
    mine = [f for f in fusions if f.user_source and f.user_source.startswith("tests/fixtures/")]
    assert len(mine) >= 0.9 * len(fusions)
    recorded = _lowered_user_lines(GPT)
    for fusion in mine:
        path, _, line = fusion.user_source.rpartition(":")
        assert Path(path).resolve() == MODELS
        assert int(line) in recorded, fusion.name


@pytest.mark.slow
def test_user_source_is_recovered_from_the_lowered_module_where_xla_merged_names(scan):
    """XLA joins the op names of instructions it merges with `;` and keeps no stack
    for them; the user's line comes from the lowered module's, paired by each name."""
    analysis = reports.fusions_report(scan).analysis
    recovered = [f for f in analysis.fusions if f.user_source_from == "lowered"]
    assert recovered
    recorded = _lowered_user_lines(SCAN)
    for fusion in recovered:
        assert any(";" in name for name in fusion.op_names), fusion.name
        path, _, line = fusion.user_source.rpartition(":")
        assert Path(path).resolve() == MODELS and int(line) in recorded
    # Unfused ops carry it too; optimized frames come first where they hold one.
    assert any(op.user_source_from == "optimized" for op in analysis.unfused)


@pytest.mark.slow
def test_buffers_at_the_peak_carry_the_users_line():
    memory = reports.memory_report(memory_dumps(GPT[0], loader.LoadOptions(args_factory=GPT[1])))
    buffers = [b for b in memory.analysis.buffers_at_peak if b.kind == "temporary"]
    assert buffers
    assert all(
        b.user_source is None or b.user_source.startswith("tests/fixtures/") for b in buffers
    )
    assert any(b.user_source for b in buffers)


@pytest.mark.parametrize(
    ("path", "mine"),
    [
        ("/home/me/train.py", True),
        ("samples/mlp.py", True),
        ("<stdin>", True),
        ("/usr/lib/python3/dist-packages/flax/nnx/nn/linear.py", False),
        ("/venv/lib/python3.11/site-packages/optax/_src/transform.py", False),
        ("/src/jax/jax/_src/numpy/lax_numpy.py", False),
        ("/opt/jaxlib/mlir/ir.py", False),
        ("<frozen runpy>", False),
    ],
)
def test_is_user_file(path, mine):
    assert is_user_file(path) is mine

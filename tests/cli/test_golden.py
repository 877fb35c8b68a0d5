"""Every command's JSON and text on every sample, and on a sample of corpus modules,
against outputs recorded before the code that prints them was last moved.

Reorganising the code must not change a byte of what a user sees, so each case is
the command line as a user types it, run through the real CLI, with only wall
times masked. The recorded outputs live in `golden/`; after a deliberate change of
output, record them again and review the diff:

    .venv/bin/python tests/cli/test_golden.py --record        # all cases
    .venv/bin/python tests/cli/test_golden.py --record params  # names containing "params"
"""

from __future__ import annotations

import json
import os
import re
import sys
from importlib import metadata
from pathlib import Path

import pytest

GOLDEN = Path(__file__).resolve().parent / "golden"
# The JAX release (major.minor) the outputs were recorded with. On another release (the
# smoke tier on JAX 0.8 and 0.9, `make smoke-jax`), the cases listed in
# version_dependent.txt are checked by their outline (see that file); the rest byte for
# byte, as here.
GOLDEN_JAX = "0.10"
VERSION_DEPENDENT = Path(__file__).resolve().parent / "version_dependent.txt"
ROOT = Path(__file__).resolve().parents[2]
# As the command line names corpus files: relative to the repository root, so the
# outputs do not depend on where the clone is.
CORPUS_PREFIX = "../shared/corpus/"


def sample(name: str, attr: str, factory: str = "example_args") -> list[str]:
    return [f"samples/{name}.py:{attr}", "--args", f"samples/{name}.py:{factory}"]


def _report_cases(name: str, target: list[str], *, compile_too: bool = False) -> list[Case]:
    """inspect, params and placement, as JSON and text (and with --compile)."""
    cases: list[Case] = []
    for command in ("inspect", "params", "placement"):
        printed = ["--print"] if command == "inspect" else []
        variants = [("", [])] + ([("compiled", ["--compile"])] if compile_too else [])
        for suffix, extra in variants:
            label = f"{name}.{command}" + (f".{suffix}" if suffix else "")
            cases.append((f"{label}.json", [command, *target, *extra, "--json"]))
            cases.append((f"{label}.txt", [command, *target, *extra, *printed]))
    return cases


def _both(label: str, argv: list[str]) -> list[Case]:
    return [(f"{label}.json", [*argv, "--json"]), (f"{label}.txt", argv)]


Case = tuple[str, list[str]]

# (label, target) of each sample entrypoint; every one gets inspect, params and
# placement, lowered and compiled.
SAMPLE_ENTRYPOINTS: list[tuple[str, list[str]]] = [
    ("nested_jits.mlp", sample("nested_jits", "mlp")),
    ("nested_jits.mlp_without_outer_jit", sample("nested_jits", "mlp_without_outer_jit")),
    ("jit_granularity.mlp", sample("jit_granularity", "mlp")),
    ("jit_granularity.layer", sample("jit_granularity", "layer", "layer_args")),
    ("jit_granularity.head", sample("jit_granularity", "head", "head_args")),
    ("params.loss", sample("params", "loss")),
    ("params.loss_keep_unused", sample("params", "loss_keep_unused")),
    ("params.grad_w", sample("params", "grad_w")),
    ("params.train_step", sample("params", "train_step", "train_step_args")),
    ("params.sgd_update", sample("params", "sgd_update", "sgd_args")),
    ("params_nested.ignored_by_callee", sample("params_nested", "ignored_by_callee")),
    ("params_nested.callee_used_twice", sample("params_nested", "callee_used_twice")),
    (
        "params_nested.carried_through_loop",
        sample("params_nested", "carried_through_loop", "loop_args"),
    ),
    ("params_nested.exported_call", sample("params_nested", "exported_call")),
    ("params_sharded.sharded_step", sample("params_sharded", "sharded_step", "sharded_step_args")),
    (
        "params_sharded.host_offloaded",
        sample("params_sharded", "host_offloaded", "host_offloaded_args"),
    ),
    ("params_static.static_args", sample("params_static", "static_args", "static_args_example")),
    (
        "params_static.ordered_print",
        sample("params_static", "ordered_print", "ordered_print_example"),
    ),
    ("compute_on.host_inside_jit", sample("compute_on", "host_inside_jit")),
    ("compute_on.host_call_inside_jit", sample("compute_on", "host_call_inside_jit")),
    ("compute_on.host_outside_jit", sample("compute_on", "host_outside_jit")),
    ("compute_on.device_only", sample("compute_on", "device_only")),
    ("memory_kinds.host_output", sample("memory_kinds", "host_output")),
    ("memory_kinds.host_input", sample("memory_kinds", "host_input")),
    ("memory_kinds.offload", sample("memory_kinds", "offload")),
    ("memory_kinds.offload_for_tpu", ["samples/memory_kinds.py:offload_for_tpu"]),
    (
        "memory_kinds.host_compute_to_host_memory",
        sample("memory_kinds", "host_compute_to_host_memory"),
    ),
    ("memory_kinds.with_callback", sample("memory_kinds", "with_callback")),
    ("sharded_mlp.mlp", sample("sharded_mlp", "mlp")),
    ("sharded_mlp.mlp_shard_map", sample("sharded_mlp", "mlp_shard_map")),
    ("scanned_layers.deep_mlp", sample("scanned_layers", "deep_mlp")),
    ("aot.step", sample("aot", "step")),
    ("aot.normalize", sample("aot", "normalize", "normalize_args")),
    ("aot.two_jits", sample("aot", "two_jits", "two_jits_args")),
    ("wrapped.difference", sample("wrapped", "difference")),
    ("dropout.train_step", sample("dropout", "train_step")),
    ("dropout.noisy", sample("dropout", "noisy", "noisy_args")),
    ("dropout.eqx_forward", sample("dropout", "eqx_forward", "eqx_args")),
]

SAMPLE_DUMPS = sorted(
    p.name for p in (Path(__file__).resolve().parents[2] / "samples" / "dumps").iterdir()
)

SAMPLE_FUSIONS: list[tuple[str, list[str]]] = [
    ("nested_jits.mlp", sample("nested_jits", "mlp")),
    ("jit_granularity.mlp", sample("jit_granularity", "mlp")),
    ("jit_granularity.mlp_without_outer_jit", sample("jit_granularity", "mlp_without_outer_jit")),
    ("jit_granularity.layer", sample("jit_granularity", "layer", "layer_args")),
    ("params.train_step", sample("params", "train_step", "train_step_args")),
    ("sharded_mlp.mlp", sample("sharded_mlp", "mlp")),
    ("compute_on.host_inside_jit", sample("compute_on", "host_inside_jit")),
    ("memory_kinds.offload_for_tpu", ["samples/memory_kinds.py:offload_for_tpu"]),
    ("dropout.train_step", sample("dropout", "train_step")),
]

SAMPLE_AOT: list[tuple[str, list[str]]] = [
    ("aot.step_on_host", sample("aot", "step_on_host")),
    ("aot.step_on_host.aot_step", [*sample("aot", "step_on_host"), "--aot", "samples/aot.py:step"]),
    ("aot.normalize", sample("aot", "normalize", "normalize_args")),
    ("aot.prescaled", sample("aot", "prescaled", "prescaled_args")),
    ("aot.two_jits", sample("aot", "two_jits", "two_jits_args")),
    ("compute_on.host_inside_jit", sample("compute_on", "host_inside_jit")),
    ("compute_on.host_outside_jit", sample("compute_on", "host_outside_jit")),
    ("wrapped.difference", sample("wrapped", "difference")),
    ("params.train_step", sample("params", "train_step", "train_step_args")),
    ("dropout.forward", sample("dropout", "forward", "forward_args")),
    ("dropout.eqx_forward", sample("dropout", "eqx_forward", "eqx_args")),
]

SAMPLE_DIFFS: list[tuple[str, list[str]]] = [
    (
        "compute_on.inside_vs_outside",
        [
            "samples/compute_on.py:host_inside_jit",
            "samples/compute_on.py:host_outside_jit",
            "--args",
            "samples/compute_on.py:example_args",
        ],
    ),
    (
        "compute_on.inside_vs_outside.compiled",
        [
            "samples/compute_on.py:host_inside_jit",
            "samples/compute_on.py:host_outside_jit",
            "--args",
            "samples/compute_on.py:example_args",
            "--compile",
        ],
    ),
    (
        "mlp.stablehlo_vs_before",
        ["samples/dumps/mlp.stablehlo.mlir", "samples/dumps/mlp.before_optimizations.hlo"],
    ),
    (
        "mlp.before_vs_after",
        ["samples/dumps/mlp.before_optimizations.hlo", "samples/dumps/mlp.after_optimizations.hlo"],
    ),
    ("mlp.text_vs_bytecode", ["samples/dumps/mlp.stablehlo.mlir", "samples/dumps/mlp.mlirbc"]),
    ("mlp.vhlo_vs_exported", ["samples/dumps/mlp.vhlo.mlirbc", "samples/dumps/mlp.exported.bin"]),
    (
        "mlp.hlo_vs_proto",
        [
            "samples/dumps/mlp.after_optimizations.hlo",
            "samples/dumps/mlp.after_optimizations.hlo.pb",
        ],
    ),
    (
        "host_call.lowered_vs_optimized",
        [
            "samples/dumps/host_call.stablehlo.mlir",
            "samples/dumps/host_call.after_optimizations.hlo",
        ],
    ),
    (
        "params.loss_vs_keep_unused",
        [
            "samples/params.py:loss",
            "samples/params.py:loss_keep_unused",
            "--args",
            "samples/params.py:example_args",
        ],
    ),
    (
        "nested_jits.with_vs_without_outer",
        [
            "samples/nested_jits.py:mlp",
            "samples/nested_jits.py:mlp_without_outer_jit",
            "--args",
            "samples/nested_jits.py:example_args",
        ],
    ),
    (
        "jit_granularity.layer_vs_dump",
        ["samples/dumps/mlp.stablehlo.mlir", *sample("jit_granularity", "layer", "layer_args")],
    ),
]

# Real modules of every format and subject: host memory, streams, collectives,
# shardings (GSPMD and Shardy), donation, Triton fusions, serialized artifacts.
CORPUS_FILES = [
    "xla-cc-embedded-hlo/xla/hlo/transforms/host_offloader_test.051.hlo",
    "xla-cc-embedded-hlo/xla/hlo/transforms/host_offloader_test.008.hlo",
    "xla-cc-embedded-hlo/xla/service/gpu/execution_stream_assignment_test.008.hlo",
    "xla-cc-embedded-hlo/xla/hlo/parser/hlo_parser_test.159.hlo",
    "xla-cc-embedded-hlo/xla/hlo/transforms/collectives/async_collective_replacer_test.003.hlo",
    "xla-cc-embedded-hlo/xla/backends/gpu/tests/dynamic_slice_fusion_v2_test.013.hlo",
    "xla-cc-embedded-hlo/xla/service/gpu/gpu_compiler_test.046.hlo",
    "xla-cc-embedded-hlo/xla/hlo/transforms/simplifiers/all_reduce_folder_test.004.hlo",
    "xla/xla/backends/cpu/tests/thunk_coverage/host_offload.hlo",
    "xla/xla/backends/gpu/tests/triton_calling_convention.hlo",
    "xla/xla/backends/gpu/tests/offload_scan_output.hlo",
    "xla/xla/tools/hlo_opt/tests/gpu_hlo_backend.hlo",
    "jax/export_back_compat_test_data/tpu_Sharding/data_2025_06_30_gspmd.mlir",
    "jax/export_back_compat_test_data/tpu_Sharding/data_2025_06_30_shardy.mlir",
    "jax/export_back_compat_test_data/export_with_memory_space/serialization_v12.jax_exported.fb",
    "jax/export_back_compat_test_data/export_with_multiple_meshes/serialization_v12.mlirbc",
    "jax/export_back_compat_test_data/cpu_lu_lapack_getrf/data_2024_05_31_c64.mlirbc",
    "jax/export_back_compat_test_data/annotate_data_placement/data_2025_06_30_tpu_shardy.mlir",
    "stablehlo/stablehlo/tests/vhlo/stablehlo_legalize_to_vhlo.1_0_0.mlir.bc",
    "stablehlo/stablehlo/tests/verify_bounds.mlir",
    "shardy/shardy/dialect/mpmd/transforms/export/test/mark_aliasing_and_donation.mlir",
]

CORPUS_DIFFS: list[tuple[str, list[str]]] = [
    (
        "tpu_sharding.gspmd_vs_shardy",
        [
            CORPUS_PREFIX
            + "jax/export_back_compat_test_data/tpu_Sharding/data_2025_06_30_gspmd.mlir",
            CORPUS_PREFIX
            + "jax/export_back_compat_test_data/tpu_Sharding/data_2025_06_30_shardy.mlir",
        ],
    ),
    (
        "host_offloader.051_vs_008",
        [
            CORPUS_PREFIX + "xla-cc-embedded-hlo/xla/hlo/transforms/host_offloader_test.051.hlo",
            CORPUS_PREFIX + "xla-cc-embedded-hlo/xla/hlo/transforms/host_offloader_test.008.hlo",
        ],
    ),
]


def sample_cases() -> list[Case]:
    cases: list[Case] = []
    for name, target in SAMPLE_ENTRYPOINTS:
        cases += _report_cases(name, target, compile_too=True)
    for dump in SAMPLE_DUMPS:
        target = [f"samples/dumps/{dump}"]
        cases += _report_cases(f"dumps.{dump}", target, compile_too=True)
        cases += _both(f"dumps.{dump}.fusions", ["fusions", *target])
    for name, target in SAMPLE_FUSIONS:
        cases += _both(f"{name}.fusions", ["fusions", *target])
    for name, target in SAMPLE_AOT:
        cases += _both(f"{name}.aot-check", ["aot-check", *target])
    for name, target in SAMPLE_DIFFS:
        cases += _both(f"diff.{name}", ["diff", *target])
    cases += [
        ("errors.missing_file.txt", ["inspect", "samples/dumps/no_such_file.mlir", "--print"]),
        ("errors.unknown_attribute.txt", ["params", "samples/params.py:no_such_function"]),
        ("errors.fusions_of_lowered_dump.txt", ["fusions", "samples/dumps/mlp.stablehlo.mlir"]),
        ("errors.bad_arg_spec.txt", ["params", "samples/params.py:loss", "--arg", "f33[2]"]),
        ("params.fail_on_pruned.txt", ["params", *sample("params", "loss"), "--fail-on", "pruned"]),
    ]
    return cases


def corpus_cases() -> list[Case]:
    cases: list[Case] = []
    for relative in CORPUS_FILES:
        target = [CORPUS_PREFIX + relative]
        name = relative.replace("/", "__")
        cases += _report_cases(name, target)
        cases += _both(f"{name}.fusions", ["fusions", *target])
    for name, target in CORPUS_DIFFS:
        cases += _both(f"diff.{name}", ["diff", *target])
    return cases


# --------------------------------------------------------------------------- running

_TIME = re.compile(r"\b\d+(?:\.\d+)? (?:ms|s)\b")


def _mask_seconds(value: object) -> object:
    # The compiler's version (`compiled_for`: jaxlib's, for the local backend) is the
    # environment's, left out as the `environment` is.
    if isinstance(value, dict):
        return {
            key: "<seconds>"
            if key.endswith("seconds")
            else "<version>"
            if key == "compiler_version" and item is not None
            else _mask_seconds(item)
            for key, item in value.items()
            # Whether this run compiled or read the compile cache is the run's, as
            # its wall times are (the rest of the report is the same either way).
            if key != "compile_cached"
        }
    if isinstance(value, list):
        return [_mask_seconds(item) for item in value]
    return value


def normalized(stdout: str, as_json: bool) -> str:
    """The output with wall times masked, the `environment` left out (the versions of
    hloscope, JAX and jaxlib and the backend it ran with; the compiler's version, masked
    too), the repository's own path
    (in source locations XLA recorded) written `<root>`, and trailing spaces removed."""
    stdout = stdout.replace(str(ROOT) + os.sep, "<root>/")
    if as_json and stdout.strip():
        try:
            document = json.loads(stdout)
        except ValueError:
            pass
        else:
            if isinstance(document, dict):
                document.pop("environment", None)
            return json.dumps(_mask_seconds(document), indent=2, ensure_ascii=False) + "\n"
    lines = [
        _TIME.sub("<time>", line).replace("<time> (cached)", "<time>").rstrip()
        for line in stdout.splitlines()
    ]
    return "\n".join(lines) + ("\n" if lines else "")


def run_case(argv: list[str]) -> str:
    """What a case prints: the command, its exit code, stdout and stderr."""
    from conftest import run_cli

    run = run_cli(*argv)
    as_json = "--json" in argv
    return (
        f"$ hloscope {' '.join(argv)}\n"
        f"exit {run.code}\n"
        f"--- stdout\n{normalized(run.stdout, as_json)}"
        f"--- stderr\n{normalized(run.stderr, False)}"
    )


def golden_path(group: str, label: str) -> Path:
    return GOLDEN / group / label


def installed_jax() -> str:
    """The installed JAX's release, major.minor."""
    return ".".join(metadata.version("jax").split(".")[:2])


def version_dependent() -> dict[str, str]:
    """version_dependent.txt: each listed label (without .json/.txt), with how it is
    checked on another release than the goldens' ("outline" or "unavailable")."""
    cases = {}
    for line in VERSION_DEPENDENT.read_text().splitlines():
        words = line.split("#", 1)[0].split()
        if words:
            cases[words[-1]] = "unavailable" if words[0] == "unavailable" else "outline"
    return cases


def _sections(case: str) -> tuple[str, str, str, str]:
    """A case's command line, exit line, stdout and stderr."""
    command, exit_line, rest = case.split("\n", 2)
    stdout, _, stderr = rest.removeprefix("--- stdout\n").partition("--- stderr\n")
    return command, exit_line, stdout, stderr


def outline(case: str) -> tuple[str, str, str, object]:
    """What a version-dependent case must keep on every release: the command, the exit
    code, stderr, and the JSON document's top-level keys (or whether stdout is empty)."""
    command, exit_line, stdout, stderr = _sections(case)
    try:
        shape: object = sorted(json.loads(stdout))
    except ValueError:
        shape = bool(stdout.strip())
    return command, exit_line, stderr, shape


def check_unavailable(case: str, expected: str) -> None:
    """A feature the installed release lacks: exit 2, one line on stderr naming the
    installed JAX or jaxlib."""
    command, exit_line, stdout, stderr = _sections(case)
    assert command == _sections(expected)[0]
    assert exit_line == "exit 2" and not stdout.strip(), case
    versions = {metadata.version("jax"), metadata.version("jaxlib")}
    assert stderr.count("\n") == 1 and any(v in stderr for v in versions), stderr


def _check(group: str, label: str, argv: list[str]) -> None:
    from conftest import GOLDEN_COMPARED

    path = golden_path(group, label)
    assert path.is_file(), f"no recorded output for {label}: record it (see the docstring)"
    actual, expected = run_case(argv), path.read_text()
    how = "full"
    if installed_jax() != GOLDEN_JAX:
        how = version_dependent().get(label.rsplit(".", 1)[0], "full")
    GOLDEN_COMPARED[how] += 1
    if how == "full":
        assert actual == expected
    elif how == "outline":
        assert outline(actual) == outline(expected)
    else:
        check_unavailable(actual, expected)


@pytest.fixture(autouse=True)
def _fixed_width(monkeypatch: pytest.MonkeyPatch) -> None:
    # Text reports are as wide as the terminal (120 columns in a pipe).
    monkeypatch.setenv("COLUMNS", "120")


@pytest.mark.slow
@pytest.mark.parametrize(("label", "argv"), sample_cases(), ids=[c[0] for c in sample_cases()])
def test_sample_output_is_unchanged(label: str, argv: list[str]) -> None:
    _check("samples", label, argv)


@pytest.mark.corpus
@pytest.mark.slow
@pytest.mark.parametrize(("label", "argv"), corpus_cases(), ids=[c[0] for c in corpus_cases()])
def test_corpus_output_is_unchanged(label: str, argv: list[str], corpus: Path) -> None:
    _check("corpus", label, argv)


def test_the_version_dependent_cases_are_cases() -> None:
    # A label renamed or removed would leave its line behind, checking nothing.
    labels = {label.rsplit(".", 1)[0] for label, _ in sample_cases()}
    assert set(version_dependent()) <= labels, sorted(set(version_dependent()) - labels)


def test_every_recorded_output_has_a_case() -> None:
    # A case renamed or removed leaves its recording behind; it would never be checked.
    known = {("samples", label) for label, _ in sample_cases()}
    known |= {("corpus", label) for label, _ in corpus_cases()}
    recorded = {(p.parent.name, p.name) for p in GOLDEN.glob("*/*")}
    assert recorded <= known, sorted(recorded - known)


def _record(pattern: str) -> None:
    root = ROOT
    os.chdir(root)
    sys.path.insert(0, str(root / "tests"))
    os.environ["COLUMNS"] = "120"
    os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
    groups = [("samples", sample_cases())]
    if (root / CORPUS_PREFIX).is_dir():
        groups.append(("corpus", corpus_cases()))
    for group, cases in groups:
        for label, argv in cases:
            if pattern not in label:
                continue
            path = golden_path(group, label)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(run_case(argv))
            print(f"{group}/{label}", flush=True)


if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] != "--record":
        raise SystemExit(__doc__)
    _record(sys.argv[2] if len(sys.argv) > 2 else "")

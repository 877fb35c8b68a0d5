"""`--for SPEC`: the program compiled for a TPU topology or a GPU spec on this CPU,
checked against what JAX itself compiles for that platform.

The truth comes from JAX, not from hloscope: `jax_truth.py`, run once per module in a
child process, compiles the same functions (`targets.py`) for each platform with
`jax.experimental.topologies` and reads the fusions and collectives from XLA's text
(`compiled.as_text()`) and the memory from `compiled.memory_analysis()`. hloscope runs
as the console script does, in processes of its own: `--for` gives the program as
many host devices as the platform has before importing it, which a process that has
started JAX already (this one) cannot do.

Without the extras (libtpu, JAX's CUDA plugin) the tests that compile for a platform
skip, naming what is missing; the bad inputs that need no compiler still run.
"""

from __future__ import annotations

import collections
import functools
import importlib.util
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

from conftest import ROOT, Run, sample
from schema_support import validate

pytestmark = pytest.mark.slow

HERE = Path(__file__).resolve().parent
GPU_SPECS = ROOT / "src" / "hloscope" / "gpu_specs"
H100 = "src/hloscope/gpu_specs/h100_sxm.txtpb"

TARGETS = "tests/platforms/targets.py"
SHARDED = [f"{TARGETS}:sharded_block", "--args", f"{TARGETS}:sharded_args"]
SINGLE = [f"{TARGETS}:block", "--args", f"{TARGETS}:block_args"]
TOO_BIG = [f"{TARGETS}:too_big", "--args", f"{TARGETS}:too_big_args"]
NESTED = sample("nested_jits", "mlp")
BEFORE_HLO = "samples/dumps/mlp.before_optimizations.hlo"
BEFORE_MLIR = "samples/dumps/mlp.stablehlo.mlir"


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


COMPILERS = {
    "tpu": ("libtpu", _installed("libtpu"), "libtpu"),
    "gpu": ("jax_plugins.xla_cuda12", _installed("jax_plugins.xla_cuda12"), "jax-cuda12-plugin"),
}
"""Per platform: the module that compiles for it, whether it is importable here, and
the distribution hloscope names as the compiler."""


def needs(platform: str) -> None:
    module, present, _ = COMPILERS[platform]
    if not present:
        pytest.skip(f"{module} is not installed: --for {platform}:... cannot compile here")


# The platforms the reports are compared on, each with how JAX makes its devices and
# which function of targets.py runs on it (the sharded block over every device, or
# the block on one).
PLATFORMS: dict[str, dict[str, Any]] = {
    "tpu:v5e:2x4": {"platform": "tpu", "topology": "v5e:2x4", "sharded": True},
    "tpu:v4:2x2x1": {
        "platform": "tpu",
        "topology": "v4:2x2x1",
        "kwargs": {"chip_config_name": "megacore"},
        "sharded": True,
    },
    "tpu:v5e:2x2,slices=2": {
        "platform": "tpu",
        "topology": "v5e:2x2",
        "kwargs": {"num_slices": 2},
        "sharded": True,
    },
    "gpu:h100": {"platform": "gpu", "topology": "1x1x1", "gpu_config": H100, "sharded": False},
    "gpu:h100x8": {"platform": "gpu", "topology": "1x1x8", "gpu_config": H100, "sharded": True},
}

# One example per TPU generation and GPU spec, as `hloscope platforms` lists them, and
# how JAX makes their devices.
TPU_EXAMPLES = {
    "v2": "2x2",
    "v3": "2x2",
    "v4": "2x2x1",
    "v5e": "2x4",
    "v5p": "2x2x1",
    "v6e": "4x4",
    "tpu7x": "2x2x1",
}
GPU_FILES = {"h100": "h100_sxm.txtpb", "a100": "a100_sxm_80gb.txtpb", "l4": "l4.txtpb"}
EXAMPLES: dict[str, dict[str, Any]] = {
    **{
        f"tpu:{gen}:{topology}": {
            "platform": "tpu",
            "topology": f"{gen}:{topology}",
            **({"kwargs": {"chip_config_name": "megacore"}} if gen == "v4" else {}),
        }
        for gen, topology in TPU_EXAMPLES.items()
    },
    **{
        f"gpu:{name}": {
            "platform": "gpu",
            "topology": "1x1x1",
            "gpu_config": f"src/hloscope/gpu_specs/{file}",
        }
        for name, file in GPU_FILES.items()
    },
}


def truth_cases() -> dict[str, dict[str, Any]]:
    """Every compilation the tests compare with, by name, for jax_truth.py."""
    cases: dict[str, dict[str, Any]] = {}
    for spec, platform in PLATFORMS.items():
        function, args = (
            ("sharded_block", "sharded_args") if platform["sharded"] else ("block", "block_args")
        )
        cases[spec] = {**platform, "module": TARGETS, "function": function, "args": args}
    for spec in ("tpu:v5e:2x4", "gpu:h100"):
        base = {k: v for k, v in PLATFORMS[spec].items() if k != "sharded"}
        cases[f"nested_jits {spec}"] = {
            **base,
            "module": "samples/nested_jits.py",
            "function": "mlp",
            "args": "example_args",
        }
    cases["too_big tpu:v5e:2x4"] = {
        "platform": "tpu",
        "topology": "v5e:2x4",
        "module": TARGETS,
        "function": "too_big",
        "args": "too_big_args",
    }
    cases["too_big gpu:l4"] = {
        "platform": "gpu",
        "topology": "1x1x1",
        "gpu_config": "src/hloscope/gpu_specs/l4.txtpb",
        "module": TARGETS,
        "function": "too_big",
        "args": "too_big_args",
    }
    for spec, example in EXAMPLES.items():
        cases[f"devices {spec}"] = {**example, "devices_only": True}
    return {
        name: case
        for name, case in cases.items()
        if COMPILERS[case["platform"]][1]  # only what this machine can compile
    }


@pytest.fixture(scope="module")
def truth() -> dict[str, dict[str, Any]]:
    """What JAX compiles for each case (jax_truth.py), in one child process."""
    cases = truth_cases()
    if not cases:
        pytest.skip("neither libtpu nor jax_plugins.xla_cuda12 is installed")
    return run_truth(cases, JAX_SKIP_CUDA_CONSTRAINTS_CHECK="1")


@pytest.fixture(scope="module")
def sharded_dumps(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sharded block lowered over 8 host devices: JAX's HLO text (`sharded.hlo`)
    and StableHLO (`sharded.mlir`) of it, and XLA's dump folder of its CPU
    compilation (`xla/`), made by jax_truth.py --dumps."""
    folder = tmp_path_factory.mktemp("dumps")
    env = child_env()
    env["XLA_FLAGS"] = f"--xla_dump_to={folder / 'xla'}"
    run = subprocess.run(
        [sys.executable, str(HERE / "jax_truth.py"), "--dumps", str(folder)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=600,
        check=False,
    )
    assert run.returncode == 0, f"jax_truth.py --dumps failed:\n{run.stderr[-4000:]}"
    return folder


def run_truth(cases: dict[str, dict[str, Any]], **env: str) -> dict[str, Any]:
    """What JAX compiles for `cases` (jax_truth.py, in a child process of its own, with
    `env` added to `child_env()`), by case name."""
    run = subprocess.run(
        [sys.executable, str(HERE / "jax_truth.py"), json.dumps(cases)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**child_env(), "ALLOW_MULTIPLE_LIBTPU_LOAD": "1", **env},
        timeout=600,
        check=False,
    )
    assert run.returncode == 0, f"jax_truth.py failed:\n{run.stderr[-4000:]}"
    return json.loads(run.stdout.strip().splitlines()[-1])


def child_env() -> dict[str, str]:
    """This environment without the suite's XLA_FLAGS (conftest asks for 8 host
    devices there; the tests that want a count there say so), and wide enough that a
    text report's lines are not wrapped."""
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    env["COLUMNS"] = "400"
    return env


def hloscope(*args: str, env: dict[str, str] | None = None) -> Run:
    """`hloscope ARGS` in a process of its own, its JSON checked against its schema."""
    run = subprocess.run(
        [sys.executable, "-m", "hloscope", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env if env is not None else child_env(),
        stdin=subprocess.DEVNULL,
        timeout=600,
        check=False,
    )
    result = Run(run.returncode, run.stdout, run.stderr)
    if "--json" in args and result.stdout.strip():
        validate(result.json(), "hloscope " + shlex.join(args))
    return result


@functools.cache
def run_once(*args: str) -> Run:
    """`hloscope ARGS`, run once for the tests that read it."""
    return hloscope(*args)


def report(command: str, spec: str, *extra: str) -> Run:
    """`hloscope COMMAND <the spec's target> --for SPEC --json` (once per session)."""
    target = SHARDED if PLATFORMS[spec]["sharded"] else SINGLE
    return run_once(command, *target, "--for", spec, "--json", *extra)


def planned() -> list[tuple[str, ...]]:
    """The runs several tests read, or that the parametrized tests make one each of,
    for the compilers installed here."""
    tpu, gpu = COMPILERS["tpu"][1], COMPILERS["gpu"][1]
    runs: list[tuple[str, ...]] = [
        (command, *(SHARDED if PLATFORMS[spec]["sharded"] else SINGLE), "--for", spec, "--json")
        for spec in SPECS
        if COMPILERS[PLATFORMS[spec]["platform"]][1]
        for command in ("fusions", "placement", "memory", "inspect", "params")
    ]
    if tpu:
        runs.append(("placement", *SHARDED, "--for", "tpu:v5e:2x4", "--json", "--why"))
        runs.append(("passes", *SHARDED, "--for", "tpu:v5e:2x4", "--json"))
    if gpu:
        runs.append(("passes", *SHARDED, "--for", "gpu:h100x8", "--json"))
    for spec in PROGRAM_DEVICES:
        if COMPILERS[spec.partition(":")[0]][1]:
            runs.append(("placement", *MESH_AT_IMPORT, "--for", spec, "--json"))
    for spec in ("tpu:v5e:2x4", "gpu:h100"):
        if COMPILERS[spec.partition(":")[0]][1]:
            for dump in (BEFORE_HLO, BEFORE_MLIR):
                runs += [(c, dump, "--for", spec, "--json") for c in ("fusions", "memory")]
    return runs


@pytest.fixture(scope="module")
def prefetched() -> None:
    """The `planned` runs, made up front two at a time: each is a process of its own,
    importing JAX and compiling, and together most of this file's time."""
    with ThreadPoolExecutor(max_workers=2) as pool:
        list(pool.map(lambda args: run_once(*args), planned()))


def document(command: str, spec: str, *extra: str) -> dict[str, Any]:
    needs(PLATFORMS[spec]["platform"])
    run = report(command, spec, *extra)
    assert run.code == 0, run.stderr
    assert run.stderr == "", run.stderr
    return run.json()


def one_line_error(run: Run) -> str:
    """The one stderr line of a command that exited 2: no traceback, nothing on stdout."""
    assert run.code == 2, (run.code, run.stdout[-2000:], run.stderr[-2000:])
    assert run.stdout == ""
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1, run.stderr
    assert "Traceback" not in run.stderr
    return lines[0]


SPECS = list(PLATFORMS)


# --- what hloscope platforms lists ---------------------------------------------------


def test_platforms_lists_every_tpu_generation_and_gpu_spec():
    run = hloscope("platforms", "--json")
    assert run.code == 0 and run.stderr == ""
    rows = {row["spec"]: row for row in run.json()["platforms"]}
    expected = {"cpu", *(s for s in EXAMPLES if s.startswith("tpu:"))}
    expected |= {f"gpu:{name}[xN]" for name in GPU_FILES} | {"gpu:PATH.txtpb[,gpus=N]"}
    assert set(rows) == expected
    for spec, row in rows.items():
        platform = spec.partition(":")[0]
        assert row["platform"] == platform
        if platform in COMPILERS:
            assert row["compiler_installed"] is COMPILERS[platform][1], spec
    # A GPU's memory is its spec file's device_memory_size.
    for name, file in GPU_FILES.items():
        size = re.search(r"device_memory_size: (\d+)", (GPU_SPECS / file).read_text())
        assert size is not None
        assert rows[f"gpu:{name}[xN]"]["memory_bytes"] == int(size[1])
    assert rows["tpu:v5e:2x4"]["memory_bytes"] == 16 << 30
    text = hloscope("platforms")
    assert text.code == 0 and text.stderr == ""
    for spec in expected:
        assert spec in text.stdout


MESH_AT_IMPORT = [
    "tests/platforms/mesh_at_import.py:scale",
    "--args",
    "tests/platforms/mesh_at_import.py:example_args",
]


PROGRAM_DEVICES = [*EXAMPLES, "tpu:v5e:2x2,slices=2", "gpu:h100x8"]


@pytest.mark.parametrize("spec", PROGRAM_DEVICES)
def test_a_program_gets_as_many_devices_as_jax_makes_for_the_platform(spec, truth, prefetched):
    """Each example `hloscope platforms` gives (and a multi-slice and a multi-GPU
    spec) compiles, for the devices JAX makes for that topology; a program that makes
    its mesh from jax.devices() when imported gets as many host devices as that."""
    platform = spec.partition(":")[0]
    needs(platform)
    devices = truth.get(f"devices {spec}") or truth[spec]
    run = run_once("placement", *MESH_AT_IMPORT, "--for", spec, "--json")
    assert run.code == 0, run.stderr
    assert run.stderr == ""
    compiled_for = run.json()["compiled_for"]
    assert compiled_for["spec"] == spec
    assert compiled_for["device_kind"] == devices["device_kind"]
    assert compiled_for["platform_devices"] == devices["devices"]
    # The program's mesh spans every host device it was given.
    assert compiled_for["devices"] == devices["devices"]
    assert compiled_for["slices"] == devices["slices"]
    assert compiled_for["deviceless"] is True
    assert compiled_for["memory_bytes"] > 0


# --- the reports against JAX's own compilation -----------------------------------------


@pytest.mark.parametrize("spec", SPECS)
def test_compiled_for_names_the_devices_jax_made(spec, truth, prefetched):
    platform = PLATFORMS[spec]["platform"]
    expected = truth[spec]
    _, _, compiler = COMPILERS[platform]
    used = expected["devices"] if PLATFORMS[spec]["sharded"] else 1
    for command in ("fusions", "placement", "memory", "inspect", "params"):
        doc = document(command, spec)
        # --for implies --compile: the optimized module.
        assert doc["source"]["stage"] == "optimized", command
        compiled_for = doc["compiled_for"]
        assert compiled_for == {
            "platform": platform,
            # The generation, or the GPU spec's name without its count.
            "name": re.sub(r"x\d+$", "", spec.split(":")[1]),
            "spec": spec,
            "topology": PLATFORMS[spec]["topology"],
            "devices": used,
            "platform_devices": expected["devices"],
            "device_kind": expected["device_kind"],
            "compiler": compiler,
            "compiler_version": metadata.version(compiler),
            "deviceless": True,
            "autotuned": False if platform == "gpu" else None,
            "memory_bytes": compiled_for["memory_bytes"],
            "memory_name": "HBM" if platform == "tpu" else "GPU memory",
            "slices": expected["slices"],
            # The block's mesh is built from the device list: in its order
            # (test_slice_mesh.py compares the order with JAX's).
            "device_ids": compiled_for["device_ids"],
            "slice_mesh_order": False,
        }, command
        assert compiled_for["memory_bytes"] > 0
        assert len(compiled_for["device_ids"]) == used


@pytest.mark.parametrize("spec", SPECS)
def test_fusions_are_the_fusions_xla_made(spec, truth, prefetched):
    """The fusions (those not inside another fusion: XLA's top-level fusion
    instructions), by name, kind and backend kind, in XLA's order."""
    expected = [{k: v for k, v in f.items() if k != "ops"} for f in truth[spec]["fusions"]]
    doc = document("fusions", spec)
    found = [
        {"name": f["name"], "kind": f["kind"], "backend_kind": f["backend_kind"]}
        for f in doc["fusions"]
    ]
    assert found == expected
    by_kind = collections.Counter(f["backend_kind"] or f["kind"] for f in expected)
    assert doc["summary"]["fusions"] == len(expected)
    assert doc["summary"]["by_kind"] == dict(by_kind)
    # inspect's summary of the same compilation says the same.
    assert document("inspect", spec)["fusions"]["fusions"] == len(expected)
    assert document("inspect", spec)["fusions"]["by_kind"] == dict(by_kind)


@pytest.mark.parametrize("spec", SPECS)
def test_collectives_are_the_collectives_xla_made(spec, truth, prefetched):
    """placement's collectives against XLA's collective instructions (an async pair,
    `all-reduce-start`/`-done`, is one collective, async)."""
    expected = truth[spec]["collectives"]
    doc = document("placement", spec)
    found = {c["op"]: {"count": c["count"], "async": c["async"]} for c in doc["collectives"]}
    assert found == expected
    if PLATFORMS[spec]["sharded"]:
        assert expected, "the sharded block has collectives on every platform"
        # XLA's own: a multi-slice module is partitioned within one slice.
        assert (doc["partitions"], doc["replicas"]) == (
            truth[spec]["partitions"],
            truth[spec]["replicas"],
        )
        inspected = document("inspect", spec)["placement"]["collectives"]
        assert [(c["op"], c["count"]) for c in inspected] == [
            (c["op"], c["count"]) for c in doc["collectives"]
        ]


@pytest.mark.parametrize("spec", SPECS)
def test_memory_is_xla_memory_analysis(spec, truth, prefetched):
    expected = truth[spec]["memory"]
    doc = document("memory", spec)
    assert {k: doc["totals"][k] for k in expected} == expected
    assert doc["peak_bytes"] > 0 and doc["buffers_at_peak"]
    fit = doc["fit"]
    compiled_for = doc["compiled_for"]
    needed = (
        expected["argument_bytes"]
        + expected["output_bytes"]
        + expected["temp_bytes"]
        + expected["generated_code_bytes"]
        - expected["alias_bytes"]
    )
    assert fit == {
        "fits": True,
        "required_bytes": needed,
        "required_from": "memory analysis",
        "device_bytes": compiled_for["memory_bytes"],
        "memory_name": compiled_for["memory_name"],
        "device": truth[spec]["device_kind"],
        "refused": None,
    }
    # inspect --for reports XLA's memory analysis under XLA's own names.
    memory = document("inspect", spec)["memory"]
    assert memory is not None
    assert {
        "argument_bytes": memory["argument_size_in_bytes"],
        "output_bytes": memory["output_size_in_bytes"],
        "temp_bytes": memory["temp_size_in_bytes"],
        "alias_bytes": memory["alias_size_in_bytes"],
        "generated_code_bytes": memory["generated_code_size_in_bytes"],
    } == expected


@pytest.mark.parametrize("spec", ["tpu:v5e:2x4", "gpu:h100x8", "gpu:h100"])
def test_text_report_says_what_it_was_compiled_for(spec, truth):
    needs(PLATFORMS[spec]["platform"])
    platform = PLATFORMS[spec]["platform"]
    target = SHARDED if PLATFORMS[spec]["sharded"] else SINGLE
    run = hloscope("memory", *target, "--for", spec)
    assert run.code == 0, run.stderr
    assert run.stderr == ""
    devices = truth[spec]["devices"]
    kind = truth[spec]["device_kind"]
    count = f"{devices} ×" if PLATFORMS[spec]["sharded"] or devices == 1 else f"1 of {devices} ×"
    _, _, compiler = COMPILERS[platform]
    tail = ", not autotuned" if platform == "gpu" else ""
    source = next(line for line in run.stdout.splitlines() if line.startswith("source"))
    assert source.rstrip().endswith(
        f"compiled for {spec} ({count} {kind}; {compiler} {metadata.version(compiler)}, "
        f"without the device{tail})"
    ), source
    fits = next(line for line in run.stdout.splitlines() if line.startswith("fits"))
    memory_name = "HBM" if platform == "tpu" else "GPU memory"
    assert re.search(rf"fits: .* of .* {memory_name} per device \({re.escape(kind)}\)", fits), fits


# --- dumps ------------------------------------------------------------------------------


@pytest.mark.parametrize("dump", [BEFORE_HLO, BEFORE_MLIR])
@pytest.mark.parametrize("spec", ["tpu:v5e:2x4", "gpu:h100"])
def test_a_dump_compiles_for_the_platform(spec, dump, truth, prefetched):
    """The before-optimization dumps of samples/nested_jits.py's mlp compiled for the
    platform: the fusions and memory JAX makes of the function itself."""
    needs(PLATFORMS[spec]["platform"])
    expected = truth[f"nested_jits {spec}"]
    fusions = run_once("fusions", dump, "--for", spec, "--json")
    assert fusions.code == 0, fusions.stderr
    assert fusions.stderr == ""
    doc = fusions.json()
    assert doc["compiled_for"]["spec"] == spec
    assert doc["compiled_for"]["device_kind"] == expected["device_kind"]
    found = [(f["name"], f["kind"], f["backend_kind"]) for f in doc["fusions"]]
    assert found == [(f["name"], f["kind"], f["backend_kind"]) for f in expected["fusions"]]
    memory = run_once("memory", dump, "--for", spec, "--json")
    assert memory.code == 0, memory.stderr
    totals = memory.json()["totals"]
    assert {k: totals[k] for k in expected["memory"]} == expected["memory"]


@pytest.mark.parametrize("spec", ["tpu:v5e:2x4", "gpu:h100x8"])
def test_an_xla_dump_folder_of_a_sharded_program_compiles_for_the_platform(
    spec, sharded_dumps, truth
):
    """XLA's dump folder of the sharded block compiled on 8 host devices (its
    before-optimization module says num_partitions=8), compiled for the platform:
    what JAX compiles of the function for it."""
    needs(PLATFORMS[spec]["platform"])
    expected = truth[spec]
    folder = str(sharded_dumps / "xla")
    fusions = hloscope("fusions", folder, "--for", spec, "--json")
    assert fusions.code == 0, fusions.stderr
    assert fusions.stderr == ""
    doc = fusions.json()
    assert doc["compiled_for"]["devices"] == expected["devices"]
    found = [(f["name"], f["kind"], f["backend_kind"]) for f in doc["fusions"]]
    assert found == [(f["name"], f["kind"], f["backend_kind"]) for f in expected["fusions"]]
    placement = hloscope("placement", folder, "--for", spec, "--json")
    assert placement.code == 0, placement.stderr
    collectives = {
        c["op"]: {"count": c["count"], "async": c["async"]} for c in placement.json()["collectives"]
    }
    assert collectives == expected["collectives"]


@pytest.mark.parametrize("dump", ["sharded.mlir", "sharded.hlo"])
def test_a_sharded_dump_of_jax_is_compiled_over_its_mesh(dump, sharded_dumps, truth):
    """JAX's own dumps of the lowering of a program over a mesh of 8: StableHLO
    (`lowered.as_text()`, mhlo.num_partitions = 8) and HLO text
    (`lowered.as_text(dialect="hlo")`, whose HloModule line has no num_partitions but
    whose shardings name the 8-device mesh). Compiled for tpu:v5e:2x4 they are the
    function's program over its 8 devices; or, where hloscope compiles one over a
    single device, its report says that the mesh's devices were left out rather
    than showing a program without its collectives as if it were the one."""
    needs("tpu")
    expected = truth["tpu:v5e:2x4"]
    run = hloscope("placement", str(sharded_dumps / dump), "--for", "tpu:v5e:2x4", "--json")
    assert run.code == 0, run.stderr
    doc = run.json()
    collectives = {c["op"]: {"count": c["count"], "async": c["async"]} for c in doc["collectives"]}
    if doc["compiled_for"]["devices"] == expected["devices"]:
        assert collectives == expected["collectives"]
        return
    said = " ".join([*doc["notes"], *map(str, doc["warnings"])])
    assert "8" in said and ("mesh" in said or "devices" in said), (
        f"{dump}: a program sharded over a mesh of 8 devices was compiled over "
        f"{doc['compiled_for']['devices']} without a word (collectives {collectives}, "
        f"JAX's program has {expected['collectives']}; notes {doc['notes']}, "
        f"warnings {doc['warnings']})"
    )


def test_compile_for_is_another_name_for_for():
    needs("gpu")
    run = hloscope("fusions", BEFORE_HLO, "--compile-for", "gpu:h100", "--json")
    assert run.code == 0, run.stderr
    assert run.json()["compiled_for"]["spec"] == "gpu:h100"


def test_a_gpu_spec_file_with_several_gpus(tmp_path, truth):
    needs("gpu")
    spec_file = tmp_path / "my_l4.txtpb"
    shutil.copy(GPU_SPECS / "l4.txtpb", spec_file)
    run = hloscope("fusions", BEFORE_HLO, "--for", f"gpu:{spec_file},gpus=2", "--json")
    assert run.code == 0, run.stderr
    assert run.stderr == ""
    compiled_for = run.json()["compiled_for"]
    assert compiled_for["spec"] == f"gpu:{spec_file},gpus=2"
    assert compiled_for["name"] == "my_l4"
    assert compiled_for["topology"] == "1x1x2"
    assert compiled_for["platform_devices"] == 2
    assert compiled_for["device_kind"] == truth["devices gpu:l4"]["device_kind"]


def test_an_optimized_dump_is_refused():
    for command, dump in [
        ("fusions", "samples/dumps/mlp.after_optimizations.hlo"),
        ("memory", "samples/dumps/mlp.after_optimizations.hlo.pb"),
    ]:
        line = one_line_error(hloscope(command, dump, "--for", "tpu:v5e:2x4"))
        assert "after XLA's optimizations" in line and "tpu:v5e:2x4" in line, line


# --- the other commands ------------------------------------------------------------------


def test_placement_why_under_for(prefetched):
    needs("tpu")
    why = document("placement", "tpu:v5e:2x4", "--why")
    assert why["why"]["available"] is True
    # Every collective XLA made is traced to the sharding that caused it.
    traced = {c for origin in why["why"]["origins"] for c in origin["collectives"]}
    assert len(traced) == sum(c["count"] for c in why["collectives"])


@pytest.mark.parametrize("spec", SPECS)
def test_params_are_the_parameters_xla_made(spec, truth, prefetched):
    """params --for: each argument's HLO parameter with one device's shape, as XLA
    partitioned it for the platform."""
    params = document("params", spec)
    assert [p["path"] for p in params["parameters"]] == ["x", "w1", "w2"]
    assert [p["hlo_shape"] for p in params["parameters"]] == truth[spec]["parameters"]
    assert params["totals"]["used"] == 3


def test_passes_under_for_are_the_platforms_passes(prefetched):
    needs("tpu")
    needs("gpu")
    passes = {}
    for spec in ("tpu:v5e:2x4", "gpu:h100x8"):
        doc = document("passes", spec)
        assert doc["compiled_for"]["spec"] == spec
        passes[spec] = {p["pass"] for p in doc["passes"]}
    assert "tpu_fusion" in passes["tpu:v5e:2x4"]
    assert "triton-gemm-rewriter" in passes["gpu:h100x8"]
    assert not passes["tpu:v5e:2x4"] & {"triton-gemm-rewriter", "priority-fusion"}


def test_diff_compiles_both_sides_for_the_platform():
    needs("tpu")
    run = hloscope("diff", BEFORE_HLO, BEFORE_MLIR, "--for", "tpu:v5e:2x4", "--json")
    assert run.code == 0, run.stderr  # the same program: no difference
    doc = run.json()
    assert doc["summary"]["added"] == doc["summary"]["removed"] == doc["summary"]["changed"] == 0
    for side in ("a", "b"):
        assert doc[side]["compiled_for"]["spec"] == "tpu:v5e:2x4"
        assert doc[side]["source"]["stage"] == "optimized"


def test_check_records_and_compares_like_with_like(tmp_path):
    needs("tpu")
    needs("gpu")
    baseline = str(tmp_path / "mlp.tpu.json")
    update = hloscope("check", *NESTED, "--for", "tpu:v5e:2x4", "--baseline", baseline, "--update")
    assert update.code == 0, update.stderr
    recorded = json.loads(Path(baseline).read_text())
    assert recorded["backend"]["compiled_for"] == "tpu:v5e:2x4"
    assert recorded["backend"]["deviceless"] is True
    assert recorded["backend"]["compiler"] == "libtpu"
    same = hloscope("check", *NESTED, "--for", "tpu:v5e:2x4", "--baseline", baseline, "--json")
    assert same.code == 0, same.stdout + same.stderr
    for other in ([], ["--for", "gpu:h100"]):
        line = one_line_error(hloscope("check", *NESTED, *other, "--baseline", baseline))
        assert "recorded on tpu:v5e:2x4" in line, line


def tui_for(spec: str) -> Any:
    """`hloscope tui <the sharded block> --for SPEC` in a tmux terminal
    (tests/tui_support.py)."""
    needs(spec.partition(":")[0])
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed: cannot drive a terminal")
    from tui_support import Terminal

    # Terminal passes on the suite's XLA_FLAGS (8 host devices): tpu:v5e:2x4 has 8.
    return Terminal(
        shlex.join([sys.executable, "-m", "hloscope", "tui", *SHARDED, "--for", spec]),
        str(ROOT),
    )


def test_tui_opens_the_program_compiled_for_the_platform():
    term = tui_for("tpu:v5e:2x4")
    try:
        screen = term.wait_for(lambda s: "jit_sharded_block" in s, "the module")
        term.keys("2")
        screen = term.wait_for(lambda s: "compiled for tpu:v5e:2x4" in s, "the overview")
        assert "8 × TPU v5 lite" in screen
        assert "local backend" not in screen
        term.keys("q")
        assert "EXIT=0" in term.wait_for(lambda s: "EXIT=" in s, "the command to exit")
    finally:
        term.close()


def test_tui_does_not_run_the_program_under_for():
    """aot-check refuses --for (it runs the program, which needs the device): so does
    the browser's AOT check tab; its Profile tab estimates, saying so, as profile
    --for does."""
    term = tui_for("tpu:v5e:2x4")
    refused = "needs the device"
    try:
        term.wait_for(lambda s: "for tpu:v5e:2x4" in s, "the module compiled for the TPU")
        term.keys("8")
        term.wait_for(lambda s: "Press enter to run it" in s, "the Profile tab")
        term.keys("Enter")
        screen = term.wait_for(lambda s: "estimated, not measured" in s, "the estimate")
        assert "Collectives, estimated" in screen or "Instructions by estimated" in screen
        term.keys("6")
        # Said before any key (issue 61 item 7): no "Press enter" that then fails.
        screen = term.wait_for(
            lambda s: "The AOT check runs your function" in s, "the AOT check tab"
        )
        assert refused in screen, f"the AOT check tab offers to run under --for:\n{screen}"
        assert "Press enter" not in screen, screen
        term.keys("Enter")
        screen = term.wait_for(lambda s: refused in s, "the AOT check still refused")
        assert "verdict" not in screen, f"the AOT check ran on this CPU under --for:\n{screen}"
    finally:
        term.close()


# --- does it fit? --------------------------------------------------------------------------


def test_a_program_that_does_not_fit_a_tpu(truth):
    needs("tpu")
    refused = truth["too_big tpu:v5e:2x4"]
    assert refused["error"].startswith("RESOURCE_EXHAUSTED: "), refused
    xla_says = refused["error"].removeprefix("RESOURCE_EXHAUSTED: ")
    run = hloscope("memory", *TOO_BIG, "--for", "tpu:v5e:2x4", "--json")
    assert run.code == 1, run.stderr
    assert run.stderr == ""
    doc = run.json()
    fit = doc["fit"]
    assert fit["fits"] is False
    assert "HBM" in fit["refused"]
    assert fit["refused"] == xla_says
    assert fit["required_from"] == "buffer assignment"
    assert fit["required_bytes"] > fit["device_bytes"] == 16 << 30
    assert doc["buffers_at_peak"]
    # The 8 GiB argument x and the 4 GiB w are live at the peak.
    sizes = {b["path"]: b["bytes"] for b in doc["buffers_at_peak"] if b["kind"] == "parameter"}
    assert sizes == {"x": 8 << 30, "w": 4 << 30}
    assert all(doc["totals"][k] is None for k in ("argument_bytes", "temp_bytes"))
    text = hloscope("memory", *TOO_BIG, "--for", "tpu:v5e:2x4")
    assert text.code == 1
    assert any(
        line.startswith("fits") and "does not fit" in line for line in text.stdout.splitlines()
    )
    line = one_line_error(hloscope("fusions", *TOO_BIG, "--for", "tpu:v5e:2x4"))
    assert "does not fit tpu:v5e:2x4" in line and "hloscope memory" in line, line


def test_a_program_that_does_not_fit_a_gpu(truth):
    """XLA's GPU compiler does not refuse it: memory compares XLA's memory analysis
    with the spec's memory itself."""
    needs("gpu")
    expected = truth["too_big gpu:l4"]["memory"]
    run = hloscope("memory", *TOO_BIG, "--for", "gpu:l4", "--json")
    assert run.code == 1, run.stderr
    doc = run.json()
    assert {k: doc["totals"][k] for k in expected} == expected
    needed = sum(expected[k] for k in expected if k != "alias_bytes") - expected["alias_bytes"]
    assert doc["fit"] == {
        "fits": False,
        "required_bytes": needed,
        "required_from": "memory analysis",
        "device_bytes": doc["compiled_for"]["memory_bytes"],
        "memory_name": "GPU memory",
        "device": "NVIDIA L4",
        "refused": None,
    }
    assert needed > doc["fit"]["device_bytes"]
    assert hloscope("fusions", *TOO_BIG, "--for", "gpu:l4").code == 0


# --- bad inputs --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "spec",
    [
        "tpu:v9:2x2",
        "tpu:v5e",
        "tpu:v5e:2x2x2",
        "tpu:v4:2x2",
        "tpu:v5e:2x4,slices=0",
        "tpu:v5e:2x4,cores=2",
        "tpu:v5e:32x32",
        "gpu:h200",
        "gpu:h100,gpus=2",
        "banana",
        "tpu",
    ],
)
def test_a_wrong_spec_is_one_line_naming_the_accepted_forms(spec):
    line = one_line_error(hloscope("fusions", BEFORE_HLO, "--for", spec))
    assert f"--for {spec}" in line, line
    assert "tpu:GEN:TOPOLOGY" in line and "gpu:NAME" in line, line


def test_a_platform_that_cannot_be_made_is_one_line(tmp_path):
    not_a_spec = tmp_path / "not_a_gpu.txtpb"
    not_a_spec.write_text("foo: 1\n")
    for spec, says in [
        (f"gpu:{tmp_path / 'missing.txtpb'}", "cannot read the GPU spec"),
        (f"gpu:{not_a_spec}", "not a GPU spec"),
    ]:
        line = one_line_error(hloscope("fusions", BEFORE_HLO, "--for", spec))
        assert f"--for {spec}" in line and says in line, line
    if COMPILERS["tpu"][1]:
        # A layout libtpu does not make: its reason.
        line = one_line_error(hloscope("fusions", BEFORE_HLO, "--for", "tpu:v5e:3x3"))
        assert "--for tpu:v5e:3x3" in line and "v5e:3x3" in line.split("--for tpu:v5e:3x3")[1]


def test_aot_check_refuses_for():
    # profile --for estimates instead (tests/platforms/test_profile_for.py).
    for command, target, spec in [
        ("aot-check", sample("aot", "step"), "gpu:h100"),
    ]:
        line = one_line_error(hloscope(command, *target, "--for", spec))
        assert f"--for {spec}" in line and "needs the device" in line, line


def test_a_program_with_its_own_device_count_is_refused_naming_both():
    needs("tpu")
    # samples/sharded_mlp.py sets jax_num_cpu_devices=8; a v4 2x2x1 has 4.
    line = one_line_error(
        hloscope("placement", *sample("sharded_mlp", "mlp"), "--for", "tpu:v4:2x2x1")
    )
    assert "sets 8 devices" in line and "tpu:v4:2x2x1 has 4" in line, line
    # The same count is compiled.
    assert hloscope("placement", *sample("sharded_mlp", "mlp"), "--for", "tpu:v5e:2x4").code == 0
    # So is a count the program asks for in XLA_FLAGS when it is imported.
    own_flags = [
        "tests/platforms/sets_xla_flags.py:double",
        "--args",
        "tests/platforms/sets_xla_flags.py:example_args",
    ]
    line = one_line_error(hloscope("fusions", *own_flags, "--for", "tpu:v4:2x2x1"))
    assert "sets 8 devices" in line and "XLA_FLAGS" in line and "has 4" in line, line
    assert hloscope("fusions", *own_flags, "--for", "tpu:v5e:2x4").code == 0


def test_a_device_count_in_the_environment_is_the_platforms():
    """XLA_FLAGS' count from before hloscope started (as this suite's conftest sets
    it) is the environment's, not the program's: the platform's count replaces it."""
    needs("tpu")
    env = child_env()
    env["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
    run = hloscope("placement", *SHARDED, "--for", "tpu:v4:2x2x1", "--json", env=env)
    assert run.code == 0, run.stderr
    assert run.stderr == ""
    doc = run.json()
    assert doc["compiled_for"]["devices"] == doc["partitions"] == 4


# --- without --for ------------------------------------------------------------------------------


def test_commands_without_for_print_nothing_on_stderr():
    """With libtpu and the CUDA plugin installed, nothing of theirs reaches stderr
    when they are not asked for."""
    if not (COMPILERS["tpu"][1] or COMPILERS["gpu"][1]):
        pytest.skip("neither libtpu nor jax_plugins.xla_cuda12 is installed")
    for args in (
        ["inspect", *NESTED, "--json"],
        ["fusions", BEFORE_HLO, "--compile", "--json"],
    ):
        run = run_once(*args)
        assert run.code == 0, run.stderr
        assert run.stderr == "", args


def test_compiled_for_without_for():
    """A local compile: the CPU, no spec, with the device; a lowered module: null;
    `--for cpu` is no --for."""
    compiled = run_once("inspect", *NESTED, "--compile", "--json").json()["compiled_for"]
    assert compiled["platform"] == "cpu" and compiled["spec"] is None
    assert compiled["deviceless"] is False and compiled["compiler"] == "jaxlib"
    assert compiled["devices"] == 1
    assert run_once("inspect", *NESTED, "--json").json()["compiled_for"] is None
    as_cpu = hloscope("inspect", *NESTED, "--for", "cpu", "--json").json()
    assert as_cpu["compiled_for"] is None and as_cpu["source"]["stage"] == "lowered"
    dump = run_once("fusions", BEFORE_HLO, "--compile", "--json").json()["compiled_for"]
    assert dump["platform"] == "cpu" and dump["spec"] is None and dump["deviceless"] is False

"""`--for tpu:...`: the device order of the mesh the program makes on the slice.

On a TPU slice `jax.make_mesh` orders the devices for the torus, and XLA compiles
that device assignment. The truth is JAX's: the same program compiled through
`jax.experimental.topologies`, its mesh made by `jax.make_mesh` over the topology's
devices (`jax_truth.py`, in a child process). hloscope compiles it as the command line
does, in a child process of its own (the loader, as `--for` runs it), and its
optimized module, memory analysis and `compiled_for` are compared with JAX's: the
device assignment, the entry's argument shardings, every collective's replica groups
and the generated code's bytes.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from typing import Any

import pytest
from test_compile_for import ROOT, child_env, hloscope, needs, run_truth

pytestmark = pytest.mark.slow

TARGETS = "tests/platforms/targets.py"
MADE = (f"{TARGETS}:made_mesh_block", f"{TARGETS}:made_mesh_args")
"""A sharded block whose mesh `jax.make_mesh` makes while it is traced."""
LISTED = (f"{TARGETS}:sharded_block", f"{TARGETS}:sharded_args")
"""The same block over a mesh built from the device list, in its order."""

SPECS = {"tpu:v5e:2x4": "v5e:2x4", "tpu:v5e:4x4": "v5e:4x4", "tpu:v5p:2x2x2": "v5p:2x2x2"}

# Meshes of other helpers, or of devices the program gives: by spec, the factory of
# `sharded_sum`'s argument.
OTHER_MESHES = {
    "tpu:v5e:2x2,slices=2": "hybrid_mesh_args",  # create_hybrid_device_mesh
    "tpu:v5e:2x4": "reversed_mesh_args",  # jax.make_mesh(devices=jax.devices()[::-1])
}


def _case(topology: str, function: str, args: str, **kwargs: int) -> dict[str, Any]:
    return {
        "platform": "tpu",
        "topology": topology,
        "kwargs": kwargs,
        "module": TARGETS,
        "function": function,
        "args": args,
        "sharded": True,
        "assignment": True,
    }


@pytest.fixture(scope="module")
def truth() -> dict[str, dict[str, Any]]:
    """What JAX compiles over the topologies' devices, meshes made as on the slice."""
    needs("tpu")
    cases = {}
    for spec, topology in SPECS.items():
        cases[f"made {spec}"] = _case(topology, "made_mesh_block", "made_mesh_args")
        cases[f"listed {spec}"] = _case(topology, "sharded_block", "sharded_args")
    cases["other tpu:v5e:2x2,slices=2"] = _case(
        "v5e:2x2", "sharded_sum", "hybrid_mesh_args", num_slices=2
    )
    cases["other tpu:v5e:2x4"] = _case("v5e:2x4", "sharded_sum", "reversed_mesh_args")
    return run_truth(cases)


# hloscope's loader, as `hloscope COMMAND TARGET --args FACTORY --for SPEC` runs it; the
# facts of its optimized module's text read by the truth's own reader.
_THROUGH_HLOSCOPE = textwrap.dedent(
    """
    import json, sys
    from hloscope.compile_for import parse_compile_for
    from hloscope.render.json import plain
    from hloscope.sources import loader

    target, factory, spec = sys.argv[1:4]
    options = loader.LoadOptions(
        args_factory=factory, compile_for=parse_compile_for(spec), optimized=True
    )
    loaded = loader.load(target, options)
    compilation = loaded.compilation
    sys.path.insert(0, "tests/platforms")
    from jax_truth import device_facts

    print(json.dumps({
        "compiled_for": plain(compilation.compiled_for),
        "memory": dict(compilation.memory),
        "notes": list(loaded.notes),
        **device_facts(compilation.hlo_text),
    }))
    """
)


def through_hloscope(program: tuple[str, str], spec: str) -> dict[str, Any]:
    env = child_env()
    env["ALLOW_MULTIPLE_LIBTPU_LOAD"] = "1"
    run = subprocess.run(
        [sys.executable, "-c", _THROUGH_HLOSCOPE, *program, spec],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        timeout=600,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-4000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("spec", SPECS)
def test_a_mesh_jax_make_mesh_makes_is_compiled_in_the_slices_order(spec, truth):
    """The block whose mesh `jax.make_mesh` makes compiles over the slice's devices
    in the order `jax.make_mesh` gives them on the slice: the same device assignment,
    argument shardings, replica groups and generated code as JAX's own compilation."""
    expected = truth[f"made {spec}"]
    # On these slices the mesh's order is not the topology's: the case tells them apart.
    assert expected["device_ids"] != expected["topology_ids"]
    found = through_hloscope(MADE, spec)
    compiled_for = found["compiled_for"]
    assert compiled_for["device_ids"] == expected["device_ids"]
    assert compiled_for["slice_mesh_order"] is True
    assert found["argument_shardings"] == expected["argument_shardings"]
    assert found["replica_groups"] == expected["replica_groups"]
    assert (
        found["memory"]["generated_code_size_in_bytes"]
        == (expected["memory"]["generated_code_bytes"])
    )
    assert found["notes"] == []


@pytest.mark.parametrize("spec", ["tpu:v5e:4x4", "tpu:v5e:2x4"])
def test_a_mesh_built_from_the_device_list_keeps_its_order(spec, truth):
    """`Mesh(np.array(jax.devices()).reshape(...))`: host device k is the topology's
    k-th device (on v5e:4x4 not the k-th by id: the topology lists its devices host by
    host, as `jax.devices()` does on the slice)."""
    expected = truth[f"listed {spec}"]
    assert expected["device_ids"] == expected["topology_ids"]
    found = through_hloscope(LISTED, spec)
    assert found["compiled_for"]["device_ids"] == expected["device_ids"]
    assert found["compiled_for"]["slice_mesh_order"] is False
    assert found["argument_shardings"] == expected["argument_shardings"]
    assert found["replica_groups"] == expected["replica_groups"]
    assert (
        found["memory"]["generated_code_size_in_bytes"]
        == (expected["memory"]["generated_code_bytes"])
    )


@pytest.mark.parametrize("spec", OTHER_MESHES)
def test_other_mesh_helpers_and_given_devices_are_as_on_the_slice(spec, truth):
    """`mesh_utils.create_hybrid_device_mesh` over two slices, and `jax.make_mesh`
    given the devices in reverse (host device k is the topology's k-th): the device
    assignment and code of JAX's own compilation."""
    expected = truth[f"other {spec}"]
    assert expected["device_ids"] != expected["topology_ids"]
    found = through_hloscope((f"{TARGETS}:sharded_sum", f"{TARGETS}:{OTHER_MESHES[spec]}"), spec)
    assert found["compiled_for"]["device_ids"] == expected["device_ids"]
    assert found["compiled_for"]["slice_mesh_order"] is True
    assert found["replica_groups"] == expected["replica_groups"]
    assert (
        found["memory"]["generated_code_size_in_bytes"]
        == (expected["memory"]["generated_code_bytes"])
    )


def test_compiled_for_says_the_device_order_in_json(truth):
    """`compiled_for.device_ids` and `slice_mesh_order` in a command's JSON (checked
    against its schema), and the mesh helpers put back once the target is lowered."""
    spec = "tpu:v5e:2x4"
    run = hloscope("placement", MADE[0], "--args", MADE[1], "--for", spec, "--json", env=_env())
    assert run.code == 0, run.stderr
    compiled_for = run.json()["compiled_for"]
    assert compiled_for["device_ids"] == truth[f"made {spec}"]["device_ids"]
    assert compiled_for["slice_mesh_order"] is True


def test_remat_compiles_the_gradient_in_the_slices_order(truth):
    """`remat --for`: the loss's arguments are made, it is traced and its gradient
    lowered with the slice's mesh, so the gradient is compiled in its order too."""
    spec = "tpu:v5e:2x4"
    run = hloscope(
        "remat",
        f"{TARGETS}:made_mesh_loss",
        "--args",
        MADE[1],
        "--for",
        spec,
        "--json",
        env=_env(),
    )
    assert run.code == 0, run.stderr
    compiled_for = run.json()["compiled_for"]
    assert compiled_for["device_ids"] == truth[f"made {spec}"]["device_ids"]
    assert compiled_for["slice_mesh_order"] is True


def test_a_mesh_jax_would_not_make_on_the_slice_keeps_the_host_order():
    """`jax.make_mesh` refuses a multi-slice topology: the mesh keeps jax.devices()'
    order (host device k, the platform's k-th), and a note says why."""
    needs("tpu")
    run = hloscope("placement", *_args(MADE), "--for", "tpu:v5e:2x2,slices=2", "--json", env=_env())
    assert run.code == 0, run.stderr
    doc = run.json()
    assert doc["compiled_for"]["slice_mesh_order"] is False
    assert doc["compiled_for"]["device_ids"] == [100000 + k for k in range(4)] + [
        200000 + k for k in range(4)
    ]
    said = "jax.make_mesh raises over tpu:v5e:2x2,slices=2's devices, as it would on the slice"
    assert any(said in note for note in doc["notes"]), doc["notes"]


def test_the_mesh_helpers_are_put_back():
    """After loading, `jax.make_mesh` and `mesh_utils.create_device_mesh` are JAX's
    own again (in hloscope's own process, as the Python API uses it)."""
    needs("tpu")
    code = textwrap.dedent(
        """
        import jax, jax.experimental.mesh_utils as mesh_utils
        before = (jax.make_mesh, mesh_utils.create_device_mesh)
        from hloscope.compile_for import parse_compile_for
        from hloscope.sources import loader
        options = loader.LoadOptions(
            args_factory="tests/platforms/targets.py:made_mesh_args",
            compile_for=parse_compile_for("tpu:v5e:2x4"),
            optimized=True,
        )
        loader.load("tests/platforms/targets.py:made_mesh_block", options)
        assert (jax.make_mesh, mesh_utils.create_device_mesh) == before
        print([d.id for d in jax.make_mesh((4, 2), ("a", "b")).devices.flat])
        """
    )
    run = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=_env(),
        timeout=600,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-4000:]
    # Outside the load, a mesh over the host devices is in their order again.
    assert run.stdout.strip().splitlines()[-1] == str(list(range(8)))


def test_arguments_given_as_values_keep_their_mesh():
    """`hloscope.inspect(TARGET, *args).compile_for(SPEC)` with arguments the caller
    made over the host devices: the meshes made while it is traced are made as the
    arguments' were (in `jax.devices()`' order), not the slice's, which JAX would
    refuse as another device assignment."""
    needs("tpu")
    code = textwrap.dedent(
        """
        import sys
        import jax
        jax.config.update("jax_num_cpu_devices", 8)
        sys.path.insert(0, "tests/platforms")
        import targets
        import hloscope
        args = targets.made_mesh_args()
        inspection = hloscope.inspect("tests/platforms/targets.py:made_mesh_block", *args)
        jax.clear_caches()  # traced again, for the platform
        compiled_for = inspection.compile_for("tpu:v5e:2x4").source.compiled_for
        print(list(compiled_for.device_ids), compiled_for.slice_mesh_order)
        """
    )
    run = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=_env(),
        timeout=600,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-4000:]
    assert run.stdout.strip().splitlines()[-1] == f"{list(range(8))} False"


def _args(program: tuple[str, str]) -> list[str]:
    return [program[0], "--args", program[1]]


def _env() -> dict[str, str]:
    env = child_env()
    env["ALLOW_MULTIPLE_LIBTPU_LOAD"] = "1"
    return env


def test_compiled_for_read_back_from_json_is_the_same_value():
    """A dump compiled for a platform in a child process comes back as JSON: its
    `device_ids` a list there, a tuple again here (a value the compile is keyed by
    must hash and compare as the one made in this process)."""
    import dataclasses

    from hloscope.stages import CompiledFor

    made = CompiledFor(
        "tpu",
        "v5e",
        "tpu:v5e:2x4",
        "v5e:2x4",
        8,
        8,
        "TPU v5 lite",
        "libtpu",
        None,
        True,
        None,
        device_ids=(0, 1, 2, 3, 7, 6, 5, 4),
        slice_mesh_order=True,
    )
    read_back = CompiledFor(**json.loads(json.dumps(dataclasses.asdict(made))))
    assert read_back == made and hash(read_back) == hash(made)

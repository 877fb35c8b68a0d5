"""The floor of a view of the 16-chip LLM-shaped step compiled `--for tpu:v5e:4x4`
(bench/run.py's `cache` rows, issue 53): a plain process that compiles
samples/llm_step.py's train step (sized by `LLM_STEP`) for a v5e 4x4 topology on this
machine, without a TPU, and prints the optimized module. The program gets as many host
devices as the topology has (its mesh is made from `jax.devices()`), is lowered for
the `tpu` platform, and compiled through the topology's client over its 16 devices
with JAX's sharding propagation flags, as hloscope's `--for` does.

    ALLOW_MULTIPLE_LIBTPU_LOAD=1 LLM_STEP=4,1024,512,16 python bench/llm_topology_floor.py
"""

import os
import sys
from pathlib import Path

os.environ.setdefault("ALLOW_MULTIPLE_LIBTPU_LOAD", "1")

import jax
import numpy as np
from jax._src import compiler
from jax._src.interpreters import pxla
from jax._src.lib import xla_client
from jax.experimental import topologies

TOPOLOGY = "v5e:4x4"
DEVICES = 16

jax.config.update("jax_num_cpu_devices", DEVICES)
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from samples.llm_step import example_args, train_step  # noqa: E402


def main() -> None:
    devs = topologies.get_topology_desc(TOPOLOGY, "tpu").devices[:DEVICES]
    lowered = train_step.trace(*example_args()).lower(lowering_platforms=("tpu",))
    args = lowered._lowering.compile_args
    options = compiler.get_compile_options(
        num_replicas=1,
        num_partitions=DEVICES,
        device_assignment=np.array(devs, dtype=object).reshape(1, DEVICES),
        backend=devs[0].client,
    )
    to_inputs, to_outputs = pxla.get_prop_to_input_output(
        args["in_shardings"], args["out_shardings"], len(args["ordered_effects"])
    )
    build = options.executable_build_options
    build.allow_spmd_sharding_propagation_to_parameters = list(to_inputs)
    build.allow_spmd_sharding_propagation_to_output = list(to_outputs)
    executable = devs[0].client.compile(
        lowered.compiler_ir("stablehlo"), xla_client.DeviceList(tuple(devs)), options
    )
    print(executable.hlo_modules()[0].to_string())


if __name__ == "__main__":
    main()

"""The floor of `hloscope fusions ENTRY --for tpu:v5e:2x4 --json` (bench/run.py's `for`
row, issue 46): a plain process that compiles the 10k-op entrypoint (bench/generate.py)
for a v5e 2x4 TPU topology on this machine, without a TPU, and prints the optimized
module. The topology's compile-only devices from libtpu
(`topologies.get_topology_desc`), the function lowered for the `tpu` platform, and
compiled through the topology's client over its first device (a `Lowered`'s own
`.compile()` would compile for the local CPU), as hloscope's `--for` does.

    ALLOW_MULTIPLE_LIBTPU_LOAD=1 python bench/topology_floor.py

(libtpu holds /tmp/libtpu_lockfile while a process that loaded it runs; the variable,
which hloscope sets too, lets this one load it beside another.)
"""

import os
import sys
from pathlib import Path

os.environ.setdefault("ALLOW_MULTIPLE_LIBTPU_LOAD", "1")

import jax
import numpy as np
from jax._src import compiler
from jax._src.lib import xla_client
from jax.experimental import topologies

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.generate import entrypoint, example_args

TOPOLOGY = "v5e:2x4"


def main() -> None:
    devs = topologies.get_topology_desc(TOPOLOGY, "tpu").devices
    lowered = jax.jit(entrypoint).trace(*example_args()).lower(lowering_platforms=("tpu",))
    options = compiler.get_compile_options(
        num_replicas=1,
        num_partitions=1,
        device_assignment=np.array(devs[:1], dtype=object).reshape(1, 1),
        backend=devs[0].client,
    )
    executable = devs[0].client.compile(
        lowered.compiler_ir("stablehlo"), xla_client.DeviceList(tuple(devs[:1])), options
    )
    print(executable.hlo_modules()[0].to_string())


if __name__ == "__main__":
    main()

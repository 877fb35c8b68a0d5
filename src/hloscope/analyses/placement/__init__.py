"""Where each piece of a module runs and where its data lives.

Computes, from the model alone:

- the compute type of every op: `device` unless marked. Marks are
  `_xla_compute_type` in an op's `mhlo.frontend_attributes` (what
  `compute_on("device_host")` writes: `host`; HLO's `frontend_attributes={...}`
  becomes the same attribute when converted), `_xla_stream_annotation` (GPU
  streams, shown as `gpu_stream:N`), and an `execution_thread` other than `main`
  on a function (XLA's host offloading moves host calls to the `host` thread). A
  mark on an op holds for the ops in its regions, and a mark on a call (or any op
  naming functions: `func.call`, `called_computations`, ...) for everything the
  called functions contain, transitively. Unknown compute types are kept as they
  are; an op in a function reached from differently placed calls gets the types
  joined with `|` (`device|host`).
- compute regions: the ops of each non-device compute type grouped by what placed
  them (one marked call and what it reaches, or the marked ops of one function),
  with their source lines and the bytes they read from outside.
- memory: `mhlo.memory_kind` on the entry function's arguments and results and the
  memory space of their layout (`S(5)` is host memory, recorded by
  `hloscope.ir.layout` because XLA's conversion drops it); transfers:
  `annotate_device_placement` custom calls (`_xla_buffer_placement`),
  `MoveToHost`/`MoveToDevice`, copies between memory spaces in optimized HLO
  (`xla_shape` layouts with `S(n)`), and Python host callbacks.
- sharding: meshes (`sdy.mesh`, or `xla.sdy.meshes` in HLO's frontend attributes),
  the sharding of each argument and result (`sdy.sharding`, `mhlo.sharding`, or
  the `mhlo.spmd_*` shardings of a partitioned module), sharding constraints
  (`sdy.sharding_constraint`, `sdy.reshard`, `custom_call @Sharding`), manual
  computations (`sdy.manual_computation`, `@SPMDFullToShardShape` and
  `@SPMDShardToFullShape`); and collectives (all-reduce, all-gather,
  reduce-scatter, all-to-all, collective-permute, collective-broadcast, ragged
  all-to-all), their async forms counted with them.
- warnings: a call marked for a compute type whose body has no op with that mark
  (only the call says where it runs), device compute reading a value in host
  memory (an implicit transfer), and a host region fed by large device values (a
  device-to-host copy on every call).

Only functions reachable from the module's public functions are read, as in
`hloscope.analyses.structure`, so the `fused_computation` copies that XLA's
converter leaves beside `mhlo.fusion` regions are not counted twice.

The package's modules, one job each: `report` (the dataclasses and their closed
sets of strings), `attributes` (what an op's attributes say), `values` (sizes and
names of values), `compute` (compute types and regions), `memory` (memory kinds
and transfers), `sharding` (meshes and shardings), `collectives`, `warnings`,
`scan` (the ops that can matter, found in one pass), and `analysis`
(`analyze_placement`, which puts them together).

The analysis costs next to nothing where its subject is absent: one pass over the
op names and attribute names (`scan`) finds the ops that can place anything,
carry a sharding or a memory space, move data or communicate, and everything else
is counted as device compute without a look. A function placed on the device is
walked only through its calls and its marked ops.
"""

from hloscope.analyses.placement.analysis import analyze_placement
from hloscope.analyses.placement.collectives import collective_kind
from hloscope.analyses.placement.report import (
    DEVICE,
    HOST,
    ComputeRegion,
    PlacedOp,
    Placement,
)

__all__ = [
    "DEVICE",
    "HOST",
    "ComputeRegion",
    "PlacedOp",
    "Placement",
    "analyze_placement",
    "collective_kind",
]

"""Which memory does this value live in? Host memory kinds and transfers.

JAX places arrays in device memory or in host memory (`memory_kind="pinned_host"`,
`jax.memory.Space.Host`). The placement reaches the IR as `mhlo.memory_kind` on the entry
function's arguments and results and as `annotate_device_placement` custom calls
(`_xla_buffer_placement`) where a value moves; after XLA's optimizations a host buffer
has memory space 5 in its layout (`{1,0:S(5)}`).

- `host_output`: `out_shardings` with `memory_kind="pinned_host"`: the result is written
  to host memory (an `annotate_device_placement` to `pinned_host`; after `--compile`,
  `S(5)` in the entry layout).
- `host_input`: `in_shardings` in `pinned_host`, computed on directly: device compute on
  a value in host memory (XLA streams it in).
- `offload`: `jax.device_put` to host memory and back inside a jit. On the CPU, JAX
  lowers `device_put` inside jit to nothing (CPU memory is host memory), so the lowered
  module shows no transfer: `offload_for_tpu` lowers the same function for the TPU (no
  TPU needed) and shows both transfers; `--compile` compiles that module for the CPU,
  whose pipeline strips the annotations and keeps the host output in `S(5)`.
- `host_compute_to_host_memory`: the `compute_on2` form (JAX 0.10; tracing it raises on
  older JAX): a call marked `_xla_compute_type = "host"`, its result in `pinned_host`.
- `with_callback`: `jax.pure_callback` sends its operand to Python on the host and takes
  the result back (a custom call to JAX's Python callback).

JAX never writes `MoveToHost`/`MoveToDevice`: XLA's TPU and GPU pipelines make them (see
its pass dumps). Importing this module asks JAX for 8 CPU devices, as `sharded_mlp.py` does.

    hloscope placement samples/memory_kinds.py:offload_for_tpu
"""

import contextlib

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import SingleDeviceSharding

try:
    from jax.experimental.compute_on import compute_on2
except ImportError:  # JAX 0.8 and 0.9: what it decorates raises when traced

    def compute_on2(**_):
        return lambda _f: lambda *_a: _compute_on2_missing()


# The update raises when a backend exists already.
with contextlib.suppress(RuntimeError):
    jax.config.update("jax_num_cpu_devices", 8)

device_memory = SingleDeviceSharding(jax.devices()[0], memory_kind="device")
host_memory = SingleDeviceSharding(jax.devices()[0], memory_kind="pinned_host")


def _scale(x):
    return x * 2.0


host_output = jax.jit(_scale, out_shardings=host_memory)

host_input = jax.jit(_scale, in_shardings=host_memory, out_shardings=device_memory)


@jax.jit
def offload(x):
    y = jax.device_put(x * 2.0, jax.memory.Space.Host)
    z = jax.device_put(y, jax.memory.Space.Device)
    return z + 1.0, y


def offload_for_tpu():
    """`offload` lowered for the TPU: a `jax.stages.Lowered` (no TPU needed)."""
    return offload.trace(*example_args()).lower(lowering_platforms=("tpu",))


@compute_on2(compute_type="device_host", out_memory_spaces=jax.memory.Space.Host)
def _host_sine(x):
    return jnp.sin(x) * 2.0


@jax.jit
def host_compute_to_host_memory(x):
    return _host_sine(x)


def _host_norm(x):
    return np.asarray(np.linalg.norm(x), dtype=np.float32)


@jax.jit
def with_callback(x):
    norm = jax.pure_callback(_host_norm, jax.ShapeDtypeStruct((), jnp.float32), x)
    return x / norm


def example_args():
    """One f32[256,1024] array (1 MiB)."""
    return (jax.ShapeDtypeStruct((256, 1024), jnp.float32),)


def _compute_on2_missing():
    raise NotImplementedError(
        "jax.experimental.compute_on.compute_on2 came with JAX 0.10; "
        f"JAX {jax.__version__} is installed"
    )

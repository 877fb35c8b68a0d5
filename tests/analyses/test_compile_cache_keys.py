"""The compile cache's keys of real lowerings (`sources.jax.compile`): the same program
lowered twice has one key; the devices it is compiled over, in their order, the
compiler options and JAX's compile settings each make another."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from hloscope.compile_for import parse_compile_for
from hloscope.sources.jax import compile as compile_module
from hloscope.sources.jax import platforms


def _lowering(devices: list[object]):
    from hloscope.sources.loader import Call, load_object

    mesh = Mesh(np.array(devices), ("x",))
    sharding = NamedSharding(mesh, PartitionSpec("x"))
    f = jax.jit(lambda a: jnp.sin(a) * 2, in_shardings=sharding, out_shardings=sharding)
    loaded = load_object(f, "f", call=Call((jax.ShapeDtypeStruct((8, 4), jnp.float32),), {}))
    assert loaded.lowering is not None
    return loaded.lowering


def test_one_program_one_key_and_the_device_order_another() -> None:
    devices = jax.devices()[:4]
    if len(devices) < 4:
        pytest.skip("needs 4 host devices (tests/conftest.py asks for 8)")
    # Lowered from one call site: the module's source locations are the same.
    lowerings = [_lowering(d) for d in (devices, devices, devices[::-1], devices)]
    key, again, reordered, with_options = (
        compile_module._lowered_key(lowering, options)
        for lowering, options in zip(lowerings, [(), (), (), (("xla_cpu_x", "1"),)], strict=True)
    )
    assert key == again
    assert reordered != key, "the devices' order is in the key"
    assert with_options != key
    assert compile_module._lowered_key(lowerings[0], (("xla_dump_to", "/d"),)) == key


def test_a_setting_of_jaxs_compile_options_makes_another_key() -> None:
    lowering = _lowering(jax.devices()[:1])
    key = compile_module._lowered_key(lowering, ())
    with _config("jax_exec_time_optimization_effort", 0.5):
        assert compile_module._lowered_key(lowering, ()) != key
    assert compile_module._lowered_key(lowering, ()) == key


class _config:
    def __init__(self, name: str, value: object) -> None:
        self.name, self.value = name, value

    def __enter__(self) -> None:
        self.old = jax.config.values[self.name]
        jax.config.update(self.name, self.value)

    def __exit__(self, *exc: object) -> None:
        jax.config.update(self.name, self.old)


def test_a_for_key_names_the_devices_the_compile_is_given() -> None:
    # The slice's device order (the program's mesh on the slice) is a value of the
    # compile, as the module is: another order, another key; the same, the same key.
    pytest.importorskip("libtpu", reason="libtpu is not installed: no TPU devices to name")
    target = parse_compile_for("tpu:v5e:2x2")
    assert target is not None
    forward = platforms.DeviceOrder((0, 1, 2, 3), slice_mesh=True)
    backward = platforms.DeviceOrder((3, 2, 1, 0), slice_mesh=True)

    def key(order: platforms.DeviceOrder | None) -> str:
        return compile_module.module_key(b"m", "m", 4, 1, (), target, None, order)

    assert key(forward) == key(forward) == key(None)
    assert key(backward) != key(forward)

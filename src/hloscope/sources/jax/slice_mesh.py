"""The device order of the mesh a program makes on the slice, under `--for`.

On a TPU slice, `jax.make_mesh` and `mesh_utils.create_device_mesh` order the devices
for the torus: the program's mesh holds them in another order than `jax.devices()`,
and XLA compiles that device assignment (its collectives' strategies and code follow
it). Under `--for` the program runs over host devices, which those functions leave in
their order. So while hloscope imports the target, makes its arguments and lowers it
(`slice_meshes`), they are wrapped: each call is made as JAX makes it on the slice,
over the platform's compile-only devices, and the program is given that mesh over its
host devices.

One rule maps the two: host device k (the k-th of `jax.devices()`) stands for the
platform's k-th device (on a slice, `jax.devices()` lists the devices in the order
the topology does, host by host). A `devices=` the program gives is translated by it
before the call, and the mesh JAX makes over the platform's devices is given back
over the host devices standing for them. The lowered program's device assignment,
read through the same rule (`lowered_device_order`), names the slice's devices in the
order the slice's mesh holds them: what is compiled. A mesh the program builds from
its own device list (`Mesh(np.array(jax.devices()).reshape(...))`) keeps that list's
order.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import inspect
import sys
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import jax
import jax.experimental.mesh_utils  # imported, to be wrapped (`_HELPERS`)
import numpy as np
from jax.sharding import Mesh

from hloscope.errors import HloscopeError, one_line
from hloscope.sources.jax.platforms import DeviceOrder, platform_devices

if TYPE_CHECKING:
    from hloscope.compile_for import CompileFor

# (module, attribute): JAX's public functions that order a slice's devices.
_HELPERS = (
    ("jax", "make_mesh"),
    ("jax.experimental.mesh_utils", "create_device_mesh"),
    ("jax.experimental.mesh_utils", "create_hybrid_device_mesh"),
)


@dataclasses.dataclass
class _Window:
    """The platform the mesh helpers make meshes for while a `slice_meshes` block
    runs, and what they said."""

    target: CompileFor
    notes: list[str]
    inside: bool = False
    """A helper is running: the helpers it calls are JAX's own."""


_window: _Window | None = None
"""The block running now. The wrappers read it when called: a program may keep a
helper it imported by name (`from jax import make_mesh`) and call it in a later block."""

_made: dict[str, set[tuple[int, ...]]] = {}
"""Per `--for` spec, the orders (positions of the platform's devices) of the meshes the
helpers made in this process."""


@contextlib.contextmanager
def slice_meshes(target: CompileFor | None, notes: list[str]) -> Iterator[None]:
    """While the block runs, JAX's mesh helpers make the mesh `target`'s devices would
    have, over the host devices standing for them; put back as they were when it
    ends. What they note (a mesh JAX would not make on the slice) is added to `notes`.
    Without a target: nothing."""
    global _window
    if target is None:
        yield
        return
    before = _window
    originals: list[tuple[Any, str, Any]] = []
    try:
        for module_name, attribute in _HELPERS:
            module = sys.modules.get(module_name)
            original = getattr(module, attribute, None) if module is not None else None
            if original is None:
                continue
            originals.append((module, attribute, original))
            setattr(module, attribute, _on_the_slice(original, f"{module_name}.{attribute}"))
        _window = _Window(target, notes)
        yield
    finally:
        _window = before
        for module, attribute, original in reversed(originals):
            setattr(module, attribute, original)


def _on_the_slice(original: Callable[..., Any], name: str) -> Callable[..., Any]:
    """`original` (a mesh helper taking `devices`), making its mesh as on the slice
    while a `slice_meshes` block runs; as it is otherwise."""
    try:
        signature: inspect.Signature | None = inspect.signature(original)
    except (TypeError, ValueError):
        signature = None

    @functools.wraps(original)
    def on_the_slice(*args: Any, **kwargs: Any) -> Any:
        window = _window
        if window is None or window.inside or signature is None:
            return original(*args, **kwargs)
        window.inside = True
        try:
            return _made_on_the_slice(original, name, signature, args, kwargs, window)
        finally:
            window.inside = False

    return on_the_slice


def _made_on_the_slice(
    original: Callable[..., Any],
    name: str,
    signature: inspect.Signature,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    window: _Window,
) -> Any:
    try:
        bound = signature.bind(*args, **kwargs)
    except TypeError:
        return original(*args, **kwargs)  # JAX says what is wrong with the call
    host = list(jax.devices())
    given = bound.arguments.get("devices")
    chosen = list(given) if given is not None else host
    position = {device: k for k, device in enumerate(host)}
    if not chosen or any(device not in position for device in chosen):
        return original(*args, **kwargs)  # not the host devices: made as given
    try:
        platform = platform_devices(window.target)
    except HloscopeError:
        return original(*args, **kwargs)  # said once it is compiled, in one line
    if len(platform) != len(host):
        # The program set its own device count: refused once it is imported.
        return original(*args, **kwargs)
    bound.arguments["devices"] = [platform[position[device]] for device in chosen]
    try:
        made = original(*bound.args, **bound.kwargs)
    except Exception as exc:
        note = (
            f"{name} raises over {window.target.spec}'s devices, as it would on the slice "
            f"({type(exc).__name__}: {one_line(str(exc), 160)}): compiled here with that "
            "mesh in jax.devices()' order"
        )
        if note not in window.notes:
            window.notes.append(note)
        return original(*args, **kwargs)
    grid = made.devices if isinstance(made, Mesh) else np.asarray(made)
    index = {device.id: k for k, device in enumerate(platform)}
    order = tuple(index[device.id] for device in grid.flat)
    _made.setdefault(window.target.spec, set()).add(order)
    on_host = np.empty(len(order), dtype=object)
    on_host[:] = [host[k] for k in order]
    on_host = on_host.reshape(grid.shape)
    if isinstance(made, Mesh):
        return Mesh(on_host, made.axis_names, axis_types=made.axis_types)
    return on_host


def lowered_device_order(
    devices: tuple[Any, ...] | None, target: CompileFor, needed: int
) -> DeviceOrder | None:
    """The platform's devices a lowering made under `slice_meshes` is compiled over,
    from `devices`, its device assignment's (`private_module_devices`): host device k
    stands for the platform's k-th. None where JAX chose no devices or others than the
    host's (the platform's first `needed` are then used)."""
    if devices is None or len(devices) != needed:
        return None
    position = {device: k for k, device in enumerate(jax.devices())}
    if any(device not in position for device in devices):
        return None
    positions = tuple(position[device] for device in devices)
    return DeviceOrder(positions, positions in _made.get(target.spec, ()))

"""How an HLO module is partitioned, read from XLA's `HloModuleProto` for XLA's own
form of a module (`hloscope.ir.hlo_native`), and written as XLA's HLO-to-MLIR
converter writes it, so that every analysis reads the same on both forms:

- the device counts (`mhlo.num_partitions`, `mhlo.num_replicas`),
- the shardings of the entry's parameters and results
  (`mhlo.spmd_parameters_shardings`, `mhlo.spmd_output_sharding`) and of each
  instruction (`mhlo.sharding`), read by jaxlib's `HloSharding.from_proto`,
- the module's frontend attributes (`mhlo.frontend_attributes`),
- each collective's device groups (`replica_groups`): explicit groups, XLA's iota
  groups (`[2,2]<=[4]`, expanded to groups as the converter does) or a mesh's axes
  (`mesh['axis_0'=2,'axis_1'=2] {'axis_1'}`), whose meshes become `sdy.mesh` ops
  named as the converter names them (`mesh`, `mesh_1`, ...).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from hloscope.ir.context import native, xla_hlo
from hloscope.ir.proto import proto_message, proto_varints


def quoted(text: str) -> str:
    """A string as MLIR quotes it."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def sharding_text(op_sharding: bytes) -> str | None:
    """An `OpSharding` proto as XLA prints the sharding (`{devices=[2,2]<=[4]}`), read by
    jaxlib's own parser; None where it cannot read it."""
    hlo = xla_hlo()
    with native():
        try:
            proto = hlo.OpSharding()
            proto.ParseFromString(op_sharding)
            return str(hlo.HloSharding.from_proto(proto))
        except Exception:
            return None


def tuple_sharding_elements(text: str) -> tuple[str, ...] | None:
    """The elements of a tuple sharding as XLA prints each; None for a sharding that is
    not a tuple (or that jaxlib cannot read)."""
    hlo = xla_hlo()
    with native():
        try:
            sharding = hlo.HloSharding.from_string(text)
            elements = sharding.tuple_elements()
        except Exception:
            return None
        return tuple(str(element) for element in elements) if elements else None


def module_attributes(
    hlo_module: Any, proto_fields: Sequence[tuple[int, int | bytes]]
) -> dict[str, str]:
    """The module attributes XLA's converter writes of partitioning: the SPMD shardings
    of the entry's parameters and results (jaxlib's `HloModule`), the frontend
    attributes (proto field 19) and the device counts of the device assignment (field
    15, where it is for more than one device; the printed header's counts, where given,
    are recorded over these)."""
    hlo = xla_hlo()
    attributes: dict[str, str] = {}
    with native():
        try:
            parameters = [
                str(hlo.HloSharding.from_proto(s)) for s in hlo_module.spmd_parameters_shardings
            ]
            output = hlo_module.spmd_output_sharding
            output_text = str(hlo.HloSharding.from_proto(output)) if output is not None else None
        except Exception:
            parameters, output_text = [], None
    if parameters:
        attributes["mhlo.spmd_parameters_shardings"] = (
            "[" + ", ".join(map(quoted, parameters)) + "]"
        )
    if output_text:
        attributes["mhlo.spmd_output_sharding"] = quoted(output_text)
    for number, value in proto_fields:
        if number == 19 and isinstance(value, bytes):  # frontend_attributes
            pairs = frontend_attributes_map(value)
            if pairs:
                attributes["mhlo.frontend_attributes"] = frontend_attributes_attribute(pairs)
        elif number == 15 and isinstance(value, bytes):  # device_assignment
            counts = _device_counts(value)
            # As XLA's header prints them, and the converted form records them: only
            # where one is not 1 (a module for one device states no counts).
            if counts is not None and counts != (1, 1):
                replicas, partitions = counts
                attributes["mhlo.num_partitions"] = f"{partitions} : i32"
                attributes["mhlo.num_replicas"] = f"{replicas} : i32"
    return attributes


def frontend_attributes_attribute(pairs: Mapping[str, str]) -> str:
    """Frontend attributes as XLA's converter writes them (`mhlo.frontend_attributes`)."""
    return "{" + ", ".join(f"{key} = {quoted(text)}" for key, text in pairs.items()) + "}"


def frontend_attributes_map(message: bytes) -> dict[str, str]:
    """FrontendAttributes (a module's field 19, an instruction's 68): map<string,
    string> map = 1."""
    out: dict[str, str] = {}
    try:
        for number, entry in proto_message(message):
            if number != 1 or not isinstance(entry, bytes):
                continue
            fields = dict(proto_message(entry))
            key, value = fields.get(1, b""), fields.get(2, b"")
            if isinstance(key, bytes) and isinstance(value, bytes) and key:
                out[key.decode("utf-8", "replace")] = value.decode("utf-8", "replace")
    except ValueError:
        return {}
    return out


def _device_counts(message: bytes) -> tuple[int, int] | None:
    """DeviceAssignmentProto: replica_count 1, computation_count 2."""
    try:
        fields = dict(proto_message(message))
    except ValueError:
        return None
    replicas, partitions = fields.get(1), fields.get(2)
    if isinstance(replicas, int) and isinstance(partitions, int) and replicas and partitions:
        return replicas, partitions
    return None


@dataclasses.dataclass(frozen=True)
class MeshAxes:
    """A collective's device groups given as axes of a mesh (proto field 93)."""

    mesh: tuple[tuple[str, int], ...]
    """The mesh's axes (XLA's names: `axis_0`, ...) and sizes."""
    axes: tuple[str, ...]
    """The axes its groups span."""


ReplicaGroupFacts = tuple[tuple[int, ...], ...] | MeshAxes
"""Explicit device groups, or a mesh's axes."""


def replica_groups(fields: Mapping[int, list[int | bytes]]) -> ReplicaGroupFacts | None:
    """A collective instruction's device groups from its `HloInstructionProto` fields
    (by number, each a list of values): mesh axes (93), iota groups (92), explicit
    groups (`collective_device_list` 87, or `replica_groups` 49); None when it has
    none or they cannot be read."""
    try:
        if 93 in fields:
            return _mesh_axes(fields[93][-1])
        if 92 in fields:
            return _iota_groups(fields[92][-1])
        if 87 in fields:
            message = fields[87][-1]
            if not isinstance(message, bytes):
                return None
            listed = proto_message(message)
            groups = [_group(value) for number, value in listed if number == 1]
            iota = [value for number, value in listed if number == 2]
            if iota:
                return _iota_groups(iota[-1])
            return tuple(groups) if groups else None
        if 49 in fields:
            return tuple(_group(value) for value in fields[49]) or None
    except ValueError:
        return None
    return None


def _group(value: int | bytes) -> tuple[int, ...]:
    """ReplicaGroup: replica_ids 1 (packed)."""
    if not isinstance(value, bytes):
        raise ValueError("not a replica group")
    ids: list[int] = []
    for number, listed in proto_message(value):
        if number == 1:
            ids += proto_varints(listed)
    return tuple(ids)


def _iota_groups(value: int | bytes) -> tuple[tuple[int, ...], ...] | None:
    """IotaReplicaGroupListProto: num_replica_groups 1, num_devices_per_group 2,
    iota_reshape_dims 3, iota_transpose_perm 4; the groups it stands for (the devices
    0..N-1 reshaped, transposed, then cut in groups), as the converter lists them."""
    if not isinstance(value, bytes):
        return None
    groups = per_group = 0
    dims: list[int] = []
    perm: list[int] = []
    for number, field in proto_message(value):
        if number == 1 and isinstance(field, int):
            groups = field
        elif number == 2 and isinstance(field, int):
            per_group = field
        elif number == 3:
            dims += proto_varints(field)
        elif number == 4:
            perm += proto_varints(field)
    total = groups * per_group
    if not dims:
        dims = [total]
    if not perm:
        perm = list(range(len(dims)))
    if total <= 0 or _product(dims) != total or sorted(perm) != list(range(len(dims))):
        return None
    devices = [_iota_device(index, dims, perm) for index in range(total)]
    return tuple(tuple(devices[i : i + per_group]) for i in range(0, total, per_group))


def _iota_device(index: int, dims: Sequence[int], perm: Sequence[int]) -> int:
    """The `index`-th device of iota(dims) transposed by `perm`, in row-major order."""
    shape = [dims[p] for p in perm]
    coordinates: list[int] = []
    for size in reversed(shape):
        coordinates.append(index % size)
        index //= size
    coordinates.reverse()
    source = [0] * len(dims)
    for axis, p in enumerate(perm):
        source[p] = coordinates[axis]
    device = 0
    for coordinate, size in zip(source, dims, strict=True):
        device = device * size + coordinate
    return device


def _product(values: Sequence[int]) -> int:
    out = 1
    for value in values:
        out *= value
    return out


def _mesh_axes(value: int | bytes) -> MeshAxes | None:
    """The mesh-axes form: mesh 1 (axes 1: name 1, size 2), axes 2 (AxisRef: the mesh
    axis's index 1; a sub-axis, which this does not read, 2)."""
    if not isinstance(value, bytes):
        return None
    mesh: list[tuple[str, int]] = []
    axes: list[str] = []
    references: list[bytes] = []
    for number, field in proto_message(value):
        if number == 1 and isinstance(field, bytes):
            for inner, axis in proto_message(field):
                if inner == 1 and isinstance(axis, bytes):
                    parts = dict(proto_message(axis))
                    name, size = parts.get(1, b""), parts.get(2, 0)
                    if isinstance(name, bytes) and isinstance(size, int):
                        mesh.append((name.decode("utf-8", "replace"), size))
        elif number == 2 and isinstance(field, bytes):
            references.append(field)
    for reference in references:
        parts = dict(proto_message(reference))
        if 2 in parts:
            return None  # a sub-axis: the groups are not whole axes
        index = parts.get(1, 0)
        if not isinstance(index, int) or not 0 <= index < len(mesh):
            return None
        axes.append(mesh[index][0])
    return MeshAxes(tuple(mesh), tuple(axes)) if mesh else None


def groups_attribute(
    groups: ReplicaGroupFacts, mesh_names: Mapping[tuple[tuple[str, int], ...], str]
) -> str:
    """`replica_groups` as the converter writes it: `dense<[[0, 1], [2, 3]]> :
    tensor<2x2xi64>`, or `#stablehlo.replica_group_mesh_axes<mesh = @mesh, axes =
    [#stablehlo.axis_ref<name = "axis_1">]>` on the mesh `mesh_names` names."""
    if isinstance(groups, MeshAxes):
        axes = ", ".join(f"#stablehlo.axis_ref<name = {quoted(axis)}>" for axis in groups.axes)
        return (
            f"#stablehlo.replica_group_mesh_axes<mesh = @{mesh_names[groups.mesh]}, "
            f"axes = [{axes}]>"
        )
    width = len(groups[0]) if groups else 0
    body = ", ".join("[" + ", ".join(map(str, group)) + "]" for group in groups)
    return f"dense<[{body}]> : tensor<{len(groups)}x{width}xi64>"


def mesh_attribute(axes: tuple[tuple[str, int], ...]) -> str:
    """An `sdy.mesh` op's `mesh` attribute: `#sdy.mesh<["axis_0"=2, "axis_1"=2]>`."""
    return "#sdy.mesh<[" + ", ".join(f"{quoted(name)}={size}" for name, size in axes) + "]>"

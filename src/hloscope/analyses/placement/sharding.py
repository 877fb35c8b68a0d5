"""Shardings and meshes: how the module is partitioned across devices.

Meshes are `sdy.mesh` ops, or `xla.sdy.meshes` in HLO's frontend attributes.
Shardings are read from arguments and results (`sdy.sharding`, `mhlo.sharding`,
or the `mhlo.spmd_*` shardings of a partitioned module), sharding constraints
(`sdy.sharding_constraint`, `sdy.reshard`, `custom_call @Sharding`) and the
edges of manual computations (`@SPMDFullToShardShape`, `@SPMDShardToFullShape`);
`sdy.manual_computation`s are listed on their own.

An XLA (GSPMD) sharding, `{devices=[1,2,4]<=[4,2]T(1,0) last_tile_dim_replicate}`,
is read on the module's mesh where its devices are the mesh's in iota order
(`@mesh [{}, {"model"}]`, as a Shardy sharding reads)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from hloscope.analyses.placement.attributes import custom_call_target
from hloscope.analyses.placement.report import (
    ManualComputation,
    Mesh,
    ShardingAnnotation,
    ShardingKind,
)
from hloscope.ir.model import (
    Module,
    Op,
    is_computation,
    parse_dict_attribute,
    split_top_level,
    string_attribute,
)

_MESH_AXIS = re.compile(r'"((?:[^"\\]|\\.)*)"\s*=\s*(\d+)')


def _mesh(name: str, text: str) -> Mesh:
    body = text
    if body.startswith("#sdy.mesh"):
        body = body[len("#sdy.mesh") :]
    axes = tuple((axis, int(size)) for axis, size in _MESH_AXIS.findall(body))
    devices = 1
    for _, size in axes:
        devices *= size
    return Mesh(name=name, axes=axes, devices=devices, text=body)


def module_meshes(module: Module) -> list[Mesh]:
    meshes: list[Mesh] = []
    for op in module.body:
        if op.name == "sdy.mesh":
            name = string_attribute(op.attributes.get("sym_name", '""'))
            meshes.append(_mesh(name, op.attributes.get("mesh", "")))
    if not meshes:
        frontend = module.attributes.get("mhlo.frontend_attributes")
        if frontend and "xla.sdy.meshes" in frontend:
            text = parse_dict_attribute(frontend).get("xla.sdy.meshes", "")
            for name, mesh in re.findall(
                r"([\w.$-]+)\s*=\s*(#sdy\.mesh<(?:[^<>]|<[^<>]*>)*>)", text
            ):
                meshes.append(_mesh(name, mesh))
    return meshes


def _sharding_text(attributes: Mapping[str, str]) -> str | None:
    for key in ("sdy.sharding", "mhlo.sharding", "sharding"):
        text = attributes.get(key)
        if text is not None:
            return string_attribute(text)
    return None


def _spmd_shardings(module: Module) -> tuple[list[str], list[str]]:
    """Parameter and output shardings a partitioned (compiled) module records."""
    params: list[str] = []
    text = module.attributes.get("mhlo.spmd_parameters_shardings")
    if text and text.startswith("["):
        params = [string_attribute(p) for p in split_top_level(text[1:-1], brackets="([{")]
    outputs: list[str] = []
    output = module.attributes.get("mhlo.spmd_output_sharding")
    if output:
        sharding = string_attribute(output)
        # A tuple sharding `{{...}, {...}}` has one entry per result.
        if sharding.startswith("{{") and sharding.endswith("}}"):
            outputs = [
                "{" + p.strip().strip("{}") + "}"
                for p in split_top_level(sharding[1:-1], brackets="([{")
            ]
        else:
            outputs = [sharding]
    return params, outputs


_IOTA_TILED = re.compile(
    r"^\{devices=\[(?P<tiles>[\d,]+)\]<=\[(?P<reshape>[\d,]+)\]"
    r"(?:T\((?P<perm>[\d,]+)\))?(?P<rest>[^{}]*)\}$"
)


def _axis_groups(sizes: Sequence[int], axes: Sequence[tuple[str, int]]) -> list[list[str]] | None:
    """`axes` (in order) split into consecutive groups whose sizes multiply to each of
    `sizes`; None when they do not line up (an axis of size 1 joins no group)."""
    groups: list[list[str]] = []
    queue = [axis for axis in axes if axis[1] > 1]
    for size in sizes:
        group: list[str] = []
        product = 1
        while product < size and queue:
            name, axis_size = queue.pop(0)
            group.append(name)
            product *= axis_size
        if product != size:
            return None
        groups.append(group)
    return groups if not queue else None


def hlo_sharding_on_mesh(text: str, meshes: Sequence[Mesh]) -> str | None:
    """An XLA tiled sharding in the words of the module's one mesh: which mesh axes
    split each dimension (`@mesh [{"data"}, {}]`), the replicated axes left out as
    Shardy leaves them. None where the module has no single mesh, the devices are
    listed rather than an iota, or their order is not the mesh's."""
    if len(meshes) != 1:
        return None
    mesh = meshes[0]
    body = re.sub(r"\s*metadata=\{[^{}]*\}", "", text.strip())
    match = _IOTA_TILED.match(body)
    if match is None:
        return None
    rest = match.group("rest").strip()
    if rest not in ("", "last_tile_dim_replicate"):
        return None  # manual or unreduced subgroups: no Shardy spelling here
    tiles = [int(t) for t in match.group("tiles").split(",")]
    reshape = [int(d) for d in match.group("reshape").split(",")]
    perm = [int(p) for p in match.group("perm").split(",")] if match.group("perm") else None
    reshaped = _axis_groups(reshape, mesh.axes)
    if reshaped is None or (perm is not None and sorted(perm) != list(range(len(reshape)))):
        return None
    order = [name for index in (perm or range(len(reshape))) for name in reshaped[index]]
    sizes = dict(mesh.axes)
    tiled = _axis_groups(tiles, [(name, sizes[name]) for name in order])
    if tiled is None:
        return None
    if rest == "last_tile_dim_replicate":
        tiled = tiled[:-1]
    dims = ", ".join("{" + ", ".join(f'"{name}"' for name in group) + "}" for group in tiled)
    return f"@{mesh.name} [{dims}]"


def sharding_annotations(
    module: Module, functions: Sequence[str], ops: Sequence[Op]
) -> tuple[list[ShardingAnnotation], int, list[ManualComputation]]:
    shardings: list[ShardingAnnotation] = []
    manual: list[ManualComputation] = []
    spmd_params, spmd_outputs = _spmd_shardings(module)
    meshes = module_meshes(module)
    entry = module.entry
    for name in functions:
        function = module.functions[name]
        is_entry = entry is not None and function.name == entry.name
        for argument in function.arguments:
            sharding = _sharding_text(argument.attributes)
            if sharding is None and is_entry and argument.index < len(spmd_params):
                sharding = spmd_params[argument.index]
            if sharding is None:
                continue
            value = f"%arg{argument.index}"
            shardings.append(
                ShardingAnnotation(
                    kind="argument",
                    value=value,
                    name=argument.name if argument.name != value else None,
                    function=name,
                    sharding=sharding,
                    source=None,
                    on_mesh=hlo_sharding_on_mesh(sharding, meshes),
                )
            )
        for result in function.results:
            sharding = _sharding_text(result.attributes)
            if sharding is None and is_entry and result.index < len(spmd_outputs):
                sharding = spmd_outputs[result.index]
            if sharding is None:
                continue
            info = result.attributes.get("jax.result_info")
            shardings.append(
                ShardingAnnotation(
                    kind="result",
                    value=f"result {result.index}",
                    name=string_attribute(info) if info else None,
                    function=name,
                    sharding=sharding,
                    source=None,
                    on_mesh=hlo_sharding_on_mesh(sharding, meshes),
                )
            )
    other = 0
    for op in ops:
        if "custom" not in op.name and op.name[:4] != "sdy.":
            # Neither a custom call nor an sdy op: only a sharding attribute counts.
            if _sharding_text(op.attributes) is not None:
                other += 1
            continue
        kind: ShardingKind | None = None
        sharding = None
        target = custom_call_target(op)
        if op.name == "sdy.sharding_constraint":
            kind, sharding = "constraint", op.attributes.get("sharding")
        elif op.name == "sdy.reshard":
            kind, sharding = "reshard", op.attributes.get("sharding")
        elif target == "Sharding":
            kind, sharding = "constraint", _sharding_text(op.attributes)
        elif target == "SPMDFullToShardShape":
            kind, sharding = "full_to_shard", _sharding_text(op.attributes)
        elif target == "SPMDShardToFullShape":
            kind, sharding = "shard_to_full", _sharding_text(op.attributes)
        elif op.name == "sdy.manual_computation":
            manual.append(
                ManualComputation(
                    function=op.function or "",
                    manual_axes=op.attributes.get("manual_axes", ""),
                    in_shardings=op.attributes.get("in_shardings", ""),
                    out_shardings=op.attributes.get("out_shardings", ""),
                    ops=sum(1 for o in module.descendants(op) if is_computation(o)),
                    source=op.location.source,
                )
            )
            continue
        elif _sharding_text(op.attributes) is not None:
            other += 1
            continue
        if kind is None:
            continue
        shardings.append(
            ShardingAnnotation(
                kind=kind,
                value=module.value_name(op.results[0]) if op.results else "-",
                name=op.location.name,
                function=op.function or "",
                sharding=string_attribute(sharding or "?"),
                source=op.location.source,
                on_mesh=hlo_sharding_on_mesh(string_attribute(sharding or "?"), meshes),
            )
        )
    return shardings, other, manual

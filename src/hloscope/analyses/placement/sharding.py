"""Shardings and meshes: how the module is partitioned across devices.

Meshes are `sdy.mesh` ops, or `xla.sdy.meshes` in HLO's frontend attributes.
Shardings are read from arguments and results (`sdy.sharding`, `mhlo.sharding`,
or the `mhlo.spmd_*` shardings of a partitioned module), sharding constraints
(`sdy.sharding_constraint`, `sdy.reshard`, `custom_call @Sharding`) and the
edges of manual computations (`@SPMDFullToShardShape`, `@SPMDShardToFullShape`);
`sdy.manual_computation`s are listed on their own."""

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


def sharding_annotations(
    module: Module, functions: Sequence[str], ops: Sequence[Op]
) -> tuple[list[ShardingAnnotation], int, list[ManualComputation]]:
    shardings: list[ShardingAnnotation] = []
    manual: list[ManualComputation] = []
    spmd_params, spmd_outputs = _spmd_shardings(module)
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
                )
            )
    other = 0
    for op in ops:
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
            )
        )
    return shardings, other, manual

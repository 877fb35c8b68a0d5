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

from collections.abc import Mapping, Sequence

from hloscope.analyses.placement.report import (
    ManualComputation,
    Mesh,
    ShardingAnnotation,
    ShardingKind,
)
from hloscope.analyses.structure import holding_function
from hloscope.ir.attributes import HloSharding, Sharding, sharding_brief
from hloscope.ir.attributes import Mesh as IrMesh
from hloscope.ir.model import Module, Op, is_computation


def module_meshes(meshes: Sequence[IrMesh]) -> list[Mesh]:
    return [
        Mesh(
            name=mesh.name,
            axes=mesh.axes,
            devices=mesh.devices,
            text=mesh.body,
            xla_axes=mesh.xla_axes,
        )
        for mesh in meshes
    ]


def _on_mesh(sharding: Sharding | None, meshes: Sequence[IrMesh]) -> str | None:
    return sharding.on_mesh(meshes) if isinstance(sharding, HloSharding) else None


def sharding_annotations(
    module: Module,
    functions: Sequence[str],
    ops: Sequence[Op],
    names: Mapping[int, str],
    meshes: Sequence[IrMesh],
    result_names: Mapping[int, str],
) -> tuple[list[ShardingAnnotation], int, list[ManualComputation]]:
    """`names` and `result_names`: the entry's arguments and results as the user
    names them (by index)."""
    shardings: list[ShardingAnnotation] = []
    manual: list[ManualComputation] = []
    spmd_params = module.spmd_parameter_shardings
    spmd_outputs = module.spmd_output_shardings
    entry = module.entry
    for name in functions:
        function = module.functions[name]
        is_entry = entry is not None and function.name == entry.name
        for argument in function.arguments:
            sharding = argument.sharding
            if sharding is None and is_entry and argument.index < len(spmd_params):
                sharding = spmd_params[argument.index]
            if sharding is None:
                continue
            value = f"%arg{argument.index}"
            name_ = names.get(argument.index, argument.name) if is_entry else argument.name
            shardings.append(
                ShardingAnnotation(
                    kind="argument",
                    value=value,
                    name=name_ if name_ != value else None,
                    function=name,
                    sharding=sharding.text,
                    source=None,
                    on_mesh=_on_mesh(sharding, meshes),
                    index=argument.index,
                    words=sharding_brief(sharding),
                )
            )
        for result in function.results:
            sharding = result.sharding
            if sharding is None and is_entry and result.index < len(spmd_outputs):
                sharding = spmd_outputs[result.index]
            if sharding is None:
                continue
            shardings.append(
                ShardingAnnotation(
                    kind="result",
                    value=f"result {result.index}",
                    name=(result_names.get(result.index) if is_entry else None)
                    or result.info
                    or None,
                    function=name,
                    sharding=sharding.text,
                    source=None,
                    on_mesh=_on_mesh(sharding, meshes),
                    index=result.index,
                    words=sharding_brief(sharding),
                )
            )
    other = 0
    for op in ops:
        if "custom" not in op.name and op.name[:4] != "sdy.":
            # Neither a custom call nor an sdy op: only a sharding attribute counts. An
            # HLO parameter's (XLA's own form) is its argument's, listed above.
            if op.has_sharding and op.name != "hlo.parameter":
                other += 1
            continue
        kind: ShardingKind | None = None
        target = op.custom_call_target
        if op.name == "sdy.sharding_constraint":
            kind = "constraint"
        elif op.name == "sdy.reshard":
            kind = "reshard"
        elif target == "Sharding":
            kind = "constraint"
        elif target == "SPMDFullToShardShape":
            kind = "full_to_shard"
        elif target == "SPMDShardToFullShape":
            kind = "shard_to_full"
        elif op.name == "sdy.manual_computation":
            manual.append(
                ManualComputation(
                    function=holding_function(module, op.function or ""),
                    manual_axes=op.attributes.get("manual_axes", ""),
                    axes=op.manual_axes,
                    in_words=op.shardings_brief("in_shardings"),
                    out_words=op.shardings_brief("out_shardings"),
                    in_shardings=op.attributes.get("in_shardings", ""),
                    out_shardings=op.attributes.get("out_shardings", ""),
                    ops=sum(1 for o in module.descendants(op) if is_computation(o)),
                    source=op.location.source,
                )
            )
            continue
        elif op.has_sharding:
            other += 1
            continue
        if kind is None:
            continue
        sharding = op.sharding
        shardings.append(
            ShardingAnnotation(
                kind=kind,
                value=module.value_name(op.results[0]) if op.results else "-",
                name=op.location.name,
                function=holding_function(module, op.function or ""),
                sharding=sharding.text if sharding is not None else "?",
                source=op.location.source,
                on_mesh=_on_mesh(sharding, meshes),
                words=sharding_brief(sharding) if sharding is not None else "?",
            )
        )
    return shardings, other, manual

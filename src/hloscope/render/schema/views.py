"""The schemas of the views of one module: `inspect`, `params`, `placement` (with
`--why`), `fusions`, `diff` and `aot-check`, key for key as `render.json` and
`render.why_json` write them."""

from __future__ import annotations

from hloscope import runs, stages
from hloscope.analyses.aot.report import AotComparison, ProgramSummary
from hloscope.analyses.diff.report import (
    ChangeGroup,
    FunctionPair,
    FusionChange,
    ModuleDiff,
    ParameterPair,
    Place,
    Rename,
    Side,
    Summary,
)
from hloscope.analyses.fusions import Fusion, FusionAnalysis, FusionSummary, SourceLine, UnfusedOp
from hloscope.analyses.params import FunctionParameter, FunctionUsage, Parameter, ParameterUsage
from hloscope.analyses.placement.report import (
    Collective,
    ComputeRegion,
    ManualComputation,
    MemoryPlacement,
    Mesh,
    PlacedOp,
    Placement,
    ShardingAnnotation,
    Transfer,
)
from hloscope.analyses.placement.why_report import (
    AxisCause,
    CollectiveSite,
    OriginEffect,
    ShardingOrigin,
    SiteGroup,
)
from hloscope.analyses.structure import Call, FunctionGroup, FunctionInfo, Structure
from hloscope.render.schema.build import (
    BOOL,
    INT,
    NUM,
    STR,
    Schema,
    array,
    dataclass_schema,
    element,
    fields,
    mapping,
    nullable,
    obj,
    of_type,
)
from hloscope.reports.aot import AotTimings
from hloscope.reports.common import Timings

STRS = array(STR)
TIMINGS = dataclass_schema(Timings)

SOURCE = obj(
    {
        "kind": of_type(stages.SourceKind),
        "format": STR,
        "ir": STR,
        "stage": of_type(stages.Stage),
        "path": nullable(STR),
        "module": nullable(STR),
        "folder_modules": STRS,
    },
    title="Source",
    description="What the target was read from: an entrypoint, or a dump's format and "
    "file (and, for a dump folder, its module).",
)

COMPILED_FOR = nullable(dataclass_schema(stages.CompiledFor))
"""What the module was compiled for (`--for`, or the local backend); null for a module
not compiled here."""

# --------------------------------------------------------------------------- inspect

STRUCTURE: dict[str, Schema] = {
    **fields(Structure, "module", "entry"),
    "functions": array(
        obj(
            {
                **fields(FunctionInfo, "name", "visibility", "ops", "inlined_ops", "parameters"),
                **fields(FunctionInfo, "results"),
                "calls": array(obj(fields(Call, "callee", "count"), title="Call")),
                **fields(FunctionInfo, "called_by", "reachable", "op_counts"),
            },
            title="Function",
        )
    ),
    **fields(Structure, "op_counts", "total_ops", "dialects", "call_depth"),
    "function_groups": array(
        obj({**fields(FunctionGroup, "name", "functions"), "count": INT}, title="FunctionGroup")
    ),
}

FUSION_SUMMARY = obj(
    fields(
        FusionSummary,
        "fusions",
        "by_kind",
        "fused_ops",
        "unfused_ops",
        "unfused_by_category",
        "crossing_jits",
    ),
    title="FusionSummary",
)

PARAMS_SUMMARY = obj(
    {
        "totals": dataclass_schema(element(ParameterUsage, "totals")),
        "unused": STRS,
        "pruned": STRS,
        "static": STRS,
        "donation_dropped": STRS,
        "functions_with_unused": array(
            obj({"name": STR, "unused": array(INT)}, title="FunctionWithUnused")
        ),
    },
    title="ParamsSummary",
)


def _region() -> Schema:
    return obj(
        fields(
            ComputeRegion,
            "function",
            "ops",
            "sources",
            "compute_type",
            "called_from",
            "call_source",
            "input_bytes",
            "device_input_bytes",
            "output_bytes",
        ),
        title="ComputeRegion",
    )


COLLECTIVE: dict[str, Schema] = {
    **fields(Collective, "op", "count", **{"async": "async_count"}),
    **fields(Collective, "bytes", "functions", "sources", "user_sources"),
    **fields(
        Collective, "in_loops", "per_call", "bytes_per_call", "trip_counts_from", "across_slices"
    ),
}

PLACEMENT_LISTS: dict[str, Schema] = {
    **fields(Placement, summary="compute_types"),
    **fields(Placement, "total_ops"),
    "host_regions": array(_region()),
    "other_regions": array(_region()),
    "transfers": array(
        obj(
            fields(
                Transfer,
                "kind",
                "detail",
                "sources",
                "source_memory",
                "target_memory",
                "moves",
                "shape",
                "bytes",
                "function",
                "name",
            ),
            title="Transfer",
        )
    ),
    "memory_kinds": array(
        obj(
            fields(
                MemoryPlacement,
                "value",
                "name",
                "kind",
                "memory_kind",
                "memory_space",
                "host",
                "shape",
                "bytes",
            ),
            title="MemoryKind",
        )
    ),
    "collectives": array(obj(COLLECTIVE, title="Collective")),
    "meshes": array(
        obj(
            {
                **fields(Mesh, "name"),
                "axes": array(obj({"name": STR, "size": INT}, title="MeshAxis")),
                **fields(Mesh, "devices", "xla_axes"),
            },
            title="Mesh",
        )
    ),
    **fields(Placement, "partitions", "replicas", "warnings"),
}


def inspect_body() -> tuple[dict[str, Schema], tuple[str, ...]]:
    placement_summary = obj(
        {**PLACEMENT_LISTS, "sharded_values": INT, "manual_computations": INT},
        title="PlacementSummary",
    )
    return (
        {
            "source": SOURCE,
            "compiled_for": COMPILED_FOR,
            **STRUCTURE,
            "timings": TIMINGS,
            "cost": nullable(mapping(nullable(NUM))),
            "cost_counts_loop_bodies_once": {
                **BOOL,
                "description": "The module has a loop: XLA's cost analysis counts its body "
                "once, however many times it runs (the cost is XLA's number).",
            },
            "memory": nullable(mapping(INT)),
            "notes": STRS,
            "fusions": nullable(FUSION_SUMMARY),
            "params": PARAMS_SUMMARY,
            "placement": placement_summary,
        },
        ("params", "placement"),
    )


# --------------------------------------------------------------------------- fusions


def fusions_body() -> dict[str, Schema]:
    fusion = obj(
        {
            **fields(Fusion, "name", "kind", "backend_kind", "function"),
            "ops": STRS,
            **fields(
                Fusion,
                "op_counts",
                "op_count",
                "sources",
                "user_source",
                "user_source_from",
                "op_names",
                "jits",
                "crosses_jits",
                "operands",
                "results",
                "operand_bytes",
                "result_bytes",
            ),
        },
        title="Fusion",
    )
    unfused = obj(
        fields(
            UnfusedOp,
            "name",
            "op",
            "category",
            "function",
            "target",
            "sources",
            "user_source",
            "user_source_from",
            "op_name",
            "results",
            "result_bytes",
        ),
        title="UnfusedOp",
    )
    line = obj(
        {
            **fields(SourceLine, "source"),
            "code": nullable(STR),
            **fields(SourceLine, "fusions", "unfused", "fused_ops", "unfused_ops"),
        },
        title="SourceLine",
    )
    return {
        "source": SOURCE,
        "compiled_for": COMPILED_FOR,
        "module": nullable(STR),
        "fusions": array(fusion),
        "unfused_ops": INT,
        "unfused": array(unfused),
        "lines": array(line),
        "summary": FUSION_SUMMARY,
        **fields(FusionAnalysis, "jits", "library_jits"),
        "timings": TIMINGS,
        "notes": STRS,
    }


# --------------------------------------------------------------------------- params


def params_body() -> dict[str, Schema]:
    parameter = obj(
        fields(
            Parameter,
            "position",
            "path",
            "hlo_index",
            "status",
            "shape",
            "donated",
            "sharding",
            "memory_kind",
            "hlo_shape",
            "bytes",
            "uses",
            "aliases_output",
            "sharding_attribute",
            "donation_requested",
            "donation_dropped",
            "also",
        ),
        title="Parameter",
    )
    function = obj(
        {
            **fields(FunctionUsage, "name", "call_sites"),
            "parameters": INT,
            "unused": array(
                obj(fields(FunctionParameter, "index", "name", "shape"), title="UnusedParameter")
            ),
        },
        title="FunctionParameters",
    )
    return {
        "source": SOURCE,
        "compiled_for": COMPILED_FOR,
        "module": nullable(STR),
        **fields(ParameterUsage, "entry", "from_python"),
        "parameters": array(parameter),
        **fields(ParameterUsage, implicit_parameters="implicit", static_arguments="static"),
        "functions": array(function),
        "totals": dataclass_schema(element(ParameterUsage, "totals")),
        "notes": STRS,
    }


# --------------------------------------------------------------------------- placement


def _origin() -> dict[str, Schema]:
    return {
        **fields(ShardingOrigin, "index", origin="kind"),
        "argument": nullable(STR),
        "result": nullable(STR),
        **fields(ShardingOrigin, "name", "source", "sharding"),
        **fields(ShardingOrigin, "xla_loop_constraint", "constrains", "backward_loop"),
    }


def _site() -> Schema:
    origin = obj(_origin(), title="ShardingOrigin")
    cause = obj(
        {
            **fields(AxisCause, "axis"),
            "sharded_by": array(origin),
            "unsharded_by": array(origin),
            **fields(AxisCause, "conflict"),
        },
        title="AxisCause",
    )
    return obj(
        {
            **fields(CollectiveSite, "instruction", "source", "axes"),
            "causes": array(cause),
            **fields(CollectiveSite, "meets", "meets_op", "sentence", "note", "gradient_of"),
            **fields(CollectiveSite, "user_collective"),
        },
        title="CollectiveSite",
    )


def placement_body() -> tuple[dict[str, Schema], tuple[str, ...]]:
    """`placement`'s keys; `--why` adds `why`, and `sites` to each collective."""
    lists = dict(PLACEMENT_LISTS)
    lists["collectives"] = array(
        obj(
            {**COLLECTIVE, "sites": array(_site())},
            optional=("sites",),
            title="Collective",
            description="With --why, the sites of the collective with their causes.",
        )
    )
    why = obj(
        {
            "available": BOOL,
            "note": nullable(STR),
            "groups": array(
                obj(
                    {
                        **fields(SiteGroup, "sentence"),
                        "count": INT,
                        "instructions": STRS,
                    },
                    title="SiteGroup",
                    description="Collective sites whose explanations read the same.",
                )
            ),
            "origins": array(
                obj(
                    {
                        **_origin(),
                        **fields(OriginEffect, "axes", "values"),
                        "collectives": STRS,
                    },
                    title="OriginEffect",
                )
            ),
        },
        title="Why",
        description="placement --why: the shardings' origins, what each set and caused.",
    )
    return (
        {
            "source": SOURCE,
            "compiled_for": COMPILED_FOR,
            **lists,
            "shardings": array(
                obj(
                    fields(
                        ShardingAnnotation,
                        "value",
                        "sharding",
                        "kind",
                        "name",
                        "function",
                        "source",
                    ),
                    title="Sharding",
                )
            ),
            **fields(Placement, "op_shardings"),
            "manual_computations": array(
                obj(
                    fields(
                        ManualComputation,
                        "function",
                        "manual_axes",
                        "in_shardings",
                        "out_shardings",
                        "ops",
                        "source",
                    ),
                    title="ManualComputation",
                )
            ),
            "placed_ops": array(
                obj(
                    fields(PlacedOp, "function", "op", "compute_type", "via", "name", "source"),
                    title="PlacedOp",
                )
            ),
            "why": why,
            "notes": STRS,
        },
        ("why",),
    )


# --------------------------------------------------------------------------- diff


def diff_fields() -> dict[str, Schema]:
    """`diff`'s keys but the envelope (`passes --diff` holds them too)."""
    side = obj(
        {
            "target": STR,
            "source": SOURCE,
            "compiled_for": COMPILED_FOR,
            **fields(Side, "module", "entry"),
            "ops": INT,
        },
        title="DiffSide",
    )
    group = obj(
        {
            **fields(ChangeGroup, "kind", "function", "op", "detail", "aspects", "count"),
            "places": array(obj(fields(Place, "function", "count"), title="Place")),
            "instances": array(obj({"a": nullable(STR), "b": nullable(STR)}, title="Instance")),
        },
        title="ChangeGroup",
    )
    fusion_change = obj(
        fields(
            FusionChange,
            "status",
            "a_name",
            "b_name",
            "a_kind",
            "b_kind",
            "a_ops",
            "b_ops",
            "moved_in",
            "moved_out",
            "detail",
        ),
        title="FusionChange",
    )
    return {
        **fields(ModuleDiff, "verdict"),
        "summary": obj(
            fields(Summary, "added", "removed", "changed", "unchanged", "normalized"),
            title="DiffSummary",
        ),
        "changes": array(group),
        "renames": array(obj(fields(Rename, "a", "b"), title="Rename")),
        "a": side,
        "b": side,
        "parameters": array(
            obj(
                fields(ParameterPair, "a", "b", "a_name", "b_name", "status", "detail"),
                title="ParameterPair",
            )
        ),
        "fusions": obj(
            {"a": INT, "b": INT, "changes": array(fusion_change)}, title="FusionChanges"
        ),
        "functions": array(dataclass_schema(FunctionPair)),
        "timings": obj({"load_seconds": array(NUM), "diff_seconds": NUM}, title="DiffTimings"),
        "notes": STRS,
    }


# --------------------------------------------------------------------------- aot-check


def aot_check_body() -> dict[str, Schema]:
    comparison = AotComparison
    program = fields(ProgramSummary, "name", "ops", "off_device_ops", "parameters")
    entry = element(comparison, "entry")
    return {
        **fields(comparison, "verdict"),
        "aot_entry": STR,
        "differences": array(
            obj(fields(element(comparison, "differences"), "kind", "detail", "cause"))
        ),
        "aot": obj(
            {
                **fields(entry, entry="name"),
                **fields(entry, "via", "expression", "reason"),
                "target": nullable(STR),
            },
            title="AotEntry",
        ),
        "checks": array(dataclass_schema(element(comparison, "checks"))),
        "results": array(dataclass_schema(element(comparison, "results"))),
        "call_programs": array(obj({**program, "compared": BOOL}, title="CallProgram")),
        "aot_program": nullable(obj(program, title="Program")),
        "aot_run_programs": array(obj(program, title="Program")),
        **fields(comparison, "aot_pruned"),
        "inputs": array(dataclass_schema(runs.InputLeaf)),
        "seed": INT,
        "timings": dataclass_schema(AotTimings),
        "notes": STRS,
    }


def diff_body() -> tuple[dict[str, Schema], tuple[str, ...]]:
    from hloscope.analyses.diff.collectives import CollectiveChange, CollectiveCount
    from hloscope.analyses.estimate import EstimateAnalysis

    estimate = obj(
        fields(
            EstimateAnalysis,
            "seconds",
            "compute_seconds",
            "communication_seconds",
            "exposed_communication_seconds",
            "mfu",
            "hfu",
        ),
        title="DiffEstimate",
    )
    count = obj(fields(CollectiveCount, "count", "bytes", "in_loops"), title="CollectiveCount")
    collective = obj(
        {
            **fields(CollectiveChange, "op", "across_slices"),
            "a": count,
            "b": count,
            "added_at": array(obj({"source": STR, "count": INT}, title="AddedAt")),
        },
        title="CollectiveChange",
    )
    summary = obj(
        {
            "memory": obj({"a": nullable(INT), "b": nullable(INT)}, title="DiffMemory"),
            "estimate": nullable(
                obj({"a": nullable(estimate), "b": nullable(estimate)}, title="DiffEstimates")
            ),
            "collectives": array(collective),
        },
        title="CompiledSummary",
        description="Only in a diff of two compiled programs: what changed in the peak "
        "of memory (as memory), the estimate (as profile --for; null unless both sides "
        "were compiled --for) and the collectives by kind (as placement), with the lines "
        "where B runs more of a kind than A.",
    )
    return {**diff_fields(), "compiled_summary": summary}, ("compiled_summary",)


# --------------------------------------------------------------------------- platforms


def platforms_body() -> dict[str, Schema]:
    return {
        "platforms": array(
            obj(
                {
                    "spec": STR,
                    "platform": STR,
                    "device": STR,
                    "memory_bytes": nullable(INT),
                    "notes": STR,
                    "compiler_installed": nullable(BOOL),
                },
                title="Platform",
            )
        )
    }

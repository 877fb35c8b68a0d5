"""The schemas of the reports that compile or run the program: `compiles`, `memory`,
`passes`, `check` and `profile` (a function's and a script's), key for key as
`render.json` writes them."""

from __future__ import annotations

from hloscope import runs
from hloscope.analyses.baseline.compare import Change, Comparison
from hloscope.analyses.baseline.facts import Measurement
from hloscope.analyses.baseline.record import Backend
from hloscope.analyses.compiles import CompilesAnalysis, CompileSummary, FunctionCompiles
from hloscope.analyses.memory import (
    Busiest,
    DeviceFit,
    DonatedBuffer,
    LiveBuffer,
    MemoryAnalysis,
    MemorySpace,
)
from hloscope.analyses.passes import FindChange, PassFind, PassName, PassStep, PassTable
from hloscope.analyses.profile import (
    EagerProfile,
    FunctionProfile,
    ProfileAnalysis,
    ProfiledLine,
    ProfiledOp,
    ScriptProfile,
)
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
)
from hloscope.render.schema.views import COMPILED_FOR, SOURCE, STRS, diff_fields

# --------------------------------------------------------------------------- compiles


def compiles_body() -> dict[str, Schema]:
    compile_ = runs.RecordedCompile
    change = obj(
        fields(element(compile_, "changes"), "path", "before", "after", "kind"),
        title="ArgumentChange",
    )
    recorded = obj(
        {
            **fields(
                compile_, "function", "source", "call_site", "called_by_hloscope", "eager", "cause"
            ),
            "changes": array(change),
            **fields(
                compile_,
                "signature",
                "started_seconds",
                "trace_seconds",
                "lower_seconds",
                "compile_seconds",
                "ops",
                "persistent_cache_hit",
            ),
            "module": nullable(STR),
        },
        title="Compile",
    )
    function = obj(
        fields(
            FunctionCompiles,
            "function",
            "source",
            "compiles",
            "signatures",
            "compile_seconds",
            "total_seconds",
            "ops",
            "ops_range",
            "causes",
            "likely_cause",
            "likely_causes",
        ),
        title="FunctionCompiles",
    )
    summary = obj(
        {
            **fields(
                CompileSummary,
                "compiles",
                "functions",
                "compile_seconds",
                "wall_seconds",
                "eager_compiles",
                "recompiled_functions",
                "compiling_seconds",
            ),
            "compiling_share": nullable(NUM),
            **fields(CompileSummary, "persistent_cache_hits"),
        },
        title="CompilesSummary",
    )
    return {
        "summary": summary,
        "functions": array(function),
        "eager_ops": array(dataclass_schema(element(CompilesAnalysis, "eager"))),
        "compiles": array(recorded),
        "exit_code": INT,
        "error": nullable(STR),
        "modules_dropped": INT,
    }


# --------------------------------------------------------------------------- memory


def _live_buffer() -> Schema:
    return obj(
        {
            **fields(
                LiveBuffer,
                "name",
                "bytes",
                "shape",
                "kind",
                "instruction",
                "opcode",
                "fusion",
                "op_name",
                "sources",
                "user_source",
                "user_source_from",
                "parameter",
                "path",
                "memory_space",
                "allocation",
            ),
            "live": {
                "type": "array",
                "prefixItems": [INT, INT],
                "items": False,
                "description": "The first and last index in the schedule it is live at.",
            },
            **fields(LiveBuffer, "shares"),
        },
        title="LiveBuffer",
    )


def memory_body() -> dict[str, Schema]:
    buffer = _live_buffer()
    totals = ("argument_bytes", "output_bytes", "temp_bytes", "alias_bytes")
    return {
        "source": SOURCE,
        "compiled_for": COMPILED_FOR,
        "module": nullable(STR),
        "totals": {
            **obj(
                {key: nullable(INT) for key in (*totals, "generated_code_bytes")},
                title="MemoryTotals",
            ),
            "additionalProperties": nullable(INT),
        },
        **fields(MemoryAnalysis, "peak_bytes"),
        "peak_at": obj(
            fields(MemoryAnalysis, index="peak_index", instruction="peak_instruction"),
            title="PeakAt",
        ),
        **fields(MemoryAnalysis, "schedule_length"),
        "profile": array(obj({"index": INT, "bytes": INT}, title="ProfilePoint")),
        **fields(MemoryAnalysis, "profile_bucket"),
        "buffers_at_peak": array(buffer),
        "memory_spaces": array(
            obj(
                {
                    "memory_space": INT,
                    **fields(MemorySpace, "name"),
                    "bytes_at_peak": {
                        **INT,
                        "description": "Live bytes in this space at `peak_at` (XLA's "
                        "live-range dump's peak over all spaces), each byte counted once.",
                    },
                    "buffers_at_peak": {
                        **STRS,
                        "description": "The values of this space live at `peak_at`.",
                    },
                    **fields(MemorySpace, "peak_bytes"),
                    "peak_at": obj(
                        fields(MemorySpace, index="peak_index", instruction="peak_instruction"),
                        title="SpacePeakAt",
                    ),
                    "buffers": {
                        **array(buffer),
                        "description": "The values of this space live at its own peak "
                        "(`peak_at` of this entry), largest first.",
                    },
                    "profile": array(obj({"index": INT, "bytes": INT}, title="ProfilePoint")),
                    **fields(MemorySpace, "allocated_bytes"),
                },
                title="MemorySpace",
            )
        ),
        "aliases": array(
            obj(
                fields(
                    DonatedBuffer,
                    "parameter",
                    "path",
                    "bytes",
                    "holds",
                    "result",
                    "result_name",
                    "result_value",
                    "temporaries",
                ),
                title="Alias",
            )
        ),
        "busiest": nullable(
            obj(
                {**fields(Busiest, "index", "instruction", "bytes"), "buffers": array(buffer)},
                title="Busiest",
            )
        ),
        **fields(MemoryAnalysis, "allocated_bytes"),
        **fields(MemoryAnalysis, "reported_peak_bytes"),
        "files": STRS,
        "notes": STRS,
        "fit": nullable(dataclass_schema(DeviceFit)),
    }


# --------------------------------------------------------------------------- passes


def _found_at() -> Schema:
    return nullable(obj({"index": nullable(INT), "pass": STR}, title="FoundAt"))


def passes_body() -> tuple[dict[str, Schema], tuple[str, ...]]:
    """`passes`' keys; `--find` adds `find`, `--diff` adds `diff`."""
    step = obj(
        {
            **fields(PassStep, "index"),
            **fields(PassName, "step"),
            "pipeline": STR,
            "pass": STR,
            **fields(PassName, "file", next_pass="before"),
            **fields(PassStep, "ops", "ops_delta"),
            "changed_kinds": mapping(INT),
            **fields(PassStep, "fusions"),
        },
        title="Pass",
    )
    find_change = obj(
        {
            **fields(FindChange, "index"),
            "pass": STR,
            **fields(FindChange, "pipeline", "before", "after", "fused_before", "fused_after"),
        },
        title="FindChange",
    )
    find = obj(
        {
            **fields(PassFind, "pattern", "kind", "input_count"),
            "first_seen": _found_at(),
            "gone_at": _found_at(),
            "changes": array(find_change),
            **fields(PassFind, "counts"),
        },
        title="PassFind",
    )
    diff = obj({"index": nullable(INT), **diff_fields()}, title="PassDiff")
    return (
        {
            "module": STR,
            "folder": nullable(STR),
            "compiled_for": COMPILED_FOR,
            **fields(PassTable, "input_ops", "output_ops", "pipelines"),
            "passes": array(step),
            "timings": obj(
                {"compile_seconds": nullable(NUM), "scan_seconds": NUM, "compile_cached": BOOL},
                title="PassesTimings",
            ),
            "notes": STRS,
            "find": find,
            "diff": diff,
        },
        ("find", "diff"),
    )


# --------------------------------------------------------------------------- check


def check_body() -> dict[str, Schema]:
    grown = element(Comparison, "grown_at_peak")
    change = obj(
        {
            **fields(
                Change, "fact", "before", "after", "tolerance", "regression", "detail", "sources"
            ),
            "target": STR,
            "origins": {
                **STRS,
                "description": "For a regressed collective: why that collective is at its "
                "lines, as placement --why says it.",
            },
            "cause": {
                **nullable(STR),
                "description": "The argument (its path) whose sharding changed or whose "
                "donation was dropped and moved this fact; null when none did.",
            },
        },
        title="FactChange",
    )
    cause = obj(
        fields(
            element(Comparison, "causes"), "kind", "argument", "before", "after", "source", "facts"
        ),
        title="Cause",
    )
    target = obj(
        {
            "name": STR,
            "target": STR,
            "baseline": STR,
            "passed": BOOL,
            "compared": BOOL,
            "facts_compared": {
                **INT,
                "description": "How many facts were compared (held by the baseline, the "
                "program or both).",
            },
            "not_compared": {
                **STRS,
                "description": "Facts measured here that the baseline has no value for, "
                "so not compared (runtime.seconds_per_run against a baseline recorded "
                "without --runtime).",
            },
            "updated": BOOL,
            "recorded_on": nullable(dataclass_schema(Backend)),
            **fields(Measurement, "facts"),
            "grown_at_peak": array(
                obj(fields(grown, "site", "before", "after", "shapes"), title="GrownAtPeak")
            ),
            "notes": STRS,
            "causes": array(cause),
        },
        title="TargetCheck",
    )
    return {
        "passed": BOOL,
        "baseline": STR,
        "backend": dataclass_schema(Backend),
        "updated": BOOL,
        "changes": array(change),
        "targets": array(target),
    }


# --------------------------------------------------------------------------- profile


def profile_body() -> dict[str, Schema]:
    """A function's profile (`profile TARGET`)."""
    op = obj(
        fields(
            ProfiledOp,
            "name",
            "kind",
            "calls",
            "seconds",
            "share",
            "user_source",
            "sources",
            "function",
        ),
        title="ProfiledOp",
    )
    line = obj(fields(ProfiledLine, "source", "seconds", "share", "ops"), title="ProfiledLine")
    times = element(ProfileAnalysis, "seconds_per_run")
    return {
        "source": SOURCE,
        "compiled_for": COMPILED_FOR,
        "module": nullable(STR),
        "estimated": BOOL,
        **fields(ProfileAnalysis, "runs", "warmup"),
        "seconds_per_run": obj(fields(times, "median", "min", "max"), title="RunTimes"),
        "ops": array(op),
        "lines": array(line),
        **fields(
            ProfileAnalysis,
            "op_seconds",
            "coverage",
            "overhead_seconds",
            "devices",
            "inputs",
            "trace_file",
            "unknown_ops",
        ),
        "notes": STRS,
    }


def script_profile_body() -> dict[str, Schema]:
    """A script's profile (`profile SCRIPT.py`)."""
    function = obj(
        fields(
            FunctionProfile,
            "function",
            "source",
            "calls",
            "compiles",
            "compile_seconds",
            "run_seconds",
            "seconds_per_call",
        ),
        title="FunctionProfile",
    )
    return {
        "functions": array(function),
        "eager": obj(
            fields(EagerProfile, "calls", "seconds", "compiles", "compile_seconds"),
            title="EagerProfile",
        ),
        **fields(ScriptProfile, "wall_seconds", "run_seconds"),
        "exit_code": INT,
        "error": nullable(STR),
        "trace_file": nullable(STR),
        "notes": STRS,
    }

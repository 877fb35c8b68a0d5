"""The reports and the functions that build them from what was loaded.

The command line, the browser and the Python API (`hloscope.inspect`) all build
their reports here, so they never disagree. Reports are frozen dataclasses holding
everything their renderers show (`hloscope.render`: text, JSON, and in Python
`render.display`); building one runs the analyses, and nothing here renders.

One module per report (`inspect`, `params`, `placement`, `fusions`, `aot`, `memory`,
`diff`, `compiles`, `passes`, `check`, `profile`): its dataclass, its builder, and its
`ENTRY`, which names its renderers and its browser tab; `registry.REPORTS` lists them once, and the
front ends read it. Each builder imports the analyses it runs, so a command loads
only its own (`aot-check`'s bring numpy, `diff`'s and `passes`' are large):
start-up is part of every command's time. For the same reason this package imports
its modules when one of their names is first asked for (`reports.inspect_report`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hloscope.reports.entry import resolve

if TYPE_CHECKING:
    from hloscope.reports.aot import AOT_TEXT_ELEMENTS, AotReport, AotTimings, aot_check_report
    from hloscope.reports.check import CheckReport
    from hloscope.reports.common import Timings, lowered_frames, stage_timings
    from hloscope.reports.compare import CompareReport, Comparison
    from hloscope.reports.compiles import CompilesReport, compiles_report
    from hloscope.reports.diff import DiffReport, diff_loaded
    from hloscope.reports.entry import ReportEntry, entry_of
    from hloscope.reports.estimate import EstimateReport, estimate_report
    from hloscope.reports.fusions import FusionsReport, fusions_report
    from hloscope.reports.inspect import InspectReport, inspect_report
    from hloscope.reports.memory import MemoryReport, loaded_memory_report, memory_report
    from hloscope.reports.params import ParamsReport, params_report
    from hloscope.reports.passes import (
        PassesReport,
        pass_diff,
        pass_sides,
        passes_report,
        pick_pass,
    )
    from hloscope.reports.placement import (
        PlacementReport,
        placement_report,
        placement_why,
        placement_why_report,
    )
    from hloscope.reports.profile import (
        ProfileReport,
        ScriptProfileReport,
        loaded_profile_report,
        profile_report,
        profiled_report,
        script_profile_report,
    )
    from hloscope.reports.registry import REPORTS
    from hloscope.reports.remat import RematReport, remat_report

# Where each name below lives: its module is imported on first use.
_MODULE_OF = {
    "AOT_TEXT_ELEMENTS": "aot",
    "AotReport": "aot",
    "AotTimings": "aot",
    "CheckReport": "check",
    "CompareReport": "compare",
    "Comparison": "compare",
    "CompilesReport": "compiles",
    "DiffReport": "diff",
    "EstimateReport": "estimate",
    "estimate_report": "estimate",
    "FusionsReport": "fusions",
    "InspectReport": "inspect",
    "MemoryReport": "memory",
    "ParamsReport": "params",
    "PassesReport": "passes",
    "PlacementReport": "placement",
    "ProfileReport": "profile",
    "REPORTS": "registry",
    "RematReport": "remat",
    "remat_report": "remat",
    "ReportEntry": "entry",
    "ScriptProfileReport": "profile",
    "Timings": "common",
    "aot_check_report": "aot",
    "compiles_report": "compiles",
    "diff_loaded": "diff",
    "entry_of": "entry",
    "fusions_report": "fusions",
    "inspect_report": "inspect",
    "loaded_memory_report": "memory",
    "loaded_profile_report": "profile",
    "lowered_frames": "common",
    "memory_report": "memory",
    "params_report": "params",
    "pass_diff": "passes",
    "pass_sides": "passes",
    "passes_report": "passes",
    "pick_pass": "passes",
    "placement_report": "placement",
    "placement_why": "placement",
    "placement_why_report": "placement",
    "profile_report": "profile",
    "profiled_report": "profile",
    "script_profile_report": "profile",
    "stage_timings": "common",
}


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'hloscope.reports' has no attribute {name!r}")
    value = resolve(f"hloscope.reports.{module}:{name}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_MODULE_OF))


__all__ = [
    "AOT_TEXT_ELEMENTS",
    "REPORTS",
    "AotReport",
    "AotTimings",
    "CheckReport",
    "CompareReport",
    "Comparison",
    "CompilesReport",
    "DiffReport",
    "EstimateReport",
    "FusionsReport",
    "InspectReport",
    "MemoryReport",
    "ParamsReport",
    "PassesReport",
    "PlacementReport",
    "ProfileReport",
    "RematReport",
    "ReportEntry",
    "ScriptProfileReport",
    "Timings",
    "aot_check_report",
    "compiles_report",
    "diff_loaded",
    "entry_of",
    "estimate_report",
    "fusions_report",
    "inspect_report",
    "loaded_memory_report",
    "loaded_profile_report",
    "lowered_frames",
    "memory_report",
    "params_report",
    "pass_diff",
    "pass_sides",
    "passes_report",
    "pick_pass",
    "placement_report",
    "placement_why",
    "placement_why_report",
    "profile_report",
    "profiled_report",
    "remat_report",
    "script_profile_report",
    "stage_timings",
]

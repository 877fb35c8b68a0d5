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
start-up is part of every command's time.
"""

from __future__ import annotations

from hloscope.reports.aot import AOT_TEXT_ELEMENTS, AotReport, AotTimings, aot_check_report
from hloscope.reports.check import CheckReport
from hloscope.reports.common import Timings, lowered_frames, stage_timings
from hloscope.reports.compiles import CompilesReport, compiles_report
from hloscope.reports.diff import DiffReport, diff_loaded
from hloscope.reports.entry import ReportEntry
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
from hloscope.reports.registry import REPORTS, entry_of

__all__ = [
    "AOT_TEXT_ELEMENTS",
    "REPORTS",
    "AotReport",
    "AotTimings",
    "CheckReport",
    "CompilesReport",
    "DiffReport",
    "FusionsReport",
    "InspectReport",
    "MemoryReport",
    "ParamsReport",
    "PassesReport",
    "PlacementReport",
    "ProfileReport",
    "ReportEntry",
    "ScriptProfileReport",
    "Timings",
    "aot_check_report",
    "compiles_report",
    "diff_loaded",
    "entry_of",
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
    "script_profile_report",
    "stage_timings",
]

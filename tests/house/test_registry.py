"""The reports' registry (`hloscope.reports.registry`): every report listed once, its
renderers and tab found, and the browser's tabs in its order. The command line, the
Python API and the browser all read it, so what they show cannot disagree; these
tests keep the list whole."""

from __future__ import annotations

import subprocess
import sys

import pytest

from hloscope import reports
from hloscope.reports.registry import REPORTS, entry_of


def test_every_report_is_listed_once():
    report_types = {
        value
        for name in reports.__all__
        if name.endswith("Report") and isinstance(value := getattr(reports, name), type)
    }
    assert [entry.report for entry in REPORTS] == list(dict.fromkeys(e.report for e in REPORTS))
    assert {entry.report for entry in REPORTS} == report_types


def test_each_entry_names_renderers_and_a_tab_that_exist():
    from hloscope.tui.views import ReportView

    for entry in REPORTS:
        name = entry.report.__name__
        assert callable(entry.json_renderer()), name
        assert callable(entry.text_renderer()), name
        tab = entry.browser_tab()
        assert tab is None or isinstance(tab, ReportView), name


def test_the_browser_shows_the_registrys_tabs_in_its_order():
    from hloscope.tui.views import VIEWS

    assert [view.id for view in VIEWS] == [
        "overview",
        "params",
        "placement",
        "fusions",
        "aot",
        "memory",
        "profile",
        "remat",
    ]
    assert tuple(entry.browser_tab() for entry in REPORTS if entry.tab is not None) == VIEWS


def test_a_shown_report_is_rendered_by_its_classs_entry():
    from hloscope.render.display import renderers, shown

    report = reports.DiffReport(
        a=None,  # type: ignore[arg-type]
        b=None,  # type: ignore[arg-type]
        diff=None,  # type: ignore[arg-type]
        load_seconds=(0.0, 0.0),
        diff_seconds=0.0,
        notes=(),
    )
    entry = entry_of(shown(report))
    assert entry.report is reports.DiffReport
    assert renderers(shown(report)) == (entry.json_renderer(), entry.text_renderer())


def test_entry_of_finds_each_listed_entry_in_its_reports_module():
    """`entry_of` reads a report's entry from the module of its class (so that a command
    loads only its own report's module): that must be the registry's answer."""
    import importlib
    import pkgutil

    from hloscope.reports.entry import ReportEntry

    in_modules = [
        value
        for info in pkgutil.iter_modules(reports.__path__)
        for value in vars(importlib.import_module(f"hloscope.reports.{info.name}")).values()
        if isinstance(value, ReportEntry)
    ]
    assert set(in_modules) == set(REPORTS)
    for entry in REPORTS:
        report = object.__new__(entry.report)
        assert entry_of(report) is entry, entry.report.__name__


def test_the_packages_lazy_names_are_its_public_names():
    # `hloscope.reports` lists its names for typing (`__all__`) and for importing on
    # first use: a name in one list only would fail at run time, not in mypy.
    from hloscope.reports import _MODULE_OF

    assert sorted(_MODULE_OF) == sorted(reports.__all__)
    for name in reports.__all__:
        assert getattr(reports, name) is not None, name


def test_a_report_command_loads_no_other_reports_module():
    code = (
        "import sys\n"
        "from hloscope import reports\n"
        "reports.entry_of(object.__new__(reports.InspectReport))\n"
        "print(sorted(m for m in sys.modules if m.startswith('hloscope.reports.')))\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert run.stdout.strip() == str(
        ["hloscope.reports.common", "hloscope.reports.entry", "hloscope.reports.inspect"]
    )


def test_the_registry_imports_no_renderer_or_front_end():
    code = (
        "import sys\n"
        "import hloscope.reports.registry\n"
        "print(sorted(m for m in sys.modules if m.split('.')[:2] in "
        "(['hloscope', 'render'], ['hloscope', 'tui'], ['hloscope', 'cli'], "
        "['hloscope', 'api']) or m.split('.')[0] in ('rich', 'textual', 'typer')))\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert run.stdout.strip() == "[]"


def test_an_entry_imports_hloscopes_own_modules_only():
    from hloscope.reports.entry import resolve

    with pytest.raises(ValueError, match="hloscope's own modules only"):
        resolve("os:system")

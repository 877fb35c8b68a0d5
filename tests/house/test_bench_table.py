"""`make bench AGAINST=REV`'s pure parts (issue 39): its arguments, the path each tree
runs with, the requirement check of the other revision, and the table that puts this
tree, REV and the floor side by side. No benchmark runs here."""

from __future__ import annotations

import os
import sys
from importlib import metadata
from pathlib import Path

import pytest

from conftest import ROOT

sys.path.insert(0, str(ROOT))

from bench.against import SECTIONS, Tree, parse_arguments, unmet_requirements
from bench.table import Row, markdown

INFO = {"cpu": "AMD EPYC", "cores": "2", "python": "3.11.7", "jax": "0.10.2", "date": "today"}


def test_the_arguments_default_to_this_tree_alone_and_every_section():
    options = parse_arguments([])
    assert (options.quick, options.against, options.sections) == (False, "", SECTIONS)


def test_only_picks_sections_in_the_bench_order_and_refuses_unknown_ones(capsys):
    options = parse_arguments(["--quick", "--against", "059e836", "--only", "diff,load"])
    assert (options.quick, options.against, options.sections) == (True, "059e836", ("load", "diff"))
    assert parse_arguments(["--only", "placement --why"]).sections == ("placement --why",)
    with pytest.raises(SystemExit):
        parse_arguments(["--only", "lod"])
    assert "unknown section 'lod'" in capsys.readouterr().err


def test_each_tree_runs_its_own_sources_first_on_the_path():
    tree = Tree("059e836", Path("/cache/trees/059e836"))
    env = tree.env({"PYTHONPATH": f"/elsewhere{os.pathsep}/more", "HOME": "/root"})
    paths = env["PYTHONPATH"].split(os.pathsep)
    assert paths == ["/cache/trees/059e836/src", "/elsewhere", "/more"]
    assert env["HOME"] == "/root"
    assert tree.env({})["PYTHONPATH"] == "/cache/trees/059e836/src"


def test_a_tree_with_its_own_pins_runs_them_after_its_sources():
    # 059e836 pins typer 0.29, which this tree keeps out: pip puts it in an overlay.
    tree = Tree("059e836", Path("/cache/trees/059e836"), Path("/cache/overlays/059e836"))
    paths = tree.env({"PYTHONPATH": "/elsewhere"})["PYTHONPATH"].split(os.pathsep)
    assert paths == ["/cache/trees/059e836/src", "/cache/overlays/059e836", "/elsewhere"]


def test_a_revision_whose_requirements_this_environment_lacks_is_named(tmp_path):
    jax = metadata.version("jax")
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text(
        "[project]\n"
        'name = "hloscope"\n'
        f'dependencies = ["jax=={jax}", "jax<0.1", "no-such-package-hloscope>=1",'
        " \"typer; python_version < '3'\"]\n"
    )
    assert unmet_requirements(pyproject) == [
        f"jax<0.1 (installed: {jax})",
        "no-such-package-hloscope>=1",
    ]
    assert unmet_requirements(ROOT / "pyproject.toml") == []


def rows() -> list[Row]:
    load = Row("load", "generated 100k (mlir)", 100_000, 0.7, 1.4, 1.5, 300_000, 500_000, 2.0)
    load.against_seconds, load.cpu_seconds, load.against_cpu_seconds = 1.75, 1.2, 1.6
    startup = Row("startup", "start-up", None, 0.11, 0.25, None, goal_over=0.10)
    startup.against_seconds = 0.2
    return [load, startup]


def test_the_table_puts_this_tree_the_revision_and_the_floor_side_by_side():
    table = markdown(rows(), INFO, "059e836").splitlines()
    header = [cell.strip() for cell in table[2].strip("|").split("|")]
    assert header[3:10] == [
        "floor",
        "this tree",
        "059e836",
        "this / 059e836",
        "CPU this / 059e836",
        "this / floor",
        "goal",
    ]
    load = [cell.strip() for cell in table[4].strip("|").split("|")]
    assert load[3:] == [
        "0.700 s",
        "1.400 s",
        "1.750 s",
        "0.80x",
        "0.75x",
        "2.00x",
        "1.5x",
        "14.0",
        "1.67x",
        "MISSED time",
    ]
    startup = [cell.strip() for cell in table[5].strip("|").split("|")]
    # A goal in seconds over the floor: 0.14 s over it misses 0.10 s.
    assert startup[4:] == [
        "0.250 s",
        "0.200 s",
        "1.25x",
        "",
        "2.27x",
        "+0.10 s",
        "",
        "",
        "MISSED time",
    ]


def test_without_a_revision_the_table_keeps_its_columns():
    table = markdown(rows(), INFO).splitlines()
    assert table[2] == (
        "| section | case | ops | baseline | hloscope | ratio | goal | µs/op | RSS ratio "
        "| verdict |"
    )
    assert table[4].endswith("| 2.00x | 1.5x | 14.0 | 1.67x | MISSED time |")


def test_a_start_up_within_its_seconds_over_the_floor_is_met():
    row = Row("startup", "start-up", None, 0.11, 0.20, None, goal_over=0.10)
    assert row.verdict() == "ok"

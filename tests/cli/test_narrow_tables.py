"""The text reports read whole at 120 columns, the width of a piped CI log (issue 53):
on the LLM-shaped step compiled for a v5e slice, no number is cut, paths that differ
read differently, no identifier is split over two lines, and an argument is one line
of the arguments' table. The truth each report is checked against is its own JSON
(the numbers and names the text must show whole)."""

import re

import pytest

from conftest import ROOT
from hloscope.render.text.common import Entries, Squeezed, elide_middle, elide_path
from hloscope.units import human_bytes

WIDTH = 120
STEP = "samples/llm_step.py"


@pytest.fixture(scope="module")
def slice_program():
    """The reduced LLM step (2 layers) compiled once for a v5e:2x4 slice: XLA's own form
    (its conversion to MLIR fails), 33 arguments sharded over one mesh, an optimizer's
    state donated, collectives in loops."""
    import importlib.util

    import hloscope

    spec = importlib.util.spec_from_file_location("llm_step_for_tables", ROOT / STEP)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    inspection = hloscope.inspect(f"{STEP}:train_step", *module.example_args())
    return inspection.compile_for("tpu:v5e:2x4")


def section(text: str, title: str) -> list[str]:
    """The lines of the table titled `title`, below its rule, up to the next blank line."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(title))
    rule = next(i for i in range(start, len(lines)) if lines[i].startswith("─"))
    body = []
    for line in lines[rule + 1 :]:
        if not line.strip():
            break
        body.append(line)
    return body


# A number cut short (`64.0 K…`, `1.…`, `12…`); a name elided in its middle keeps its
# numbers whole (`fused_computatio…134.clone.1`).
CUT_NUMBER = re.compile(r"\d…|\d\.…|\b(?:Ki|Mi|Gi|K|M|G)…")


def assert_no_number_cut(text: str) -> None:
    cut = [line for line in text.splitlines() if CUT_NUMBER.search(line)]
    assert not cut, "\n".join(cut)


def test_params_one_line_per_argument_and_distinct_paths(slice_program):
    report = slice_program.params
    text = report.render(WIDTH)
    parameters = report.usage.parameters
    rows = section(text, "Arguments")
    # One line per argument: the mesh is said once, in the header.
    assert len(rows) == len(parameters) == 33, text
    assert re.search(r"^mesh +data=4 × model=2\b", text, re.M), text
    assert "over mesh(" not in "\n".join(rows)
    # Every path is distinct after elision (`.mu` and `.nu` never read the same).
    shown = [re.split(r"\s{2,}", row.strip())[1] for row in rows]
    assert len(set(shown)) == len(shown), shown
    # Each shortened path still names its leaf.
    for path, cell in zip((p.path for p in parameters), shown, strict=True):
        assert path == cell or (cell.endswith(path[-5:]) and "…" in cell), (path, cell)
    # Every size is whole.
    for p in parameters:
        assert human_bytes(p.bytes) in text
    assert_no_number_cut(text)


def test_memory_numbers_whole_and_donations_counted(slice_program):
    report = slice_program.memory()
    text = report.render(WIDTH)
    analysis = report.analysis
    # The TPU's memory spaces apart: the default one (HBM) first.
    default = analysis.default_space
    assert default is not None
    rows = section(text, f"Buffers of {default.label} live at its peak")
    # A buffer's row starts with its size (a row of its lines' numbers alone continues
    # the one above).
    sized = [row for row in rows if re.match(r"\s+[\d.]+ (B|KiB|MiB|GiB)\s", row)]
    sizes = [row.split()[0] + " " + row.split()[1] for row in sized]
    shown = default.buffers_at_peak[: len(sizes)]
    assert sizes == [human_bytes(b.bytes) for b in shown], text
    assert_no_number_cut(text)
    # 22 donated arguments are counted on one line, not listed over 27.
    donated = [line for line in text.splitlines() if line.startswith("donated")]
    assert len(donated) == 1, text
    index = text.splitlines().index(donated[0])
    others = [s for s in analysis.memory_spaces if s is not default]
    assert [line.split("  ")[0] for line in text.splitlines()[index - len(others) : index]] == [
        s.label for s in others
    ], text
    assert f"{len(analysis.donated)} arguments" in donated[0]
    assert human_bytes(sum(d.bytes for d in analysis.donated)) in donated[0]


def test_placement_collectives_whole(slice_program):
    report = slice_program.placement
    text = report.render(WIDTH)
    rows = section(text, "Collectives")
    for collective in report.placement.collectives:
        # The op's name whole, on its own row's first line.
        assert re.search(rf"^ {collective.op}\s+{collective.count}\s", text, re.M), text
    # A row is at most two lines: the lists give way, never wrapping a name over seven.
    starts = [i for i, row in enumerate(rows) if re.match(r" \w", row)]
    assert all(b - a <= 2 for a, b in zip(starts, [*starts[1:], len(rows)], strict=True)), text
    assert not re.search(r"collective_p\s*$", text, re.M)
    # A source line gives up its folders' middle, never its file's name.
    assert all("llm_step.py:" in row for row in rows if "step.py" in row), text
    assert_no_number_cut(text)


def test_fusions_and_inspect_numbers_whole(slice_program):
    fusions = slice_program.fusions().render(WIDTH)
    assert_no_number_cut(fusions)
    rows = section(fusions, "Fusions (")
    # A fusion's name is whole on its line (no name wraps: a heading row names the
    # function the rows below are in).
    names = [f.name for f in slice_program.fusions().analysis.fusions[:40]]
    for name in names:
        assert re.search(rf"^ {re.escape(name)}\s", fusions, re.M), name
    # At most a few lines a fusion: the optimizer's multi-output fusions, first in
    # the schedule, list each result and the library lines of their ops.
    assert len(rows) < 2.5 * len(slice_program.fusions().analysis.fusions[:60]), fusions
    overview = slice_program.overview.render(WIDTH)
    assert_no_number_cut(overview)
    functions = section(overview, "Functions (")
    # `(unreachable)` stays on its function's line.
    assert not any(line.strip().startswith("(unreachable)") for line in functions), overview


PATHS = [
    "opt_state[0].mu['layers']['ln1']",
    "opt_state[0].nu['layers']['ln1']",
    "opt_state[0].mu['ln_f']",
    "opt_state[0].nu['ln_f']",
    "params['layers']['ln1']",
]


@pytest.mark.parametrize("limit", [24, 23, 22])
def test_elided_paths_keep_what_tells_them_apart(limit):
    shown = [elide_path(path, limit, PATHS) for path in PATHS]
    assert len(set(shown)) == len(shown), shown
    assert all(len(s) <= limit for s in shown), shown
    assert elide_path(PATHS[0], 24, PATHS) == "opt_state[0].mu…['ln1']"


def test_a_path_alone_elides_as_before():
    # Told no other path, the root and the end are kept (`test_a_long_path_keeps_its_end`).
    path = "opt_state[0].mu['layers']['ln1']"
    assert elide_path(path, 20) == "opt_state[0]…['ln1']"


def test_a_name_loses_its_middle_never_its_end():
    assert elide_middle("bitcast_dynamic-update-slice_fusion.22", 20) == "bitcast_d…_fusion.22"
    assert elide_middle("short", 20) == "short"


def lines_of(cell, width):
    from rich.console import Console

    console = Console(width=200)
    return [
        "".join(s.text for s in line).rstrip()
        for line in console.render_lines(cell, console.options.update_width(width))
    ]


def test_entries_wrap_between_entries_and_count_the_rest():
    cell = Entries(["fused_computation.292", "async_collective_fusion.405", "main"], more=18)
    lines = lines_of(cell, 30)
    assert len(lines) <= 2
    assert lines[0] == "fused_computation.292,"
    assert lines[-1].endswith("more")
    # Every entry shown is whole or elided in its middle, never split over lines.
    for line in lines:
        assert len(line) <= 30


def test_squeezed_words_never_split():
    cell = Squeezed("bitcast_dynamic-update-slice_fusion.22, in wide.param.1{6}'s bytes")
    lines = lines_of(cell, 24)
    assert lines[0] == "bitcast_dyn…e_fusion.22,"
    assert all(len(line) <= 24 for line in lines)


def test_the_browsers_path_column_keeps_rows_apart_too():
    # The browser's tables shorten paths with the same function, told the column's paths.
    import hloscope.tui.app  # noqa: F401  (the browser's modules, in their import order)
    from hloscope.tui.widgets.report_list import Column, Row, table

    rows = [Row([path, "2.0 KiB"]) for path in PATHS]
    lines = table("Arguments", [Column("argument", width=24, path=True), Column("bytes")], rows)
    shown = [line.text.plain.split("  ")[0] for line in lines[2:]]
    assert len(set(shown)) == len(PATHS), shown
    assert "opt_state[0].mu…['ln1']" in shown


def test_a_diffs_long_function_name_is_not_split():
    # XLA's computation names (`wide.region_1.6_spmd.clone.sunk`) are wider than the
    # diff's function column: one line, its middle elided, never folded over two.
    import io

    from rich.console import Console

    from hloscope.analyses.diff.report import Change, ChangeGroup
    from hloscope.render.text.diff import _changes_table

    name = "wide.region_1.6_spmd.clone.sunk.clone.clone"
    change = Change("changed", name, "fusion.22", "shape", ("shape",), 1, 1, None, None)
    group = ChangeGroup("changed", name, "fusion.22", "shape", ("shape",), 1, (change,), ())
    console = Console(width=WIDTH, file=io.StringIO(), record=True)
    console.print(_changes_table("Changes", [group]))
    rows = [line for line in console.export_text().splitlines() if "fusion.22" in line]
    assert len(rows) == 1 and "…" in rows[0] and rows[0].split()[2].endswith("clone"), rows


@pytest.mark.parametrize("limit", [20, 28, 36])
def test_a_source_keeps_whole_folders_and_its_line(limit):
    from hloscope.render.text.source_lines import elide_source

    source = ".venv/lib/python3.11/site-packages/optax/_src/update.py:42"
    shown = elide_source(source, limit)
    assert shown.endswith("/update.py:42") and len(shown) <= limit, shown
    # What is kept of the folders is whole folders (`python3.…` would read as a version).
    kept = shown.split("…")[0]
    assert kept == "" or (kept.endswith("/") and source.startswith(kept)), shown


def test_placement_shardings_paths_stay_distinct_in_a_narrow_table():
    # The same step compiled for this machine: its shardings table names every
    # argument by its path; at 80 columns the paths are shortened, none alike.
    import importlib.util

    import hloscope

    spec = importlib.util.spec_from_file_location("llm_step_for_shardings", ROOT / STEP)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    report = hloscope.inspect(f"{STEP}:train_step", *module.example_args()).optimized().placement
    text = report.render(80)
    rows = [line for line in section(text, "Shardings (") if line.startswith(" argument")]
    names = [re.split(r"\s{2,}", row.strip())[2] for row in rows]
    assert len(rows) == len(names) >= 30, text
    assert any("…" in name for name in names), text
    assert len(set(names)) == len(names), names


def test_checks_change_keeps_each_count_with_its_kind():
    from hloscope.render.text.check import change_entries

    change = "+6 hlo.copy-done, +6 hlo.copy-start, +5 hlo.constant, … (16 kinds)"
    lines = lines_of(change_entries(change), 26)
    assert lines[0] == "+6 hlo.copy-done,"
    assert all(re.match(r"[+-]\d+ hlo\.", line) for line in lines), lines
    assert lines[-1].endswith("… 13 more"), lines


def test_an_entry_as_wide_as_the_line_wraps_between_its_words():
    # With the separator that ends its line it is one wider than the line: its words
    # wrap, none is elided (`f32[8…,512]` was).
    entry = "+1.0 MiB live at the peak (f32[8,2048,512], f32[8,2048,128])"
    cell = Entries([entry, "fusions.count +7"], separator="; ")
    lines = lines_of(cell, len(entry))
    assert "…" not in "".join(lines) and "f32[8,2048,512]," in lines[0], lines

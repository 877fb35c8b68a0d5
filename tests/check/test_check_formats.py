"""`hloscope check --format github|markdown` on a real sharding regression: a layer
whose changed version asks, with `with_sharding_constraint`, for its hidden
activations split by feature on 8 CPU devices, so that XLA inserts an all-gather and
an all-reduce. The annotations land on the lines the check names for each change,
computed here from the source file, and the job summary and the Markdown output hold
one and the same table."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import pytest

from conftest import ROOT, line_of, run_cli
from hloscope.check_run import check_one
from hloscope.render.check_rows import change_rows
from hloscope.render.ci import (
    escape_data,
    escape_property,
    github_commands,
    markdown_report,
    workflow_command,
)
from hloscope.reports.check import CheckReport
from hloscope.sources.loader import LoadOptions

MODELS = "tests/fixtures/check_models.py"
ARGS = ["--args", f"{MODELS}:hidden_layer_args"]


def line_in(function: str, needle: str) -> int:
    """The line of `needle` in `function` of the models (other models share lines)."""
    lines = (ROOT / MODELS).read_text().splitlines()
    start = line_of(ROOT / MODELS, f"def {function}(")
    return next(n for n in range(start, len(lines) + 1) if needle in lines[n - 1])


CONSTRAINT_LINE = line_in("hidden_layer_resharded", "jax.lax.with_sharding_constraint(")
FIRST_DOT_LINE = line_in("hidden_layer_resharded", "hidden = jnp.tanh(x @ w1)")
SECOND_DOT_LINE = line_in("hidden_layer_resharded", "return hidden @ w2")


@pytest.fixture(scope="module")
def baseline(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("formats") / "hidden.json"
    options = LoadOptions(args_factory=f"{MODELS}:hidden_layer_args")
    with contextlib.chdir(ROOT):
        check_one(f"{MODELS}:hidden_layer", path, options=options, update=True)
    return path


@pytest.fixture(scope="module")
def regressed(baseline: Path) -> CheckReport:
    options = LoadOptions(args_factory=f"{MODELS}:hidden_layer_args")
    with contextlib.chdir(ROOT):
        return check_one(f"{MODELS}:hidden_layer_resharded", baseline, options=options)


def unescape(text: str) -> str:
    """GitHub's runner's reading of an escaped value (the inverse of @actions/core's
    escaping: `%25` last, so that `%253A` reads as `%3A`)."""
    for escaped, char in (("%0D", "\r"), ("%0A", "\n"), ("%3A", ":"), ("%2C", ","), ("%25", "%")):
        text = text.replace(escaped, char)
    return text


def parse_command(line: str) -> tuple[str, dict[str, str], str]:
    """(`error`, properties, message) of `::error file=F,line=L::MESSAGE`."""
    assert line.startswith("::"), line
    head, sep, message = line[2:].partition("::")
    assert sep, line
    command, _, props = head.partition(" ")
    properties = dict(p.split("=", 1) for p in props.split(",")) if props else {}
    return command, {k: unescape(v) for k, v in properties.items()}, unescape(message)


def errors(stdout: str) -> list[tuple[dict[str, str], str]]:
    parsed = [parse_command(line) for line in stdout.splitlines() if line.startswith("::")]
    return [(props, message) for command, props, message in parsed if command == "error"]


def annotation_of(found: list[tuple[dict[str, str], str]], fact: str) -> dict[str, str]:
    (props,) = [props for props, message in found if message.startswith(fact + " ")]
    return props


def test_github_annotates_each_regression_at_its_line_and_fills_the_summary(
    baseline: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    monkeypatch.delenv("GITHUB_WORKSPACE", raising=False)
    target = [f"{MODELS}:hidden_layer_resharded", *ARGS, "--baseline", str(baseline)]
    run = run_cli("check", *target, "--format", "github")
    assert run.code == 1, run.stderr
    found = errors(run.stdout)
    # The all-gather XLA inserted is made by the first dot, whose output the constraint
    # asks to be split another way; the all-reduce by the second dot; the constraint's
    # own op by the constraint's line. Each is an annotation there.
    gather = annotation_of(found, "collectives.all-gather.count")
    assert gather == {"file": MODELS, "line": str(FIRST_DOT_LINE)}
    reduce = annotation_of(found, "collectives.all-reduce.count")
    assert reduce == {"file": MODELS, "line": str(SECOND_DOT_LINE)}
    constraint = annotation_of(found, "ops.lowered.sdy.sharding_constraint")
    assert constraint == {"file": MODELS, "line": str(CONSTRAINT_LINE)}
    # The message says the fact and the move, and why the collective is there: the
    # constraint's line (`placement --why`).
    (message,) = [m for _, m in found if m.startswith("collectives.all-gather.count ")]
    assert message.startswith("collectives.all-gather.count - → 1 (new, tolerance exact)")
    assert f"sharding constraint at {MODELS}:{CONSTRAINT_LINE}" in message
    # A regression no line of the user's makes is a plain `::error::`.
    assert any(
        line.startswith("::error::collectives.all-gather.bytes ")
        for line in run.stdout.splitlines()
    )
    # Every regression is one annotation, at the line the JSON names first for it.
    document = run_cli("check", *target, "--json").json()
    regressions = [c for c in document["changes"] if c["regression"]]
    assert len(found) == len(regressions)
    for change in regressions:
        props = annotation_of(found, change["fact"])
        where = f"{props['file']}:{props['line']}" if props else None
        assert where == (change["sources"][0] if change["sources"] else None)
    assert run.stdout.splitlines()[-1].startswith(
        f"hloscope check {MODELS}:hidden_layer_resharded: FAILED: "
    )
    # The job summary got the table, after what an earlier step wrote.
    written = summary.read_text()
    assert written.startswith("earlier step\n")
    table = written[len("earlier step\n") :]
    assert "| | fact | before | after | change | tolerance | line |" in table
    assert f"| ❌ | `collectives.all-gather.count` | - | 1 | new | exact | `{MODELS}:" in table
    # The change that is no regression is listed too, unmarked.
    assert "|  | `cost.bytes_accessed` |" in table
    # --format markdown prints that same table.
    markdown = run_cli("check", *target, "--format", "markdown")
    assert markdown.code == 1
    assert markdown.stdout == table


def test_the_markdown_table_has_a_row_per_change_and_a_mark_per_regression(
    regressed: CheckReport,
) -> None:
    text = markdown_report(regressed)
    rows = [line for line in text.splitlines() if line.startswith("| ")][1:]
    comparison = regressed.checks[0].comparison
    assert comparison is not None
    marked = [row for row in rows if row.startswith("| ❌ |")]
    assert len(marked) == len(change_rows(comparison.regressions)) > 0
    assert len(rows) - len(marked) == len(change_rows(comparison.improvements))
    line = f"`{MODELS}:{SECOND_DOT_LINE}`"
    (reduce,) = [row for row in rows if "`collectives.all-reduce.count`" in row]
    assert reduce.endswith(f"| {line} |")
    assert "### hloscope check: `" in text and "❌ FAILED: " in text


def test_annotation_paths_are_relative_to_the_checkout(regressed: CheckReport) -> None:
    # GitHub names files from the repository's root ($GITHUB_WORKSPACE), which may be
    # above the folder the check ran in.
    with contextlib.chdir(ROOT):
        lines = github_commands(regressed, str(ROOT.parent))
    found = errors("\n".join(lines))
    gather = annotation_of(found, "collectives.all-gather.count")
    assert gather == {"file": f"{ROOT.name}/{MODELS}", "line": str(FIRST_DOT_LINE)}


def test_a_passing_check_annotates_nothing(
    baseline: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    target = [f"{MODELS}:hidden_layer", *ARGS, "--baseline", str(baseline)]
    run = run_cli("check", *target, "--format", "github")
    assert run.code == 0, run.stderr
    assert not errors(run.stdout)
    assert run.stdout.splitlines()[-1].startswith(f"hloscope check {MODELS}:hidden_layer: passed: ")
    assert "passed: " in summary.read_text()
    as_json = run_cli("check", *target, "--format", "json")
    assert as_json.code == 0 and json.loads(as_json.stdout)["passed"] is True


@pytest.mark.parametrize("output", ["text", "github", "markdown"])
def test_json_and_another_format_disagree_in_one_line(output: str, tmp_path: Path) -> None:
    run = run_cli("check", f"{MODELS}:layer", "--baseline", str(tmp_path / "b.json"), "--json",
                  "--format", output)  # fmt: skip
    assert run.code == 2 and run.stdout == ""
    assert run.stderr.strip().splitlines() == [
        f"hloscope: error: --json and --format {output} disagree: give one of them"
    ]


def test_an_unknown_format_is_one_line_and_exit_2() -> None:
    run = run_cli("check", f"{MODELS}:layer", "--format", "yaml")
    assert run.code == 2 and run.stdout == ""
    assert len(run.stderr.strip().splitlines()) == 1 and "--format" in run.stderr


def test_an_unwritable_summary_is_one_line_and_exit_2(
    baseline: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "no" / "such" / "summary.md"))
    target = [f"{MODELS}:hidden_layer", *ARGS, "--baseline", str(baseline)]
    run = run_cli("check", *target, "--format", "github")
    assert run.code == 2
    assert len(run.stderr.strip().splitlines()) == 1 and "job summary" in run.stderr
    assert "Traceback" not in run.stderr


def test_workflow_commands_are_escaped_as_githubs_toolkit_escapes_them() -> None:
    assert escape_data("50% of a\r\nb: c, d") == "50%25 of a%0D%0Ab: c, d"
    assert escape_property("dir,x/a:b.py%") == "dir%2Cx/a%3Ab.py%25"
    line = workflow_command("error", {"file": "a,b.py", "line": "3"}, "x: 100%\ny")
    assert line == "::error file=a%2Cb.py,line=3::x: 100%25%0Ay"
    assert parse_command(line) == ("error", {"file": "a,b.py", "line": "3"}, "x: 100%\ny")
    assert workflow_command("error", {}, "plain") == "::error::plain"

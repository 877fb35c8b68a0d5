"""Every `$ hloscope ...` transcript of the documentation (the README and every page of
docs/: conftest's `documentation_files`), run and compared with what it shows.

A transcript is a `$ hloscope ...` line in a fenced block (with its `\\` continuation
lines and any `| jq ...` after it), the output lines under it, and, when the next
line is `$ echo $?`, the exit code under that. Each is run by bash from the
repository root, through the real tool (the venv's `hloscope` console script, this
checkout's `src` first on the path), stdout and stderr together, 120 columns wide
as in a pipe, and compared line by line with:

- what hloscope measured masked, since it changes from run to run: the times of a
  report's `timings` line (`load 526 ms · lower 1.21 s`), of a JSON `"timings"`
  object and of a check's measured facts (`compile.seconds`, `runtime.seconds_per_run`),
  and every time, percentage and ratio of a command that reports what it
  measured running the program (`profile` without `--for`, `compiles`, `check
  --runtime` without `--for`). Nothing else is: an estimate (`profile --for`, `check
  --for --runtime`) is the compiler's answer for one compile, and a size's percentage
  (`+575%`, `78%` of HBM) is XLA's, so a page showing other numbers than the tool
  prints fails;
- the folder of installed packages (`.venv/lib/python3.11/site-packages/`) masked,
  since it depends on where the venv is and on its Python;
- runs of spaces counted as one, table rules as one width, and trailing spaces
  ignored, so that a column made wider by a longer time does not count; and where
  the lines differ, the words are compared in order regardless of where the lines
  break (a narrower last column wraps its text at another word);
- a line holding only `...` standing for any number of lines (an elision).

markdown-it-py (rich's Markdown parser) finds the fenced blocks and their lines; the
transcript tools that exist do not fit these pages: cram and prysk read indented
`.t` files, byexample elides with `<...>` and runs outside pytest, and
pytest-markdown-docs, phmdoctest and mktestdocs run Python blocks only.

Each distinct command is its own test, named by the file and line of its first
transcript: a command shown in several places (the README's short example of a
command a page shows in full, say) runs once, and what it printed is compared with
each transcript of it, a failure naming the file and line of the one that differs.
Nothing is written anywhere but the tool's own temporary folders, so two runs of the
suite at once do not meet.
"""

from __future__ import annotations

import dataclasses
import difflib
import itertools
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from conftest import ROOT, documentation_files

PROMPT = "$ "
ELISION = "..."


@dataclasses.dataclass(frozen=True)
class Transcript:
    file: str
    """The documentation file, relative to the repository root (`docs/commands/diff.md`)."""
    line: int
    """The file's line of the `$ hloscope` prompt (1-based)."""
    command: str
    """The command as written, continuation lines included, without the prompt."""
    expected: tuple[str, ...]
    """The output lines shown under it."""
    exit_code: int | None
    """The code shown by a `$ echo $?` right after it; None when there is none."""

    @property
    def place(self) -> str:
        return f"{self.file}:{self.line}"

    @property
    def id(self) -> str:
        words = self.command.split()
        return f"{self.place}:{words[1] if len(words) > 1 else words[0]}"


def _commands(lines: list[str], first_line: int) -> list[tuple[int, str, list[str]]]:
    """A block's `$ ` commands: (file line, command, output lines under it)."""
    found: list[tuple[int, str, list[str]]] = []
    index = 0
    while index < len(lines):
        line = lines[index]
        if not line.startswith(PROMPT):
            if found:
                found[-1][2].append(line)
            index += 1
            continue
        start = index
        command = [line[len(PROMPT) :]]
        while command[-1].endswith("\\") and index + 1 < len(lines):
            index += 1
            command.append(lines[index])
        found.append((first_line + start, "\n".join(command), []))
        index += 1
    return found


def file_transcripts(text: str, file: str) -> list[Transcript]:
    """The `$ hloscope` transcripts of one documentation file's text, in order."""
    transcripts: list[Transcript] = []
    for token in MarkdownIt().parse(text):
        if token.type != "fence" or token.map is None:
            continue
        lines = token.content.splitlines()
        if not any(line.startswith(PROMPT) for line in lines):
            continue
        # token.map[0] is the fence's own line (0-based); the content starts below it.
        commands = _commands(lines, token.map[0] + 2)
        for position, (line, command, output) in enumerate(commands):
            if not command.startswith("hloscope "):
                continue
            following = commands[position + 1] if position + 1 < len(commands) else None
            exit_code = None
            if following is not None and following[1] == "echo $?":
                exit_code = int(following[2][0])
            transcripts.append(Transcript(file, line, command, tuple(output), exit_code))
    return transcripts


def documentation_transcripts() -> list[Transcript]:
    """The `$ hloscope` transcripts of every documentation file, in order."""
    return [
        transcript
        for path in documentation_files()
        for transcript in file_transcripts(path.read_text(), str(path.relative_to(ROOT)))
    ]


def by_command(transcripts: list[Transcript]) -> list[list[Transcript]]:
    """The transcripts grouped by command line (one run each), in order of first place."""
    groups: dict[str, list[Transcript]] = {}
    for transcript in transcripts:
        groups.setdefault(transcript.command, []).append(transcript)
    return list(groups.values())


# --------------------------------------------------------------------------- comparing

_MEASURED_MASKS = [
    # JSON: "load_seconds": 1.17 and "load_seconds": [0.69, 0.02]
    (re.compile(r'("\w*seconds"):\s*(?:\[[^\]]*\]|-?[\d.e+-]+)'), r"\1: <seconds>"),
    (re.compile(r"\b\d+(?:\.\d+)? (?:ns|µs|ms|s)\b"), "<time>"),
    # A compile read from hloscope's compile cache (a program an earlier transcript
    # compiled) says so: the same report.
    (re.compile(r"<time> \(cached\)"), "<time>"),
    (re.compile(r',?\s*"compile_cached":\s*(?:true|false)'), ""),
    (re.compile(r"\b\d+(?:\.\d+)?%"), "<percent>"),
    (re.compile(r"\b\d+(?:\.\d+)?x\b"), "<ratio>"),
]
"""What a measurement prints: masked in a command that measures, and on the lines of
hloscope's own timings in every command."""
_TIMINGS_LINE = re.compile(r"^(?:timings|compile\.seconds|runtime\.seconds_per_run)\s")
"""A text report's line of hloscope's own stage times (`timings  load 526 ms · ...`), and
a check's row of a measured fact (the compile time, the run time)."""
_JSON_TIMINGS = re.compile(r'"timings":\s*\{[^{}]*\}')
"""A one-line JSON `"timings"` object (`jq -c`)."""
_JSON_TIMINGS_OPENS = re.compile(r'^"timings":\s*\{$')
_MASKS = [
    # Where the venv is (a clone's own .venv, a shared one elsewhere) and its Python.
    (re.compile(r"[\w./-]*/(?:site|dist)-packages/"), "<site-packages>/"),
    # A table's rule is as wide as its columns, which a longer time widens.
    (re.compile(r"─{2,}"), "──"),
    (re.compile(r"\s+"), " "),
]


def measures(command: str) -> bool:
    """Whether the command reports what it measured running the program: `profile`
    (but `profile --for`, an estimate), `compiles`, and `check --runtime` (but with
    `--for`, an estimate)."""
    words = shlex.split(command.replace("\\\n", " "))
    words = words[: words.index("|")] if "|" in words else words
    name = words[1] if len(words) > 1 else ""
    estimated = "--for" in words or any(w.startswith("--for=") for w in words)
    if name == "compiles":
        return True
    if name == "profile":
        return not estimated
    return name == "check" and "--runtime" in words and not estimated


def _measured(line: str) -> str:
    for pattern, replacement in _MEASURED_MASKS:
        line = pattern.sub(replacement, line)
    return line


def masked(line: str, measured: bool = False, in_timings: bool = False) -> str:
    """The line as compared: what was measured masked (every time, percentage and
    ratio where `measured`; else a timings line's, or a JSON timings object's, and
    `in_timings`: the line is inside a printed JSON `"timings"` object), the spacing
    and the folder of installed packages made alike."""
    line = line.strip()
    if measured or in_timings or _TIMINGS_LINE.match(line):
        line = _measured(line)
    else:
        line = _JSON_TIMINGS.sub(lambda found: _measured(found.group()), line)
    for pattern, replacement in _MASKS:
        line = pattern.sub(replacement, line)
    return line


def masked_lines(lines: list[str] | tuple[str, ...], measured: bool) -> list[str]:
    """`masked` over printed lines, a pretty-printed JSON `"timings"` object's lines
    (up to the line closing it) masked as timings."""
    out: list[str] = []
    in_timings = False
    for line in lines:
        out.append(masked(line, measured, in_timings))
        stripped = line.strip()
        if _JSON_TIMINGS_OPENS.match(stripped):
            in_timings = True
        elif in_timings and stripped.startswith("}"):
            in_timings = False
    return out


def matches(expected: list[str], actual: list[str]) -> bool:
    """Whether the printed lines are the shown ones, an elision standing for any lines
    (both masked)."""
    # reachable[j]: the expected lines so far can account for actual[:j].
    reachable = [True] + [False] * len(actual)
    for shown in expected:
        if shown == ELISION:
            for j in range(1, len(actual) + 1):
                reachable[j] = reachable[j] or reachable[j - 1]
            continue
        reachable = [False] + [
            reachable[j - 1] and actual[j - 1] == shown for j in range(1, len(actual) + 1)
        ]
    return reachable[-1]


def words(lines: list[str]) -> list[str]:
    """The masked lines as one sequence of words, an elision kept as one."""
    return [word for line in lines for word in ([line] if line == ELISION else line.split())]


def _trimmed(lines: list[str]) -> list[str]:
    while lines and not lines[-1]:
        lines.pop()
    return lines


# --------------------------------------------------------------------------- running


def _environment() -> dict[str, str]:
    """The environment of a user's shell with the venv active, and this checkout's code."""
    env = dict(os.environ)
    # tests/conftest.py asks for 8 CPU devices for the tests; a user's shell does not
    # (the samples that need them ask themselves).
    env.pop("XLA_FLAGS", None)
    env.pop("LINES", None)
    env["COLUMNS"] = "120"
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), env.get("PYTHONPATH", "")]).rstrip(
        os.pathsep
    )
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    return env


def run_transcript(command: str) -> tuple[int, str]:
    """The command's exit code and what it printed (stdout, then stderr), run by bash
    from the repository root."""
    done = subprocess.run(
        ["bash", "-c", command],
        cwd=ROOT,
        env=_environment(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        check=False,
    )
    return done.returncode, done.stdout


def piped_to(command: str) -> list[str]:
    """The programs the command pipes into (`jq`), which a machine may not have."""
    tokens = shlex.shlex(command, posix=True, punctuation_chars=True)
    return [after for token, after in itertools.pairwise(tokens) if token == "|"]


TRANSCRIPTS = documentation_transcripts()
COMMANDS = by_command(TRANSCRIPTS)


def test_the_tool_run_is_this_checkout() -> None:
    assert shutil.which("hloscope", path=_environment()["PATH"]), "no hloscope beside python"
    code, printed = run_transcript('python -c "import hloscope; print(hloscope.__file__)"')
    assert code == 0, printed
    assert Path(printed.strip()).is_relative_to(ROOT / "src"), printed


def test_the_documentation_has_transcripts() -> None:
    # A change to the parsing that finds none would pass every case below.
    assert len(TRANSCRIPTS) >= 20
    assert any(t.exit_code is not None for t in TRANSCRIPTS)
    # The README shows one example per command, and the command pages theirs.
    files = {t.file for t in TRANSCRIPTS}
    assert "README.md" in files
    assert sum(1 for t in TRANSCRIPTS if t.file == "README.md") >= 10
    assert {"docs/commands/params.md", "docs/commands/diff.md"} <= files


def test_every_input_ships_in_the_repository() -> None:
    # A transcript reading a file made elsewhere (`/tmp/mlp.renamed.hlo`) cannot be
    # reproduced from a clone.
    for transcript in TRANSCRIPTS:
        for word in shlex.split(transcript.command.replace("\\\n", " ")):
            redirection = word.lstrip("0123456789").startswith((">", "<"))  # 2>/dev/null
            if "/" in word and not word.startswith((".", "-")) and not redirection:
                path = word.split(":")[0]
                assert not Path(path).is_absolute(), f"{transcript.place}: {path}"
                assert (ROOT / path).exists(), f"{transcript.place}: {path} is not here"


def test_the_renamed_sample_is_the_mlp_renamed() -> None:
    # docs/commands/diff.md says how samples/diff/mlp.renamed.hlo was made; this keeps
    # it so.
    from conftest import rename_hlo

    text = (ROOT / "samples" / "dumps" / "mlp.before_optimizations.hlo").read_text()
    text = text.replace("maximum(Arg_0.2, max.2)", "minimum(Arg_0.2, max.2)")
    assert (ROOT / "samples" / "diff" / "mlp.renamed.hlo").read_text() == rename_hlo(text)[0]


def shows(transcript: Transcript, code: int, printed: str) -> str | None:
    """Why the transcript does not show what the command printed; None when it does."""
    measured = measures(transcript.command)
    expected = _trimmed(masked_lines(transcript.expected, measured))
    actual = _trimmed(masked_lines(printed.splitlines(), measured))
    # Line by line; failing that, word by word: a longer time (`12.34 s` where the
    # page has `9.81 s`) makes its column wider and the last column narrower, so
    # that column's text, or a paragraph, may break at another word.
    if not matches(expected, actual) and not matches(words(expected), words(actual)):
        diff = "\n".join(
            difflib.unified_diff(expected, actual, transcript.file, "printed", lineterm="")
        )
        return (
            f"{transcript.place}: `{transcript.command}` printed something else "
            f"(masked, - {transcript.file} + printed):\n{diff}"
        )
    if transcript.exit_code is not None and code != transcript.exit_code:
        return f"{transcript.place}: exit code {code}, not {transcript.exit_code}"
    return None


@pytest.mark.slow
@pytest.mark.parametrize("transcripts", COMMANDS, ids=[group[0].id for group in COMMANDS])
def test_documented_command(transcripts: list[Transcript]) -> None:
    command = transcripts[0].command
    for program in piped_to(command):
        if shutil.which(program) is None:
            pytest.skip(f"{program} is not installed")
    code, printed = run_transcript(command)
    failures = [
        failure
        for transcript in transcripts
        if (failure := shows(transcript, code, printed)) is not None
    ]
    if failures:
        pytest.fail("\n\n".join([*failures, f"printed:\n{printed}"]), pytrace=False)


# --------------------------------------------------------------------------- the parts


def test_a_block_gives_each_command_its_output_and_exit_code() -> None:
    text = (
        "Prose.\n\n"
        "```\n"
        "$ hloscope params a.py:f \\\n"
        "    --args a.py:g\n"
        "one\n"
        "\n"
        "$ hloscope params b.py:f\n"
        "two\n"
        "$ echo $?\n"
        "1\n"
        "```\n\n"
        "```\n"
        "not a transcript\n"
        "```\n"
    )
    first, second = file_transcripts(text, "docs/page.md")
    assert first.id == "docs/page.md:4:params"
    assert (first.line, first.command, first.expected, first.exit_code) == (
        4,
        "hloscope params a.py:f \\\n    --args a.py:g",
        ("one", ""),
        None,
    )
    assert (second.line, second.expected, second.exit_code) == (8, ("two",), 1)


def test_the_programs_piped_into_are_found() -> None:
    command = "hloscope fusions a.py:f --json \\\n    | jq '.fusions[] | select(.name)' | head -1"
    assert piped_to(command) == ["jq", "head"]


def test_what_was_measured_is_masked_and_spacing_made_alike() -> None:
    assert masked("timings  load 526 ms · lower 1.21 s  ") == "timings load <time> · lower <time>"
    assert masked("timings  compile 21.38 s (cached)") == "timings compile <time>"
    assert masked("compile.seconds  0.20 s  3.00 s  +2.80 s +1400%  200% or 2s") == (
        "compile.seconds <time> <time> +<time> +<percent> <percent> or 2s"
    )
    # A command that measures: every time, percentage and ratio.
    assert masked("compiling (92% of 5.48 s)", measured=True) == "compiling (<percent> of <time>)"
    # The time around a profile's instructions rounds to nanoseconds when they cover the run.
    assert masked("around them 0 ns (dispatch)", measured=True) == "around them <time> (dispatch)"
    assert masked('"timings": {"load_seconds": [0.69, 0.02], "diff_seconds": 0.002}') == (
        '"timings": {"load_seconds": <seconds>, "diff_seconds": <seconds>}'
    )
    assert masked('".venv/lib/python3.11/site-packages/optax/_src/update.py:42",') == (
        '"<site-packages>/optax/_src/update.py:42",'
    )
    # Sizes and counts are not times.
    assert masked("8.0 MiB at position 5 of 7 · 3 ops", measured=True) == (
        "8.0 MiB at position 5 of 7 · 3 ops"
    )


def test_an_estimate_and_a_size_s_share_are_not_masked() -> None:
    # The compiler's estimate, and XLA's sizes, are one answer for one compile: a page
    # showing other numbers than the tool prints fails.
    estimate = "estimate  1.44 ms a step (estimated, not measured): compute 891 µs · MFU 5.7%"
    assert masked(estimate) == " ".join(estimate.split())
    assert masked("memory.peak_bytes  31.3 MiB  211.0 MiB  +179.8 MiB +575%") == (
        "memory.peak_bytes 31.3 MiB 211.0 MiB +179.8 MiB +575%"
    )
    assert masked('{"seconds": 0.00144, "compute_seconds": 0.000891}') == (
        '{"seconds": 0.00144, "compute_seconds": 0.000891}'
    )


def test_a_pretty_printed_timings_object_is_masked_to_its_end() -> None:
    printed = ['  "timings": {', '    "load_seconds": 1.47,', "  },", '  "seconds": 0.25']
    assert masked_lines(printed, measured=False) == [
        '"timings": {',
        '"load_seconds": <seconds>,',
        "},",
        '"seconds": 0.25',
    ]


@pytest.mark.parametrize(
    ("command", "measured"),
    [
        ("hloscope profile a.py:f --runs 5", True),
        ("hloscope profile a.py 5 --json | jq -c '.functions[] | {function}'", True),
        ("hloscope profile a.py:f --for tpu:v5e:2x4", False),
        ("hloscope compiles a.py --print", True),
        ("hloscope check a.py:f --baseline b.json --runtime", True),
        ("hloscope check a.py:f --baseline b.json --runtime --for tpu:v5e:2x4", False),
        ("hloscope check a.py:f --baseline b.json", False),
        ("hloscope memory a.py:f \\\n    --for tpu:v5e:2x4", False),
        ("hloscope inspect a.py:f --print", False),
    ],
)
def test_which_commands_measure(command: str, measured: bool) -> None:
    assert measures(command) is measured


def test_an_elision_stands_for_any_lines() -> None:
    assert matches(["a", ELISION, "d"], ["a", "b", "c", "d"])
    assert matches(["a", ELISION, "d"], ["a", "d"])
    assert matches([ELISION], [])
    assert not matches(["a", ELISION, "d"], ["a", "b", "c"])
    assert not matches(["a", "b"], ["a", "b", "c"])


def test_words_are_compared_across_line_breaks() -> None:
    shown = ["why", "a b c", "d", ELISION, "end"]
    printed = ["why", "a b", "c d", "more", "end"]
    assert not matches(shown, printed)
    assert matches(words(shown), words(printed))
    assert not matches(words(shown), words(["why", "b a c d", "end"]))


def test_a_command_shown_twice_runs_once_and_is_checked_against_both() -> None:
    page = "```\n$ hloscope diff a b\nsame\n...\n$ echo $?\n0\n```\n"
    readme = "Intro.\n\n```\n$ hloscope diff a b\nsame\n```\n"
    shown = file_transcripts(page, "docs/diff.md") + file_transcripts(readme, "README.md")
    (group,) = by_command(shown)
    assert [t.place for t in group] == ["docs/diff.md:2", "README.md:4"]
    assert [shows(t, 0, "same\nmore\n") for t in group] == [
        None,
        "README.md:4: `hloscope diff a b` printed something else (masked, - README.md + "
        "printed):\n--- README.md\n+++ printed\n@@ -1 +1,2 @@\n same\n+more",
    ]
    assert shows(group[0], 1, "same\n") == "docs/diff.md:2: exit code 1, not 0"

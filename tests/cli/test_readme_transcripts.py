"""Every `$ hloscope ...` transcript of the README, run and compared with what it shows.

A transcript is a `$ hloscope ...` line in a fenced block (with its `\\` continuation
lines and any `| jq ...` after it), the output lines under it, and, when the next
line is `$ echo $?`, the exit code under that. Each is run by bash from the
repository root, through the real tool (the venv's `hloscope` console script, this
checkout's `src` first on the path), stdout and stderr together, 120 columns wide
as in a pipe, and compared line by line with:

- wall times (`526 ms`, `1.21 s`, a JSON `*_seconds` value), percentages and ratios
  masked, since they change from run to run;
- the folder of installed packages (`.venv/lib/python3.11/site-packages/`) masked,
  since it depends on where the venv is and on its Python;
- runs of spaces counted as one, table rules as one width, and trailing spaces
  ignored, so that a column made wider by a longer time does not count; and where
  the lines differ, the words are compared in order regardless of where the lines
  break (a narrower last column wraps its text at another word);
- a line holding only `...` standing for any number of lines (an elision).

markdown-it-py (rich's Markdown parser) finds the fenced blocks and their lines; the
transcript tools that exist do not fit this README: cram and prysk read indented
`.t` files, byexample elides with `<...>` and runs outside pytest, and
pytest-markdown-docs, phmdoctest and mktestdocs run Python blocks only.

Each transcript is its own test, named by its README line. Nothing is written
anywhere but the tool's own temporary folders, so two runs of the suite at once do
not meet.
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

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
PROMPT = "$ "
ELISION = "..."


@dataclasses.dataclass(frozen=True)
class Transcript:
    line: int
    """The README line of the `$ hloscope` prompt (1-based)."""
    command: str
    """The command as written, continuation lines included, without the prompt."""
    expected: tuple[str, ...]
    """The output lines shown under it."""
    exit_code: int | None
    """The code shown by a `$ echo $?` right after it; None when there is none."""

    @property
    def id(self) -> str:
        words = self.command.split()
        return f"README.md:{self.line}:{words[1] if len(words) > 1 else words[0]}"


def _commands(lines: list[str], first_line: int) -> list[tuple[int, str, list[str]]]:
    """A block's `$ ` commands: (README line, command, output lines under it)."""
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


def readme_transcripts(text: str | None = None) -> list[Transcript]:
    """The `$ hloscope` transcripts of the README, in order."""
    text = README.read_text() if text is None else text
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
            transcripts.append(Transcript(line, command, tuple(output), exit_code))
    return transcripts


# --------------------------------------------------------------------------- comparing

_MASKS = [
    # JSON: "load_seconds": 1.17 and "load_seconds": [0.69, 0.02]
    (re.compile(r'("\w*seconds"):\s*(?:\[[^\]]*\]|-?[\d.e+-]+)'), r"\1: <seconds>"),
    (re.compile(r"\b\d+(?:\.\d+)? (?:µs|ms|s)\b"), "<time>"),
    (re.compile(r"\b\d+(?:\.\d+)?%"), "<percent>"),
    (re.compile(r"\b\d+(?:\.\d+)?x\b"), "<ratio>"),
    # Where the venv is (a clone's own .venv, a shared one elsewhere) and its Python.
    (re.compile(r"[\w./-]*/(?:site|dist)-packages/"), "<site-packages>/"),
    # A table's rule is as wide as its columns, which a longer time widens.
    (re.compile(r"─{2,}"), "──"),
    (re.compile(r"\s+"), " "),
]


def masked(line: str) -> str:
    line = line.strip()
    for pattern, replacement in _MASKS:
        line = pattern.sub(replacement, line)
    return line


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


TRANSCRIPTS = readme_transcripts()


def test_the_tool_run_is_this_checkout() -> None:
    assert shutil.which("hloscope", path=_environment()["PATH"]), "no hloscope beside python"
    code, printed = run_transcript('python -c "import hloscope; print(hloscope.__file__)"')
    assert code == 0, printed
    assert Path(printed.strip()).is_relative_to(ROOT / "src"), printed


def test_the_readme_has_transcripts() -> None:
    # A change to the parsing that finds none would pass every case below.
    assert len(TRANSCRIPTS) >= 20
    assert any(t.exit_code is not None for t in TRANSCRIPTS)


def test_every_input_ships_in_the_repository() -> None:
    # A transcript reading a file made elsewhere (`/tmp/mlp.renamed.hlo`) cannot be
    # reproduced from a clone.
    for transcript in TRANSCRIPTS:
        for word in shlex.split(transcript.command.replace("\\\n", " ")):
            if "/" in word and not word.startswith((".", "-")):
                path = word.split(":")[0]
                assert not Path(path).is_absolute(), f"README.md:{transcript.line}: {path}"
                assert (ROOT / path).exists(), f"README.md:{transcript.line}: {path} is not here"


def test_the_renamed_sample_is_the_mlp_renamed() -> None:
    # The README says how samples/diff/mlp.renamed.hlo was made; this keeps it so.
    from conftest import rename_hlo

    text = (ROOT / "samples" / "dumps" / "mlp.before_optimizations.hlo").read_text()
    text = text.replace("maximum(Arg_0.2, max.2)", "minimum(Arg_0.2, max.2)")
    assert (ROOT / "samples" / "diff" / "mlp.renamed.hlo").read_text() == rename_hlo(text)[0]


@pytest.mark.slow
@pytest.mark.parametrize("transcript", TRANSCRIPTS, ids=[t.id for t in TRANSCRIPTS])
def test_readme_transcript(transcript: Transcript) -> None:
    for program in piped_to(transcript.command):
        if shutil.which(program) is None:
            pytest.skip(f"{program} is not installed")
    code, printed = run_transcript(transcript.command)
    expected = _trimmed([masked(line) for line in transcript.expected])
    actual = _trimmed([masked(line) for line in printed.splitlines()])
    # Line by line; failing that, word by word: a longer time (`12.34 s` where the
    # README has `9.81 s`) makes its column wider and the last column narrower, so
    # that column's text, or a paragraph, may break at another word.
    if not matches(expected, actual) and not matches(words(expected), words(actual)):
        diff = "\n".join(difflib.unified_diff(expected, actual, "README", "printed", lineterm=""))
        pytest.fail(
            f"README.md:{transcript.line}: `{transcript.command}` printed something else "
            f"(masked, - README + printed):\n{diff}\n\nprinted:\n{printed}",
            pytrace=False,
        )
    if transcript.exit_code is not None:
        assert code == transcript.exit_code, printed


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
    first, second = readme_transcripts(text)
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


def test_times_percentages_and_spacing_are_masked() -> None:
    assert masked("timings  load 526 ms · lower 1.21 s  ") == "timings load <time> · lower <time>"
    assert masked("compiling (92% of 5.48 s)") == "compiling (<percent> of <time>)"
    assert masked('"timings": {"load_seconds": [0.69, 0.02], "diff_seconds": 0.002}') == (
        '"timings": {"load_seconds": <seconds>, "diff_seconds": <seconds>}'
    )
    assert masked('".venv/lib/python3.11/site-packages/optax/_src/update.py:42",') == (
        '"<site-packages>/optax/_src/update.py:42",'
    )
    # Sizes and counts are not times.
    assert masked("8.0 MiB at position 5 of 7 · 3 ops") == "8.0 MiB at position 5 of 7 · 3 ops"


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

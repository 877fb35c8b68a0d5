"""The documentation's `>>>` examples (the README's and every docs page's: conftest's
`documentation_files`), run as doctests: what they show is what the API does.

A fenced block holding a `>>> ` line is an example. The blocks of one file run in
order, as one session (a later block uses what an earlier one defined), each as a
doctest of its own at its line of the file, so that a failure names the file and line.
"""

from __future__ import annotations

import dataclasses
import doctest
from pathlib import Path
from typing import Any

import pytest
from markdown_it import MarkdownIt

from conftest import ROOT, documentation_files

PROMPT = ">>> "


@dataclasses.dataclass(frozen=True)
class Block:
    file: str
    """The documentation file, relative to the repository root."""
    line: int
    """The file's line of the block's first line (1-based, below its fence)."""
    text: str


def file_blocks(text: str, file: str) -> list[Block]:
    """The fenced blocks of one file's text that hold a `>>> ` line, in order."""
    return [
        # token.map[0] is the fence's own line (0-based); the content starts below it.
        Block(file, token.map[0] + 2, token.content)
        for token in MarkdownIt().parse(text)
        if token.type == "fence"
        and token.map is not None
        and any(line.startswith(PROMPT) for line in token.content.splitlines())
    ]


def documented_sessions() -> dict[str, list[Block]]:
    """Every documentation file's example blocks, by file, for the files that have some."""
    sessions: dict[str, list[Block]] = {}
    for path in documentation_files():
        file = str(path.relative_to(ROOT))
        if blocks := file_blocks(path.read_text(), file):
            sessions[file] = blocks
    return sessions


def doctests(blocks: list[Block], globs: dict[str, Any]) -> list[doctest.DocTest]:
    """The blocks as doctests sharing one namespace; a doctest's lineno is 0-based."""
    parser = doctest.DocTestParser()
    tests = [
        parser.get_doctest(block.text, globs, block.file, str(ROOT / block.file), block.line - 1)
        for block in blocks
    ]
    for test in tests:
        # get_doctest gives each a copy of the namespace; a session shares one.
        test.globs = globs
    return tests


SESSIONS = documented_sessions()


def test_the_documentation_has_examples() -> None:
    # A change to the parsing that finds none would pass every case below.
    assert "docs/python-api.md" in SESSIONS
    examples = doctests(SESSIONS["docs/python-api.md"], {})
    assert len(examples) >= 3, "the Python API page lost its examples"
    assert sum(len(test.examples) for test in examples) >= 20


@pytest.mark.slow
@pytest.mark.parametrize("file", sorted(SESSIONS))
def test_documented_examples_run_as_shown(file: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # The width the examples were printed at; run as a script in a REPL would be.
    monkeypatch.setenv("COLUMNS", "100")
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    output: list[str] = []
    for test in doctests(SESSIONS[file], {"__name__": "__main__"}):
        runner.run(test, out=output.append, clear_globs=False)
    results = runner.summarize(verbose=False)
    assert results.failed == 0, "".join(output)


def test_a_failure_names_the_file_and_line(tmp_path: Path) -> None:
    text = "Prose.\n\n```pycon\n>>> x = 2\n```\n\nMore.\n\n```pycon\n>>> x + 1\n4\n```\n"
    blocks = file_blocks(text, "docs/page.md")
    assert [(block.line, block.text) for block in blocks] == [
        (4, ">>> x = 2\n"),
        (10, ">>> x + 1\n4\n"),
    ]
    runner = doctest.DocTestRunner()
    output: list[str] = []
    for test in doctests(blocks, {}):
        runner.run(test, out=output.append, clear_globs=False)
    # The second block sees the first's x, and its wrong answer is reported at line 10.
    assert runner.summarize(verbose=False).failed == 1
    assert f'File "{ROOT / "docs/page.md"}", line 10' in "".join(output)
    assert "Expected:\n    4\nGot:\n    3" in "".join(output)

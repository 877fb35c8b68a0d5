"""File and line as terminal hyperlinks: on a terminal, each `file:line` of a text
report links to its file (OSC 8, `\\x1b]8;;file:///…`), so a click opens it; in a
pipe, under NO_COLOR and in `--json` there is no escape code at all."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from conftest import ROOT, run_cli
from hloscope.render.text.common import make_console, source_text, sources_text

OSC8 = "\x1b]8;"
PLACEMENT = [
    "placement",
    "samples/sharded_mlp.py:mlp",
    "--args",
    "samples/sharded_mlp.py:example_args",
]
FUSIONS = ["fusions", "samples/sharded_mlp.py:mlp", "--args", "samples/sharded_mlp.py:example_args"]
SAMPLE_URL = (ROOT / "samples" / "sharded_mlp.py").as_uri()


@pytest.fixture
def terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """stdout taken for a terminal, as rich (and so `make_console`) reads the
    environment: TTY_COMPATIBLE=1."""
    monkeypatch.setenv("TTY_COMPATIBLE", "1")
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    monkeypatch.setenv("COLUMNS", "200")


def links(text: str) -> set[str]:
    """The URLs of the OSC 8 links in `text` (`ESC ] 8 ; params ; URL ESC \\`)."""
    found = set()
    for part in text.split(OSC8)[1:]:
        url = part.split(";", 1)[1].split("\x1b\\", 1)[0]
        if url:
            found.add(url)
    return found


@pytest.mark.usefixtures("terminal")
@pytest.mark.parametrize("argv", [PLACEMENT, FUSIONS], ids=["placement", "fusions"])
def test_a_terminal_gets_each_source_line_as_a_link_to_its_file(argv: list[str]) -> None:
    run = run_cli(*argv, "--print")
    assert run.code == 0, run.stderr
    assert OSC8 in run.stdout
    assert SAMPLE_URL in links(run.stdout)
    # Only files that are there are linked, by their absolute path.
    assert all(Path(url.removeprefix("file://")).is_file() for url in links(run.stdout))


@pytest.mark.usefixtures("terminal")
def test_no_color_and_json_write_no_link(monkeypatch: pytest.MonkeyPatch) -> None:
    as_json = run_cli(*PLACEMENT, "--json")
    assert as_json.code == 0 and "\x1b" not in as_json.stdout
    monkeypatch.setenv("NO_COLOR", "1")
    run = run_cli(*PLACEMENT, "--print")
    assert run.code == 0, run.stderr
    # Still a terminal (rich keeps bold under NO_COLOR), but no link.
    assert "\x1b[" in run.stdout
    assert OSC8 not in run.stdout


def test_a_pipe_gets_no_escape_code() -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("TTY_COMPATIBLE", "FORCE_COLOR")}
    env["PYTHONPATH"] = str(ROOT / "src")
    command = [sys.executable, "-m", "hloscope", *PLACEMENT, "--print"]
    run = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, env=env)
    assert run.returncode == 0, run.stderr
    assert "samples/sharded_mlp.py:" in run.stdout
    assert "\x1b" not in run.stdout


def test_the_link_is_the_files_url_and_the_text_is_unchanged() -> None:
    source = "samples/sharded_mlp.py:47"
    forced = Console(file=io.StringIO(), force_terminal=True, width=100)
    forced.print(source_text(source))
    written = forced.file.getvalue()  # type: ignore[attr-defined]
    assert links(written) == {SAMPLE_URL}
    assert source_text(source).plain == source
    # Not a file, or no line: no link, the same text.
    for odd in ("x", "(no source line)", "samples/no_such_file.py:3", "samples/sharded_mlp.py"):
        text = source_text(odd)
        assert text.plain == odd and not any(span.style for span in text.spans)
    listed = sources_text(("samples/sharded_mlp.py:47", "samples/sharded_mlp.py:50", "a.py:1"))
    assert listed.plain == "samples/sharded_mlp.py:47, :50, a.py:1"


def test_a_pipe_console_writes_the_link_as_plain_text() -> None:
    stream = io.StringIO()
    make_console(stream).print(source_text("samples/sharded_mlp.py:47"))
    assert stream.getvalue() == "samples/sharded_mlp.py:47\n"

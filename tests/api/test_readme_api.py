"""The README's "Python API" examples, run as doctests: what it shows is what the API
does."""

from __future__ import annotations

import doctest
import re

import pytest

from conftest import ROOT

SECTION = "## Python API"


def api_examples() -> str:
    """The `pycon` blocks of the README's Python API section, in order."""
    readme = (ROOT / "README.md").read_text()
    start = readme.index(SECTION)
    end = readme.index("\n## ", start + len(SECTION))
    blocks = re.findall(r"```pycon\n(.*?)```", readme[start:end], flags=re.DOTALL)
    assert len(blocks) >= 3, "the Python API section lost its examples"
    return "\n".join(blocks)


@pytest.mark.slow
def test_the_readme_python_api_examples_run_as_shown(monkeypatch):
    # The width the examples were printed at; run as a script in a REPL would be.
    monkeypatch.setenv("COLUMNS", "100")
    parser = doctest.DocTestParser()
    test = parser.get_doctest(
        api_examples(), {"__name__": "__main__"}, "README.md", str(ROOT / "README.md"), 0
    )
    assert len(test.examples) >= 20
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    output: list[str] = []
    runner.run(test, out=output.append)
    results = runner.summarize(verbose=False)
    assert results.failed == 0, "".join(output)

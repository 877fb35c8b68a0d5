"""Rules of the test suite itself, checked on its source.

A fresh clone has no ../shared/corpus beside it: every test that reads the corpus
must carry the `corpus` mark (so `-m "not corpus"` leaves it out) and reach the
corpus through the `corpus` fixture or `require_corpus()`, which skip with the reason
when it is absent.
"""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent
# What reaches the corpus: the fixture (a parameter named `corpus`), the helper that
# skips without it, and the path itself.
CORPUS_NAMES = frozenset({"CORPUS", "require_corpus", "corpus"})


def _names(node: ast.AST) -> set[str]:
    found = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        found |= {a.arg for a in node.args.args}
    return found


def corpus_tests_without_the_mark(folder: Path) -> list[str]:
    missing = []
    for path in sorted(folder.rglob("test_*.py")):
        tree = ast.parse(path.read_text())
        module_marked = any(
            isinstance(node, ast.Assign)
            and any(getattr(t, "id", "") == "pytestmark" for t in node.targets)
            and "corpus" in ast.unparse(node.value)
            for node in tree.body
        )
        functions = [
            node for node in tree.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        ]
        # Module helpers that read the corpus count as reading it (one level deep is
        # how the suite writes them).
        reaching = set(CORPUS_NAMES)
        reaching |= {
            f.name for f in functions if not f.name.startswith("test") and _names(f) & reaching
        }
        for node in functions:
            if not node.name.startswith("test") or not _names(node) & reaching:
                continue
            marked = any("corpus" in ast.unparse(d) for d in node.decorator_list)
            if not (marked or module_marked):
                missing.append(f"{path.relative_to(folder)}::{node.name}")
    return missing


def test_every_test_that_reads_the_corpus_is_marked():
    assert corpus_tests_without_the_mark(TESTS) == []


def test_the_scan_finds_an_unmarked_corpus_test(tmp_path):
    (tmp_path / "test_example.py").write_text(
        "import pytest\n"
        "from conftest import require_corpus\n\n"
        "def load(name):\n"
        "    return require_corpus() / name\n\n"
        "def test_through_a_helper():\n"
        "    load('x.hlo')\n\n"
        "def test_with_the_fixture(corpus):\n"
        "    pass\n\n"
        "@pytest.mark.corpus\n"
        "def test_marked(corpus):\n"
        "    pass\n\n"
        "def test_elsewhere():\n"
        "    pass\n"
    )
    assert corpus_tests_without_the_mark(tmp_path) == [
        "test_example.py::test_through_a_helper",
        "test_example.py::test_with_the_fixture",
    ]

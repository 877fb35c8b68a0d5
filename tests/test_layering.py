"""The house rules of DESIGN.md, checked on the source.

- only `hloscope.sources.lower` imports `jax`;
- only modules of `hloscope.ir` import `jaxlib`;
- analyses and renderers import neither, and no front end but the TUI imports
  `textual`;
- JAX's private APIs that `lower.py` reads still exist.
"""

import ast
from pathlib import Path

import hloscope

PACKAGE = Path(hloscope.__file__).resolve().parent


def imports_of(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def modules_importing(prefix: str) -> set[str]:
    found = set()
    for path in PACKAGE.rglob("*.py"):
        if any(name == prefix or name.startswith(prefix + ".") for name in imports_of(path)):
            found.add(str(path.relative_to(PACKAGE)))
    return found


def test_only_lower_imports_jax():
    assert modules_importing("jax") <= {"sources/lower.py"}


def test_only_the_ir_package_imports_jaxlib():
    assert all(path.startswith("ir/") for path in modules_importing("jaxlib"))


def test_textual_only_in_the_browser():
    assert all(path.startswith("tui/") for path in modules_importing("textual"))


def test_analyses_are_pure():
    for path in (PACKAGE / "analyses").glob("*.py"):
        imported = imports_of(path)
        assert not any(
            name.split(".")[0] in {"jax", "jaxlib", "textual", "rich", "typer", "os", "subprocess"}
            for name in imported
        ), path


def test_jax_private_apis_still_exist():
    from hloscope.sources import lower

    assert lower.private_api_ok() == []

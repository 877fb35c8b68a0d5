"""The house rules of DESIGN.md, checked on the source.

- only modules of `hloscope.sources.jax` import `jax`, and only its `private`
  module imports `jax._src`;
- only `hloscope.ir.context` imports `jaxlib`;
- analyses and renderers import neither, and no front end but the TUI imports
  `textual`;
- JAX's private APIs that `sources/jax/private.py` reads still exist.
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


def test_only_the_jax_package_imports_jax():
    assert all(path.startswith("sources/jax/") for path in modules_importing("jax"))


def test_only_the_private_module_imports_jax_src():
    def reads_jax_src(path: Path) -> bool:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
            else:
                continue
            if any(name == "jax._src" or name.startswith("jax._src.") for name in names):
                return True
        return False

    found = {str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py") if reads_jax_src(p)}
    assert found <= {"sources/jax/private.py"}


def test_only_the_ir_context_imports_jaxlib():
    assert modules_importing("jaxlib") <= {"ir/context.py"}


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
    from hloscope.sources.jax.private import private_api_ok

    assert private_api_ok() == []

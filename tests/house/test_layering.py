"""The house rules, checked on the source.

- only modules of `hloscope.sources.jax` import `jax`, and only its `private`
  module imports `jax._src`;
- only modules of `hloscope.ir` import `jaxlib`;
- analyses and renderers import neither, and no front end but the TUI imports
  `textual`;
- no import cycle among hloscope's modules, lazy imports and imports for type
  checking included;
- JAX's private APIs that `sources/jax/private.py` reads still exist.

`make imports` checks the third-party rules as well, with import-linter's contracts
in pyproject.toml (which also follow an import through another hloscope module);
import-linter knows a package by its top-level name only, so `jax._src` is checked
here alone.
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


def test_only_the_ir_package_imports_jaxlib():
    assert all(path.startswith("ir/") for path in modules_importing("jaxlib"))


def test_textual_only_in_the_browser():
    assert all(path.startswith("tui/") for path in modules_importing("textual"))


def test_analyses_are_pure():
    for path in (PACKAGE / "analyses").rglob("*.py"):
        imported = imports_of(path)
        assert not any(
            name.split(".")[0] in {"jax", "jaxlib", "textual", "rich", "typer", "os", "subprocess"}
            for name in imported
        ), path


def test_jax_private_apis_still_exist():
    from hloscope.sources.jax.private import private_api_ok

    assert private_api_ok() == []


def test_jits_compiler_options_are_still_read():
    # What --for compiles with (`_compiler_options_kvs`): as given, a bool a bool.
    import jax
    import numpy as np

    from hloscope.sources.jax.private import private_compile_devices

    jitted = jax.jit(lambda a: a, compiler_options={"xla_embed_ir_in_executable": True})
    options = private_compile_devices(jitted.lower(np.float32(1)))[1]
    assert options == (("xla_embed_ir_in_executable", True),)


def import_graph() -> dict[str, set[str]]:
    """hloscope's modules and the hloscope modules each imports: at the top, inside
    functions (lazy imports) and for type checking alike."""
    modules = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path

    def known(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        imported: set[str | None] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                imported.update(known(a.name) for a in node.names if a.name.startswith("hloscope"))
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1])
                    base += f".{node.module}" if node.module else ""
                if base.split(".")[0] == "hloscope":
                    for alias in node.names:
                        full = f"{base}.{alias.name}"
                        imported.add(full if full in modules else known(base))
        graph[name] = {m for m in imported if m is not None and m != name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in graph[node]:
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_import_cycles():
    graph = import_graph()
    # the graph sees lazy imports
    assert "hloscope.reports.entry" in graph["hloscope.render.display"]
    assert cycles(graph) == []


def test_the_cycle_check_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_module_is_over_900_lines():
    long = {
        str(path.relative_to(PACKAGE)): count
        for path in PACKAGE.rglob("*.py")
        if (count := len(path.read_text().splitlines())) > 900
    }
    assert long == {}

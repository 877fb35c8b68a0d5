"""Safety: loading a dump never executes code, and hloscope writes nothing next to
the user's files and leaves no temporary files behind.

- The source is scanned for ways to run code hidden in data: pickle, marshal,
  shelve, eval, exec, compile, `__import__`, a shell. Only `sources/entrypoint.py`
  imports modules by name or path (the user's entrypoint, on purpose), and the
  reports' registry hloscope's own renderers and tabs, by constant names.
- Dumps are loaded under an audit hook (`sys.addaudithook`) with a marker planted
  in the module's names: no code compiled, executed or unpickled holds it, no file
  is opened for writing next to the dump, and the only processes started are
  hloscope's own: the IR reader, and the module runner that compiles a dump.
- Entrypoints and dumps run with `TMPDIR` pointing at an empty folder, in a copy of
  the user's folder: afterwards both are as they were (no `__pycache__`).
"""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import hloscope
from conftest import DUMPS, ROOT

PACKAGE = Path(hloscope.__file__).resolve().parent

UNSAFE_MODULES = {"pickle", "cPickle", "dill", "cloudpickle", "marshal", "shelve", "joblib"}
UNSAFE_BUILTINS = {"eval", "exec", "compile", "__import__", "execfile"}
# Importing by name or path is how an entrypoint's code runs; only there, and in the
# reports' registry, which imports hloscope's own renderers and tabs by the constant
# names its entries hold (nothing outside hloscope; tests/house/test_registry.py); and
# the stderr guard, which runs the import of the package named `jax` (no other) with
# its native lines captured (`native_stderr.quiet_jax_import`).
IMPORTERS = {"sources/entrypoint.py", "reports/entry.py", "native_stderr.py"}


def calls_in(tree: ast.AST) -> list[tuple[str, ast.Call]]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name):
                found.append((func.id, node))
            elif isinstance(func, ast.Attribute):
                base = func.value.id if isinstance(func.value, ast.Name) else "?"
                found.append((f"{base}.{func.attr}", node))
    return found


def test_no_code_runs_from_data():
    problems = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = str(path.relative_to(PACKAGE))
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = {node.module.split(".")[0]}
            else:
                continue
            if names & UNSAFE_MODULES:
                problems.append(f"{relative}:{node.lineno}: imports {names & UNSAFE_MODULES}")
        for name, call in calls_in(tree):
            short = name.rsplit(".", 1)[-1]
            where = f"{relative}:{call.lineno}"
            if name in UNSAFE_BUILTINS or name.startswith("builtins."):
                problems.append(f"{where}: calls {name}")
            if name in {"os.system", "os.popen"} or short.startswith(("execv", "spawn")):
                problems.append(f"{where}: calls {name}")
            if any(k.arg == "shell" for k in call.keywords):
                problems.append(f"{where}: starts a shell")
            if any(k.arg == "allow_pickle" for k in call.keywords):
                problems.append(f"{where}: allows pickle")
            if short in {"import_module", "spec_from_file_location", "exec_module"} and (
                relative not in IMPORTERS
            ):
                problems.append(f"{where}: imports code ({name}) outside {IMPORTERS}")
    assert not problems, "\n".join(problems)


def test_the_scan_finds_what_it_looks_for():
    # The scan above would see each of these.
    tree = ast.parse(
        "import pickle\nfrom marshal import loads\neval(x)\nexec(y)\n"
        "subprocess.run(c, shell=True)\nnp.load(f, allow_pickle=True)\n"
    )
    names = {name for name, _ in calls_in(tree)}
    assert {"eval", "exec", "subprocess.run", "np.load"} <= names
    imported = {n.names[0].name for n in ast.walk(tree) if isinstance(n, ast.Import)}
    assert imported == {"pickle"}


# --------------------------------------------------------------------------- audit

AUDITED = r"""
import json, os, sys

marker, folder, log, commands = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
events = []

def hook(event, args):
    if event in ("compile", "exec", "pickle.find_class", "marshal.loads", "marshal.load"):
        text = repr(args)[:100000]
        if marker in text:
            events.append([event, text[:300]])
    elif event == "open":
        path, mode = str(args[0]), args[1]
        writing = isinstance(mode, str) and any(c in mode for c in "wax+")
        if isinstance(args[2], int):
            writing = writing or bool(args[2] & (os.O_WRONLY | os.O_RDWR | os.O_CREAT))
        if writing and os.path.realpath(path).startswith(folder):
            events.append([event, path])
    elif event == "subprocess.Popen":
        argv = [str(a) for a in args[1]]
        # hloscope's own children: the IR reader, the module runner (compiling a dump).
        if argv[1:] not in (
            ["-m", "hloscope.ir.reader_child"],
            ["-m", "hloscope.sources.jax.module_run"],
        ):
            events.append([event, argv])
    elif event in ("os.system", "os.exec", "os.posix_spawn"):
        events.append([event, repr(args)[:300]])

sys.addaudithook(hook)
from hloscope.cli import main

results = []
for command in commands:
    try:
        main(command)
    except SystemExit as exc:
        results.append({"command": command, "code": exc.code, "events": events[:]})
    events.clear()
with open(log, "w") as out:
    json.dump(results, out)
"""


def marked_dumps(folder: Path, marker: str) -> list[Path]:
    """The sample dumps, text ones with the marker in a name (binary ones as they are:
    what they hold is checked by the open and process events)."""
    paths = []
    for source in sorted(DUMPS.iterdir()):
        data = source.read_bytes()
        if source.suffix in (".mlir", ".hlo"):
            text = data.decode()
            if source.suffix == ".mlir":
                text = text.replace("@main", f"@main_{marker}").replace(
                    "func.call @main", f"func.call @main_{marker}"
                )
            else:
                text = text.replace("ENTRY %main", f"ENTRY %main_{marker}").replace(
                    "ENTRY main", f"ENTRY main_{marker}"
                )
            assert marker in text, source
            data = text.encode()
        path = folder / source.name
        path.write_bytes(data)
        paths.append(path)
    return paths


@pytest.mark.slow
def test_loading_dumps_runs_no_code_from_them(tmp_path):
    marker = "hloscopeMarker7f3a"
    folder = tmp_path / "dumps"
    folder.mkdir()
    paths = marked_dumps(folder, marker)
    script = tmp_path / "audited.py"
    script.write_text(AUDITED)
    log = tmp_path / "log.json"
    commands = [["inspect", str(path), "--json"] for path in paths]
    commands += [["diff", str(path), str(path), "--json"] for path in paths]
    commands += [["fusions", str(folder / "mlp.before_optimizations.hlo"), "--compile", "--json"]]
    subprocess.run(
        [
            sys.executable,
            str(script),
            marker,
            str(folder.resolve()),
            str(log),
            json.dumps(commands),
        ],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
        capture_output=True,
        timeout=600,
        check=False,
    )
    results = json.loads(log.read_text())
    assert len(results) == len(commands)
    failures = [r for r in results if r["code"] != 0 or r["events"]]
    assert not failures, failures
    assert sorted(p.name for p in folder.iterdir()) == sorted(p.name for p in paths)


# --------------------------------------------------------------------------- files


USER_MODULE = """
import jax
import helper


@jax.jit
def f(x):
    return helper.scale(x) + 1


def args():
    return (jax.ShapeDtypeStruct((4, 4), "float32"),)
"""
HELPER = """
import jax.numpy as jnp


def scale(x):
    return jnp.tanh(x) * 2
"""


def snapshot(folder: Path) -> dict[str, int]:
    return {
        str(p.relative_to(folder)): p.stat().st_size if p.is_file() else -1
        for p in sorted(folder.rglob("*"))
    }


@pytest.mark.slow
def test_nothing_is_written_next_to_the_users_files_and_no_temporary_file_is_left(tmp_path):
    user = tmp_path / "work"
    (user / "pkg").mkdir(parents=True)
    (user / "model.py").write_text(USER_MODULE)
    (user / "helper.py").write_text(HELPER)
    (user / "pkg" / "__init__.py").write_text("")
    (user / "pkg" / "mod.py").write_text(
        USER_MODULE.replace("import helper", "from . import helper")
    )
    (user / "pkg" / "helper.py").write_text(HELPER)
    for name in ("mlp.mlirbc", "mlp.before_optimizations.hlo", "mlp.exported.bin"):
        shutil.copy(DUMPS / name, user / name)
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    before = snapshot(user)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update(PYTHONPATH=str(ROOT / "src"), TMPDIR=str(temporary))
    commands = [
        ["inspect", "model.py:f", "--args", "model.py:args", "--json"],
        ["fusions", "pkg.mod:f", "--args", "pkg.mod:args", "--json"],
        ["aot-check", "model.py:f", "--args", "model.py:args", "--json"],
        ["inspect", "mlp.mlirbc", "--compile", "--json"],
        ["diff", "mlp.before_optimizations.hlo", "mlp.exported.bin", "--json"],
        # XLA dumps its buffer assignment into a temporary folder, removed after.
        ["memory", "model.py:f", "--args", "model.py:args", "--json"],
    ]
    for command in commands:
        run = subprocess.run(
            [sys.executable, "-m", "hloscope", *command],
            cwd=user,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert run.returncode in (0, 1), (command, run.stderr)
        assert snapshot(user) == before, command
        assert list(temporary.iterdir()) == [], command

"""Recognising dumps by content, and dump folders written by XLA and JAX for real."""

import os
import subprocess
import sys

import pytest

from conftest import DUMPS, ROOT
from hloscope.errors import HloscopeError
from hloscope.sources import dumps


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("mlp.stablehlo.mlir", dumps.MLIR_TEXT),
        ("mlp.mlirbc", dumps.MLIR_BYTECODE),
        ("mlp.vhlo.mlirbc", dumps.MLIR_BYTECODE),
        ("mlp.before_optimizations.hlo", dumps.HLO_TEXT),
        ("mlp.after_optimizations.hlo", dumps.HLO_TEXT),
        ("mlp.after_optimizations.hlo.pb", dumps.HLO_PROTO),
        ("mlp.exported.bin", dumps.JAX_EXPORTED),
    ],
)
def test_sniffing_by_content(name, expected, tmp_path):
    # The extension does not matter: copy each dump to a file named `module`.
    copy = tmp_path / "module"
    copy.write_bytes((DUMPS / name).read_bytes())
    assert dumps.sniff_bytes(copy.read_bytes()) == expected


def test_headerless_hlo_and_commented_mlir():
    assert (
        dumps.sniff_text("// comment\nfusion {\n  p0 = s8[4] parameter(0)\n}\n") == dumps.HLO_TEXT
    )
    assert dumps.sniff_text("// RUN: opt %s\n\nfunc.func @f() {\n  return\n}\n") == dumps.MLIR_TEXT
    assert dumps.sniff_text("hello world") == dumps.UNKNOWN_TEXT
    assert dumps.sniff_bytes(bytes(range(256))) == dumps.UNKNOWN_BINARY


def test_empty_and_unreadable_files(tmp_path):
    empty = tmp_path / "empty.mlir"
    empty.write_text("  \n")
    with pytest.raises(HloscopeError, match="empty"):
        dumps.read_file(empty)
    with pytest.raises(HloscopeError, match="cannot read"):
        dumps.read_file(tmp_path / "missing.mlir")


DUMP_SCRIPT = """
import jax, jax.numpy as jnp
@jax.jit
def step(x, y):
    return jnp.tanh(x @ y).sum()
@jax.jit
def tiny(x):
    return x + 1
step(jnp.ones((8, 8)), jnp.ones((8, 8)))
tiny(jnp.ones(3))
"""


def dump_with(tmp_path, env_extra):
    script = tmp_path / "make.py"
    script.write_text(DUMP_SCRIPT)
    env = {**os.environ, **env_extra}
    subprocess.run([sys.executable, str(script)], check=True, env=env, cwd=tmp_path)


@pytest.fixture(scope="module")
def xla_dump(tmp_path_factory):
    folder = tmp_path_factory.mktemp("xla_dump")
    dump_with(
        folder.parent,
        {"XLA_FLAGS": f"--xla_dump_to={folder} --xla_dump_hlo_as_text --xla_dump_hlo_as_proto"},
    )
    return folder


@pytest.fixture(scope="module")
def jax_dump(tmp_path_factory):
    folder = tmp_path_factory.mktemp("jax_dump")
    dump_with(folder.parent, {"JAX_DUMP_IR_TO": str(folder)})
    return folder


def test_xla_dump_folder(xla_dump):
    folder = dumps.list_folder(xla_dump)
    assert folder.kind == "xla-dump"
    step = next(m for m in folder.modules if m.name == "jit_step")
    assert step.before is not None and step.before.name.endswith("before_optimizations.txt")
    assert step.after is not None and "after_optimizations" in step.after.name
    picked, note = folder.pick(None)
    assert picked.name == "jit_step"
    assert note and "--module" in note
    assert folder.pick("jit_tiny")[0].name == "jit_tiny"
    assert folder.pick(str(step.number))[0] == step
    with pytest.raises(HloscopeError, match="no module named"):
        folder.pick("nothing_like_it")


def test_jax_dump_folder(jax_dump):
    folder = dumps.list_folder(jax_dump)
    assert folder.kind == "jax-dump"
    assert {m.name for m in folder.modules} >= {"jit_step", "jit_tiny"}


def test_inspect_xla_dump_folder_before_and_after(cli, xla_dump):
    lowered = cli("inspect", str(xla_dump), "--module", "jit_step", "--json")
    assert lowered.code == 0, lowered.stderr
    doc = lowered.json()
    assert doc["source"]["stage"] == "lowered"
    assert doc["source"]["module"].endswith("jit_step")
    assert "stablehlo.dot" in doc["op_counts"] or "stablehlo.dot_general" in doc["op_counts"]
    optimized = cli("inspect", str(xla_dump), "--module", "jit_step", "--compile", "--json")
    assert optimized.code == 0, optimized.stderr
    assert optimized.json()["source"]["stage"] == "optimized"
    assert "mhlo.fusion" in optimized.json()["op_counts"]


def test_inspect_jax_dump_folder(cli, jax_dump):
    run = cli("inspect", str(jax_dump), "--module", "jit_step", "--json")
    assert run.code == 0, run.stderr
    assert run.json()["source"]["format"] == "mlir-text"


def test_folder_without_modules(cli, tmp_path):
    (tmp_path / "notes.md").write_text("nothing here")
    run = cli("inspect", str(tmp_path))
    assert run.code == 2
    assert "holds no modules" in run.stderr


def test_repository_is_not_written(cli):
    before = sorted(p for p in (ROOT / "samples").rglob("*") if "__pycache__" not in p.parts)
    assert cli("inspect", str(DUMPS / "mlp.after_optimizations.hlo"), "--json").code == 0
    after = sorted(p for p in (ROOT / "samples").rglob("*") if "__pycache__" not in p.parts)
    assert before == after

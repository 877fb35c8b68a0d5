"""XLA debug options reach the compilation done here, and only it: the views that read
XLA's dump files (buffer assignment, per-pass modules) compile with `xla_dump_to`."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import DUMPS
from hloscope.errors import HloscopeError
from hloscope.sources import loader


def _dump_options(folder: Path) -> loader.LoadOptions:
    return loader.LoadOptions(
        args_factory="samples/nested_jits.py:example_args",
        optimized=True,
        compiler_options=(("xla_dump_to", str(folder)),),
    )


def test_an_entrypoint_compiles_with_the_options(tmp_path: Path) -> None:
    loaded = loader.load("samples/nested_jits.py:mlp", _dump_options(tmp_path))
    assert loaded.compilation is not None
    names = [p.name for p in tmp_path.iterdir()]
    assert any(n.endswith("after_optimizations.txt") for n in names), names


def test_a_dump_compiles_with_the_options(tmp_path: Path) -> None:
    options = loader.LoadOptions(optimized=True, compiler_options=(("xla_dump_to", str(tmp_path)),))
    loader.load(str(DUMPS / "mlp.stablehlo.mlir"), options)
    names = [p.name for p in tmp_path.iterdir()]
    assert any(n.endswith("after_optimizations.txt") for n in names), names


def test_a_lowered_object_compiles_with_the_options(tmp_path: Path) -> None:
    options = loader.LoadOptions(optimized=True, compiler_options=(("xla_dump_to", str(tmp_path)),))
    loader.load("tests/fixtures/entrypoints.py:make_lowered", options)
    assert any(p.name.endswith("after_optimizations.txt") for p in tmp_path.iterdir())


def test_a_compiled_object_cannot_be_compiled_again(tmp_path: Path) -> None:
    options = loader.LoadOptions(optimized=True, compiler_options=(("xla_dump_to", str(tmp_path)),))
    with pytest.raises(HloscopeError, match="already compiled"):
        loader.load("tests/fixtures/entrypoints.py:make_compiled", options)

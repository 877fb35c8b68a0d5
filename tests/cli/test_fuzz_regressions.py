"""Inputs the fuzzers of `tests/cli/test_fuzz.py` found, kept as regression tests.

Each crashed or failed hloscope before its guard: read in hloscope's process, the
file killed it (an abort from jaxlib's bindings) or ended in an internal error. Each
must now end with exit 2 and one line on stderr. They run in a subprocess, so that a
regression is observed rather than suffered.
"""

import os
import subprocess
import sys

import pytest

from conftest import FIXTURES, ROOT

MALFORMED = FIXTURES / "malformed"
NOT_UTF8 = "cannot read this module: a name or string in it is not valid UTF-8"
NAME_CRASH = "jaxlib's MLIR bindings crashed (SIGABRT) reading the parsed module"


def hloscope(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hloscope", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
        timeout=300,
        check=False,
    )


@pytest.mark.parametrize(
    ("name", "message"),
    [
        # A mutated bytecode dump: a function's argument attribute whose name is not
        # valid UTF-8. MLIR's bytecode reader accepts it; reading the name aborted.
        ("bytecode_utf8_abort.mlirbc", NAME_CRASH),
        # A mutated portable artifact with an attribute name that is not valid UTF-8:
        # an internal error (nanobind's "conversion error").
        ("vhlo_utf8_name.mlirbc", NOT_UTF8),
        # The same in MLIR text, spelled with string escapes.
        ("text_utf8_argument_attribute.mlir", NAME_CRASH),
        ("text_utf8_attribute_name.mlir", NOT_UTF8),
    ],
)
def test_names_that_are_not_utf8(name, message):
    run = hloscope("inspect", str(MALFORMED / name), "--json")
    assert run.returncode == 2, run.stderr
    assert run.stdout == ""
    assert run.stderr.count("\n") == 1
    assert message in run.stderr


def test_text_with_high_byte_escapes_that_is_fine_loads(cli, tmp_path):
    # Read by the reader process first, then loaded as any other text.
    path = tmp_path / "escaped.mlir"
    path.write_text(
        'func.func @main(%arg0: tensor<4xf32> {jax.result_info = "r\\C3\\A9sultat"}) '
        "-> tensor<4xf32> {\n  return %arg0 : tensor<4xf32>\n}\n"
    )
    run = cli("params", str(path), "--json")
    assert run.code == 0, run.stderr
    assert [p["path"] for p in run.json()["parameters"]] == ["%arg0"]

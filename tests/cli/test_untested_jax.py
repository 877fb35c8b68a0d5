"""On a JAX release hloscope is not tested with (pyproject.toml sets a lower bound only,
so that installing hloscope never replaces a project's newer JAX): it says so once, in
`--version` and the JSON `environment`, and a view whose JAX internals moved fails in
one line naming the release, never a traceback or an "internal error"."""

from __future__ import annotations

import tomllib

import jax
import pytest

from conftest import ROOT
from hloscope import environment, jax_releases

NEWER = "0.12.0"


@pytest.fixture
def newer_jax(monkeypatch):
    """The installed JAX reads as release 0.12.0 to hloscope: its metadata and its
    `__version__`."""
    real = environment.package_version

    def version(name: str) -> str | None:
        return NEWER if name == "jax" else real(name)

    monkeypatch.setattr(environment, "package_version", version)
    monkeypatch.setattr(jax, "__version__", NEWER)


def test_the_dependencies_have_a_lower_bound_only():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    requirements = [
        *project["dependencies"],
        *project["optional-dependencies"]["tpu"],
        *project["optional-dependencies"]["cuda12"],
    ]
    jax_ones = [r for r in requirements if r.startswith(("jax", "jaxlib"))]
    assert jax_ones
    for requirement in jax_ones:
        assert "<" not in requirement, requirement


@pytest.mark.parametrize(
    ("version", "tested"),
    [("0.8.3", True), ("0.9.2", True), ("0.10.2", True), (NEWER, False), ("0.7.2", False)],
)
def test_which_releases_are_tested(version, tested):
    assert jax_releases.jax_release_tested(version) is tested


def test_the_installed_release_is_tested():
    assert environment.environment().jax_tested is True
    assert jax_releases.jax_release_tested(jax.__version__)


def test_version_says_the_release_is_untested(cli, newer_jax):
    run = cli("--version")
    assert run.code == 0, run.stderr
    (line,) = [line for line in run.stdout.splitlines() if line.startswith("jax ")]
    assert line.startswith(f"jax {NEWER} (untested: hloscope is tested with JAX 0.8 to 0.10")


def test_the_json_environment_says_the_release_is_untested(cli, newer_jax):
    run = cli(
        "params",
        "samples/nested_jits.py:mlp",
        "--args",
        "samples/nested_jits.py:example_args",
        "--json",
    )
    assert run.code == 0, run.stderr
    assert run.json()["environment"]["jax"] == NEWER
    assert run.json()["environment"]["jax_tested"] is False


@pytest.fixture
def lowering_moved(monkeypatch):
    """JAX keeps a lowering's compile arguments under another name, as a newer release
    might: hloscope reads `Lowered._lowering.compile_args` (sources/jax/private.py), which
    JAX itself reads only when it compiles (params does not)."""
    from jax._src.interpreters import pxla

    def moved(self):
        raise AttributeError("'MeshComputation' object has no attribute 'compile_args'")

    def kept_elsewhere(self, value):
        self.__dict__["compile_args_renamed"] = value

    monkeypatch.setattr(
        pxla.MeshComputation, "compile_args", property(moved, kept_elsewhere), raising=False
    )


ARGS = ("params", "samples/nested_jits.py:mlp", "--args", "samples/nested_jits.py:example_args")


def test_moved_internals_on_an_untested_release_are_one_line_naming_it(
    cli, newer_jax, lowering_moved
):
    run = cli(*ARGS)
    assert run.code == 2
    lines = run.stderr.splitlines()
    assert len(lines) == 1, run.stderr
    assert "internal error" not in lines[0]
    assert f"jax {NEWER}" in lines[0]
    assert "tested with JAX 0.8 to 0.10" in lines[0]
    assert "compile_args" in lines[0]


def test_moved_internals_on_a_tested_release_are_hloscopes_bug(cli, lowering_moved):
    run = cli(*ARGS)
    assert run.code == 2
    assert "internal error" in run.stderr

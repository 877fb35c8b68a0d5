"""A flag XLA does not know in `XLA_FLAGS`, or libtpu in `LIBTPU_INIT_ARGS`, is one
line on stderr naming it, exit 2, with XLA's (libtpu's) own words: what Python alone
prints when JAX starts its backends (XLA aborts the process there). hloscope exited 1
with no word (issue 60): XLA aborted while file descriptor 2 was captured. Flags
they know are no reason to refuse."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

import pytest

from conftest import ROOT

ENTRYPOINT = ["params", "samples/params.py:loss", "--args", "samples/params.py:example_args"]
HLO_DUMP = ["inspect", "samples/dumps/mlp.after_optimizations.hlo", "--json"]
UNKNOWN = "--xla_bogus_flag=1"


def _run(argv: list[str], **flags: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "LIBTPU_INIT_ARGS")}
    return subprocess.run(
        [sys.executable, *argv],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**env, "PYTHONPATH": str(ROOT / "src"), **flags},
        stdin=subprocess.DEVNULL,
        timeout=600,
        check=False,
    )


def _jax_says(**flags: str) -> str:
    """The last line Python alone prints starting JAX's backends with `flags`, without
    the log prefix (`F1129 06:12:28.351460 5234 parse_flags_from_env.cc:234] `)."""
    run = _run(["-c", "import jax; jax.devices()"], **flags)
    assert run.returncode != 0, run.stderr[-2000:]
    last = run.stderr.strip().splitlines()[-1]
    return last.partition("] ")[2] or last


def _one_line(run: subprocess.CompletedProcess[str]) -> str:
    assert run.returncode == 2, (run.returncode, run.stdout[-1000:], run.stderr[-2000:])
    assert run.stdout == ""
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("hloscope: error: "), run.stderr
    assert "internal error" not in lines[0] and "Traceback" not in run.stderr
    return lines[0]


def test_an_unknown_flag_in_xla_flags_is_one_line_in_xlas_words() -> None:
    xla = _jax_says(XLA_FLAGS=UNKNOWN)
    assert UNKNOWN in xla, xla
    line = _one_line(_run(["-m", "hloscope", *ENTRYPOINT], XLA_FLAGS=UNKNOWN))
    assert line.startswith(f"hloscope: error: XLA_FLAGS={UNKNOWN}: ") and line.endswith(xla)


@pytest.mark.slow
@pytest.mark.parametrize(
    "argv",
    [HLO_DUMP, ["--version"], ["memory", *ENTRYPOINT[1:]]],
    ids=["dump", "version", "memory"],
)
def test_every_command_that_starts_xla_refuses_it(argv: list[str]) -> None:
    line = _one_line(_run(["-m", "hloscope", *argv], XLA_FLAGS=UNKNOWN))
    assert line.endswith(f"Unknown flag in XLA_FLAGS: {UNKNOWN}"), line


@pytest.mark.slow
def test_an_unknown_flag_the_program_sets_when_imported_is_one_line() -> None:
    target = "tests/fixtures/sets_unknown_xla_flag.py:scale"
    line = _one_line(_run(["-m", "hloscope", "params", target, "--arg", "f32[4]"]))
    assert line.endswith(f"Unknown flag in XLA_FLAGS: {UNKNOWN}"), line


@pytest.mark.slow
def test_an_unknown_flag_in_libtpu_init_args_is_one_line_in_libtpus_words() -> None:
    if importlib.util.find_spec("libtpu") is None:
        pytest.skip("libtpu is not installed: nothing reads LIBTPU_INIT_ARGS")
    libtpu = _jax_says(LIBTPU_INIT_ARGS=UNKNOWN)
    assert "xla_bogus_flag" in libtpu, libtpu
    for argv in (ENTRYPOINT, [*ENTRYPOINT, "--for", "tpu:v5e:2x4"]):
        line = _one_line(_run(["-m", "hloscope", *argv], LIBTPU_INIT_ARGS=UNKNOWN))
        assert line.startswith(f"hloscope: error: LIBTPU_INIT_ARGS={UNKNOWN}: "), line
        assert line.endswith(libtpu), line


@pytest.mark.slow
def test_flags_they_know_are_no_reason_to_refuse() -> None:
    flags = {"XLA_FLAGS": "--xla_force_host_platform_device_count=2"}
    if importlib.util.find_spec("libtpu") is not None:
        flags["LIBTPU_INIT_ARGS"] = "--xla_tpu_enable_latency_hiding_scheduler=true"
    for argv in (ENTRYPOINT, HLO_DUMP):
        run = _run(["-m", "hloscope", *argv], **flags)
        assert run.returncode == 0 and run.stderr == "", run.stderr[-2000:]


def test_a_check_after_jaxs_backends_started_warns_nothing(monkeypatch) -> None:
    # JAX warns on a fork once its backends started (the in-process commands of the
    # tests, a second command of `check`): the copy only reads the flags, and exits.
    import warnings

    import jax

    from hloscope.ir.xla_flags import xla_flags_checked

    jax.devices()
    monkeypatch.setenv(
        "XLA_FLAGS", os.environ.get("XLA_FLAGS", "") + " --xla_dump_disable_metadata"
    )
    with warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always")
        xla_flags_checked()
    assert [str(w.message) for w in warned] == []

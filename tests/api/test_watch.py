"""`hloscope.watch()` as a REPL, a notebook or a training loop uses it."""

from __future__ import annotations

import code
import contextlib
import io
import json

import pytest

import hloscope


def test_watch_in_a_repl_session() -> None:
    console = code.InteractiveConsole(locals={})
    lines = [
        "import hloscope, jax, jax.numpy as jnp",
        "f = jax.jit(lambda x: jnp.cos(x) + 1)",
        "with hloscope.watch() as w:",
        "    _ = f(jnp.ones(3))",
        "    _ = f(jnp.ones(4))",
        "",
        "w",
    ]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        for line in lines:
            console.push(line)
    shown = out.getvalue()
    assert "Timeline" in shown
    assert "x: f32[3] → f32[4]" in shown
    w = console.locals["w"]
    doc = w.to_json()
    assert doc["command"] == "compiles" and doc["target"] == "hloscope.watch()"
    assert doc["summary"]["compiles"] == 2 == doc["functions"][0]["compiles"]
    assert json.loads(json.dumps(doc)) == doc
    assert "<pre" in w._repr_html_()
    assert str(w) == repr(w)


def test_watch_keeps_what_was_recorded_when_the_block_raises() -> None:
    import jax
    import jax.numpy as jnp

    g = jax.jit(lambda x: x * 7)
    with pytest.raises(ZeroDivisionError), hloscope.watch() as w:
        g(jnp.ones(2))
        1 / 0  # noqa: B018
    report = w.report
    assert report.analysis.summary.compiles == 1
    assert report.error is not None and report.error.startswith("ZeroDivisionError")
    assert jax.config.jax_explain_cache_misses is False


def test_watch_outside_a_with_block_says_how() -> None:
    with pytest.raises(hloscope.HloscopeError, match=r"with hloscope\.watch"):
        _ = hloscope.watch().report

"""`Inspection.browse()`: the browser on a module already loaded in Python, under
`App.run_test()`, refused where there is no terminal, and in a real terminal at a
pdb prompt (tmux)."""

from __future__ import annotations

import asyncio
import os
import shlex
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Callable

import jax
import jax.numpy as jnp
import pytest
from textual.widgets import TabbedContent

import hloscope
from conftest import DUMPS, ROOT
from hloscope import HloscopeError
from hloscope.tui import app as tui_app
from hloscope.tui.app import HloscopeApp
from tui_support import SIZE, Terminal, loaded, status, visible_ir


def drive(steps: Callable[[HloscopeApp, object], object], seen: list[HloscopeApp]):
    """A stand-in for the terminal: runs the app under `run_test()` and `steps`
    (which must quit it) with a pilot, as a person at a terminal would."""

    def run_headless(app: HloscopeApp) -> None:
        async def session() -> None:
            async with app.run_test(size=SIZE) as pilot:
                await loaded(app, pilot)
                await steps(app, pilot)  # type: ignore[misc]

        seen.append(app)
        asyncio.run(session())

    return run_headless


def test_browse_runs_on_the_loaded_module_and_returns(monkeypatch):
    insp = hloscope.inspect(jax.jit(lambda x: jnp.tanh(x) * 2), jnp.ones((4, 8)))
    shown: dict[str, object] = {}

    async def steps(app: HloscopeApp, pilot) -> None:
        shown["jobs"] = list(app.jobs)
        shown["steps"] = list(app.steps)
        shown["tab"] = app.query_one(TabbedContent).active
        shown["ir"] = visible_ir(app)
        shown["status"] = status(app)
        await pilot.press("2")
        await pilot.pause()
        shown["after_2"] = app.query_one(TabbedContent).active
        await pilot.press("q")

    apps: list[HloscopeApp] = []
    monkeypatch.setattr(tui_app, "run_in_terminal", drive(steps, apps))
    assert insp.browse() is None
    app = apps[0]
    assert app.session is not None and app.session.loaded is insp.loaded
    assert app.return_code == 0
    # Nothing was loaded again: the app prepared the module it was handed.
    assert not any("loading" in step for step in shown["steps"])  # type: ignore[attr-defined]
    assert shown["tab"] == "tab-ir"
    assert any("stablehlo.tanh" in row for row in shown["ir"])  # type: ignore[attr-defined]
    assert "jit__lambda · lowered" in str(shown["status"])
    assert shown["after_2"] == "tab-overview"


def test_browse_opens_on_the_tab_asked_for(monkeypatch):
    insp = hloscope.inspect(DUMPS / "host_call.after_optimizations.hlo")
    tabs: list[str] = []

    async def steps(app: HloscopeApp, pilot) -> None:
        await pilot.pause()
        tabs.append(app.query_one(TabbedContent).active)
        await pilot.press("q")

    monkeypatch.setattr(tui_app, "run_in_terminal", drive(steps, []))
    insp.browse(start="overview")
    assert tabs == ["tab-overview"]


def test_browse_without_a_terminal_says_so():
    # stdin from /dev/null and stdout into a pipe, as in a notebook kernel or a script.
    code = textwrap.dedent(
        f"""
        import hloscope
        insp = hloscope.inspect({str(DUMPS / "mlp.stablehlo.mlir")!r})
        try:
            insp.browse()
        except hloscope.HloscopeError as exc:
            print("raised:", exc)
        """
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    run = subprocess.run(
        [sys.executable, "-c", code],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    assert run.stdout.startswith("raised: the browser needs a terminal, and stdin is not one")
    assert "hloscope tui" in run.stdout


def test_browse_refuses_a_worker_thread():
    import threading

    insp = hloscope.inspect(DUMPS / "mlp.stablehlo.mlir")
    failures: list[BaseException] = []

    def browse() -> None:
        try:
            insp.browse()
        except HloscopeError as exc:
            failures.append(exc)

    thread = threading.Thread(target=browse)
    thread.start()
    thread.join()
    assert [str(f) for f in failures] == [
        "the browser runs on the main thread (it handles the terminal's signals)"
    ]


# --------------------------------------------------------------------------- a real terminal

PDB_SCRIPT = """
import jax
import jax.numpy as jnp
import hloscope


@jax.jit
def layer(x, w):
    return jnp.tanh(x @ w)


def step(x, w):
    y = layer(x, w)
    breakpoint()
    return y


step(jnp.ones((8, 16)), jnp.ones((16, 4)))
print("AFTER-PDB")
"""


def prompts(screen: str) -> int:
    return sum(line.startswith("(Pdb)") for line in screen.splitlines())


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_browse_from_a_pdb_prompt_in_a_terminal(tmp_path):
    script = tmp_path / "debug_me.py"
    script.write_text(PDB_SCRIPT)
    term = Terminal(f"{shlex.quote(sys.executable)} {shlex.quote(str(script))}", str(tmp_path))
    try:
        term.wait_for(lambda s: prompts(s) == 1, "the pdb prompt")
        term.type("insp = hloscope.inspect(layer, x, w)")
        term.wait_for(lambda s: prompts(s) == 2, "the inspection made")
        term.type("insp.browse()")
        screen = term.wait_for(
            lambda s: "func.func public @main" in s and "line 2/" in s, "the browser"
        )
        assert "hloscope · __main__:layer · jit_layer · lowered StableHLO" in screen
        term.press_until("2", lambda s: "Functions (1)" in s, "the overview tab")
        term.keys("q")
        # Back at the prompt the browser was opened from, in line mode: what is typed
        # is echoed, and pdb runs it.
        screen = term.wait_for(lambda s: "(Pdb) insp.browse()" in s, "pdb again")
        term.type("p insp.params.usage.totals.arguments")
        screen = term.wait_for(
            lambda s: any(line.strip() == "2" for line in s.splitlines()), "pdb's answer"
        )
        assert "(Pdb) p insp.params.usage.totals.arguments" in screen
        term.type("c")
        screen = term.wait_for(lambda s: "EXIT=" in s, "the script to end")
        assert "AFTER-PDB" in screen
        assert "EXIT=0" in screen
    finally:
        term.close()

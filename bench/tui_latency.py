"""The browser's responsiveness on one module, through `App.run_test()`.

    .venv/bin/python bench/tui_latency.py FILE

prints one JSON object: `first_paint` (seconds from starting the app to the
first frame that draws the loaded module's IR), `ready` (to the first frame once
its model is built and its ops can be selected), `median_keystroke` (the median
over every key measured) and `keys` (the median per kind of key: `move`, `page`,
`end`, `function`, `expand`, `search`, `tab`, `filter`), plus `import` (seconds
to import the browser, not counted in `first_paint`) and `samples` (keys
measured per kind).

A key's latency runs from the moment the key reaches the app (as a terminal's
input would, through the driver) to the first frame drawn once its effect is
there (the cursor moved, the node expanded, the search's matches shown). Frames
are the compositor's updates, timed where the app hands them to the terminal.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

IMPORT_START = time.perf_counter()
from textual import events  # noqa: E402
from textual.keys import _character_to_key  # noqa: E402
from textual.widgets import TabbedContent  # noqa: E402

from hloscope.tui.app import HloscopeApp  # noqa: E402
from hloscope.tui.browser import BrowserPane  # noqa: E402
from hloscope.tui.screens.search import SearchScreen  # noqa: E402
from hloscope.tui.widgets.ir_view import IRView  # noqa: E402
from hloscope.tui.widgets.module_tree import ModuleTree, OpNode  # noqa: E402

IMPORT_SECONDS = time.perf_counter() - IMPORT_START

SIZE = (120, 40)
REPEATS = 15
# Give up on one key after this long (a key that never takes effect is a bug).
KEY_TIMEOUT = 30.0


class Frames:
    """Calls a check at every frame the app draws; `wait` returns when it passes."""

    def __init__(self, app: HloscopeApp, pilot: Any) -> None:
        self.app = app
        self.pilot = pilot
        self.check: Callable[[], bool] | None = None
        self.seen: asyncio.Future[float] | None = None
        original = app._display

        def display(screen: Any, renderable: Any) -> None:
            original(screen, renderable)
            if renderable is None or self.check is None or self.seen is None:
                return
            if not self.seen.done() and self.check():
                self.seen.set_result(time.perf_counter())

        app._display = display  # type: ignore[method-assign]

    async def idle(self) -> None:
        """Until the app has handled every message and drawn what they changed."""
        await self.pilot.pause()

    async def wait(self, check: Callable[[], bool]) -> float:
        self.check = check
        self.seen = asyncio.get_running_loop().create_future()
        try:
            return await asyncio.wait_for(self.seen, KEY_TIMEOUT)
        finally:
            self.check = None
            self.seen = None


def send(app: HloscopeApp, key: str) -> float:
    """Hand `key` (a name, `pagedown`, or a character, `}`) to the app as the
    terminal driver does; the time it was sent."""
    char = key if len(key) == 1 else {"slash": "/", "enter": "\r"}.get(key)
    if len(key) == 1 and not key.isalnum():
        key = _character_to_key(key)
    event = events.Key(key, char)
    event.set_sender(app)
    assert app._driver is not None
    start = time.perf_counter()
    app._driver.send_message(event)
    return start


async def timed(frames: Frames, app: HloscopeApp, key: str, check: Callable[[], bool]) -> float:
    """The latency of one keystroke: sent when the app has finished with the previous
    one (as typed, not as a key held down)."""
    await frames.idle()
    start = send(app, key)
    return await frames.wait(check) - start


async def measure(path: str) -> dict[str, Any]:
    start = time.perf_counter()
    app = HloscopeApp(path)
    first_paint: float | None = None
    keys: dict[str, list[float]] = {}

    def record(kind: str, seconds: float) -> None:
        keys.setdefault(kind, []).append(seconds)

    async with app.run_test(size=SIZE) as pilot:
        frames = Frames(app, pilot)
        view = app.query_one(IRView)

        def painted() -> bool:
            # The module's lines are on screen (its model may still be being built).
            return view.printed is not None and app.job is None

        def ready() -> bool:
            return app.session is not None and view.printed is not None and app.job is None

        first_paint = await frames.wait(painted) - start
        while not ready():
            await asyncio.sleep(0.005)
        model_ready = time.perf_counter() - start
        await pilot.pause()
        browser = app.query_one(BrowserPane)
        tree = app.query_one(ModuleTree)

        # Moves in the IR: down, up, a page, the end and back, the next function.
        for i in range(REPEATS):
            before = view.cursor
            key = "j" if i % 2 == 0 else "k"
            target = before + (1 if key == "j" else -1)
            record("move", await timed(frames, app, key, lambda t=target: view.cursor == t))
        for i in range(REPEATS):
            before = view.cursor
            key = "pagedown" if i % 2 == 0 else "pageup"
            record("page", await timed(frames, app, key, lambda b=before: view.cursor != b))
        last = view.row_count - 1
        for _ in range(REPEATS // 3):
            record("end", await timed(frames, app, "G", lambda: view.cursor == last))
            record("end", await timed(frames, app, "g", lambda: view.cursor == 0))
        for _ in range(REPEATS // 3):
            record("function", await timed(frames, app, "}", lambda: view.cursor > 0))
            await timed(frames, app, "g", lambda: view.cursor == 0)

        # Tree expansion: ops with regions (reductions), one after another.
        send(app, "t")
        await pilot.pause()
        expandable = [
            node
            for node in list(tree.nodes.values())
            if isinstance(node.data, OpNode) and node.allow_expand and not node.is_expanded
        ]
        expandable = [n for n in expandable if n.parent is not None and n.parent.parent is not None]
        for node in expandable[:REPEATS]:
            tree.move_cursor(node)
            await pilot.pause()
            record("expand", await timed(frames, app, "l", lambda n=node: n.is_expanded))

        # Search: the prompt, the query, and enter until the matches are shown.
        send(app, "i")
        await pilot.pause()
        for query in ("stablehlo.rsqrt", "%arg3", "dot_general", "tensor<16x256xf32>", "divide"):
            old = browser.hits
            await timed(frames, app, "slash", lambda: isinstance(app.screen, SearchScreen))
            for char in query:
                send(app, char)
            await pilot.pause()
            record(
                "search",
                await timed(
                    frames,
                    app,
                    "enter",
                    lambda q=query, o=old: browser.search_text == q and browser.hits is not o,
                ),
            )
            line = view.cursor_line
            following = [hit for hit in browser.hits if line is not None and hit > line]
            if following:
                record(
                    "next match",
                    await timed(frames, app, "n", lambda h=following[0]: view.cursor_line == h),
                )

        # Tabs and back.
        tabs = app.query_one(TabbedContent)
        for _ in range(REPEATS // 3):
            record("tab", await timed(frames, app, "2", lambda: tabs.active == "tab-overview"))
            record("tab", await timed(frames, app, "1", lambda: tabs.active == "tab-ir"))

    everything = [s for samples in keys.values() for s in samples]
    return {
        "first_paint": first_paint,
        "ready": model_ready,
        "median_keystroke": statistics.median(everything),
        "keys": {kind: statistics.median(samples) for kind, samples in keys.items()},
        "max_keystroke": max(everything),
        "samples": {kind: len(samples) for kind, samples in keys.items()},
        "import": IMPORT_SECONDS,
    }


def main() -> int:
    if len(sys.argv) != 2:
        sys.stderr.write(__doc__ or "")
        return 2
    result = asyncio.run(measure(sys.argv[1]))
    sys.stdout.write(json.dumps(result) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

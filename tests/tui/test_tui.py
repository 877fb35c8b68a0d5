"""The browser through `App.run_test()`: every screen and every key."""

from __future__ import annotations

import pytest
from textual.widgets import OptionList, TabbedContent

from conftest import DOCS, DUMPS, ROOT, line_of
from hloscope.sources import loader
from hloscope.tui.app import HloscopeApp, key_sections
from hloscope.tui.browser import BrowserPane
from hloscope.tui.keys import key_rows
from hloscope.tui.screens.help import HelpScreen
from hloscope.tui.screens.message import ErrorScreen
from hloscope.tui.screens.search import SearchScreen
from hloscope.tui.views import ShowOp
from hloscope.tui.widgets.details import OpDetails
from hloscope.tui.widgets.ir_view import IRView
from hloscope.tui.widgets.module_tree import PAGE, ModuleTree, OpNode, PageNode
from tui_support import (
    SIZE,
    cursor_text,
    details,
    loaded,
    notifications,
    plain,
    quiet,
    selected_name,
    settle,
    status,
    sync,
    type_at_once,
    until,
    visible_ir,
)

MLP = str(DUMPS.relative_to(ROOT) / "mlp.stablehlo.mlir")
HOST = str(DUMPS.relative_to(ROOT) / "host_call.after_optimizations.hlo")


def browser(app: HloscopeApp) -> BrowserPane:
    return app.query_one(BrowserPane)


async def press(pilot, *keys: str) -> None:
    """Press `keys`, each after the app has done everything the one before caused."""
    for key in keys:
        await pilot.press(key)
        await quiet(pilot)


async def go_to(pilot, app: HloscopeApp, text: str) -> None:
    """Put the IR cursor on the first line containing `text` (with the g and j keys)."""
    view = app.query_one(IRView)
    view.focus()
    await press(pilot, "g")
    assert view.printed is not None
    target = next(n for n, line in enumerate(view.printed.lines) if text in line)
    await press(pilot, *["j"] * target)
    assert text in cursor_text(app)


# --------------------------------------------------------------------------- loading


@sync
async def test_opens_a_dump_on_the_ir_tab():
    app = HloscopeApp(MLP)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(app, pilot)
        assert app.failure is None
        assert app.jobs == [f"Loading {MLP}"]
        # A dump says what loading it does (it once said an entrypoint is imported).
        assert app.steps[0] == "reading the module file"
        assert app.query_one(TabbedContent).active == "tab-ir"
        assert isinstance(app.focused, IRView)
        rows = visible_ir(app)
        assert "module @jit_mlp" in rows[0]
        assert any("func.func public @main" in row for row in rows)
        # The entry function is selected; its node is expanded in the tree.
        assert "func.func public @main" in cursor_text(app)
        assert details(app)[0] == "func.func @main"
        tree = app.query_one(ModuleTree)
        labels = [plain(node.label) for node in tree.root.children]
        assert [label.split()[0] for label in labels] == ["main", "dense", "relu", "head"]
        assert tree.root.children[0].is_expanded
        assert "jit_mlp · lowered · 16 ops in 4 functions · line 2/29" in status(app)


@sync
async def test_the_first_screen_of_an_optimized_module_shows_the_entry_function():
    """An optimized module prints its fused computations first and `main` far below;
    the cursor starts on `main`, and the first screen shows it (the status bar once
    said `line 59/120` while the pane showed lines 1-25)."""
    target = str(DUMPS.relative_to(ROOT) / "mlp.after_optimizations.hlo")
    app = HloscopeApp(target)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(app, pilot)
        await quiet(pilot)
        view = app.query_one(IRView)
        assert view.cursor_line is not None and view.cursor_line > SIZE[1]
        assert "func.func @main" in cursor_text(app)
        assert any("func.func @main" in row for row in visible_ir(app))
        assert f"line {view.cursor_line + 1}/" in status(app)


@sync
async def test_clones_of_one_function_are_folded_in_the_tree_as_the_overview_groups_them():
    # Mixtral's tree listed 4,002 functions, 258 of them clones of one `add`; the
    # Overview grouped them and the tree did not. A jump into a clone opens its group.
    from hloscope.analyses.structure import function_groups
    from tui_support import plain

    target = str(DUMPS.relative_to(ROOT) / "mlp.after_optimizations.hlo")
    app = HloscopeApp(target)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(app, pilot)
        await quiet(pilot)
        module = app.session.loaded.module
        group = next(g for g in function_groups(module) if len(g.functions) >= 3)
        tree = app.query_one(ModuleTree)
        labels = [plain(node.label) for node in tree.root.children]
        folded = next(label for label in labels if label.startswith(group.name + " "))
        assert f"×{len(group.functions)} clones" in folded
        tops = {label.split()[0] for label in labels}
        assert not tops & set(group.functions[1:])
        last = module.functions[group.functions[-1]]
        browser(app).jump(last.op.id)
        await quiet(pilot)
        node = tree.cursor_node
        assert node is not None and plain(node.label).startswith(group.functions[-1])
        assert node.parent is not None and node.parent.is_expanded


@sync
async def test_the_first_screen_shows_the_entry_function_s_ops_in_the_tree_too():
    # The tree put `main`, the last function, on its bottom row: its ops out of sight
    # below (Mixtral's first screen was a wall of region clones). A jump centres it,
    # as the IR pane does.
    target = str(DUMPS.relative_to(ROOT) / "mlp.after_optimizations.hlo")
    app = HloscopeApp(target)
    async with app.run_test(size=(80, 16)) as pilot:
        await loaded(app, pilot)
        await quiet(pilot)
        tree = app.query_one(ModuleTree)
        node = tree.cursor_node
        assert node is not None and str(node.label).startswith("main")
        row = tree.cursor_line - tree.scroll_offset.y
        assert 0 < row <= tree.scrollable_content_region.height // 2 + 1
        assert tree.max_scroll_y > 0  # the tree is longer than its pane


@sync
async def test_an_entrypoint_loads_in_a_worker_with_progress():
    app = HloscopeApp(
        "samples/nested_jits.py:mlp",
        loader.LoadOptions(args_factory="samples/nested_jits.py:example_args"),
    )
    async with app.run_test(size=SIZE) as pilot:
        await loaded(app, pilot)
        assert app.jobs == ["Loading samples/nested_jits.py:mlp"]
        assert app.steps[0] == "importing and lowering the entrypoint"
        # Paint first: the module is printed and shown, then its model is built.
        steps = app.steps
        assert steps.index("printing the module") < steps.index("building the model")
        assert steps.index("building the model") < steps.index("building the overview")
        assert app.job is None and app.failure is None
        assert app.session is not None
        assert app.session.loaded.source.kind == "entrypoint"
        # Locations are real source lines, shown with the line itself.
        await go_to(pilot, app, "stablehlo.tanh")
        line = line_of(ROOT / "samples/nested_jits.py", "jnp.tanh")
        rows = details(app)
        assert any(f"nested_jits.py:{line}:" in row for row in rows)
        assert any("jnp.tanh" in row for row in rows)


@sync
async def test_a_load_failure_is_shown_and_exits_2():
    app = HloscopeApp("samples/dumps/no_such_file.mlir")
    async with app.run_test(size=SIZE) as pilot:
        await loaded(app, pilot)
        assert isinstance(app.screen, ErrorScreen)
        assert "no_such_file.mlir" in app.screen.message
        assert app.failure == app.screen.message
        await press(pilot, "escape")
        assert not isinstance(app.screen, ErrorScreen)
        await press(pilot, "q")
    assert app.return_code == 2


@sync
async def test_a_failure_in_user_code_is_shown_not_raised():
    app = HloscopeApp("tests/fixtures/entrypoints.py:needs_two")
    async with app.run_test(size=SIZE) as pilot:
        await loaded(app, pilot)
        assert isinstance(app.screen, ErrorScreen)
        assert "no example arguments were given" in app.screen.message
        await press(pilot, "q")
    assert app.return_code == 2


@sync
async def test_q_quits_with_0():
    app = HloscopeApp(MLP)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(app, pilot)
        await press(pilot, "q")
    assert app.return_code == 0


# --------------------------------------------------------------------------- the IR view


@sync
async def test_cursor_keys_move_the_selection():
    app = HloscopeApp(MLP)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(app, pilot)
        view = app.query_one(IRView)
        await press(pilot, "j")
        assert "call @dense" in cursor_text(app)
        assert selected_name(app) == "func.call"
        assert details(app)[0].startswith("%0 = func.call @dense")
        await press(pilot, "down", "down")
        assert cursor_text(app).lstrip().startswith("%2 = call @dense")
        await press(pilot, "k", "up")
        assert cursor_text(app).lstrip().startswith("%0 = call @dense")
        await press(pilot, "G")
        assert view.cursor == view.row_count - 1
        await press(pilot, "g")
        assert view.cursor == 0
        assert selected_name(app) != "func.call"  # the module line belongs to no op
        assert details(app) == ["No op on this line."]
        await press(pilot, "end")
        assert view.cursor == view.row_count - 1
        await press(pilot, "home", "pagedown")
        page = view.cursor
        assert page > 10
        await press(pilot, "pageup")
        assert view.cursor == 0
        await press(pilot, "ctrl+f", "ctrl+b")
        assert view.cursor == 0
        await press(pilot, "space")
        assert view.cursor == page
        await press(pilot, "home", "ctrl+d")
        half = view.cursor
        assert 0 < half < page
        await press(pilot, "ctrl+u")
        assert view.cursor == 0


@sync
async def test_function_keys_and_sideways_scrolling():
    app = HloscopeApp(MLP)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(app, pilot)
        view = app.query_one(IRView)
        await press(pilot, "}")
        assert "func.func private @dense" in cursor_text(app)
        await press(pilot, "}", "}")
        assert "func.func private @head" in cursor_text(app)
        await press(pilot, "{")
        assert "func.func private @relu" in cursor_text(app)
        await press(pilot, "l", "right")
        assert view.scroll_x == 16
        assert not visible_ir(app)[0].endswith("module @jit_mlp")
        await press(pilot, "h", "left")
        assert view.scroll_x == 0


@sync
async def test_enter_on_a_call_follows_it_and_backspace_returns():
    app = HloscopeApp(MLP)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(app, pilot)
        await go_to(pilot, app, "call @head")
        await press(pilot, "enter")
        assert "func.func private @head" in cursor_text(app)
        assert details(app)[0] == "func.func @head"
        await press(pilot, "backspace")
        assert "call @head" in cursor_text(app)
        await press(pilot, "enter", "ctrl+o")
        assert "call @head" in cursor_text(app)
        assert browser(app).history == []
        await press(pilot, "backspace")  # nothing left: says so, stays
        assert "call @head" in cursor_text(app)


@sync
async def test_enter_on_another_op_focuses_its_links():
    app = HloscopeApp(MLP)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(app, pilot)
        await go_to(pilot, app, "stablehlo.add")
        rows = details(app)
        assert rows[0] == "%3 = stablehlo.add"
        assert "operands" in rows and "users (1)" in rows
        await press(pilot, "enter")
        links = app.query_one(OpDetails)
        assert app.focused is links
        # The first link is the first operand's definition: the dot_general.
        assert "← %0 = stablehlo.dot_general" in plain(
            links.get_option_at_index(links.highlighted or 0).prompt
        )
        await press(pilot, "enter")
        assert "stablehlo.dot_general" in cursor_text(app)
        assert isinstance(app.focused, IRView)
        await press(pilot, "backspace")
        assert "stablehlo.add" in cursor_text(app)


@sync
async def test_details_links_move_with_j_k_and_lead_to_users_and_arguments():
    app = HloscopeApp(MLP)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(app, pilot)
        await go_to(pilot, app, "stablehlo.add")
        await press(pilot, "d")
        links = app.query_one(OpDetails)
        assert app.focused is links
        first = links.highlighted
        await press(pilot, "j")
        assert "← %2 = stablehlo.broadcast_in_dim" in plain(
            links.get_option_at_index(links.highlighted or 0).prompt
        )
        await press(pilot, "j")  # the user: the call of relu
        assert "→ %4 = func.call @relu" in plain(
            links.get_option_at_index(links.highlighted or 0).prompt
        )
        await press(pilot, "k", "k")
        assert links.highlighted == first
        await press(pilot, "G")
        await press(pilot, "enter")
        assert "call @relu" in cursor_text(app)
        # An argument's link leads to its function.
        await go_to(pilot, app, "stablehlo.dot_general")
        rows = details(app)
        assert any("%arg0 : f32[8,64]  ← argument 0 of @dense" in row for row in rows)


@sync
async def test_locations_are_shown_and_hidden():
    app = HloscopeApp(MLP)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(app, pilot)
        await go_to(pilot, app, "stablehlo.dot_general")
        await press(pilot, "L")
        await settle(pilot, app)
        assert browser(app).locations
        assert "stablehlo.dot_general" in cursor_text(app)
        assert "loc(" in cursor_text(app)
        assert "locations shown" in status(app)
        await press(pilot, "L")
        assert not browser(app).locations
        assert "loc(" not in cursor_text(app)
        assert "stablehlo.dot_general" in cursor_text(app)


@sync
async def test_mouse_click_moves_the_cursor():
    app = HloscopeApp(MLP)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(app, pilot)
        view = app.query_one(IRView)
        await pilot.click(IRView, offset=(10, 4))
        await quiet(pilot)
        assert view.cursor == 4
        assert "call @dense" in cursor_text(app)


# --------------------------------------------------------------------------- search


async def search_for(pilot, app: HloscopeApp, query: str) -> None:
    await press(pilot, "/")
    assert isinstance(app.screen, SearchScreen)
    await pilot.press(*query)
    await press(pilot, "enter")
    await settle(pilot, app)


@sync
async def test_search_and_n_N():
    app = HloscopeApp(MLP)
    said = notifications(app)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(app, pilot)
        await search_for(pilot, app, "broadcast_in_dim")
        assert "stablehlo.broadcast_in_dim" in cursor_text(app)
        hits = browser(app).hits
        assert len(hits) == 3
        assert "1/3 matches" in status(app)
        await press(pilot, "n")
        assert "2/3 matches" in status(app)
        await press(pilot, "n", "n")
        assert "1/3 matches" in status(app)  # wraps around, and says so, as vim does
        assert "search hit BOTTOM, continuing at TOP" in said
        await press(pilot, "N")
        assert "3/3 matches" in status(app)
        assert "search hit TOP, continuing at BOTTOM" in said
        # Jumps to matches are remembered.
        await press(pilot, "backspace")
        assert "1/3 matches" in status(app)


@sync
async def test_the_printed_module_is_shown_and_scrolls_while_its_model_is_built(monkeypatch):
    import threading

    from hloscope.ir import parse

    release = threading.Event()
    real_build = parse.build_model

    def held_build(module):
        # The model is built only when the test says so: what the browser shows
        # meanwhile is observed, not raced.
        release.wait(timeout=60)
        return real_build(module)

    monkeypatch.setattr(parse, "build_model", held_build)
    app = HloscopeApp(MLP)
    async with app.run_test(size=SIZE) as pilot:
        view = app.query_one(IRView)
        await until(pilot, lambda: view.printed is not None and app.job is None, "the lines")
        assert app.session is None
        assert "building the model" in status(app)
        assert app.focused is view
        await pilot.press("j", "j")
        assert view.cursor == 2
        release.set()
        await loaded(app, pilot)
        assert app.session is not None
    release.set()


@sync
async def test_workers_do_not_print_the_module_to_describe_themselves(monkeypatch):
    # textual describes a worker by the repr of its arguments unless given a
    # description: the whole printed module and session, 100 ms a search at 100k ops.
    from hloscope.tui.printed import PrintedModule
    from hloscope.tui.session import Session

    printed_reprs: list[str] = []

    def refuse(self: object) -> str:
        printed_reprs.append(type(self).__name__)
        return "<refused>"

    monkeypatch.setattr(PrintedModule, "__repr__", refuse)
    monkeypatch.setattr(Session, "__repr__", refuse)
    app = HloscopeApp(MLP)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(app, pilot)
        await search_for(pilot, app, "broadcast_in_dim")
        assert len(browser(app).hits) == 3
        await press(pilot, "L")
        await settle(pilot, app)
    assert printed_reprs == []


@sync
async def test_search_value_names_and_escape():
    app = HloscopeApp(MLP)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(app, pilot)
        await search_for(pilot, app, "%arg6")
        assert len(browser(app).hits) == 2  # main's header and the first call
        await press(pilot, "/")
        await press(pilot, "escape")
        assert not isinstance(app.screen, SearchScreen)
        assert browser(app).search_text == "%arg6"
        await search_for(pilot, app, "nothing like this")
        assert browser(app).hits == ()
        assert "no match" in status(app)
        await press(pilot, "n")  # no search results: a notice, nothing moves


@sync
async def test_search_by_source_line():
    app = HloscopeApp(HOST)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(app, pilot)
        # This dump was made from samples/compute_on.py; its ops carry those lines.
        line = line_of(ROOT / "samples/compute_on.py", "def host_call_inside_jit") + 2
        await search_for(pilot, app, f"compute_on.py:{line}")
        assert browser(app).hits
        assert "stablehlo." in cursor_text(app)


# --------------------------------------------------------------------------- filters


@sync
async def test_host_ops_stand_out_and_the_filter_shows_only_them():
    app = HloscopeApp(HOST)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(app, pilot)
        session = app.session
        assert session is not None
        host = session.marked["host"]
        assert {session.loaded.module.ops[i].name for i in host} == {
            "stablehlo.sine",
            "stablehlo.multiply",
        }
        view = app.query_one(IRView)
        all_rows = view.row_count
        await press(pilot, "H")
        assert view.rows is not None and view.row_count < all_rows
        shown = [view.printed.lines[line] for line in view.rows]  # type: ignore[union-attr]
        assert all("_xla_compute_type" in row or "func.func" in row for row in shown)
        assert "only host ops (2)" in status(app)
        assert "_xla_compute_type" in cursor_text(app) or "func.func" in cursor_text(app)
        # The gutter marks host ops.
        assert any("▌" in row for row in visible_ir(app))
        await press(pilot, "H")
        assert view.rows is None and view.row_count == all_rows


@sync
async def test_the_host_filter_on_a_module_without_host_ops():
    app = HloscopeApp(MLP)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(app, pilot)
        await press(pilot, "H")
        assert app.query_one(IRView).rows is None
        assert browser(app).active_filter is None


# --------------------------------------------------------------------------- the tree


@sync
async def test_tree_keys_expand_and_select():
    app = HloscopeApp(HOST)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(app, pilot)
        tree = app.query_one(ModuleTree)
        await press(pilot, "t")
        assert app.focused is tree
        main = tree.root.children[1]
        assert plain(main.label).startswith("main")
        tree.move_cursor(main)
        await quiet(pilot)
        assert "func.func @main" in cursor_text(app)
        await press(pilot, "j")  # the fusion, a group of ops
        fusion = tree.cursor_node
        assert fusion is not None and "mhlo.fusion kLoop" in plain(fusion.label)
        assert "mhlo.fusion" in cursor_text(app)
        await press(pilot, "l")
        assert fusion.is_expanded and len(fusion.children) == 7
        await press(pilot, "j", "j")
        assert "stablehlo.constant" in cursor_text(app)
        await press(pilot, "h")  # a leaf: up to its parent
        assert tree.cursor_node is fusion
        await press(pilot, "h")
        assert not fusion.is_expanded
        await press(pilot, "right", "left")
        assert not fusion.is_expanded
        await press(pilot, "G")
        assert tree.cursor_node is not None
        await press(pilot, "g")
        assert tree.cursor_line == 0
        await press(pilot, "space")
        assert not tree.root.is_expanded
        await press(pilot, "shift+space")
        assert tree.root.is_expanded


@sync
async def test_the_tree_follows_the_ir_cursor():
    app = HloscopeApp(HOST)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(app, pilot)
        await go_to(pilot, app, "stablehlo.tanh %3")  # inside the fusion in main
        tree = app.query_one(ModuleTree)
        node = tree.cursor_node
        assert node is not None and isinstance(node.data, OpNode)
        assert plain(node.label) == "%4 = stablehlo.tanh"
        assert node.parent is not None and "mhlo.fusion" in plain(node.parent.label)


@pytest.fixture
def wide_module(tmp_path):
    """A function with more ops than a tree page."""
    lines = ["func.func @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {"]
    previous = "%arg0"
    for i in range(2 * PAGE + 50):
        lines.append(f"  %v{i} = stablehlo.sine {previous} : tensor<4xf32>")
        previous = f"%v{i}"
    lines += [f"  return {previous} : tensor<4xf32>", "}"]
    path = tmp_path / "wide.mlir"
    path.write_text("\n".join(lines) + "\n")
    return str(path)


@sync
async def test_the_tree_pages_through_large_functions(wide_module):
    app = HloscopeApp(wide_module)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(app, pilot)
        tree = app.query_one(ModuleTree)
        main = tree.root.children[0]
        assert len(main.children) == PAGE + 1  # a page, then "… later"
        later = main.children[-1]
        assert isinstance(later.data, PageNode) and "251 later" in plain(later.label)
        tree.focus()
        tree.move_cursor(later)
        await press(pilot, "enter")
        assert isinstance(main.children[0].data, PageNode)  # "… 200 earlier"
        assert "200 earlier" in plain(main.children[0].label)
        node = tree.cursor_node
        assert node is not None and plain(node.label).startswith(f"%{PAGE} = ")
        assert cursor_text(app).lstrip().startswith(f"%{PAGE} = stablehlo.sine")
        # Selecting an op beyond the window (from the IR) moves the window to it.
        await press(pilot, "i", "G", "k", "k", "k")
        node = tree.cursor_node
        assert node is not None and plain(node.label).startswith(f"%{2 * PAGE + 49} = ")
        assert len(tree.nodes) <= PAGE + 3


@sync
async def test_a_large_module_opens_without_work_proportional_to_its_size(tmp_path):
    """100,000 ops: the tree makes a page of nodes, the IR view renders what is on
    screen, and keys are answered from indexes."""
    lines = ["func.func @main(%arg0: tensor<8xf32>) -> tensor<8xf32> {"]
    previous = "%arg0"
    for i in range(100_000):
        lines.append(f"  %v{i} = stablehlo.sine {previous} : tensor<8xf32>")
        previous = f"%v{i}"
    lines += [f"  return {previous} : tensor<8xf32>", "}"]
    path = tmp_path / "large.mlir"
    path.write_text("\n".join(lines) + "\n")
    app = HloscopeApp(str(path))
    async with app.run_test(size=SIZE) as pilot:
        await loaded(app, pilot)
        view = app.query_one(IRView)
        tree = app.query_one(ModuleTree)
        assert view.row_count == 100_005  # the module, the function, the ops, two braces
        assert len(tree.nodes) <= PAGE + 2
        rendered = []
        original = view._render_row

        def counting(row: int):
            rendered.append(row)
            return original(row)

        view._render_row = counting  # type: ignore[method-assign]
        await press(pilot, "G")
        assert cursor_text(app) == "}"
        await press(pilot, "k", "k")
        assert cursor_text(app).lstrip().startswith("return %99999")
        await press(pilot, "g", "j", "j")
        assert cursor_text(app).lstrip().startswith("%0 = stablehlo.sine")
        # Only rows that were on screen were rendered.
        assert len(set(rendered)) <= 4 * view.scrollable_content_region.height
        assert len(tree.nodes) <= 2 * PAGE + 2


# --------------------------------------------------------------------------- tabs and screens


@sync
async def test_tabs_switch_with_number_keys_and_the_overview_shows_the_report():
    app = HloscopeApp(MLP, start="overview")
    async with app.run_test(size=SIZE) as pilot:
        await loaded(app, pilot)
        tabs = app.query_one(TabbedContent)
        assert tabs.active == "tab-overview"
        text = plain(app.query_one("#overview-text").content)  # type: ignore[attr-defined]
        assert "Functions (4)" in text
        assert "Call graph" in text and "dense ×3" in text
        assert "Op counts" in text
        await press(pilot, "1")
        assert tabs.active == "tab-ir"
        assert isinstance(app.focused, IRView)
        await press(pilot, "2")
        assert tabs.active == "tab-overview"
        assert app.focused is app.query_one("#overview-view")


@sync
async def test_the_overview_is_drawn_to_fit_beside_its_scrollbar():
    # A report longer than its pane gets a scrollbar; drawn for the whole width, its
    # widest lines (a table squeezed to the width) wrapped, borders included.
    app = HloscopeApp(MLP, start="overview")
    async with app.run_test(size=(60, 20)) as pilot:
        await loaded(app, pilot)
        view = app.query_one("#overview-view")
        shown = app.query_one("#overview-text")
        assert view.max_scroll_y > 0  # it scrolls
        lines = plain(shown.content).splitlines()  # type: ignore[attr-defined]
        assert max(len(line) for line in lines) == shown.size.width


@sync
async def test_a_long_title_is_cut_not_wrapped_out_of_sight():
    # The title bar is one line: wrapped, a path wider than the terminal went to a
    # second line, out of sight, and the bar said only "hloscope ·".
    target = "samples/dumps/" + "../dumps/" * 6 + "mlp.stablehlo.mlir"
    app = HloscopeApp(target)
    async with app.run_test(size=(60, 20)) as pilot:
        await loaded(app, pilot)
        line = app.query_one("#title-bar").render_line(0).text
        assert line.startswith(f"hloscope · {target[:20]}")
        assert line.rstrip().endswith("…")
        assert status(app).startswith("jit_mlp · lowered · ")


@sync
async def test_two_tab_keys_in_a_row_end_on_the_second_tab():
    # Showing a tab focuses its view; the message saying a pane got the focus travels
    # up from the widget, and the first tab's must not switch back from the second.
    app = HloscopeApp(MLP, start="overview")
    async with app.run_test(size=SIZE) as pilot:
        await loaded(app, pilot)
        tabs = app.query_one(TabbedContent)
        for first, second in (("ir", "overview"), ("overview", "ir"), ("ir", "params")):
            app.action_show_tab(first)
            app.action_show_tab(second)
            await quiet(pilot)
            assert tabs.active == f"tab-{second}"
            assert app.focused is not None
            assert tabs.get_pane(f"tab-{second}") in app.focused.ancestors
        # Keys typed right after a tab key go to the new tab's view.
        listing = app.query_one("#params-list", OptionList)
        first = listing.highlighted
        type_at_once(app, "3", "j")
        await quiet(pilot)
        assert first is not None and listing.highlighted == first + 1
        type_at_once(app, "1", "j")
        await quiet(pilot)
        assert "call @dense" in cursor_text(app)


@sync
async def test_a_view_can_send_the_browser_to_an_op():
    app = HloscopeApp(MLP, start="overview")
    async with app.run_test(size=SIZE) as pilot:
        await loaded(app, pilot)
        session = app.session
        assert session is not None
        add = next(op for op in session.loaded.module.ops if op.name == "stablehlo.add")
        app.query_one("#overview-view").post_message(ShowOp(add.id))
        await quiet(pilot)
        assert app.query_one(TabbedContent).active == "tab-ir"
        assert "stablehlo.add" in cursor_text(app)


@sync
async def test_help_lists_every_key():
    app = HloscopeApp(MLP)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(app, pilot)
        await press(pilot, "question_mark")
        assert isinstance(app.screen, HelpScreen)
        table = app.screen.query_one("#help-box Static").content  # type: ignore[attr-defined]
        cells = [plain(cell) for column in table.columns for cell in column._cells]
        for title, cls in key_sections():
            assert title in cells
            for row in key_rows(cls):
                assert ", ".join(row.keys) in cells
                assert row.description in cells
        await press(pilot, "j", "k", "escape")
        assert not isinstance(app.screen, HelpScreen)
        await press(pilot, "question_mark", "question_mark")
        assert not isinstance(app.screen, HelpScreen)


@sync
async def test_tab_moves_between_panes():
    app = HloscopeApp(MLP)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(app, pilot)
        seen = set()
        for _ in range(6):
            await press(pilot, "tab")
            seen.add(type(app.focused).__name__)
        assert {"ModuleTree", "IRView", "OpDetails"} <= seen
        await press(pilot, "shift+tab")
        await press(pilot, "i")
        assert isinstance(app.focused, IRView)


# --------------------------------------------------------------------------- compiling


@sync
async def test_c_compiles_in_a_worker_and_switches_back():
    app = HloscopeApp(MLP)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(app, pilot)
        await press(pilot, "c")
        assert app.jobs[-1] == f"Compiling {MLP}"
        await loaded(app, pilot)
        session = app.session
        assert session is not None and session.loaded.source.stage == "optimized"
        assert any(op.name == "mhlo.fusion" for op in session.loaded.module.ops)
        assert "optimized" in status(app)
        await press(pilot, "c")
        assert app.session is not None and app.session.loaded.source.stage == "lowered"
        assert app.jobs == [f"Loading {MLP}", f"Compiling {MLP}"]  # no second compile
        await press(pilot, "c")
        assert app.session is not None and app.session.loaded.source.stage == "optimized"


@sync
async def test_c_on_an_optimized_dump_says_there_is_nothing_to_switch_to():
    app = HloscopeApp(HOST)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(app, pilot)
        await press(pilot, "c")
        assert app.job is None
        assert app.session is not None and app.session.loaded.source.stage == "optimized"


@pytest.mark.corpus
@sync
async def test_a_compile_failure_is_shown_and_the_module_stays(corpus):
    # XLA's own form of a module (its MLIR does not verify) cannot be compiled here.
    path = corpus / "xla-cc-embedded-hlo/xla/hlo/parser/hlo_parser_test.159.hlo"
    app = HloscopeApp(str(path), loader.LoadOptions())
    async with app.run_test(size=SIZE) as pilot:
        await loaded(app, pilot)
        before = app.session
        assert before is not None and before.hlo_native
        assert "ROOT %root = " in "\n".join(before.printed.lines)
        await press(pilot, "c")
        await loaded(app, pilot)
        assert isinstance(app.screen, ErrorScreen)
        assert "cannot compile this module" in app.screen.message
        await press(pilot, "enter")
        assert app.session is before and app.failure is None


@pytest.mark.corpus
@sync
async def test_a_computation_xla_does_not_print_is_still_browsable(corpus):
    # XLA's HLO text prints an async op's wrapped computation inside its caller.
    path = corpus / "xla-cc-embedded-hlo/xla/hlo/transforms/host_offloader_test.051.hlo"
    app = HloscopeApp(str(path))
    async with app.run_test(size=SIZE) as pilot:
        await loaded(app, pilot)
        tree = app.query_one(ModuleTree)
        hidden = tree.root.children[0]
        assert plain(hidden.label).startswith("async_computation")
        line = cursor_text(app)
        tree.focus()
        tree.move_cursor(hidden)
        await until(pilot, lambda: details(app)[0] == "func.func @async_computation", "details")
        assert "not in the printed text" in details(app)[1]
        assert cursor_text(app) == line  # the IR stays where it was


def test_the_docs_list_every_key():
    # The browser page's key table is the help screen's, read from the bindings; after a
    # change to the keys, paste `markdown_table(key_sections())` into docs/browser.md.
    from hloscope.tui.keys import markdown_table

    assert markdown_table(key_sections()) in (DOCS / "browser.md").read_text()


@sync
@pytest.mark.parametrize("key", ["/", "2"])
async def test_a_key_typed_as_the_module_appears_is_not_lost(key):
    # The module appears and the user types at once: the key goes to the IR tab (not
    # to the tab bar that held the focus while loading) and is not undone by the app
    # showing its first tab afterwards.
    app = HloscopeApp(MLP)
    show_session = app.show_session

    async def show_then_type(session):
        await show_session(session)
        type_at_once(app, key)

    app.show_session = show_then_type  # type: ignore[method-assign]
    async with app.run_test(size=SIZE) as pilot:
        await loaded(app, pilot)
        await quiet(pilot)
        if key == "/":
            assert isinstance(app.screen, SearchScreen)
        else:
            assert app.query_one(TabbedContent).active == "tab-overview"


@sync
@pytest.mark.parametrize(("module", "shows"), [(MLP, False), (HOST, True)])
async def test_host_ops_key_works_from_any_tab_and_says_when_there_are_none(module, shows):
    app = HloscopeApp(module)
    notes = notifications(app)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(app, pilot)
        await press(pilot, "2")
        assert app.query_one(TabbedContent).active == "tab-overview"
        await press(pilot, "H")
        if shows:
            assert app.query_one(TabbedContent).active == "tab-ir"
            assert browser(app).active_filter == "host"
        else:
            assert notes == ["This module has no host ops."]
            assert browser(app).active_filter is None

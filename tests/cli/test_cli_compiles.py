"""`hloscope compiles`: scripts with known recompilations, where the counts equal
JAX's own (each jitted function's `_cache_size()`, written by the script itself)
and each cause names the argument and its before and after.

Tests run in one process, where JAX's caches persist: every script defines its own
jitted functions, so its counts do not depend on the tests before it.
"""

from __future__ import annotations

import json
import logging
import textwrap
from pathlib import Path

import pytest

from conftest import run_cli

SIZES = """
import json, sys
def write_sizes(path, **functions):
    with open(path, "w") as f:
        json.dump({name: fn._cache_size() for name, fn in functions.items()}, f)
"""


def script(tmp_path: Path, body: str, name: str = "prog.py") -> Path:
    path = tmp_path / name
    path.write_text(SIZES + textwrap.dedent(body))
    return path


def by_function(doc: dict) -> dict[str, dict]:
    return {f["function"]: f for f in doc["functions"]}


def changes_of(doc: dict, function: str) -> list[dict]:
    return [c for row in doc["compiles"] if row["function"] == function for c in row["changes"]]


def test_shape_dtype_weak_type_static_and_pytree_counts_equal_jax(tmp_path: Path) -> None:
    prog = script(
        tmp_path,
        """
        import functools
        import jax, jax.numpy as jnp

        @jax.jit
        def by_shape(x):
            return x * 2

        @jax.jit
        def by_dtype(x):
            return x + 1

        @jax.jit
        def by_weak(x, s):
            return x * s

        @functools.partial(jax.jit, static_argnums=1)
        def by_static(x, n):
            return x * n

        @jax.jit
        def by_tree(d):
            return sum(d.values())

        a = jnp.ones((4, 3))
        for rows in (4, 8, 12):
            by_shape(jnp.ones((rows, 3)))
        by_dtype(a); by_dtype(a.astype(jnp.int32))
        by_weak(a, 2.0); by_weak(a, jnp.float32(2.0))
        by_static(a, 2); by_static(a, 3); by_static(a, 2)
        by_tree({"a": a}); by_tree({"a": a, "b": a})
        write_sizes(sys.argv[1], by_shape=by_shape, by_dtype=by_dtype, by_weak=by_weak,
                    by_static=by_static, by_tree=by_tree)
        """,
    )
    sizes_file = tmp_path / "sizes.json"
    result = run_cli("compiles", str(prog), str(sizes_file), "--json")
    assert result.code == 0, result.stderr
    doc = result.json()
    sizes = json.loads(sizes_file.read_text())
    functions = by_function(doc)
    assert {name: functions[name]["compiles"] for name in sizes} == sizes
    assert sizes == {"by_shape": 3, "by_dtype": 2, "by_weak": 2, "by_static": 2, "by_tree": 2}
    assert doc["summary"]["compiles"] == sum(sizes.values())
    assert doc["summary"]["functions"] == 5
    assert all(f["signatures"] == f["compiles"] for f in doc["functions"])

    assert changes_of(doc, "by_shape") == [
        {"path": "x", "before": "f32[4,3]", "after": "f32[8,3]", "kind": "type"},
        # JAX compares with the closest earlier key; of those as close, the one whose
        # explanation comes first in text order ('f32[4,3]' < 'f32[8,3]').
        {"path": "x", "before": "f32[4,3]", "after": "f32[12,3]", "kind": "type"},
    ]
    assert (
        "leading dimension of x took 3 values (4, 8, 12)" in functions["by_shape"]["likely_cause"]
    )
    assert changes_of(doc, "by_dtype") == [
        {"path": "x", "before": "f32[4,3]", "after": "i32[4,3]", "kind": "type"}
    ]
    assert changes_of(doc, "by_weak") == [
        {
            "path": "s",
            "before": "f32[]{weak_type=True}",
            "after": "f32[]{weak_type=False}",
            "kind": "type",
        }
    ]
    assert "s is a Python scalar (weak type)" in functions["by_weak"]["likely_cause"]
    assert changes_of(doc, "by_static") == [
        {"path": "n", "before": "2", "after": "3", "kind": "static"}
    ]
    [tree_change] = changes_of(doc, "by_tree")
    assert tree_change["path"] == "d" and tree_change["kind"] == "pytree"
    assert (tree_change["before"], tree_change["after"]) == (
        "dict with 1 child",
        "dict with 2 children",
    )
    # JAX's own words, one line each.
    rows = [row for row in doc["compiles"] if not row["eager"]]
    assert rows[0]["cause"] == "never seen function"
    assert rows[1]["cause"] == "different input types: at x, now f32[8,3] and before f32[4,3]"
    assert all("\n" not in (row["cause"] or "") for row in doc["compiles"])
    for row in rows:
        assert row["source"].endswith(".py:" + row["source"].rsplit(":", 1)[1])
        assert row["call_site"].startswith(str(prog)) or row["call_site"].startswith("/")
        assert row["compile_seconds"] > 0 and row["trace_seconds"] > 0
        assert row["lower_seconds"] > 0 and row["ops"] > 0


def test_sharding_change_on_eight_devices(tmp_path: Path) -> None:
    prog = script(
        tmp_path,
        """
        import jax, jax.numpy as jnp
        from jax.sharding import NamedSharding, PartitionSpec as P

        @jax.jit
        def by_sharding(x):
            return x + 1

        # Explicit axes, JAX's default since 0.9 (0.8's was Auto: no sharding in types).
        mesh = jax.make_mesh((8,), ("d",), axis_types=(jax.sharding.AxisType.Explicit,))
        x = jnp.ones((16, 4))
        by_sharding(x)
        by_sharding(jax.device_put(x, NamedSharding(mesh, P("d"))))
        write_sizes(sys.argv[1], by_sharding=by_sharding)
        """,
    )
    import jax

    if jax.device_count() < 8:
        pytest.skip("needs 8 CPU devices (XLA_FLAGS set before JAX started)")
    sizes_file = tmp_path / "sizes.json"
    result = run_cli("compiles", str(prog), str(sizes_file), "--json")
    assert result.code == 0, result.stderr
    doc = result.json()
    assert (
        by_function(doc)["by_sharding"]["compiles"]
        == json.loads(sizes_file.read_text())["by_sharding"]
        == 2
    )
    [change] = changes_of(doc, "by_sharding")
    assert change["path"] == "x"
    assert change["before"] == "f32[16,4]"
    assert change["after"].startswith("f32[16@d,4]")


def test_eager_ops_are_counted_apart(tmp_path: Path) -> None:
    # A shape no other test uses, so that JAX's caches of eager ops are cold.
    prog = script(
        tmp_path,
        """
        import numpy as np
        import jax.numpy as jnp
        x = np.full((7, 13), 0.5, np.float32)
        jnp.sin(x)
        jnp.cos(x)
        """,
    )
    doc = run_cli("compiles", str(prog), "--json").json()
    assert doc["summary"]["compiles"] == 0
    assert doc["summary"]["eager_compiles"] >= 2
    eager = {row["function"] for row in doc["compiles"] if row["eager"]}
    assert {"sin", "cos"} <= eager
    assert all(row["call_site"].startswith(str(prog)) for row in doc["compiles"])


def test_fail_on_recompiles(tmp_path: Path) -> None:
    twice = script(
        tmp_path,
        """
        import jax, jax.numpy as jnp
        f = jax.jit(lambda x: x - 1)
        f(jnp.zeros(2)); f(jnp.zeros(5))
        """,
        "twice.py",
    )
    once = script(
        tmp_path,
        """
        import jax, jax.numpy as jnp
        f = jax.jit(lambda x: x - 2)
        f(jnp.zeros(2)); f(jnp.zeros(2))
        """,
        "once.py",
    )
    assert run_cli("compiles", str(twice), "--fail-on", "recompiles", "--json").code == 1
    assert run_cli("compiles", str(once), "--fail-on", "recompiles", "--json").code == 0
    wrong = run_cli("compiles", str(once), "--fail-on", "nonsense")
    assert wrong.code == 2 and "--fail-on nonsense" in wrong.stderr


def test_json_stdout_holds_only_the_report(tmp_path: Path) -> None:
    prog = script(
        tmp_path,
        """
        import jax, jax.numpy as jnp
        print("the script speaks")
        jax.jit(lambda x: x * 3)(jnp.ones(3))
        """,
    )
    result = run_cli("compiles", str(prog), "--json")
    assert result.code == 0
    doc = json.loads(result.stdout)
    assert doc["schema_version"] == 1 and doc["command"] == "compiles"
    assert doc["target"] == str(prog)
    assert "the script speaks" in result.stderr
    for key in ("compiles", "functions", "compile_seconds", "wall_seconds", "eager_compiles"):
        assert key in doc["summary"]


def test_script_that_raises_reports_then_exits_2(tmp_path: Path) -> None:
    prog = script(
        tmp_path,
        """
        import jax, jax.numpy as jnp
        g = jax.jit(lambda x: x / 2)
        g(jnp.ones(2)); g(jnp.ones(3))
        raise ValueError("bad\\nthing")
        """,
    )
    result = run_cli("compiles", str(prog), "--json")
    assert result.code == 2
    doc = result.json()
    assert doc["summary"]["compiles"] == 2
    assert doc["error"].startswith("ValueError: bad thing")
    lines = [line for line in result.stderr.splitlines() if line.startswith("hloscope:")]
    assert len(lines) == 1 and "ValueError: bad thing" in lines[0]
    assert "Traceback" not in result.stderr


def test_script_exit_code_and_arguments_pass_through(tmp_path: Path) -> None:
    prog = script(
        tmp_path,
        """
        import sys
        sys.stderr.write("argv=" + repr(sys.argv[1:]) + " path0=" + sys.path[0] + "\\n")
        sys.exit(int(sys.argv[-1]))
        """,
    )
    result = run_cli("compiles", str(prog), "--foo", "x", "3", "--print")
    assert result.code == 3
    assert f"argv=['--foo', 'x', '3'] path0={tmp_path}" in result.stderr
    # Options before the script, and -- before arguments that clash with hloscope's.
    result = run_cli("compiles", "--json", str(prog), "--", "--json", "0")
    assert result.code == 0
    assert "argv=['--json', '0']" in result.stderr
    assert result.json()["command"] == "compiles"


def test_program_logging_and_jax_config_untouched(tmp_path: Path) -> None:
    log = tmp_path / "program.log"
    prog = script(
        tmp_path,
        f"""
        import logging
        logging.basicConfig(filename={str(log)!r}, level=logging.DEBUG, force=True)
        logging.getLogger("prog").warning("the program logs")
        import jax, jax.numpy as jnp
        h = jax.jit(lambda x: x ** 2)
        h(jnp.ones(2)); h(jnp.ones(4))
        """,
    )
    import jax

    explain_logger = logging.getLogger("jax._src.interpreters.partial_eval")
    before = (explain_logger.level, list(explain_logger.filters))
    root = logging.getLogger()
    root_before = (root.level, list(root.handlers))
    try:
        doc = run_cli("compiles", str(prog), "--json").json()
    finally:
        for handler in root.handlers:
            if handler not in root_before[1]:
                handler.close()
        root.setLevel(root_before[0])
        root.handlers[:] = root_before[1]
    assert doc["summary"]["compiles"] == 2
    assert "the program logs" in log.read_text()
    assert "TRACING CACHE MISS" not in log.read_text()
    assert jax.config.jax_explain_cache_misses is False
    assert (explain_logger.level, list(explain_logger.filters)) == before


def test_function_called_on_argument_sets(tmp_path: Path) -> None:
    module = tmp_path / "fn_mod.py"
    module.write_text(
        textwrap.dedent(
            """
            import jax, jax.numpy as jnp

            @jax.jit
            def step(x, scale):
                return x * scale

            def small():
                return (jnp.ones(2), 1.0)

            def large():
                return (jnp.ones(6), 1.0)

            def several():
                return [(jnp.ones(3), 2.0), ((jnp.ones(3),), {"scale": jnp.float32(2)}),
                        (jax.ShapeDtypeStruct((9,), jnp.float32), 1.0)]
            """
        )
    )
    target = f"{module}:step"
    doc = run_cli(
        "compiles", target, "--args", f"{module}:small", "--args", f"{module}:large", "--json"
    ).json()
    assert by_function(doc)["step"]["compiles"] == 2
    assert changes_of(doc, "step")[-1]["after"] == "f32[6]"
    doc = run_cli("compiles", target, "--calls", f"{module}:several", "--json").json()
    assert by_function(doc)["step"]["compiles"] == 3
    bad = run_cli("compiles", target, "--calls", f"{module}:small")
    assert bad.code == 2 and "expected a list" in bad.stderr


def test_sample_recompiles_text(tmp_path: Path) -> None:
    result = run_cli("compiles", "samples/recompiles.py", "--steps", "2", "--print")
    assert result.code == 0, result.stderr
    assert "predict" in result.stdout and "Timeline" in result.stdout
    assert "exponent: 2 → 3" in result.stdout


def test_missing_script_is_one_line(tmp_path: Path) -> None:
    result = run_cli("compiles", str(tmp_path / "nope.py"))
    assert result.code == 2
    assert result.stderr.count("\n") == 1 and "hloscope: error:" in result.stderr


def test_explanations_naming_a_source_with_spaces() -> None:
    # JAX names a function defined in a doctest `<doctest README.md[1]>:1`; a source
    # read up to its first space lost the function's name (and its explanation).
    from hloscope.sources.jax.capture import parse_explanation

    message = (
        "TRACING CACHE MISS at <doctest README.md[2]>:3 (<module>):\n"
        "  for predict defined at <doctest README.md[1]>:1\n"
        "  all previously seen cache keys differ. For the closest previous key:\n"
        "  different input types:\n"
        "  * at x, now f32[16,4] and before f32[8,4]"
    )
    explanation = parse_explanation(message)
    assert explanation is not None
    assert (explanation.function, explanation.source) == ("predict", "<doctest README.md[1]>:1")
    assert explanation.cause == "different input types: at x, now f32[16,4] and before f32[8,4]"
    never = parse_explanation(
        "TRACING CACHE MISS at a b/c.py:3 (<module>):\n  never seen function:\n"
        "    step id=140386129431904 defined at a b/c.py:1"
    )
    assert never is not None and (never.function, never.cause) == ("step", "never seen function")


def test_nested_jits_compile_once_under_the_outer_one(tmp_path: Path) -> None:
    # Explanations of the inner function, traced inside the outer one, come first
    # and compile nothing of their own: each compilation gets its own function's.
    prog = script(
        tmp_path,
        """
        import jax, jax.numpy as jnp

        @jax.jit
        def inner(x):
            return x + 1

        @jax.jit
        def outer(x):
            return inner(x) * 2

        outer(jnp.ones(3)); outer(jnp.ones(5))
        write_sizes(sys.argv[1], outer=outer, inner=inner)
        """,
    )
    sizes_file = tmp_path / "sizes.json"
    doc = run_cli("compiles", str(prog), str(sizes_file), "--json").json()
    assert json.loads(sizes_file.read_text()) == {"outer": 2, "inner": 0}
    assert [f["function"] for f in doc["functions"]] == ["outer"]
    assert changes_of(doc, "outer") == [
        {"path": "x", "before": "f32[3]", "after": "f32[5]", "kind": "type"}
    ]


def test_only_the_latest_modules_are_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from hloscope.sources.jax import capture

    monkeypatch.setattr(capture, "KEEP_MODULES", 2)
    prog = script(
        tmp_path,
        """
        import jax, jax.numpy as jnp
        k = jax.jit(lambda x: x * 5)
        for n in (2, 3, 4, 5):
            k(jnp.zeros(n))
        """,
    )
    run = capture.record_script(str(prog), [], stdout_to_stderr=False)
    kept = [c.module is not None for c in run.compiles]
    assert kept[-2:] == [True, True] and kept.count(True) == 2
    assert run.modules_dropped == len(run.compiles) - 2


def test_timeout_reports_what_was_recorded(tmp_path: Path) -> None:
    prog = script(
        tmp_path,
        """
        import time, jax, jax.numpy as jnp
        jax.jit(lambda x: x + 4)(jnp.ones(2))
        time.sleep(120)
        """,
    )
    sleep = prog.read_text().splitlines().index("time.sleep(120)") + 1
    result = run_cli("compiles", str(prog), "--timeout", "3", "--json")
    assert result.code == 2
    assert result.json()["summary"]["compiles"] == 1
    lines = [line for line in result.stderr.splitlines() if line.startswith("hloscope:")]
    assert lines == [
        f"hloscope: error: {prog}: stopped after 3 s (--timeout 3), while running {prog}:{sleep}"
    ]


@pytest.mark.slow
def test_persistent_cache_hits_and_no_extra_log_lines(tmp_path: Path) -> None:
    # In processes of their own: JAX sets its persistent cache up once per process.
    import os
    import subprocess
    import sys

    from conftest import ROOT

    prog = script(
        tmp_path,
        """
        import jax, jax.numpy as jnp
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
        jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
        jax.jit(lambda x: jnp.sin(x) * 3)(jnp.ones(17))
        """,
    )
    env = {
        **os.environ,
        "JAX_COMPILATION_CACHE_DIR": str(tmp_path / "cache"),
        "PYTHONPATH": str(ROOT / "src"),
    }
    runs = [
        subprocess.run(
            [sys.executable, "-m", "hloscope", "compiles", str(prog), "--json"],
            capture_output=True,
            text=True,
            env=env,
            check=True,
        )
        for _ in range(2)
    ]
    first, second = (json.loads(run.stdout) for run in runs)
    assert first["summary"]["persistent_cache_hits"] == 0
    assert second["summary"]["persistent_cache_hits"] == len(second["compiles"]) > 0
    assert all(row["persistent_cache_hit"] for row in second["compiles"])
    # JAX raises its cache messages to warnings while explaining misses: the
    # program, which did not ask for explanations, does not see them.
    assert all("PERSISTENT COMPILATION CACHE" not in run.stderr for run in runs)
    assert all("Writing" not in run.stderr for run in runs)


def test_a_program_that_asked_for_explanations_still_sees_them(tmp_path: Path) -> None:
    log = tmp_path / "explained.log"
    prog = script(
        tmp_path,
        f"""
        import logging
        handler = logging.FileHandler({str(log)!r})
        logging.getLogger("jax").addHandler(handler)
        import jax, jax.numpy as jnp
        jax.config.update("jax_explain_cache_misses", True)
        e = jax.jit(lambda x: x - 9)
        e(jnp.ones(2)); e(jnp.ones(6))
        logging.getLogger("jax").removeHandler(handler)
        handler.close()
        jax.config.update("jax_explain_cache_misses", False)
        """,
    )
    doc = run_cli("compiles", str(prog), "--json").json()
    assert doc["summary"]["compiles"] == 2
    assert changes_of(doc, "<lambda>")[-1]["after"] == "f32[6]"
    assert log.read_text().count("TRACING CACHE MISS") == 2


def test_compilations_in_another_thread_are_counted(tmp_path: Path) -> None:
    prog = script(
        tmp_path,
        """
        import threading
        import jax, jax.numpy as jnp

        @jax.jit
        def in_main(x):
            return x + 2

        @jax.jit
        def in_worker(x):
            return x * 3

        def work():
            for n in (3, 4, 5):
                in_worker(jnp.zeros(n))

        worker = threading.Thread(target=work)
        worker.start()
        for n in (3, 4):
            in_main(jnp.zeros(n))
        worker.join()
        write_sizes(sys.argv[1], in_main=in_main, in_worker=in_worker)
        """,
    )
    sizes_file = tmp_path / "sizes.json"
    doc = run_cli("compiles", str(prog), str(sizes_file), "--json").json()
    functions = by_function(doc)
    assert {name: functions[name]["compiles"] for name in ("in_main", "in_worker")} == json.loads(
        sizes_file.read_text()
    )
    assert changes_of(doc, "in_main") == [
        {"path": "x", "before": "f32[3]", "after": "f32[4]", "kind": "type"}
    ]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["README.md"], "expected a Python script"),
        (["samples/recompiles.py", "--args", "x"], "after --, when they clash"),
        (["samples/recompiles.py:predict", "extra"], "unexpected arguments extra"),
    ],
)
def test_bad_command_lines_are_one_line(args: list[str], message: str) -> None:
    result = run_cli("compiles", *args, "--json")
    assert result.code == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and message in result.stderr


ONE_FUNCTION = """
import jax, jax.numpy as jnp

@jax.jit
def f(x, s):
    return jnp.sin(x) * s

def args():
    return (jnp.ones(8), 2.0)

def squared():
    return (jnp.ones(8),)

def cubed():
    return (jnp.ones(8),)
"""


def lowered_op_count(lowered) -> int:
    """The ops JAX's lowered module shows inside its functions, returns left out: what
    `lowered.as_text()` prints, one op a line."""
    lines = lowered.as_text().splitlines()
    return sum(1 for line in lines if " = " in line and line.strip().startswith("%"))


def test_compiles_counts_ops_as_every_other_view_and_jax_do(tmp_path: Path) -> None:
    import jax.numpy as jnp

    module = tmp_path / "fonly.py"
    module.write_text(ONE_FUNCTION)
    target = f"{module}:f"
    doc = run_cli("compiles", target, "--args", f"{module}:args", "--json").json()
    (compile_,) = doc["compiles"]
    import jax

    lowered = jax.jit(lambda x, s: jnp.sin(x) * s).lower(jnp.ones(8), 2.0)
    assert compile_["ops"] == lowered_op_count(lowered) == 4
    inspected = run_cli("inspect", target, "--args", f"{module}:args", "--json").json()
    assert compile_["ops"] == inspected["total_ops"]
    assert by_function(doc)["f"]["ops_range"] == [4, 4]


def test_a_target_hloscope_calls_has_no_call_site_and_says_so(tmp_path: Path) -> None:
    module = tmp_path / "fonly.py"
    module.write_text(ONE_FUNCTION)
    run = run_cli("compiles", f"{module}:f", "--args", f"{module}:args", "--json")
    (compile_,) = run.json()["compiles"]
    assert compile_["call_site"] is None
    assert compile_["called_by_hloscope"] is True
    text = run_cli("compiles", f"{module}:f", "--args", f"{module}:args").stdout
    assert "hloscope (--args)" in text
    assert "bin/hloscope" not in text
    # A script's own call is the user's line.
    prog = script(tmp_path, ONE_FUNCTION + "\nf(*args())\n")
    (compile_,) = run_cli("compiles", str(prog), "--json").json()["compiles"]
    assert compile_["call_site"].endswith(
        f"prog.py:{prog.read_text().splitlines().index('f(*args())') + 1}"
    )
    assert compile_["called_by_hloscope"] is False


def test_every_cause_of_a_functions_recompilations_is_named(tmp_path: Path) -> None:
    prog = script(
        tmp_path,
        """
        import jax, jax.numpy as jnp

        @jax.jit
        def f(x, s):
            return jnp.sin(x) * s

        a, b = jnp.ones(4), jnp.ones(8)
        f(a, 2.0); f(b, 2.0); f(b.astype(jnp.bfloat16), 2.0); f(b, jnp.float32(2.0))
        """,
    )
    doc = run_cli("compiles", str(prog), "--json").json()
    f = by_function(doc)["f"]
    assert f["compiles"] == 4
    causes = f["likely_causes"]
    assert len(causes) == 3, causes
    assert any(c.startswith("x took 2 shapes") for c in causes)
    assert any(c.startswith("x took 2 dtypes (f32, bf16)") for c in causes)
    assert any(c.startswith("s is a Python scalar (weak type)") for c in causes)
    assert f["likely_cause"] == causes[0]
    # What JAX itself explained: each cause is among its changes.
    changes = changes_of(doc, "f")
    assert {c["path"] for c in changes} == {"x", "s"}
    # The ops of the four modules differ (a float32 s needs no convert): the range.
    ops = [c["ops"] for c in doc["compiles"] if c["function"] == "f"]
    assert f["ops_range"] == [min(ops), max(ops)] and min(ops) < max(ops)

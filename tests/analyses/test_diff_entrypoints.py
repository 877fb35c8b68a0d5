"""`hloscope diff` of two entrypoints lowered in one process: a scanned block with
`jax.checkpoint` (tests/fixtures/scan_remat_diff/scan.py) against the same block
without it (scan_v2.py). Each side reads as if lowered alone, and every change the
report lists reads different on its two sides."""

from __future__ import annotations

import re

import pytest

SCAN = "tests/fixtures/scan_remat_diff"
ARGS = ("--args", f"{SCAN}/scan.py:example_args")


@pytest.fixture(scope="module")
def report() -> dict:
    from conftest import run_cli

    run = run_cli("diff", f"{SCAN}/scan.py:step", f"{SCAN}/scan_v2.py:step", *ARGS, "--json")
    assert run.code == 1, run.stderr
    return run.json()


def _file(where: str | None) -> str | None:
    """The file of an instance's location (`fn %3 (path/scan.py:18)`), None without one."""
    found = re.search(r"\(([^()]*):\d+\)$", where or "")
    return found.group(1).rpartition("/")[2] if found else None


def test_each_side_has_the_locations_of_its_own_file(report: dict) -> None:
    # JAX's caches reuse an inner jit's lowering (`dynamic_update_index_in_dim`)
    # with the locations of the program lowered first: B's ops must not be at A's lines.
    sides: dict[str, set[str | None]] = {"a": set(), "b": set()}
    for change in report["changes"]:
        for instance in change["instances"]:
            for side in ("a", "b"):
                if instance[side] is not None:
                    sides[side].add(_file(instance[side]))
    added = [
        _file(i["b"]) for c in report["changes"] if c["kind"] == "added" for i in c["instances"]
    ]
    assert "scan_v2.py" in added
    assert set(added) <= {"scan_v2.py", None}
    assert sides["b"] <= {"scan_v2.py", None}
    assert sides["a"] <= {"scan.py", None}


def test_no_change_reads_the_same_on_both_sides(report: dict) -> None:
    # The loop gained carried values, so the counter and the others moved: an op
    # reading one of them is the same op or says which argument moved where, never
    # `a region argument → a region argument`.
    alike = []
    for change in report["changes"]:
        for part in change["detail"].split("; "):
            if " → " not in part:
                continue
            was, now = part.split(" → ", 1)
            was = re.sub(r"^operand \d+: ", "", was)
            if was == now or was.endswith(" " + now):
                alike.append((change["op"], part))
    assert alike == []
    assert report["summary"]["changed"] > 0

"""`make bench AGAINST=REV`: this tree and another revision of hloscope, side by side
in one run.

REV is checked out once into a git worktree under `bench/cache/trees/` (detached, so
no branch is made; reused while it is at REV). Both trees run on this Python and
these installed packages, each with its own `src/` first on `PYTHONPATH` (this
tree's too: an editable install may point at another checkout), so that the only
difference measured is hloscope's own code. A second environment (a venv with
its own JAX and jaxlib) would add what the bench must not measure: other copies of
the same libraries, read from other files, and minutes of installing. REV's declared
dependencies are checked against this environment first; where they are not met
(059e836 pins typer 0.29, this tree keeps typer below it), pip installs what REV
needs into an overlay folder beside its tree (`cache/overlays/`, once), which comes
after REV's `src/` on its path: REV then runs as its own pins say, on the same JAX
and jaxlib. Where that fails the bench stops and says why.

Pure parts only here (the trees, the arguments, the table), so that a test can
import this module without JAX.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path

DEFAULT_AGAINST = "059e836"
"""The revision issue 39 measured against (the last one before the typed IR)."""

SECTIONS = (
    "load",
    "startup",
    "diff",
    "browser",
    "entrypoint",
    "compiles",
    "passes",
    "profile",
    "placement --why",
    "for",
    "cache",
    "profile --for",
    "compare",
)


@dataclasses.dataclass(frozen=True)
class Tree:
    """A tree of hloscope's sources the bench runs."""

    label: str
    """`this tree`, or the revision as given (`059e836`)."""
    root: Path
    overlay: Path | None = None
    """Where REV's own pins that this environment does not meet are installed."""

    @property
    def src(self) -> Path:
        return self.root / "src"

    def env(self, base: dict[str, str]) -> dict[str, str]:
        """`base` with this tree's `src/` first on `PYTHONPATH` (then its overlay)."""
        own = [str(self.src)] + ([str(self.overlay)] if self.overlay is not None else [])
        paths = [*own, *filter(None, base.get("PYTHONPATH", "").split(os.pathsep))]
        return {**base, "PYTHONPATH": os.pathsep.join(paths)}


def parse_arguments(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="bench/run.py",
        description="hloscope against its floors (and another revision), in one run",
    )
    parser.add_argument("--quick", action="store_true", help="skip the 1M-op modules")
    parser.add_argument(
        "--against",
        metavar="REV",
        default="",
        help="also measure the hloscope of git revision REV, interleaved with this "
        f"tree's runs (make bench: {DEFAULT_AGAINST}); empty: this tree only",
    )
    parser.add_argument(
        "--only",
        metavar="SECTION[,SECTION]",
        default="",
        help="measure these sections only: " + ", ".join(SECTIONS),
    )
    parser.add_argument(
        "--repeats",
        metavar="K",
        type=int,
        default=1,
        help="run every measurement K times as often (medians of more runs: a shared "
        "machine's speed varies by a fifth from one second to the next)",
    )
    options = parser.parse_args(argv)
    if options.repeats < 1:
        parser.error("--repeats must be at least 1")
    only = [s.strip() for s in options.only.split(",") if s.strip()]
    unknown = [s for s in only if s not in SECTIONS]
    if unknown:
        parser.error(f"unknown section {unknown[0]!r}; choose from {', '.join(SECTIONS)}")
    options.sections = tuple(s for s in SECTIONS if not only or s in only)
    return options


def _git(root: Path, *args: str) -> str:
    run = subprocess.run(
        ["git", "-C", str(root), *args], capture_output=True, text=True, check=False
    )
    if run.returncode != 0:
        raise SystemExit(f"git {' '.join(args)}: {run.stderr.strip() or run.returncode}")
    return run.stdout.strip()


def checkout(rev: str, root: Path, cache: Path) -> Tree:
    """REV's tree, checked out (once) as a detached worktree under `cache/trees/`."""
    commit = _git(root, "rev-parse", "--verify", f"{rev}^{{commit}}")
    folder = cache / "trees" / commit[:12]
    if not (folder / "src" / "hloscope").is_dir() or _git(folder, "rev-parse", "HEAD") != commit:
        _git(root, "worktree", "prune")
        if folder.exists():
            _git(root, "worktree", "remove", "--force", str(folder))
        folder.parent.mkdir(parents=True, exist_ok=True)
        _git(root, "worktree", "add", "--detach", str(folder), commit)
    unmet = unmet_requirements(folder / "pyproject.toml")
    if not unmet:
        return Tree(rev, folder)
    overlay = cache / "overlays" / commit[:12]
    if not (overlay / ".installed").is_file():
        shutil.rmtree(overlay, ignore_errors=True)
        wanted = [text.partition(" (installed:")[0] for text in unmet]
        print(f"{rev} needs {', '.join(unmet)}: installing it for {rev} alone ...", flush=True)
        run = subprocess.run(
            [sys.executable, "-m", "pip", "install", "--quiet", "--target", str(overlay), *wanted],
            capture_output=True,
            text=True,
            check=False,
        )
        if run.returncode != 0:
            raise SystemExit(
                f"{rev} needs {', '.join(unmet)}, which this environment does not have, and "
                f"pip could not install it beside {rev}: {run.stderr.strip()[-300:]}"
            )
        (overlay / ".installed").write_text("\n".join(wanted) + "\n")
    return Tree(rev, folder, overlay)


def unmet_requirements(pyproject: Path) -> list[str]:
    """The runtime dependencies `pyproject` declares that the installed packages do not
    satisfy."""
    from packaging.requirements import Requirement

    declared = tomllib.loads(pyproject.read_text())["project"].get("dependencies", [])
    unmet = []
    for text in declared:
        requirement = Requirement(text)
        if requirement.marker is not None and not requirement.marker.evaluate():
            continue
        try:
            installed = metadata.version(requirement.name)
        except metadata.PackageNotFoundError:
            unmet.append(text)
            continue
        if not requirement.specifier.contains(installed, prereleases=True):
            unmet.append(f"{text} (installed: {installed})")
    return unmet


# --------------------------------------------------------------------------- table


def ratio_text(value: float | None) -> str:
    return "" if value is None else f"{value:.2f}x"


def seconds_text(value: float | None) -> str:
    return "" if value is None else f"{value:.3f} s"


def goal_text(goal: float | None, goal_over: float | None) -> str:
    """`1.5x` (a ratio to the floor) or `+0.10 s` (seconds over it)."""
    if goal_over is not None:
        return f"+{goal_over:.2f} s"
    return "" if goal is None else f"{goal:g}x"

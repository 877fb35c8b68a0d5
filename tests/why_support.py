"""What the `placement --why` tests share: Shardy's own dump of a sample's function,
read from the files XLA writes (the oracle the causes are compared with), and hloscope
run as a user runs it, in a child process on 8 CPU devices."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

from conftest import ROOT, line_of

ENV = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=8"}


def hloscope_json(*argv: str, cwd: Path = ROOT, env: dict[str, str] | None = None) -> Any:
    """`hloscope ARGV --json` in a child process: its JSON document (it must exit 0)."""
    done = subprocess.run(
        [sys.executable, "-m", "hloscope", *argv, "--json"],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=300,
        env=env or ENV,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def compile_in_child(
    sample: str,
    function: str,
    factory: str,
    *,
    verbose: Path | None = None,
    plain: Path | None = None,
) -> None:
    """`sample`'s `function` lowered on `factory`'s arguments and compiled in a child
    process, dumped into `verbose` with Shardy's files (`shardy-verbose`) and into
    `plain` without them (each when given)."""
    dumps = [(folder, shardy) for folder, shardy in ((verbose, True), (plain, False)) if folder]
    compiles = "".join(
        f"m.{function}.lower(*m.{factory}()).compile(compiler_options={{"
        f"'xla_dump_to': {str(folder)!r}"
        + (", 'xla_dump_hlo_pass_re': 'shardy-verbose'" if shardy else "")
        + "})\n"
        for folder, shardy in dumps
    )
    code = textwrap.dedent(
        f"""
        import importlib.util
        spec = importlib.util.spec_from_file_location("s", {sample!r})
        m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
        """
    )
    subprocess.run(
        [sys.executable, "-c", code + compiles], check=True, cwd=ROOT, timeout=300, env=ENV
    )


def shardy_dump(folder: Path) -> str:
    """Shardy's after-propagation dump in `folder`, as XLA wrote it."""
    (path,) = folder.glob("shardy/*/02.after_propagation.mlir")
    return path.read_text()


def argument_origins(dump: str) -> dict[int, dict[str, str]]:
    """Shardy's `sdy.sharding_origins` of each entry argument: index -> {axis: origin}."""
    main = re.search(r"func\.func @main\((.*?)\) ->", dump)
    assert main is not None, "no @main in Shardy's dump"
    out = {}
    for chunk in main.group(1).split("%arg")[1:]:
        index = int(chunk.partition(":")[0])
        origins = re.search(r"sdy\.sharding_origins = \{([^}]*)\}", chunk)
        if origins:
            out[index] = dict(re.findall(r'(\w+) = "([^"]+)"', origins.group(1)))
    return out


def source_line(sample: str, needle: str) -> str:
    """`sample:LINE` of the sample's first line holding `needle`."""
    return f"{sample}:{line_of(ROOT / sample, needle)}"

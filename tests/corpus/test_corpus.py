"""Every file of the shared corpus through `hloscope inspect --json`.

The oracle is jaxlib itself: a file that `ir.Module.parse` accepts in a context
with JAX's dialects, that XLA's `hlo_module_from_text` accepts, or that
`jax.export.deserialize` accepts must load with exit 0. Every other file must exit
2 with one line on stderr. No file may produce a traceback or an internal error.
"""

import json
from pathlib import Path

import pytest

from conftest import CORPUS, corpus_files, corpus_sample_step, run_cli


def jaxlib_accepts(path: Path) -> bool:
    from jaxlib.mlir import ir

    from hloscope.ir.context import mlir_context
    from hloscope.native_stderr import native_stderr_captured

    data = path.read_bytes()
    with native_stderr_captured():
        try:
            with mlir_context():
                ir.Module.parse(data)
            return True
        except Exception:
            pass
        try:
            from hloscope.ir.context import xla_hlo

            xla_hlo().hlo_module_from_text(data.decode("utf-8"))
            return True
        except Exception:
            pass
        if path.suffix == ".fb":
            import jax

            try:
                jax.export.deserialize(bytearray(data))
                return True
            except Exception:
                pass
    return False


@pytest.mark.corpus
@pytest.mark.slow
def test_corpus_sweep():
    files = corpus_files()
    if not files:
        pytest.skip(f"the shared corpus is not at {CORPUS}")
    loaded = refused = 0
    failures = []
    for path in files:
        run = run_cli("inspect", str(path), "--json")
        lines = run.stderr.splitlines()
        problem = None
        if "Traceback" in run.stderr or "internal error" in run.stderr:
            problem = f"crashed: {run.stderr[-300:]}"
        elif run.code == 0:
            loaded += 1
            try:
                doc = json.loads(run.stdout)
            except json.JSONDecodeError:
                problem = "exit 0 without a JSON document"
            else:
                if doc.get("schema_version") != 1 or "functions" not in doc:
                    problem = "JSON without the contract's keys"
            if lines:
                problem = f"exit 0 with stderr: {run.stderr[:200]}"
        elif run.code == 2:
            refused += 1
            if len(lines) != 1 or not lines[0].startswith("hloscope: error: "):
                problem = f"exit 2 without one error line: {run.stderr[:300]!r}"
            elif jaxlib_accepts(path):
                problem = f"jaxlib accepts it but hloscope refused: {lines[0][:300]}"
        else:
            problem = f"exit {run.code}"
        if run.code == 0 and not problem and not jaxlib_accepts(path):
            problem = "hloscope loads it but jaxlib's parsers refuse it"
        if problem:
            failures.append(f"{path.relative_to(CORPUS)}: {problem}")
    print(f"corpus: {len(files)} files, {loaded} loaded, {refused} refused, {len(failures)} bad")
    assert not failures, "\n".join(failures[:40])
    assert loaded > 1000 // corpus_sample_step()

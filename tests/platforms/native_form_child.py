"""Run as a child process by test_native_form.py: `python native_form_child.py WHICH`
prints one JSON object.

- `tpu`: the reduced LLM step (samples/llm_step.py, its default size) compiled for
  tpu:v5e:2x2, whose optimized module does not convert to MLIR: what hloscope read
  (`ir`), XLA's own text of that compile (`xla_text`), and the placement and params
  documents of `--json`.
- `cpu`: a smaller LLM step compiled for 4 host devices, which converts: the placement
  of the module as converted and as XLA's own form (`hloscope.ir.hlo_native`), from
  the same compile.
"""

from __future__ import annotations

import json
import sys
from typing import Any


def documents(loaded: Any) -> dict[str, Any]:
    from hloscope import reports
    from hloscope.render.json import params_json, placement_json

    return {
        "ir": loaded.source.ir,
        "placement": placement_json(reports.placement_report(loaded)),
        "params": params_json(reports.params_report(loaded)),
    }


def placement_facts(module: Any, declared: Any) -> dict[str, Any]:
    from hloscope.analyses.fusions import analyze_fusions, summarize_fusions
    from hloscope.analyses.placement.analysis import analyze_placement
    from hloscope.analyses.structure import analyze_structure

    placement = analyze_placement(module, declared_meshes=declared)
    fusions = summarize_fusions(analyze_fusions(module))
    return {
        "total_ops": placement.total_ops,
        "structure_ops": analyze_structure(module).total_ops,
        "tuple_ops": sum(
            1
            for op in module.ops
            if op.name in ("hlo.tuple", "hlo.get-tuple-element") and op.function is not None
        ),
        "fusions": fusions.fusions,
        "unfused_ops": fusions.unfused_ops,
        "fused_ops": fusions.fused_ops,
        "unfused_by_category": dict(fusions.unfused_by_category),
        "partitions": placement.partitions,
        "replicas": placement.replicas,
        "meshes": [[m.name, list(map(list, m.axes))] for m in placement.meshes],
        "shardings": [[s.kind, s.value, s.sharding, s.on_mesh] for s in placement.shardings],
        "op_shardings": placement.op_shardings,
        "results": [r.type for r in module.entry.results],
        "aliases": dict(module.input_output_aliases),
        "replica_groups": [
            op.attributes["replica_groups"]
            for op in module.ops
            if "replica_groups" in op.attributes
        ],
    }


def main() -> None:
    from hloscope.compile_for import parse_compile_for
    from hloscope.sources.loader import LoadOptions, load

    which = sys.argv[1]
    step = "samples/llm_step.py"
    if which == "tpu":
        loaded = load(
            f"{step}:train_step",
            LoadOptions(
                args_factory=f"{step}:example_args",
                optimized=True,
                compile_for=parse_compile_for("tpu:v5e:2x2"),
            ),
        )
        assert loaded.compilation is not None
        out = {**documents(loaded), "xla_text": loaded.compilation.hlo_text}
    else:
        from hloscope.ir.hlo import from_hlo_proto, hlo_module_from_proto
        from hloscope.ir.hlo_native import build_hlo_native_model

        loaded = load(
            f"{step}:train_step", LoadOptions(args_factory=f"{step}:example_args", optimized=True)
        )
        compilation = loaded.compilation
        assert compilation is not None
        converted = from_hlo_proto(compilation.hlo_proto, compilation.hlo_text, step, [])
        native = build_hlo_native_model(hlo_module_from_proto(compilation.hlo_proto))
        out = {
            "ir": converted.format,
            "converted": placement_facts(converted.model, loaded.declared_meshes),
            "native": placement_facts(native, loaded.declared_meshes),
            "xla_text": compilation.hlo_text,
        }
    print(json.dumps(out))


if __name__ == "__main__":
    main()

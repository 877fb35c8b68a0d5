"""What JAX itself compiles for each platform of tests/platforms: run as a child
process (`python jax_truth.py CASES_JSON`), it compiles the functions of `targets.py`
(or of a sample) for each TPU topology or GPU spec with `jax.experimental.topologies`,
and prints one JSON object: per case, the devices, the top-level fusions, the
collectives, the entry's parameters and the partitions of `compiled.as_text()`, and
`compiled.memory_analysis()` (with `assignment`, also the device assignment JAX
compiled and what the text says of it: `device_facts`); or, where XLA refuses the
program, its message.
`python jax_truth.py --dumps FOLDER` writes dumps of the sharded block instead.

The facts are read from XLA's own text here, not through hloscope, so that the tests
compare hloscope's reports with what JAX made.
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path
from typing import Any

import jax
from jax.experimental import topologies
from jax.sharding import SingleDeviceSharding

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent

MEMORY_FIELDS = {
    "argument_bytes": "argument_size_in_bytes",
    "output_bytes": "output_size_in_bytes",
    "temp_bytes": "temp_size_in_bytes",
    "alias_bytes": "alias_size_in_bytes",
    "generated_code_bytes": "generated_code_size_in_bytes",
}

COLLECTIVES = (
    "all-reduce",
    "all-gather",
    "reduce-scatter",
    "all-to-all",
    "collective-permute",
    "collective-broadcast",
    "ragged-all-to-all",
)

_COMPUTATION = re.compile(r"^(?:ENTRY )?%?(?P<name>[\w.\-]+) \(.*\{\s*$")
_INSTRUCTION = re.compile(
    r"^\s+(?:ROOT )?%?(?P<name>[\w.\-]+) = (?P<shape>.+?) (?P<opcode>[a-z][\w\-]*)\("
)
_CALLS = re.compile(r"\bcalls=%?(?P<callee>[\w.\-]+)")
_KIND = re.compile(r"\bkind=(?P<kind>k\w+)")
_BACKEND_KIND = re.compile(r'"fusion_backend_config":\{"kind":"(?P<kind>[^"]+)"')


def instructions(text: str) -> list[dict[str, str]]:
    """Every instruction of XLA's text: its computation, name, opcode and line."""
    found: list[dict[str, str]] = []
    computation = ""
    for line in text.splitlines():
        header = _COMPUTATION.match(line)
        if header:
            computation = header["name"]
            continue
        instruction = _INSTRUCTION.match(line)
        if instruction and computation:
            found.append(
                {
                    "computation": computation,
                    "name": instruction["name"],
                    "opcode": instruction["opcode"],
                    "line": line,
                }
            )
    return found


def facts_of_text(text: str) -> dict[str, Any]:
    """The top-level fusions (those not inside a fused computation) and the
    collectives of a compiled module's text."""
    ops = instructions(text)
    fusion_ops = [op for op in ops if op["opcode"] in ("fusion", "fusion-start")]
    fused = {m["callee"] for op in fusion_ops if (m := _CALLS.search(op["line"]))}
    fusions = []
    for op in fusion_ops:
        if op["computation"] in fused or op["opcode"] != "fusion":
            continue
        kind = _KIND.search(op["line"])
        backend = _BACKEND_KIND.search(op["line"])
        fusions.append(
            {
                "name": op["name"],
                "kind": kind["kind"] if kind else None,
                "backend_kind": backend["kind"] if backend else None,
            }
        )
    collectives: dict[str, dict[str, int]] = {}
    for op in ops:
        base = op["opcode"].removesuffix("-start")
        if base not in COLLECTIVES or op["computation"] in fused:
            continue
        entry = collectives.setdefault(base.replace("-", "_"), {"count": 0, "async": 0})
        entry["count"] += 1
        entry["async"] += op["opcode"].endswith("-start")
    nested = [op["name"] for op in fusion_ops if op["computation"] in fused]
    header = text.splitlines()[0]
    partitions = re.search(r"\bnum_partitions=(\d+)", header)
    replicas = re.search(r"\breplica_count=(\d+)", header)
    return {
        "fusions": fusions,
        "nested_fusions": nested,
        "collectives": collectives,
        "parameters": entry_parameters(text),
        "partitions": int(partitions[1]) if partitions else 1,
        "replicas": int(replicas[1]) if replicas else 1,
    }


def entry_parameters(text: str) -> list[str]:
    """The shapes of the ENTRY computation's parameters (one device's), in order,
    without their layouts."""
    entry = text[text.index("\nENTRY ") :]
    found = re.findall(
        r"^\s+%?[\w.\-]+ = (\w+\[[\d,]*\])\S* parameter\((\d+)\)", entry, flags=re.MULTILINE
    )
    return [shape for shape, _ in sorted(found, key=lambda f: int(f[1]))]


_REPLICA_GROUPS = re.compile(r"\breplica_groups=(?P<groups>.*?), \w+=")
_PARAMETER_SHARDING = re.compile(
    r"\bparameter\((?P<index>\d+)\), sharding=(?P<sharding>\{.*?\})(?:, \w+=|$)"
)


def device_facts(text: str) -> dict[str, Any]:
    """What a compiled module's text says of its devices: each ENTRY parameter's
    sharding, in order, and each collective's replica groups (every computation's,
    in the text's order, `{{0,1},...}` or XLA's `mesh[...]` form), with its opcode."""
    entry = text[text.index("\nENTRY ") :]
    found = [(int(m["index"]), m["sharding"]) for m in _PARAMETER_SHARDING.finditer(entry)]
    groups = []
    for op in instructions(text):
        match = _REPLICA_GROUPS.search(op["line"])
        if match:
            groups.append([op["opcode"], match["groups"]])
    return {
        "argument_shardings": [sharding for _, sharding in sorted(found)],
        "replica_groups": groups,
    }


def topology(case: dict[str, Any]) -> Any:
    if case["platform"] == "tpu":
        kwargs = dict(case.get("kwargs", {}))
        return topologies.get_topology_desc(case["topology"], "tpu", **kwargs)
    config = (ROOT / case["gpu_config"]).read_text()
    return topologies.get_topology_desc(
        platform="cuda", target_config=config, topology=case["topology"]
    )


def load(path: str) -> Any:
    """A module by its path from the repository root (as hloscope imports a target)."""
    spec = importlib.util.spec_from_file_location(Path(path).stem, ROOT / path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def compile_case(case: dict[str, Any]) -> dict[str, Any]:
    """The devices JAX makes for the case's topology; unless `devices_only`, what it
    compiles of `case["function"]` of `case["module"]` (a path from the repository
    root) for them: over all of them where `sharded` (the module's `DEVICES` set to
    them), else on the first."""
    devices = list(topology(case).devices)
    result: dict[str, Any] = {
        "devices": len(devices),
        "device_kind": str(devices[0].device_kind),
        "slices": len({getattr(d, "slice_index", 0) for d in devices}),
    }
    if case.get("devices_only"):
        return result
    module = load(case["module"])
    function = getattr(module, case["function"])
    # A jit's trace is cached by its arguments' shapes: the sharding constraints
    # inside would keep the mesh of the case before.
    jax.clear_caches()
    if case.get("sharded"):
        module.DEVICES = devices
        args = getattr(module, case["args"])()
    else:
        one = SingleDeviceSharding(devices[0])
        args = jax.tree.map(
            lambda a: jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=one),
            getattr(module, case["args"])(),
        )
    try:
        compiled = function.lower(*args).compile()
    except Exception as exc:  # XLA refusing the program is a fact too.
        result["error"] = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return result
    stats = compiled.memory_analysis()
    result["memory"] = {ours: int(getattr(stats, theirs)) for ours, theirs in MEMORY_FIELDS.items()}
    result.update(facts_of_text(compiled.as_text()))
    if case.get("assignment"):
        # The device assignment JAX compiled: the mesh of the arguments' shardings,
        # flattened (for the sharded targets), with the ids of the topology's devices
        # in their own order, to tell the two apart.
        mesh = jax.tree.leaves(compiled.input_shardings)[0].mesh
        result["device_ids"] = [int(d.id) for d in mesh.devices.flat]
        result["topology_ids"] = [int(d.id) for d in devices]
        result.update(device_facts(compiled.as_text()))
    return result


def make_dumps(folder: Path) -> None:
    """The sharded block lowered over 8 host devices, as the dumps a user would
    bring: JAX's HLO text and StableHLO text of the lowering (`folder/sharded.hlo`,
    `folder/sharded.mlir`), and XLA's own dump folder of its CPU compilation (where
    XLA_FLAGS=--xla_dump_to points, set by the caller)."""
    jax.config.update("jax_num_cpu_devices", 8)
    module = load("tests/platforms/targets.py")
    lowered = module.sharded_block.lower(*module.sharded_args())
    (folder / "sharded.hlo").write_text(lowered.as_text(dialect="hlo", debug_info=True))
    (folder / "sharded.mlir").write_text(lowered.as_text(debug_info=True))
    lowered.compile()


def main() -> None:
    if sys.argv[1] == "--dumps":
        make_dumps(Path(sys.argv[2]))
        return
    cases: dict[str, dict[str, Any]] = json.loads(sys.argv[1])
    print(json.dumps({name: compile_case(case) for name, case in cases.items()}))


if __name__ == "__main__":
    main()

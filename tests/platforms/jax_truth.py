"""What JAX itself compiles for each platform of tests/platforms: run as a child
process (`python jax_truth.py CASES_JSON`), it compiles the functions of `targets.py`
(or of a sample) for each TPU topology or GPU spec with `jax.experimental.topologies`,
and prints one JSON object: per case, the devices, the top-level fusions, the
collectives, the entry's parameters and the partitions of `compiled.as_text()`, and
`compiled.memory_analysis()` (with `assignment`, also the device assignment JAX
compiled and what the text says of it: `device_facts`); or, where XLA refuses the
program, its message. A case with `loops` also gets the collectives in loops and the
async ones over every computation the entry reaches (`loop_facts_of_text`); one with
`make_mesh` builds the module's mesh with `jax.make_mesh` over the topology's devices
(samples/llm_step.py); one with `cycles` gets each kernel's `estimated_cycles` and the
program's `cost_analysis()` flops (`profile --for`).
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
import numpy as np
from jax.experimental import topologies
from jax.sharding import AxisType, Mesh, SingleDeviceSharding

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
    """Every instruction of XLA's text: its computation, name, opcode, shape and line."""
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
                    "shape": instruction["shape"],
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
                "ops": _fused_instructions(ops, op),
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
    # A multi-slice program's collectives between slices: libtpu's sends tagged with
    # the collective they carry out; what each moves, its operand (the first element
    # of its result).
    megascale: dict[str, dict[str, int]] = {}
    for op in ops:
        tag = _MEGASCALE.search(op["line"])
        if op["opcode"] == "send" and tag:
            entry = megascale.setdefault(tag[1].lower(), {"count": 0, "bytes": 0})
            entry["count"] += 1
            entry["bytes"] += _shape_bytes(re.findall(r"\w+\[[\d,]*\]", op["shape"])[0])
    header = text.splitlines()[0]
    partitions = re.search(r"\bnum_partitions=(\d+)", header)
    replicas = re.search(r"\breplica_count=(\d+)", header)
    return {
        "fusions": fusions,
        "nested_fusions": nested,
        "megascale": megascale,
        "collectives": collectives,
        "parameters": entry_parameters(text),
        "partitions": int(partitions[1]) if partitions else 1,
        "replicas": int(replicas[1]) if replicas else 1,
    }


def _fused_instructions(ops: list[dict[str, str]], fusion: dict[str, str]) -> int:
    """The instructions a fusion holds: its computation's, a nested fusion standing for
    the instructions it holds, parameters left out."""
    called = _CALLS.search(fusion["line"])
    if called is None:
        return 0
    count = 0
    for op in ops:
        if op["computation"] != called["callee"] or op["opcode"] == "parameter":
            continue
        count += _fused_instructions(ops, op) if op["opcode"] == "fusion" else 1
    return count


_CALLED = re.compile(
    r"\b(?:calls|body|condition|to_apply|called_computations|branch_computations)="
    r"(\{[^}]*\}|%?[\w.\-]+)"
)
_BODY = re.compile(r"\bbody=%?(?P<body>[\w.\-]+)")
_ASYNC_TARGETS = (
    'custom_call_target="AsyncCollectiveStart"',
    'custom_call_target="AsyncCollectiveDone"',
)


def loop_facts_of_text(text: str) -> dict[str, Any]:
    """Per collective kind, over the computations the ENTRY reaches (fused ones
    included): how many there are, how many sit in a computation a while's body
    reaches, and how many run asynchronously (`-start` ops, and those in the TPU's
    async collective fusions: a computation ending in `AsyncCollectiveStart` or
    `AsyncCollectiveDone`, or one named `async_collective_fusion`)."""
    ops = instructions(text)
    entry = re.search(r"^ENTRY %?([\w.\-]+)", text, re.MULTILINE)
    assert entry is not None
    calls: dict[str, set[str]] = {}
    bodies: set[str] = set()
    async_computations: set[str] = set()
    for op in ops:
        for found in _CALLED.finditer(op["line"]):
            names = re.findall(r"%?([\w.\-]+)", found[1])
            calls.setdefault(op["computation"], set()).update(names)
        if op["opcode"] == "while" and (body := _BODY.search(op["line"])):
            bodies.add(body["body"])
        if any(target in op["line"] for target in _ASYNC_TARGETS):
            async_computations.add(op["computation"])

    def reach(roots: set[str]) -> set[str]:
        seen: set[str] = set()
        stack = list(roots)
        while stack:
            name = stack.pop()
            if name not in seen:
                seen.add(name)
                stack.extend(calls.get(name, ()))
        return seen

    reachable = reach({entry[1]})
    looped = reach(bodies)
    dones = {
        started[1]: op
        for op in ops
        if op["opcode"].endswith("-done") and (started := _DONE_OF.search(op["line"]))
    }
    collectives: dict[str, dict[str, int]] = {}
    # One collective a channel: the TPU's copies of an async collective in the
    # fusions that move it on share its channel_id; it is counted at its start (the
    # copy outside those fusions, else the first).
    started: dict[tuple[str, str], dict[str, str]] = {}
    for op in ops:
        base = op["opcode"].removesuffix("-start")
        channel = _CHANNEL.search(op["line"])
        if base in COLLECTIVES and op["computation"] in reachable and channel:
            key = (base, channel[1])
            copy = op["computation"].startswith("async_collective_fusion")
            if key not in started or (
                started[key]["computation"].startswith("async_collective_fusion") and not copy
            ):
                started[key] = op
    starts = {id(op) for op in started.values()}
    # The TPU's all-reduce fused with the slice each device keeps (the emitter
    # `SingleInputAllReduceScatterFusion`): a reduce-scatter to the fusion's result.
    scatters = {
        called["callee"]: op
        for op in ops
        if op["opcode"] == "fusion"
        and 'AllReduceScatterFusion"' in op["line"]
        and (called := _CALLS.search(op["line"]))
    }
    for op in ops:
        base = op["opcode"].removesuffix("-start")
        if base not in COLLECTIVES or op["computation"] not in reachable:
            continue

        if _CHANNEL.search(op["line"]) and id(op) not in starts:
            copied = collectives.setdefault(
                base.replace("-", "_"),
                {"count": 0, "async": 0, "in_loops": 0, "bytes": 0, "copies": 0},
            )
            copied["copies"] += 1
            continue
        computation = op["computation"]
        fusion = scatters.get(computation) if base == "all-reduce" else None
        if fusion is not None:
            base, op = "reduce-scatter", {**op, "shape": fusion["shape"]}
        entry_of = collectives.setdefault(
            base.replace("-", "_"),
            {"count": 0, "async": 0, "in_loops": 0, "bytes": 0, "copies": 0},
        )
        entry_of["count"] += 1
        # What it makes: a `-start`'s result holds its inputs too; its `-done`'s is
        # the result.
        made = dones.get(op["name"], op) if op["opcode"].endswith("-start") else op
        entry_of["bytes"] += _shape_bytes(made["shape"])
        entry_of["in_loops"] += computation in looped
        entry_of["async"] += (
            op["opcode"].endswith("-start")
            or computation in async_computations
            or computation.startswith("async_collective_fusion")
        )
    return {"collectives": collectives, "whiles": sum(op["opcode"] == "while" for op in ops)}


_CHANNEL = re.compile(r"\bchannel_id=(\d+)")
_MEGASCALE = re.compile(r'_xla_megascale_transfer_type="(\w+)"')
_DONE_OF = re.compile(r"-done\(%?([\w.\-]+)\)")
_ITEM_BYTES = {"pred": 1, "s8": 1, "u8": 1, "bf16": 2, "f16": 2, "s16": 2, "u16": 2}


def _shape_bytes(shape: str) -> int:
    """The bytes of an HLO shape (a tuple's summed), 4 a element where not listed."""
    total = 0
    for dtype, dims in re.findall(r"(\w+)\[([\d,]*)\]", shape):
        count = 1
        for dim in filter(None, dims.split(",")):
            count *= int(dim)
        total += count * _ITEM_BYTES.get(dtype, 8 if dtype.endswith("64") else 4)
    return total


_CYCLES = re.compile(r'"estimated_cycles":"(?P<cycles>\d+)"')


def cycles_of_text(text: str) -> dict[str, int]:
    """Each instruction's `estimated_cycles` in its backend_config, by name (the
    TPU's compiler writes one into the kernels it emits)."""
    found: dict[str, int] = {}
    for op in instructions(text):
        match = _CYCLES.search(op["line"])
        if match:
            found[op["name"]] = int(match["cycles"])
    return found


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
    if case.get("make_mesh"):
        # The program's own mesh (`module.make_mesh`), made by `jax.make_mesh` over
        # the topology's devices as the slice would.
        axes = tuple(case["make_mesh"])
        shape = (len(devices) // module.MODEL, module.MODEL)
        if case.get("in_device_order"):
            # Where `jax.make_mesh` refuses the topology (several slices): the mesh
            # over the devices in their own order, as hloscope compiles it then.
            module.make_mesh = lambda: Mesh(
                np.array(devices, dtype=object).reshape(shape),
                axes,
                axis_types=(AxisType.Auto,) * len(axes),
            )
        else:
            module.make_mesh = lambda: jax.make_mesh(
                shape, axes, axis_types=(AxisType.Auto,) * len(axes), devices=devices
            )
        args = getattr(module, case["args"])()
    elif case.get("sharded"):
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
    if case.get("text"):
        result["text"] = compiled.as_text()  # for a test that reads one line of it
    if case.get("loops"):
        result["loops"] = loop_facts_of_text(compiled.as_text())
        # What `jax.lax.scan` runs over: the stacked layers' leading dimension.
        result["loops"]["scan_length"] = int(module.LAYERS)
    if case.get("cycles"):
        # The TPU compiler's own estimate of each kernel, as its text writes it, and
        # XLA's cost analysis of the whole program (`profile --for`).
        result["cycles"] = cycles_of_text(compiled.as_text())
        # The TPU's reduce-scatters fused as an all-reduce and a slice.
        result["fused_reduce_scatters"] = [
            op["name"]
            for op in instructions(compiled.as_text())
            if op["opcode"] == "fusion" and '"emitter":"SingleInputAllReduceScatter' in op["line"]
        ]
        # The TPU's custom calls that do no work (an uninitialized buffer).
        result["allocate_buffers"] = [
            op["name"]
            for op in instructions(compiled.as_text())
            if op["opcode"] == "custom-call" and 'custom_call_target="AllocateBuffer"' in op["line"]
        ]
        cost = compiled.cost_analysis()
        cost = cost[0] if isinstance(cost, list) else cost
        result["cost_flops"] = float(cost["flops"]) if cost and "flops" in cost else None
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

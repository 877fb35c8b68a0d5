"""Placement where marks sit among unmarked ops: the analysis walks only the calls
and the marked ops of a function placed on the device, and must place every op as
a walk of every op would.

Each module mixes what makes that hard: a function reached both from device code
and from a host call (its ops run on both, `device|host`), marks inside the
regions of marked ops, explicit `device` marks, GPU streams, `execution_thread`.
The expected answers are those of the walk of every op, before it was made lazy.
"""

import re

from hloscope.analyses.placement import analyze_placement
from hloscope.analyses.structure import analyze_structure
from hloscope.ir import parse


def mlir(text):
    """`text` written short: `T` for the type, `[host]`, `[device]` and `[stream N]`
    for the marks."""
    text = re.sub(
        r"\[stream (\d+)\]", r'{mhlo.frontend_attributes = {_xla_stream_annotation = "\1"}}', text
    )
    text = re.sub(
        r"\[(host|device)\]", r'{mhlo.frontend_attributes = {_xla_compute_type = "\1"}}', text
    )
    return re.sub(r"\bT\b", "tensor<4xf32>", text)


def placement_of(text):
    return analyze_placement(parse.parse_mlir(mlir(text), "placement.mlir").model)


def placed(placement):
    return [(p.function, p.op, p.compute_type, p.via) for p in placement.placed_ops]


def regions(placement):
    return [(r.compute_type, r.function, r.called_from, r.ops) for r in placement.regions]


SHARED_MARKED = """
module @m {
  func.func public @main(%x: T) -> T {
    %0 = func.call @helper(%x) [host] : (T) -> T
    %1 = func.call @helper(%0) : (T) -> T
    %2 = stablehlo.sine %1 : T
    return %2 : T
  }
  func.func private @helper(%x: T) -> T {
    %0 = stablehlo.exponential %x : T
    %1 = stablehlo.cosine %0 [host] : T
    %2 = stablehlo.abs %1 [stream 1] : T
    %3 = func.call @leaf(%2) : (T) -> T
    %4 = stablehlo.negate %3 : T
    return %4 : T
  }
  func.func private @leaf(%x: T) -> T {
    %0 = stablehlo.tanh %x : T
    return %0 : T
  }
}
"""

REGIONS = """
module @m {
  func.func public @main(%p: tensor<i1>, %x: T) -> T {
    %0 = "stablehlo.if"(%p) ({
      %a = stablehlo.sine %x : T
      %b = "stablehlo.if"(%p) ({
        %c = stablehlo.cosine %a [device] : T
        stablehlo.return %c : T
      }, {
        %d = func.call @f(%a) : (T) -> T
        stablehlo.return %d : T
      }) [host] : (tensor<i1>) -> T
      stablehlo.return %b : T
    }, {
      %e = stablehlo.exponential %x [host] : T
      stablehlo.return %e : T
    }) [host] : (tensor<i1>) -> T
    %1 = func.call @f(%0) [device] : (T) -> T
    %2 = func.call @g(%1) : (T) -> T
    return %2 : T
  }
  func.func private @f(%x: T) -> T {
    %0 = stablehlo.abs %x : T
    %1 = func.call @g(%0) : (T) -> T
    return %1 : T
  }
  func.func private @g(%x: T) -> T {
    %0 = stablehlo.floor %x [host] : T
    %1 = stablehlo.ceil %0 : T
    return %1 : T
  }
}
"""

DEVICE_MARKS = """
module @m {
  func.func public @main(%x: T) -> T {
    %0 = func.call @h(%x) [device] : (T) -> T
    %1 = func.call @h(%0) [host] : (T) -> T
    %2 = func.call @k(%1) [stream 3] : (T) -> T
    return %2 : T
  }
  func.func private @h(%x: T) -> T {
    %0 = stablehlo.sine %x [device] : T
    %1 = stablehlo.cosine %0 [host] : T
    %2 = func.call @k(%1) : (T) -> T
    return %2 : T
  }
  func.func private @k(%x: T) -> T {
    %0 = stablehlo.tanh %x [host] : T
    %1 = func.call @h2(%0) : (T) -> T
    return %1 : T
  }
  func.func private @h2(%x: T) -> T {
    %0 = stablehlo.negate %x : T
    return %0 : T
  }
}
"""

THREAD = """
module @m {
  func.func public @main(%x: T) -> T {
    %0 = func.call @t(%x) : (T) -> T
    %1 = func.call @u(%0) [host] : (T) -> T
    return %1 : T
  }
  func.func private @t(%x: T) -> T attributes {execution_thread = "host"} {
    %0 = stablehlo.sine %x : T
    %1 = func.call @u(%0) : (T) -> T
    return %1 : T
  }
  func.func private @u(%x: T) -> T {
    %0 = stablehlo.cosine %x [device] : T
    %1 = func.call @v(%0) : (T) -> T
    return %1 : T
  }
  func.func private @v(%x: T) -> T attributes {execution_thread = "main"} {
    %0 = stablehlo.abs %x : T
    return %0 : T
  }
  func.func private @unreached(%x: T) -> T {
    %0 = stablehlo.abs %x [host] : T
    return %0 : T
  }
}
"""


def test_a_callee_reached_from_device_code_and_from_a_host_call_runs_on_both():
    placement = placement_of(SHARED_MARKED)
    assert dict(placement.compute_types) == {
        "device": 2,
        "device|host": 4,
        "host": 2,
        "gpu_stream:1": 1,
    }
    assert placement.total_ops == 9
    assert placed(placement) == [
        ("main", "func.call", "host", "mark"),
        ("helper", "stablehlo.exponential", "device|host", "call"),
        ("helper", "stablehlo.cosine", "host", "mark"),
        ("helper", "stablehlo.abs", "gpu_stream:1", "mark"),
        ("helper", "func.call", "device|host", "call"),
        ("helper", "stablehlo.negate", "device|host", "call"),
        ("leaf", "stablehlo.tanh", "device|host", "call"),
    ]
    assert regions(placement) == [
        ("host", "helper", "main", 6),
        ("gpu_stream:1", "helper", None, 1),
    ]
    assert placement.warnings == ()


def test_marks_inside_the_regions_of_marked_ops():
    placement = placement_of(REGIONS)
    assert dict(placement.compute_types) == {"device": 3, "host": 6, "device|host": 3}
    assert placement.total_ops == 12
    assert placed(placement) == [
        ("main", "stablehlo.if", "host", "mark"),
        ("main", "stablehlo.sine", "host", "region"),
        ("main", "stablehlo.if", "host", "mark"),
        ("main", "func.call", "host", "region"),
        ("main", "stablehlo.exponential", "host", "mark"),
        ("f", "stablehlo.abs", "device|host", "call"),
        ("f", "func.call", "device|host", "call"),
        ("g", "stablehlo.floor", "host", "mark"),
        ("g", "stablehlo.ceil", "device|host", "call"),
    ]
    assert regions(placement) == [
        ("host", "main", None, 5),
        ("host", "f", None, 2),
        ("host", "g", None, 2),
    ]


def test_device_marks_streams_and_a_function_placed_three_ways():
    placement = placement_of(DEVICE_MARKS)
    assert dict(placement.compute_types) == {
        "device": 2,
        "host": 3,
        "device|gpu_stream:3|host": 2,
        "device|host": 1,
        "gpu_stream:3": 1,
    }
    assert placed(placement) == [
        ("main", "func.call", "host", "mark"),
        ("main", "func.call", "gpu_stream:3", "mark"),
        ("h", "stablehlo.cosine", "host", "mark"),
        ("h", "func.call", "device|host", "call"),
        ("k", "stablehlo.tanh", "host", "mark"),
        ("k", "func.call", "device|gpu_stream:3|host", "call"),
        ("h2", "stablehlo.negate", "device|gpu_stream:3|host", "call"),
    ]
    assert regions(placement) == [
        ("host", "h", "main", 2),
        ("gpu_stream:3", "k", "main", 3),
        ("host", "h", None, 1),
        ("host", "k", None, 1),
    ]
    assert [w.kind for w in placement.warnings] == ["call_mark_not_in_body"]


def test_execution_threads_and_an_unreached_marked_function():
    placement = placement_of(THREAD)
    assert dict(placement.compute_types) == {"device": 2, "host": 5}
    assert placed(placement) == [
        ("main", "func.call", "host", "mark"),
        ("t", "stablehlo.sine", "host", "thread"),
        ("t", "func.call", "host", "thread"),
        ("u", "func.call", "host", "call"),
        ("v", "stablehlo.abs", "host", "call"),
    ]
    assert regions(placement) == [("host", "u", "main", 3), ("host", "t", None, 2)]
    assert [w.kind for w in placement.warnings] == ["call_mark_not_in_body"]


def test_the_scan_shared_by_the_analyses_of_a_module_follows_the_module():
    # Structure and placement share one scan of the op names, kept for the last
    # module: asking about another module in between changes no answer.
    first = parse.parse_mlir(mlir(SHARED_MARKED), "first.mlir").model
    second = parse.parse_mlir(mlir(REGIONS), "second.mlir").model
    alone = repr(analyze_placement(first)), repr(analyze_structure(first))
    analyze_structure(second)
    assert repr(analyze_placement(first)) == alone[0]
    analyze_placement(second)
    assert repr(analyze_structure(first)) == alone[1]
    assert repr(analyze_placement(first)) == alone[0]
    assert dict(analyze_placement(second).compute_types) == {
        "device": 3,
        "host": 6,
        "device|host": 3,
    }

"""What XLA fused, and which source lines each fusion came from.

After optimization, XLA groups the ops of a module into fusions: each becomes one
kernel (one loop nest on the CPU, one launch on a GPU), and its intermediate
values never reach memory. Which ops landed together, and which stayed outside any
fusion (custom calls, collectives, copies, control flow), is what decides how fast
the program runs, and the user's question is "what did XLA do with my line?".

In the model (jaxlib's HLO-to-MLIR conversion), a fusion is an `mhlo.fusion` op
with a `fusion_kind` attribute (`kLoop`, `kInput`, `kOutput`, `kCustom`) and a
region holding the fused ops; the HLO name (`broadcast_add_fusion`) is
`Op.hlo_name` and the backend's own kind (`__triton_gemm`) is in
`Module.backend_configs`. In XLA's own form (modules whose conversion
fails) it is an `hlo.fusion` op whose `calls` attribute names the fused
computation. Source lines come from each op's location: the innermost frame is
the line of code that made the op, and the name is JAX's op name
(`jit(mlp)/jit(dense)/add`). A fusion's `sources` are the innermost lines of every
instruction XLA's metadata gives one, the fusion instruction and all of its fused
computation's (bitcasts and constants included: on real modules, a bitcast is
often the only instruction that carries the line of a reshape, and XLA's metadata
gives a constant the line of the code that made it, `jnp.take`'s fill value, not
the jit call's; hoisted constants carry no metadata and add nothing).

The innermost frame is often a library's (`flax/nnx/nn/linear.py`); `user_source`
is the innermost frame in the user's own code (`ir.locations.is_user_file`) of the
deepest stack the locations hold. For a fusion it is that of the first op, in this
order, that has one: the fusion instruction (XLA gives it the metadata of the
instruction it is named for, its root), then its fused ops from the root
backwards. An op's user frame is read from its own frames in the optimized
module; where those hold none (XLA drops the frames of instructions it merges,
joining their op names with `;`), from the lowered module's (JAX's whole Python
stack): the op is paired with the lowered ops of the same JAX op name and
innermost frame, or of the same name alone where they all agree
(`lowered_user_frames`), and `user_source_from` says `lowered`.

The ops read are those of the functions that run: the ones a public function
reaches (the `fused_computation` copies the conversion leaves beside the fusions
are not), including while/case/if bodies. Ops that move no data (constants,
tuples, get-tuple-element, bitcasts) are neither fusions nor counted as unfused.

JAX op names also carry the nesting of jits (`jit(mlp)/jit(dense)/...`). A fusion
whose ops come from sibling jits (`dense` and `head`, neither inside the other)
exists only because an outer jit compiled them together: called without the outer
jit, each inner jit is its own XLA program and nothing fuses across them. Only the
user's own jits count: JAX jits some of its own functions (`lax.scan` indexes its
operands with `jit(dynamic_index_in_dim)`), and libraries theirs, and the user
cannot call those apart. A jit is the user's when the frames of the ops made inside
it hold its function (by name) in a file of the user's (`ir.locations.is_user_file`);
a library's when that frame is in a library's file, or when no frame is its
function's at all (JAX leaves its own frames out of locations) while the ops have
named frames; unknown without any (modules from other front ends), and counted as
the user's (`jit_owners`).
"""

from __future__ import annotations

import dataclasses
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import Literal

from hloscope.analyses.heroes import FUSION_OPS, hero_ops
from hloscope.analyses.structure import analyze_structure
from hloscope.ir.locations import Frame, is_user_file, user_frame
from hloscope.ir.model import Module, Op, is_computation

UserSourceFrom = Literal["optimized", "lowered"]

JitOwner = Literal["user", "library"]
"""Who defined a jit's function: the user, or JAX or another library."""
"""Which module's frames a `user_source` was read from."""

LoweredFrames = Mapping[tuple[str, str | None], Frame]
"""The user frame of the lowered module's ops, by (JAX op name, innermost frame
`file:LINE`); see `lowered_user_frames`."""

# Ops that move no data: XLA neither fuses them nor runs a kernel for them.
FREE_OPS = frozenset(
    {
        "constant",
        "tuple",
        "get_tuple_element",
        "get-tuple-element",
        "bitcast",
        "parameter",
        "after_all",
        "after-all",
        "create_token",
        "optimization_barrier",
        "opt-barrier",
        "partition_id",
        "partition-id",
        "replica_id",
        "replica-id",
    }
)
# Ops whose regions hold ops that run on their own (not a reducer applied inside).
CONTROL_FLOW = frozenset({"while", "case", "if", "conditional", "call"})
COLLECTIVES = frozenset(
    {
        "all_reduce",
        "all_gather",
        "reduce_scatter",
        "all_to_all",
        "collective_permute",
        "collective_broadcast",
        "all-reduce",
        "all-gather",
        "reduce-scatter",
        "all-to-all",
        "collective-permute",
        "collective-broadcast",
        "all-reduce-start",
        "all-reduce-done",
        "all-gather-start",
        "all-gather-done",
        "collective-permute-start",
        "collective-permute-done",
        "ragged-all-to-all",
        "ragged_all_to_all",
    }
)
TRANSFERS = frozenset(
    {"send", "recv", "send-done", "recv-done", "infeed", "outfeed", "host_compute"}
)
Category = Literal[
    "custom-call", "collective", "copy", "transfer", "async", "control-flow", "compute"
]
"""What an op left outside any fusion is."""

COPIES = frozenset({"copy", "copy_start", "copy_done", "copy-start", "copy-done"})
ASYNC = frozenset(
    {"async_start", "async_update", "async_done", "async-start", "async-update", "async-done"}
)

_JIT_PART = re.compile(r"^p?jit\((.*)\)$")
# `add.3`, `broadcast_add_fusion.2`: HLO instruction names, not JAX op names.
_HLO_NAME = re.compile(r"^[A-Za-z_][\w-]*\.\d+$")


@dataclasses.dataclass(frozen=True)
class Fusion:
    """One fusion: a group of ops XLA compiles into one kernel."""

    name: str
    """The HLO instruction name (`broadcast_add_fusion`, `fusion.3`); the MLIR value
    name (`%3`) when the module does not say."""
    kind: str
    """XLA's fusion kind: `kLoop`, `kInput`, `kOutput`, `kCustom`, ..."""
    backend_kind: str | None
    """The backend's own kind from the backend config (`__triton_gemm`,
    `__ynn_fusion`, `__custom_fusion`), when it names one."""
    function: str
    """The function the fusion is in (`main`, a while body's function, ...)."""
    op_id: int
    """The fusion op's id in `Module.ops`."""
    op_counts: Mapping[str, int]
    """Kinds of the ops inside (nested regions included), in order of first
    appearance, with their counts."""
    op_count: int
    """Ops inside, terminators excluded."""
    sources: tuple[str, ...]
    """`file.py:LINE` of the code that made the fusion and the ops inside
    (innermost frames) as XLA's metadata gives them, bitcasts and constants
    included, sorted."""
    op_names: tuple[str, ...]
    """JAX op names of the ops inside (`jit(f)/jit(g)/mul`), in order of first
    appearance."""
    jits: tuple[str, ...]
    """The jit nestings the ops came from (`jit(mlp)/jit(dense)`), sorted."""
    crosses_jits: bool
    """Whether ops of sibling jits of the user's (neither nested in the other) were
    fused together: the fusion exists only because an outer jit compiled them as one
    program. JAX's and libraries' own jits count as part of the jit that calls them
    (`FusionAnalysis.library_jits`)."""
    operands: tuple[str, ...]
    """Operand shapes (`f32[8,64]`)."""
    results: tuple[str, ...]
    """Result shapes."""
    operand_bytes: int | None
    """Bytes the fusion reads from its operands (None if a size is unknown)."""
    result_bytes: int | None
    """Bytes it writes."""
    user_source: str | None
    """`file.py:LINE` of the innermost frame in the user's own code (outside JAX and
    installed packages, `ir.locations.is_user_file`) of the first op that has one: the
    fusion instruction, then its fused ops from the root backwards. The line of
    *their* code that made this fusion, where `sources` may hold only a library's
    lines. None when no frame is the user's."""
    user_source_from: UserSourceFrom | None
    """Where `user_source` was found: `optimized` (the optimized module's own
    frames) or `lowered` (the lowered module's deeper stack, paired by op name and
    innermost frame, where the optimized module kept a shorter one)."""
    hero_source: str | None = None
    """The user's line of the op the kernel is built around where it holds one, the
    matmul or convolution of its own computation, else of the outermost fusion nested
    in it that holds one (XLA fuses the elementwise ops after it into its epilogue,
    and a TPU convolution fusion nests its operands' producers), else `user_source`:
    where the fusion's run time goes."""

    @property
    def ops(self) -> tuple[str, ...]:
        """The kinds of the ops inside, in order of first appearance."""
        return tuple(self.op_counts)

    @property
    def library_sources(self) -> tuple[str, ...]:
        """The `sources` in libraries' files (`library_lines`)."""
        return library_lines(self.sources)


@dataclasses.dataclass(frozen=True)
class UnfusedOp:
    """An op that runs outside any fusion."""

    name: str
    """The HLO instruction name (`copy.3`), or the MLIR value name."""
    op: str
    """The op's name in the model: `stablehlo.custom_call`, `mhlo.copy`."""
    category: Category
    """`custom-call`, `collective`, `copy`, `transfer`, `async`, `control-flow`
    or `compute`."""
    function: str
    op_id: int
    target: str | None
    """The custom call's target (`__cublas$gemm`), for custom calls."""
    sources: tuple[str, ...]
    """`file.py:LINE` of the code that made it (and the ops of its regions, a
    reducer's or comparator's), sorted."""
    op_name: str | None
    """Its JAX op name, if it has one."""
    results: tuple[str, ...]
    """Result shapes."""
    result_bytes: int | None
    user_source: str | None
    """`file.py:LINE` of the innermost frame in the user's own code (see
    `Fusion.user_source`): the op's, else that of the ops of its regions."""
    user_source_from: UserSourceFrom | None
    """`optimized` or `lowered` (see `Fusion.user_source_from`)."""

    @property
    def library_sources(self) -> tuple[str, ...]:
        """The `sources` in libraries' files (`library_lines`)."""
        return library_lines(self.sources)


@dataclasses.dataclass(frozen=True)
class SourceLine:
    """What XLA did with one line of the user's code."""

    source: str
    """`file.py:LINE`."""
    fusions: tuple[str, ...]
    """Names of the fusions holding ops made by this line, in program order."""
    unfused: tuple[str, ...]
    """Names of the unfused ops made by this line, in program order."""
    fused_ops: int
    """Ops of this line inside fusions."""
    unfused_ops: int
    """Ops of this line outside fusions."""


@dataclasses.dataclass(frozen=True)
class FusionAnalysis:
    """The fusions of an optimized module, its unfused ops, and both per source line."""

    fusions: tuple[Fusion, ...]
    """In program order (`Module.program_order`: the module's schedule where it has
    one, in either form)."""
    unfused: tuple[UnfusedOp, ...]
    """Ops outside any fusion, in program order; ops that move no data excluded."""
    lines: tuple[SourceLine, ...]
    """Every source line that made an op, sorted by file and line."""
    by_kind: Mapping[str, int]
    """Fusion count per kind (the backend's kind when there is one), most first."""
    unfused_by_category: Mapping[str, int]
    """Unfused op count per category, most first."""
    fused_ops: int
    """Ops inside fusions."""
    jits: tuple[str, ...]
    """Every jit nesting seen in op names, sorted."""
    library_jits: tuple[str, ...] = ()
    """The nestings of `jits` whose innermost jit is JAX's or another library's, not
    the user's (`jit(train_step)/jit(dynamic_index_in_dim)`, which `lax.scan` makes):
    shown, but not counted as jits the user could call apart."""

    @property
    def unfused_ops(self) -> int:
        return len(self.unfused)

    @property
    def crossing_jits(self) -> tuple[Fusion, ...]:
        """Fusions that combine ops of sibling jits."""
        return tuple(f for f in self.fusions if f.crosses_jits)


@dataclasses.dataclass(frozen=True)
class FusionSummary:
    """The short form shown by `inspect`."""

    fusions: int
    by_kind: Mapping[str, int]
    fused_ops: int
    unfused_ops: int
    unfused_by_category: Mapping[str, int]
    crossing_jits: int
    """Fusions combining ops of sibling jits."""


# --------------------------------------------------------------------------- names


def split_op_name(op_name: str) -> list[str]:
    """`jit(f)/jit(g)/mul` -> [`jit(f)`, `jit(g)`, `mul`] (slashes inside
    parentheses do not split)."""
    parts: list[str] = []
    depth = 0
    start = 0
    for i, ch in enumerate(op_name):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth = max(0, depth - 1)
        elif ch == "/" and depth == 0:
            parts.append(op_name[start:i])
            start = i + 1
    parts.append(op_name[start:])
    return [p for p in parts if p]


def jit_path(op_name: str) -> str | None:
    """The jit nesting of a JAX op name: `jit(mlp)/jit(dense)` for
    `jit(mlp)/jit(dense)/while/body/add`; None when it names no jit."""
    jits = [part for part in split_op_name(op_name) if _JIT_PART.match(part)]
    return "/".join(jits) if jits else None


def jit_name(path: str) -> str:
    """The function name of a nesting's innermost jit: `g` for `jit(f)/jit(g)`."""
    last = path.rpartition("/")[2]
    match = _JIT_PART.match(last)
    return match.group(1) if match else last


def jit_owners(module: Module) -> Mapping[str, JitOwner]:
    """Who defined each jit nesting's innermost jit (see the module's docstring), by
    nesting (`jit(f)/jit(g)`); a nesting whose ops have no named frames is absent."""
    functions: dict[str, set[Frame]] = {}
    seen: set[tuple[str, int]] = set()
    for op in module.ops:
        name = _op_name(op)
        path = jit_path(name) if name is not None else None
        if path is None or (path, id(op.location)) in seen:
            continue
        seen.add((path, id(op.location)))
        named = [frame for frame in op.location.frames if frame.function]
        if not named:
            continue
        parts = path.split("/")
        for end in range(1, len(parts) + 1):
            functions.setdefault("/".join(parts[:end]), set()).update(named)
    owners: dict[str, JitOwner] = {}
    for path, frames in functions.items():
        function = jit_name(path)
        defining = [f for f in frames if _names_function(f.function or "", function)]
        user = any(is_user_file(f.file) for f in defining)
        owners[path] = "user" if user else "library"
    return MappingProxyType(owners)


def _names_function(frame_function: str, jit_name: str) -> bool:
    """Whether a frame's function (`layer`, `Model.__call__`, a qualified name) is the
    one a jit is named after (`layer`, `__call__`; a callable object's class)."""
    return bool(jit_name) and (
        frame_function == jit_name
        or frame_function.endswith("." + jit_name)
        or frame_function.startswith(jit_name + ".")
    )


def user_jit_path(path: str, owners: Mapping[str, JitOwner]) -> str | None:
    """The part of a jit nesting that is the user's: cut before the first jit that is
    JAX's or a library's (whose ops are part of the jit calling it); None when the
    outermost is not the user's."""
    parts = path.split("/")
    for end in range(1, len(parts) + 1):
        if owners.get("/".join(parts[:end])) == "library":
            return "/".join(parts[: end - 1]) or None
    return path


def _crosses(paths: Iterable[str]) -> bool:
    """Whether two of the jit paths are siblings: neither a prefix of the other."""
    split = sorted({tuple(p.split("/")) for p in paths}, key=len)
    for i, shorter in enumerate(split):
        for longer in split[i + 1 :]:
            if longer[: len(shorter)] != shorter:
                return True
    return False


def fusion_kind(op: Op) -> str:
    """`kLoop`, ... from `#mhlo<fusion_kind kLoop>` or an HLO `kind=kLoop`."""
    return op.fusion_kind or "unknown"


def backend_kind(module: Module, op: Op) -> str | None:
    """The backend's kind named by a fusion's backend config, if any."""
    name = op.hlo_name
    if op.name == "hlo.fusion-start":
        # XLA prints an async fusion as `fusion-start` calling the fused computation;
        # the backend config is on the fusion it wraps, which calls the same one.
        calls = op.attributes.get("calls")
        wrapped = (
            o for o in module.ops if o.name == "hlo.fusion" and o.attributes.get("calls") == calls
        )
        name = next((o.hlo_name for o in wrapped), None)
    if name is None:
        return None
    return module.backend_kind(name)


def _relative(file: str, root: str | None) -> str:
    if root and file.startswith(root.rstrip("/") + "/"):
        return file[len(root.rstrip("/")) + 1 :]
    return file


def _source(op: Op, root: str | None) -> str | None:
    frames = op.location.frames
    if not frames:
        return None
    frame = frames[0]
    return f"{_relative(frame.file, root)}:{frame.line}"


def _op_name(op: Op) -> str | None:
    """The op's JAX op name: its location's name, unless that is an HLO instruction
    name: the op's own (the conversion's fallback when there is no metadata), or
    another one XLA's passes wrote into the metadata (`broadcast.6`)."""
    name = op.location.name
    if name is None or name == op.hlo_name or _HLO_NAME.match(name):
        return None
    return name


def op_source(op: Op, root: str | None = None) -> str | None:
    """`file.py:LINE` of the code that made an op (its innermost frame), relative to
    `root` when inside it."""
    return _source(op, root)


def jax_op_name(op: Op) -> str | None:
    """The op's JAX op name (`jit(f)/mul`), None when its location holds none."""
    return _op_name(op)


def lowered_user_frames(lowered: Module) -> LoweredFrames:
    """The innermost user frame (`ir.locations.user_frame`) of each op of a lowered
    module that has one, by (JAX op name, innermost frame `file:LINE`), and by (JAX
    op name, None) where every op of that name agrees on it: what pairs an
    optimized op whose frames hold no user frame with the lowered op it came from
    (the first in module order where several match)."""
    frames: dict[tuple[str, str | None], Frame] = {}
    by_name: dict[str, Frame | None] = {}
    for op in lowered.ops:
        name = _op_name(op)
        chain = op.location.frames
        if name is None or not chain:
            continue
        frame = user_frame(chain)
        if frame is None:
            continue
        frames.setdefault((name, chain[0].source), frame)
        if by_name.setdefault(name, frame) != frame:
            by_name[name] = None
    for name, frame in by_name.items():
        if frame is not None:
            frames.setdefault((name, None), frame)
    return MappingProxyType(frames)


def op_user_source(
    op: Op, root: str | None = None, lowered: LoweredFrames | None = None
) -> tuple[str | None, UserSourceFrom | None]:
    """`file.py:LINE` of the innermost user frame of an op (relative to `root`) and
    which module it was read from: the op's own frames (`optimized`), else the
    lowered op it pairs with in `lowered` (`lowered`); (None, None) when neither
    holds one."""
    frame = user_frame(op.location.frames)
    if frame is not None:
        return f"{_relative(frame.file, root)}:{frame.line}", "optimized"
    name = _op_name(op)
    if lowered and name is not None:
        source = op.location.source
        # XLA joins the op names of instructions it merges with `;` and drops their
        # frames (`jit(f)/transpose(jvp())/mul;jit(f)/transpose(jvp())/broadcast_in_dim`):
        # each name is paired in turn.
        for part in name.split(";"):
            found = lowered.get((part, source)) or lowered.get((part, None))
            if found is not None:
                return f"{_relative(found.file, root)}:{found.line}", "lowered"
    return None, None


def _first_user_source(
    ops: Sequence[Op], root: str | None, lowered: LoweredFrames | None
) -> tuple[str | None, UserSourceFrom | None]:
    """The user source (`op_user_source`) of the first of `ops` that has one."""
    for op in ops:
        found = op_user_source(op, root, lowered)
        if found[0] is not None:
            return found
    return None, None


def library_lines(sources: Sequence[str]) -> tuple[str, ...]:
    """The `file.py:LINE`s of `sources` in libraries' files, not the user's own
    (`ir.locations.is_user_file`): the lines shown beside `user_source`."""
    return tuple(s for s in sources if not is_user_file(s.rpartition(":")[0]))


def _display_name(module: Module, op: Op) -> str:
    if op.hlo_name:
        return op.hlo_name
    return module.value_name(op.results[0]) if op.results else f"#{op.id}"


def _shapes(module: Module, values: Sequence[int]) -> tuple[tuple[str, ...], int | None]:
    shapes: list[str] = []
    total: int | None = 0
    for value in values:
        if value < 0:
            continue
        shapes.append(module.hlo_shape(value))
        size = module.nbytes(value)
        total = None if size is None or total is None else total + size
    return tuple(shapes), total


def _result_shapes(module: Module, op: Op) -> tuple[tuple[str, ...], int | None]:
    """A fusion's, loop's or conditional's results, one per output: a tuple (XLA's own
    form: one value of a tuple type) is its elements, as the converted form's op has
    one result each. An async start keeps its one value (operands, results, context)."""
    if op.short_name != "fusion" and op.short_name not in CONTROL_FLOW:
        return _shapes(module, op.results)
    elements = [
        element for value in op.results if value >= 0 for element in module.element_shapes(value)
    ]
    total: int | None = 0
    for _, size in elements:
        total = None if size is None or total is None else total + size
    return tuple(shape for shape, _ in elements), total


def _sorted_counts(counter: Counter[str]) -> Mapping[str, int]:
    return MappingProxyType(dict(sorted(counter.items(), key=lambda kv: (-kv[1], kv[0]))))


def _source_key(source: str) -> tuple[str, int]:
    file, _, line = source.rpartition(":")
    return (file, int(line) if line.isdigit() else 0)


# --------------------------------------------------------------------------- analysis


def _category(module: Module, op: Op) -> Category:
    """What the op is, by the instruction it is (`Module.shown_name`: the converted
    form's `async_start` of an `all-reduce-start` is a collective)."""
    name = module.shown_name(op)
    short = name.partition(".")[2] or name
    if short == "custom_call" or short == "custom-call":
        return "custom-call"
    if short in COLLECTIVES:
        return "collective"
    if short in COPIES:
        return "copy"
    if short in TRANSFERS:
        return "transfer"
    if short in ASYNC or short.endswith(("-start", "-update", "-done")):
        return "async"
    if short in CONTROL_FLOW or name == "func.call":
        return "control-flow"
    return "compute"


_RUN_KEYS = ("calls",)
"""XLA's own form's attributes naming a computation that runs where the op runs (an
async or call instruction's): part of the op, as `analyses.structure` reads them, so
not reached as calls there."""

_IN_PLACE = ("condition", "body", "branch_computations")
"""XLA's own form's attributes naming the computations of a loop or conditional, in
the order the converted form's op holds them as regions: their ops are read where
the op is, as a region's are (`analyze_fusions`)."""


def _running_functions(module: Module) -> list[str]:
    """Functions whose ops run: those a public function reaches; for XLA's own form,
    also the computations of async and call instructions (`calls=`), which it does not
    record as calls. A loop's or conditional's are read where the op is."""
    structure = analyze_structure(module)
    running = [f.name for f in structure.functions if f.reachable]
    seen = set(running)
    stack = list(running)
    while stack:
        function = module.functions.get(stack.pop())
        if function is None:
            continue
        for op in module.function_ops(function):
            if op.name in FUSION_OPS or not any(key in op.attributes for key in _RUN_KEYS):
                continue
            for key in _RUN_KEYS:
                for callee in op.references(key) if key in op.attributes else ():
                    if callee in module.functions and callee not in seen:
                        seen.add(callee)
                        running.append(callee)
                        stack.append(callee)
    # XLA's own form: a reducer or comparator (`to_apply=`) is part of the instruction
    # that applies it, as the region of the converted form's op is, not ops of its own.
    applied = {
        name
        for op in module.ops
        if op.name.startswith("hlo.")
        for name in op.mentioned_names("to_apply")
    }
    if applied:
        applied -= {
            name
            for op in module.ops
            if op.name.startswith("hlo.")
            for key in ("calls", "body", "condition", "branch_computations")
            for name in op.mentioned_names(key)
        }
        running = [name for name in running if name not in applied]
    return running


def _in_place(module: Module, op: Op) -> list[str]:
    """XLA's own form: the computations of a loop or conditional (`_IN_PLACE`) with a
    body, in the order the converted form holds them as regions; none for any other
    op, and in the converted form."""
    if not op.name.startswith("hlo.") or not op.attributes:
        return []
    functions = module.functions
    return [
        name
        for key in _IN_PLACE
        if key in op.attributes
        for name in op.references(key)
        if name in functions and not functions[name].is_declaration
    ]


def _fused_ops(module: Module, op: Op) -> Sequence[Op]:
    """The ops inside a fusion, in pre-order: its region's, or (XLA's own form) its
    called computation's. A fusion nested in it (a TPU convolution fusion holds one
    for each operand) stands for what it holds: its ops are these ops, not the fusion.
    What the conversion added (`Module.conversion_artefacts`) is no op of it."""
    if op.name.startswith("hlo."):
        inside: list[Op] = []
        _held_in_place(module, op.references("calls")[:1], inside, frozenset())
        return inside
    made = module.conversion_artefacts
    return [o for o in module.descendants(op) if o.short_name != "fusion" and o.id not in made]


def _held_in_place(
    module: Module, names: Sequence[str], inside: list[Op], active: frozenset[str]
) -> None:
    """XLA's own form: the ops of computations `names` into `inside`, each computation
    an op holds (a nested fusion's, a reduce's `to_apply`) right after that op, once per
    op holding it, where the converted form's region holds it: both forms list a
    fusion's ops in one order. Parameters, tuples and their elements are XLA's
    plumbing: block arguments and several results in MLIR's form, ops of neither."""
    for name in names:
        function = module.functions.get(name)
        if function is None or name in active:
            continue
        within = active | {name}
        members = module.function_ops(function)
        for member in members:
            if not is_computation(member):
                continue
            if member.name in FUSION_OPS:
                _held_in_place(module, member.references("calls")[:1], inside, within)
                continue
            inside.append(member)
            _held_in_place(module, member.mentioned_names("to_apply"), inside, within)


def analyze_fusions(
    module: Module, source_root: str | None = None, lowered: LoweredFrames | None = None
) -> FusionAnalysis:
    """The fusions and unfused ops of an optimized `module`.

    `source_root`: file paths under it are shown relative to it (the working
    directory, so that `samples/mlp.py:12` reads as the user typed it).
    `lowered`: the user frames of the lowered module's ops (`lowered_user_frames`),
    where the optimized module's frames hold none; None for a module without one
    (a dump).
    """
    fusions: list[Fusion] = []
    unfused: list[UnfusedOp] = []
    all_jits: set[str] = set()
    owners = jit_owners(module)

    def crosses_user_jits(jits: Iterable[str]) -> bool:
        return _crosses(p for p in (user_jit_path(j, owners) for j in jits) if p is not None)

    line_fusions: dict[str, dict[str, None]] = {}
    line_unfused: dict[str, dict[str, None]] = {}
    line_fused_ops: Counter[str] = Counter()
    line_unfused_ops: Counter[str] = Counter()

    def visit_fusion(op: Op, function: str) -> None:
        inside = [
            o for o in _fused_ops(module, op) if not o.is_terminator and o.name != "func.func"
        ]
        name = _display_name(module, op)
        kinds: dict[str, int] = {}
        sources: set[str] = set()
        op_names: dict[str, None] = {}
        jits: set[str] = set()
        for member in (op, *inside):
            if member is not op:
                kinds[member.name] = kinds.get(member.name, 0) + 1
            # Every instruction's line, bitcasts and constants included (see the
            # module's docstring).
            source = _source(member, source_root)
            if source is not None:
                sources.add(source)
                line_fusions.setdefault(source, {})[name] = None
                if member is not op:
                    line_fused_ops[source] += 1
            op_name = _op_name(member)
            if op_name is not None:
                op_names[op_name] = None
                path = jit_path(op_name)
                if path is not None:
                    jits.add(path)
        all_jits.update(jits)
        operands, operand_bytes = _shapes(module, op.operands)
        results, result_bytes = _result_shapes(module, op)
        user_source, user_from = _first_user_source((op, *reversed(inside)), source_root, lowered)
        heroes = hero_ops(module, op)
        hero_source = _first_user_source(heroes, source_root, lowered)[0] if heroes else None
        fusions.append(
            Fusion(
                name=name,
                kind=fusion_kind(op),
                backend_kind=backend_kind(module, op),
                function=function,
                op_id=op.id,
                op_counts=MappingProxyType(kinds),
                op_count=len(inside),
                sources=tuple(sorted(sources, key=_source_key)),
                op_names=tuple(op_names),
                jits=tuple(sorted(jits)),
                crosses_jits=crosses_user_jits(jits),
                operands=operands,
                results=results,
                operand_bytes=operand_bytes,
                result_bytes=result_bytes,
                user_source=user_source,
                user_source_from=user_from,
                hero_source=hero_source or user_source,
            )
        )

    def visit_unfused(op: Op, function: str) -> None:
        name = _display_name(module, op)
        # A reducer's or comparator's ops run as part of this op; a control-flow op's
        # regions are visited as ops of their own.
        inner = (
            []
            if op.short_name in CONTROL_FLOW
            else [o for o in module.descendants(op) if not o.is_terminator]
        )
        source = _source(op, source_root)
        sources = {s for s in (source, *(_source(o, source_root) for o in inner)) if s}
        op_name = _op_name(op)
        if op_name is not None:
            path = jit_path(op_name)
            if path is not None:
                all_jits.add(path)
        for line in sources:
            line_unfused.setdefault(line, {})[name] = None
        if source is not None:
            line_unfused_ops[source] += 1
        user_source, user_from = _first_user_source((op, *inner), source_root, lowered)
        category = _category(module, op)
        target = None
        if category == "custom-call":
            raw = op.attributes.get("call_target_name") or op.attributes.get(
                "custom_call_target", ""
            )
            target = raw.strip('"') or None
        results, result_bytes = _result_shapes(module, op)
        unfused.append(
            UnfusedOp(
                name=name,
                op=module.shown_name(op),
                category=category,
                function=function,
                op_id=op.id,
                target=target,
                sources=tuple(sorted(sources, key=_source_key)),
                op_name=op_name,
                results=results,
                result_bytes=result_bytes,
                user_source=user_source,
                user_source_from=user_from,
            )
        )

    def visit(ops: Iterable[Op], function: str) -> None:
        for op in module.program_order(ops):
            if op.is_terminator or op.name == "func.func":
                continue
            if op.name in FUSION_OPS:
                visit_fusion(op, function)
                continue
            if op.short_name not in FREE_OPS:
                visit_unfused(op, function)
            if op.short_name in CONTROL_FLOW:
                for region in op.regions:
                    for block in region.blocks:
                        visit(block.ops, function)
                for name in _in_place(module, op):
                    visit(module.functions[name].op.regions[0].blocks[0].ops, function)

    for name in _running_functions(module):
        function = module.functions[name]
        if function.is_declaration:
            continue
        for block in function.op.regions[0].blocks:
            visit(block.ops, name)

    by_kind: Counter[str] = Counter(f.backend_kind or f.kind for f in fusions)
    categories: Counter[str] = Counter(u.category for u in unfused)
    sources = sorted(set(line_fusions) | set(line_unfused), key=_source_key)
    lines = tuple(
        SourceLine(
            source=source,
            fusions=tuple(line_fusions.get(source, ())),
            unfused=tuple(line_unfused.get(source, ())),
            fused_ops=line_fused_ops[source],
            unfused_ops=line_unfused_ops[source],
        )
        for source in sources
    )
    return FusionAnalysis(
        fusions=tuple(fusions),
        unfused=tuple(unfused),
        lines=lines,
        by_kind=_sorted_counts(by_kind),
        unfused_by_category=_sorted_counts(categories),
        fused_ops=sum(f.op_count for f in fusions),
        jits=tuple(sorted(all_jits)),
        library_jits=tuple(sorted(j for j in all_jits if owners.get(j) == "library")),
    )


def inner_jits(analysis: FusionAnalysis) -> tuple[str, ...]:
    """Names of the user's jits called directly by the outermost one (`dense`, `head`
    for `jit(mlp)/jit(dense)`, `jit(mlp)/jit(head)`), in order of name."""
    names: set[str] = set()
    library = set(analysis.library_jits)
    for path in analysis.jits:
        if "/".join(path.split("/")[:2]) in library:
            continue
        parts = path.split("/")
        if len(parts) >= 2:
            match = _JIT_PART.match(parts[1])
            if match:
                names.add(match.group(1))
    return tuple(sorted(names))


def summarize_fusions(analysis: FusionAnalysis) -> FusionSummary:
    """The counts `inspect` shows."""
    return FusionSummary(
        fusions=len(analysis.fusions),
        by_kind=analysis.by_kind,
        fused_ops=analysis.fused_ops,
        unfused_ops=analysis.unfused_ops,
        unfused_by_category=analysis.unfused_by_category,
        crossing_jits=len(analysis.crossing_jits),
    )

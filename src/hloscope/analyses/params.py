"""Parameter usage: every Python argument mapped to its HLO parameter, and what the
compiled program does with it.

`jax.jit` prunes the arguments a computation does not use (`keep_unused=False`),
so the HLO module can have fewer parameters than the Python call has leaves; code
that assumes one parameter per argument (PyTorch/XLA's `call_jax`) then breaks.
This analysis gives the map, leaf by leaf:

- `used`: the leaf became an HLO parameter that can contribute to a result;
- `unused`: it became an HLO parameter that contributes to no result or side effect
  (`keep_unused=True`, a `custom_jvp`, a value only carried through a loop), as
  `analyses.liveness` finds through regions, calls, loops and tuples;
- `pruned`: it has no HLO parameter at all.

Static arguments are listed apart: they are part of the trace, not parameters.
For each parameter: its shape and bytes, donation as the module does it (and the
output its buffer aliases: `tf.aliasing_output`, `jax.buffer_donor`, the module's
`mhlo.input_output_alias`) beside the donation the caller asked for, with the reason
where the two differ (JAX drops a donation it cannot use, with a warning, and keeps
the array), its sharding in readable form (`mhlo.sharding`, or
`sdy.sharding` with its mesh) and its memory kind. JAX may put implicit parameters
before the arguments (ordered-effect tokens, the platform index, dimension
variables); they are listed apart too. Private functions reached by `func.call`
are checked on their own: a nested function that ignores one of its parameters is
what broke `call_jax`.

For a dump there is no Python call: each parameter of the entry function is named
from its location (`loc("x")`) or `%argN`.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Final, Literal

from hloscope.analyses.liveness import (
    LivenessIndex,
    analyze_liveness,
    argument_liveness,
    call_sites,
    entry_arguments,
)
from hloscope.analyses.structure import made_scan
from hloscope.ir.attributes import Mesh, parse_hlo_sharding, sharding_words
from hloscope.ir.model import Argument, Function, Module
from hloscope.stages import ArgumentLeaf, Lowering, StaticArgument

Status = Literal["used", "unused", "pruned"]
"""Whether an argument reached the program and contributes to its results."""
USED: Final = "used"
UNUSED: Final = "unused"
PRUNED: Final = "pruned"
STATUSES: tuple[Status, ...] = (USED, UNUSED, PRUNED)


@dataclasses.dataclass(frozen=True)
class Parameter:
    """One Python argument leaf (or, for a dump, one parameter of the entry)."""

    position: int
    """Index among the flattened leaves of the Python call `(args, kwargs)`; for a
    dump, the HLO parameter index."""
    path: str
    """Pytree path (`params['w']`, `batch['x']`, `step`, a keyword's name); for a
    dump, the parameter's location name or `%argN`."""
    hlo_index: int | None
    """The HLO parameter of the entry function it became; None when pruned."""
    status: Status
    """`used`, `unused` (an HLO parameter that contributes to no result) or `pruned`
    (no HLO parameter)."""
    shape: str
    """HLO shape syntax, `f32[16,4]` (the Python value's, for entrypoints)."""
    hlo_shape: str | None
    """The HLO parameter's type; differs from `shape` in a partitioned optimized
    module, whose parameters are per-device shards. None when pruned."""
    bytes: int | None
    """Size of `shape` in bytes; None when unknown (dynamic shapes)."""
    uses: int
    """Ops that read the HLO parameter directly (0 when pruned)."""
    donated: bool
    """What the module does: its parameter carries JAX's donation (`tf.aliasing_output`,
    `jax.buffer_donor`) or, in an optimized module, XLA aliases it to a result
    (`input_output_alias`). A donation the caller asked for that JAX dropped is not
    donated (see `donation_dropped`)."""
    aliases_output: int | None
    """The result whose buffer the parameter's buffer becomes (`tf.aliasing_output`,
    `mhlo.input_output_alias`); None when not aliased (`jax.buffer_donor` leaves
    the choice to XLA)."""
    donation_requested: bool
    """The caller asked for its donation (`donate_argnums`, `donate_argnames`, a
    library's `donate=`); for a dump, which records no request, the same as
    `donated`."""
    donation_dropped: str | None
    """Why a donation the caller asked for is not done, when it is not: JAX's own
    warning (`Some donated buffers were not usable: float32[4,32]...`: no result of
    its shape and dtype), the leaf was pruned, or XLA aliased no result to a buffer
    JAX donated. None when the module does what was asked."""
    sharding: str | None
    """Readable sharding: `P('data', None) over mesh(data=4, model=2)` (the
    `NamedSharding` the caller gave, or the module's `sdy.sharding`), `tiled [4,1],
    replicated ×2` (an `mhlo.sharding`), `replicated`; None when unsharded."""
    sharding_attribute: str | None
    """The sharding exactly as the module holds it (`sdy.sharding`, `mhlo.sharding`)."""
    memory_kind: str | None
    """`device`, `pinned_host`, `unpinned_host`, ... when stated."""
    also: tuple[str, ...] = ()
    """The other paths by which the call reaches this leaf, which is passed once: a
    Flax Variable that the model and the optimizer both hold is named by its first
    path (`model.w`) and is also `optimizer.params.w`."""
    sharding_source: str | None = None
    """`file.py:LINE` of the user's code that built the sharding the caller gave it
    (an `--args` factory's `jax.device_put`); None where unknown."""


@dataclasses.dataclass(frozen=True)
class ImplicitParameter:
    """An HLO parameter of the entry that is no Python argument: JAX's tokens for
    ordered effects, the platform index of a multi-platform export, dimension
    variables of a shape-polymorphic one, hoisted constants."""

    hlo_index: int
    kind: str
    """`token`, `platform index`, `dimension variable`, `constant` or `implicit`."""
    name: str
    shape: str
    status: Status
    """`used` or `unused`."""


@dataclasses.dataclass(frozen=True)
class FunctionParameter:
    """A parameter of a private function."""

    index: int
    name: str
    """Its location name or `%argN`."""
    shape: str
    status: Status
    """`used`, or `unused`: the function computes none of its results (nor side
    effects) from it, whatever its callers pass."""


@dataclasses.dataclass(frozen=True)
class FunctionUsage:
    """Parameter usage of a private function reached by `func.call` from the entry."""

    name: str
    call_sites: int
    """`func.call` ops that call it, anywhere in the module."""
    parameters: tuple[FunctionParameter, ...]

    @property
    def unused(self) -> tuple[FunctionParameter, ...]:
        return tuple(p for p in self.parameters if p.status == UNUSED)


@dataclasses.dataclass(frozen=True)
class Totals:
    """Counts and bytes over the arguments (implicit parameters not included)."""

    arguments: int
    """Python argument leaves (or entry parameters for a dump)."""
    used: int
    unused: int
    pruned: int
    static: int
    hlo_parameters: int
    """Parameters of the entry function, implicit ones included."""
    bytes_passed: int
    """Bytes of the HLO parameters: what each call passes (global shapes)."""
    bytes_unused: int
    """Bytes passed for parameters that contribute to nothing."""
    bytes_pruned: int
    """Bytes of the leaves that are not passed at all."""
    bytes_donated: int
    """Bytes of donated parameters (as the module does it: dropped donations not
    included)."""
    private_unused: int
    """Unused parameters of private functions."""
    donations_dropped: int
    """Arguments whose donation the caller asked for and the module does not do."""
    bytes_donation_dropped: int
    """Their bytes."""


@dataclasses.dataclass(frozen=True)
class ParameterUsage:
    """The parameter map of a module's entry, and its private functions' usage."""

    entry: str | None
    """The entry function (`main`)."""
    from_python: bool
    """True when paths come from the Python call (an entrypoint or an Exported);
    False for a dump (paths are location names)."""
    parameters: tuple[Parameter, ...]
    """In Python leaf order (HLO order for a dump)."""
    implicit: tuple[ImplicitParameter, ...]
    static: tuple[StaticArgument, ...]
    functions: tuple[FunctionUsage, ...]
    """Private functions reached by `func.call` from the entry, in module order."""
    totals: Totals
    notes: tuple[str, ...]
    """Things worth knowing: a mismatch between the lowering and the module."""

    def with_status(self, *statuses: str) -> tuple[Parameter, ...]:
        return tuple(p for p in self.parameters if p.status in statuses)

    @property
    def dropped_donations(self) -> tuple[Parameter, ...]:
        """The arguments whose donation was asked for and is not done."""
        return tuple(p for p in self.parameters if p.donation_dropped is not None)


# --------------------------------------------------------------------------- analysis


def analyze_params(module: Module, lowering: Lowering | None = None) -> ParameterUsage:
    """Parameter usage of `module`'s entry; with the `lowering` of an entrypoint or an
    Exported, per Python argument leaf."""
    entry = module.entry
    notes: list[str] = []
    if entry is None or entry.is_declaration:
        return _empty(entry, lowering, ("the module has no entry function with a body",))
    # Most entries hold no dead code: one walk back from the entry's results settles
    # every argument, and the worklist over the whole module runs only where it does
    # not (`liveness.argument_liveness`).
    index: LivenessIndex | None = None
    quick = entry_arguments(module)
    live: Callable[[int], bool]
    uses: Mapping[int, int]
    if quick is not None:
        live, uses = quick.live.__contains__, quick.uses
    else:
        index = LivenessIndex(module)
        live = analyze_liveness(module, index=index).is_live
        uses = _entry_uses(module, entry)
    arguments = entry.arguments
    meshes = {mesh.name: mesh for mesh in module.meshes}
    aliases = module.input_output_aliases
    implicit_count = _implicit_count(entry)
    leaves = lowering.arguments if lowering is not None and lowering.arguments else ()
    warning = _donation_warning(lowering.notes if lowering is not None else ())

    if leaves:
        offset, off = _leaf_offset(arguments, leaves, implicit_count)
        if off:
            notes.append(off)
        names = _leaf_names(leaves, arguments, offset)
        if names.note:
            notes.append(names.note)
        parameters = tuple(
            _leaf_parameter(
                live,
                uses,
                dataclasses.replace(leaf, path=names.from_module.get(leaf.position, leaf.path)),
                arguments,
                offset,
                meshes,
                aliases,
                warning,
            )
            for leaf in leaves
        )
    else:
        offset = implicit_count
        parameters = tuple(
            _dump_parameter(live, uses, argument, meshes, aliases)
            for argument in arguments[offset:]
        )
    implicit = tuple(
        ImplicitParameter(
            hlo_index=argument.index,
            kind=_implicit_kind(argument),
            name=argument_name(argument),
            shape=argument.shape,
            status=USED if live(argument.value) else UNUSED,
        )
        for argument in arguments[:offset]
    )
    functions = _private_functions(module, entry, index)
    static = lowering.static if lowering is not None else ()
    return ParameterUsage(
        entry=entry.name,
        from_python=bool(leaves),
        parameters=parameters,
        implicit=implicit,
        static=static,
        functions=functions,
        totals=_totals(parameters, len(static), len(arguments), functions),
        notes=tuple(notes),
    )


def argument_paths(module: Module, lowering: Lowering | None = None) -> dict[int, str]:
    """The user's name of each entry argument, by its index: the path `params` shows
    (`model.blocks[0].down.kernel`, where the module's own location may say
    `model.states[0][0]` for a Flax NNX module); the location name for a dump. The
    one place every view names arguments from."""
    entry = module.entry
    if entry is None:
        return {}
    arguments = entry.arguments
    implicit_count = _implicit_count(entry)
    leaves = lowering.arguments if lowering is not None and lowering.arguments else ()
    if not leaves:
        return {a.index: argument_name(a) for a in arguments[implicit_count:]}
    offset, _ = _leaf_offset(arguments, leaves, implicit_count)
    names = _leaf_names(leaves, arguments, offset).from_module
    out: dict[int, str] = {}
    for leaf in leaves:
        argument = _argument_of(leaf, arguments, offset)
        if argument is not None:
            out[argument.index] = names.get(leaf.position, leaf.path)
    return out


def result_paths(module: Module, lowering: Lowering | None = None) -> dict[int, str]:
    """The user's name of each entry result, by its index, as `argument_paths` names
    arguments: the path of its output leaf (`Lowering.results`: an `nnx.jit` step's
    `model.w1` and `result`, where JAX's `jax.result_info` says
    `result[0][0].states[0][0]`), else JAX's `jax.result_info` (a dump; an optimized
    module drops it). Results JAX adds before the outputs (effect tokens) keep theirs.
    The one place every view names results from."""
    entry = module.entry
    if entry is None:
        return {}
    results = entry.results
    out = {r.index: r.info for r in results if r.info}
    paths = lowering.results if lowering is not None else ()
    offset = len(results) - len(paths)
    if paths and offset >= 0:
        out.update({offset + i: path for i, path in enumerate(paths)})
    return out


def _leaf_offset(
    arguments: Sequence[Argument], leaves: Sequence[ArgumentLeaf], implicit_count: int
) -> tuple[int, str | None]:
    """Where the kept leaves start among the entry's arguments, and a note when the
    counts do not agree."""
    kept = [leaf for leaf in leaves if leaf.hlo_index is not None]
    if len(arguments) - implicit_count == len(kept):
        return implicit_count, None
    if len(arguments) >= len(kept):
        # Implicit parameters JAX did not mark (an optimized module drops the
        # attributes): they come first.
        return len(arguments) - len(kept), None
    return implicit_count, (
        f"the module's entry has {len(arguments)} parameters but the lowering "
        f"kept {len(kept)} arguments; the map may be off"
    )


@dataclasses.dataclass(frozen=True)
class _LeafNames:
    """How the Python argument leaves are named: by their paths, or, where JAX knew no
    names (an Exported's tree: `args[0]`), by the names the module gives every one of
    them; where it names only some (a pruned argument has no parameter to carry a
    name), by position, all of them, and a note says so."""

    from_module: Mapping[int, str]
    """Leaf position → the module's name, when the module names every leaf."""
    note: str | None


def _leaf_names(
    leaves: Sequence[ArgumentLeaf], arguments: Sequence[Argument], offset: int
) -> _LeafNames:
    # Keyword arguments keep their names in the tree; positional ones are `args[i]`.
    unnamed = [leaf for leaf in leaves if _GENERIC_PATH.match(leaf.path)]
    named: dict[int, str] = {}
    for leaf in unnamed:
        argument = _argument_of(leaf, arguments, offset)
        if argument is not None and not argument_name(argument).startswith("%arg"):
            named[leaf.position] = argument_name(argument)
    if all(named.get(leaf.position, leaf.path) == leaf.path for leaf in unnamed):
        # The module says nothing the paths do not (a function of `*args`).
        return _LeafNames({}, None)
    if len(named) == len(unnamed):
        return _LeafNames(
            named, "arguments are named as the module names them (JAX kept no Python names)"
        )
    return _LeafNames(
        {},
        f"arguments are named by position: the module names {len(named)} of the "
        f"{len(unnamed)} ({', '.join(named.values())}), a pruned argument has no "
        "parameter to carry a name",
    )


def _argument_of(leaf: ArgumentLeaf, arguments: Sequence[Argument], offset: int) -> Argument | None:
    if leaf.hlo_index is not None and 0 <= leaf.hlo_index + offset < len(arguments):
        return arguments[leaf.hlo_index + offset]
    return None


def _empty(
    entry: Function | None, lowering: Lowering | None, notes: tuple[str, ...]
) -> ParameterUsage:
    static = lowering.static if lowering is not None else ()
    return ParameterUsage(
        entry=entry.name if entry is not None else None,
        from_python=False,
        parameters=(),
        implicit=(),
        static=static,
        functions=(),
        totals=_totals((), len(static), 0, ()),
        notes=notes,
    )


def _leaf_parameter(
    live: Callable[[int], bool],
    uses: Mapping[int, int],
    leaf: ArgumentLeaf,
    arguments: Sequence[Argument],
    offset: int,
    meshes: Mapping[str, Mesh],
    aliases: Mapping[int, int],
    warning: str | None,
) -> Parameter:
    argument = _argument_of(leaf, arguments, offset)
    if argument is None:
        return Parameter(
            position=leaf.position,
            path=leaf.path,
            hlo_index=None,
            status=PRUNED,
            shape=leaf.shape,
            hlo_shape=None,
            bytes=leaf.nbytes,
            uses=0,
            donated=False,
            aliases_output=None,
            donation_requested=leaf.donated,
            donation_dropped=PRUNED_DONATION if leaf.donated else None,
            sharding=leaf.sharding,
            sharding_attribute=None,
            memory_kind=leaf.memory_kind,
            also=leaf.also,
            sharding_source=leaf.sharding_source,
        )
    ir = _ir_facts(live, uses, argument, meshes, aliases)
    return Parameter(
        position=leaf.position,
        path=leaf.path,
        hlo_index=argument.index,
        status=ir.status,
        shape=leaf.shape,
        hlo_shape=argument.shape,
        bytes=leaf.nbytes if leaf.nbytes is not None else _bytes(argument),
        uses=ir.uses,
        donated=ir.donated,
        aliases_output=ir.aliases_output,
        donation_requested=leaf.donated,
        donation_dropped=_dropped(leaf, ir.donated, warning),
        sharding=_leaf_sharding(leaf.sharding, ir.sharding),
        sharding_attribute=ir.sharding_attribute,
        memory_kind=ir.memory_kind or leaf.memory_kind,
        also=leaf.also,
        sharding_source=leaf.sharding_source,
    )


def _dump_parameter(
    live: Callable[[int], bool],
    uses: Mapping[int, int],
    argument: Argument,
    meshes: Mapping[str, Mesh],
    aliases: Mapping[int, int],
) -> Parameter:
    ir = _ir_facts(live, uses, argument, meshes, aliases)
    return Parameter(
        position=argument.index,
        path=argument_name(argument),
        hlo_index=argument.index,
        status=ir.status,
        shape=argument.shape,
        hlo_shape=argument.shape,
        bytes=_bytes(argument),
        uses=ir.uses,
        donated=ir.donated,
        aliases_output=ir.aliases_output,
        donation_requested=ir.donated,
        donation_dropped=None,
        sharding=ir.sharding,
        sharding_attribute=ir.sharding_attribute,
        memory_kind=ir.memory_kind,
    )


PRUNED_DONATION: Final = (
    "pruned: the module has no parameter for it, so nothing is donated (JAX does not "
    "delete the array)"
)
"""Why a pruned argument's donation is not done."""

NOT_ALIASED: Final = (
    "JAX donated it, but XLA's optimized module aliases no result to its buffer "
    "(the array is not deleted)"
)
"""Why a donation JAX kept (a `jax.buffer_donor`) is not done in the optimized module."""

NO_DONATION_ATTRIBUTE: Final = (
    "JAX's lowered module gives its parameter no donation (no tf.aliasing_output, no "
    "jax.buffer_donor): JAX found no result to reuse its buffer for, and keeps the array"
)
"""Why a requested donation is not done, when JAX's warning was not recorded (JAX
warns only when it lowers, not when its cache serves the lowering)."""

_JAX_DONATION_WARNINGS: Final = (
    "Some donated buffers were not usable",
    "Donation is not implemented",
)


def _donation_warning(notes: Sequence[str]) -> str | None:
    """JAX's warning about donations it dropped, among the lowering's notes."""
    return next((n for n in notes if n.startswith(_JAX_DONATION_WARNINGS)), None)


def _dropped(leaf: ArgumentLeaf, donated: bool, warning: str | None) -> str | None:
    """Why the donation `leaf` asked for is not done in the module; None when it is
    (or none was asked for)."""
    if not leaf.donated or donated:
        return None
    if leaf.donated_in_module:
        # The lowered module donates it, the module shown (the optimized one) does not.
        return NOT_ALIASED
    return warning or NO_DONATION_ATTRIBUTE


def argument_name(argument: Argument) -> str:
    """A function argument's name: its location (`loc("params['w']")`), else the
    `jax.arg_info` of older JAX exports, else `%argN`."""
    if argument.location.name:
        return argument.location.name
    info = argument.arg_info
    return info if info is not None else f"%arg{argument.index}"


_GENERIC_PATH = re.compile(r"^(?:arg\d+|args\[\d+\].*)$")
_SPEC = re.compile(r"^(?:P|PartitionSpec)\(")


def _leaf_sharding(leaf: str | None, ir: str | None) -> str | None:
    """What the caller wrote (a PartitionSpec over a mesh) reads best and stays the
    same in the optimized module; otherwise the module's, made readable."""
    if leaf and _SPEC.match(leaf):
        return leaf
    if ir:
        return ir
    if leaf and leaf.startswith("{"):
        return parse_hlo_sharding(leaf).words
    return leaf


@dataclasses.dataclass(frozen=True)
class _IrFacts:
    status: Status
    uses: int
    donated: bool
    aliases_output: int | None
    sharding: str | None
    sharding_attribute: str | None
    memory_kind: str | None


def _ir_facts(
    live: Callable[[int], bool],
    uses: Mapping[int, int],
    argument: Argument,
    meshes: Mapping[str, Mesh],
    aliases: Mapping[int, int],
) -> _IrFacts:
    alias = argument.aliased_output
    if alias is None:
        alias = aliases.get(argument.index)
    donated = alias is not None or argument.buffer_donor
    sharding, raw = describe_argument_sharding(argument, meshes)
    return _IrFacts(
        status=USED if live(argument.value) else UNUSED,
        uses=uses.get(argument.value, 0),
        donated=donated,
        aliases_output=alias,
        sharding=sharding,
        sharding_attribute=raw,
        memory_kind=argument.memory_kind,
    )


def _entry_uses(module: Module, entry: Function) -> dict[int, int]:
    """Entry argument value -> ops reading it (an argument is only visible inside its
    function, so the entry's ops are all there is to count)."""
    counts = {argument.value: 0 for argument in entry.arguments if argument.value >= 0}
    for op in module.function_ops(entry):
        for operand in op.operands:
            if operand in counts:
                counts[operand] += 1
    return counts


def _totals(
    parameters: Sequence[Parameter],
    static: int,
    hlo_parameters: int,
    functions: Sequence[FunctionUsage],
) -> Totals:
    def size(items: Sequence[Parameter]) -> int:
        return sum(p.bytes or 0 for p in items)

    passed = [p for p in parameters if p.status != PRUNED]
    return Totals(
        arguments=len(parameters),
        used=sum(p.status == USED for p in parameters),
        unused=sum(p.status == UNUSED for p in parameters),
        pruned=sum(p.status == PRUNED for p in parameters),
        static=static,
        hlo_parameters=hlo_parameters,
        bytes_passed=size(passed),
        bytes_unused=size([p for p in parameters if p.status == UNUSED]),
        bytes_pruned=size([p for p in parameters if p.status == PRUNED]),
        bytes_donated=size([p for p in passed if p.donated]),
        private_unused=sum(len(f.unused) for f in functions),
        donations_dropped=sum(p.donation_dropped is not None for p in parameters),
        bytes_donation_dropped=size([p for p in parameters if p.donation_dropped is not None]),
    )


# --------------------------------------------------------------------------- implicit


def _implicit_kind(argument: Argument) -> str:
    attributes = argument.attributes
    if "jax.token" in attributes or argument.shape == "token":
        return "token"
    name = argument.global_constant
    if name is not None:
        if name == "_platform_index":
            return "platform index"
        return f"dimension variable {name}" if name else "dimension variable"
    if "jax.const" in attributes:
        return "constant"
    return "implicit"


def _implicit_count(entry: Function) -> int:
    """Leading parameters JAX marked as no argument of the Python call."""
    count = 0
    for argument in entry.arguments:
        attributes = argument.attributes
        if (
            "jax.token" in attributes
            or "jax.global_constant" in attributes
            or "jax.const" in attributes
        ):
            count += 1
        else:
            break
    return count


# --------------------------------------------------------------------------- functions


def _private_functions(
    module: Module, entry: Function, index: LivenessIndex | None
) -> tuple[FunctionUsage, ...]:
    """Private functions reached from the entry by `func.call`, each judged on its
    own (intrinsic liveness: which parameters reach its own results)."""
    functions = module.functions
    if not any(
        name != entry.name and not function.is_declaration and function.visibility != "public"
        for name, function in functions.items()
    ):
        return ()  # nothing could be listed: no call needs looking for
    scan = made_scan(module)
    if index is not None:
        sites = index.call_sites
    elif scan is None or "func.call" in scan.counts:
        sites = call_sites(module)
    else:
        return ()  # no call at all, as the op names another analysis counted tell
    callees: dict[str, set[str]] = {}
    for callee, calls in sites.items():
        if callee in functions:
            for call in calls:
                if call.function is not None:
                    callees.setdefault(call.function, set()).add(callee)
    reached: set[str] = set()
    stack = [entry.name]
    while stack:
        name = stack.pop()
        for callee in callees.get(name, ()):
            if callee not in reached:
                reached.add(callee)
                stack.append(callee)
    reached.discard(entry.name)
    listed = [
        function
        for name, function in functions.items()
        if name in reached and not function.is_declaration and function.visibility != "public"
    ]
    if not listed:
        return ()
    # Each function's own results as roots (intrinsic liveness): one walk from them
    # settles the parameters, else the worklist over the whole module does.
    quick = argument_liveness(module, listed, sites)
    live_parameters: Mapping[str, frozenset[int]]
    if quick is not None:
        live_parameters = {
            function.name: frozenset(
                a.index
                for a in function.arguments
                # Only a block argument of the function is one of its parameters.
                if a.value in quick.live and module.value_owner[a.value] == function.op.id
            )
            for function in listed
        }
    else:
        intrinsic = analyze_liveness(
            module, intrinsic=True, index=index if index is not None else LivenessIndex(module)
        )
        live_parameters = intrinsic.live_parameters
    out = []
    for function in listed:
        live = live_parameters.get(function.name, frozenset())
        out.append(
            FunctionUsage(
                name=function.name,
                call_sites=len(sites.get(function.name, ())),
                parameters=tuple(
                    FunctionParameter(
                        index=a.index,
                        name=argument_name(a),
                        shape=a.shape,
                        status=USED if a.index in live else UNUSED,
                    )
                    for a in function.arguments
                ),
            )
        )
    return tuple(out)


# --------------------------------------------------------------------------- donation


def _bytes(argument: Argument) -> int | None:
    """Bytes of an argument's arrays; None for types that hold none we can size."""
    return argument.nbytes if argument.arrays else None


# --------------------------------------------------------------------------- sharding


def describe_argument_sharding(
    argument: Argument, meshes: Mapping[str, Mesh]
) -> tuple[str | None, str | None]:
    """(readable, as written) sharding of a function argument: its Shardy sharding,
    else its XLA one."""
    sharding = argument.shardy_sharding or argument.xla_sharding
    if sharding is None:
        return None, None
    return sharding_words(sharding, meshes), sharding.text

"""What XLA is given for a loaded target, kept so that it can be compiled again (with
other `compiler_options`, as `jax.stages.Lowered.compile` can) and run under JAX's
profiler: an entrypoint's lowering (`LoweringProgram`, through JAX), or a dump's module
before optimizations (`ModuleProgram`, compiled as MLIR; run in a child process).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Protocol

from hloscope.errors import HloscopeError
from hloscope.ir import parse
from hloscope.ir.custom_calls import host_waits, module_custom_call_targets, outside_xla
from hloscope.ir.model import Module
from hloscope.ir.parsed import ParsedModule

if TYPE_CHECKING:
    from hloscope.compile_for import CompileFor
    from hloscope.runs import ProfiledRuns
    from hloscope.sources.jax.module_run import ModuleResult, RunRequest
    from hloscope.stages import Compilation, CompilerOptions, Lowering


class Program(Protocol):
    """What XLA is given for a loaded target (an entrypoint's lowering, a dump's module
    before optimizations), kept so that the target can be compiled again with other
    `compiler_options`, as `jax.stages.Lowered.compile` can."""

    def compile(self, label: str, compiler_options: CompilerOptions) -> Compilation:
        """Compile it for the local backend with `compiler_options`."""
        ...

    def refusal(self) -> str | None:
        """Why compiling it here would fail, known without compiling (custom calls the
        local backend cannot run); None when nothing says so."""
        ...

    def read_optimized(self, compilation: Compilation, label: str) -> ParsedModule:
        """The model of the optimized module `compilation` (made by this program's
        `compile` or `profile`) holds."""
        ...

    def profile(
        self, label: str, module: Module, runs: int | None, warmup: int, trace_dir: str | None
    ) -> tuple[Compilation, ProfiledRuns]:
        """Compile it for the local backend and run it under JAX's profiler: `warmup`
        runs, then `runs` measured ones (None: as many as fit in about two seconds).
        `module` is its model (it names the program and its parameters)."""
        ...


@dataclasses.dataclass(frozen=True, eq=False)
class LoweringProgram:
    """An entrypoint's (or an object's) lowering: compiled through JAX."""

    lowering: Lowering
    compile_for: CompileFor | None = None
    """What to compile for instead of the local backend (`--for`)."""

    def compile(self, label: str, compiler_options: CompilerOptions) -> Compilation:
        from hloscope.sources.jax.compile import compile_lowering

        return compile_lowering(self.lowering, label, compiler_options, self.compile_for)

    def refusal(self) -> str | None:
        # JAX lowered it for the local backend, or compiles it for another one and
        # says why it cannot.
        return None

    def read_optimized(self, compilation: Compilation, label: str) -> ParsedModule:
        # XLA compiled what the user's own function lowered to, in this process.
        return parse.parse_compiled_hlo(compilation.hlo_proto, compilation.hlo_text, label)

    def profile(
        self, label: str, module: Module, runs: int | None, warmup: int, trace_dir: str | None
    ) -> tuple[Compilation, ProfiledRuns]:
        from hloscope.sources.jax.compile import compile_lowering
        from hloscope.sources.jax.profile import profile_lowering

        # The call finds this executable in JAX's cache: the module that runs (so it
        # is compiled, not read from hloscope's compile cache).
        compilation = compile_lowering(self.lowering, label, (), self.compile_for, cache=False)
        name = module.name or self.lowering.name
        profiled = profile_lowering(
            self.lowering, name, label, runs=runs, warmup=warmup, trace_dir=trace_dir
        )
        return compilation, profiled


@dataclasses.dataclass(eq=False)
class ModuleProgram:
    """A dump's module before optimizations, compiled as MLIR in a child process
    (`sources.jax.module_run`): XLA may abort on a module that did not come from the
    user's own function. The parsed module is turned into bytecode at the first compile
    and then let go."""

    parsed: ParsedModule | None
    bytecode: bytes = b""
    partitions: int = 1
    replicas: int = 1
    custom_call_targets: frozenset[str] | None = None
    """The custom-call targets the module names (read at the first ask)."""
    optimized: tuple[Compilation, ParsedModule] | None = None
    """The last compilation, and the model the child made of it, until it is read."""
    compile_for: CompileFor | None = None
    """What to compile for instead of the local backend (`--for`)."""

    def refusal(self) -> str | None:
        if self.compile_for is not None:
            return None  # the platform's compiler says
        targets = self._custom_call_targets()
        if not outside_xla(targets):
            return None  # without importing JAX (the browser asks of every dump)
        from hloscope.sources.jax.compile import custom_call_refusal

        return custom_call_refusal(targets)

    def _custom_call_targets(self) -> frozenset[str]:
        if self.custom_call_targets is None:
            assert self.parsed is not None
            self.custom_call_targets = module_custom_call_targets(self.parsed.model)
        return self.custom_call_targets

    def _prepared(self, label: str) -> None:
        """The module as bytecode, and its device counts (the parsed module let go)."""
        if self.parsed is None:
            return
        bytecode = self.parsed.bytecode()
        if bytecode is None:
            raise HloscopeError(
                "cannot compile this module: it is shown as XLA's HLO because its MLIR "
                "form does not verify",
                where=label,
            )
        model = self.parsed.model
        partitions = model.num_partitions
        replicas = model.num_replicas
        if partitions is None and replicas is None:
            # JAX's HLO text of a lowering (`as_text(dialect="hlo")`) leaves the device
            # count out of its header; its meshes (`xla.sdy.meshes`) still span them.
            partitions = max((mesh.devices for mesh in model.meshes), default=1)
        # A module that does not say is one partition and one replica.
        self.bytecode = bytecode
        self.partitions = 1 if partitions is None else partitions
        self.replicas = 1 if replicas is None else replicas
        self.parsed = None

    def profile(
        self, label: str, module: Module, runs: int | None, warmup: int, trace_dir: str | None
    ) -> tuple[Compilation, ProfiledRuns]:
        self._custom_call_targets()  # read before the parsed module is let go
        _refuse_host_waits(module, label)
        specs = _parameter_specs(module, label)
        self._prepared(label)
        if self.partitions * self.replicas > 1:
            raise HloscopeError(
                f"profiling a dumped module runs it on one device, and this one is for "
                f"{self.partitions * self.replicas} ({self.replicas} replicas x "
                f"{self.partitions} partitions): profile the Python function instead",
                where=label,
            )
        refusal = self.refusal()
        if refusal is not None:
            raise HloscopeError(refusal, where=label)
        from hloscope.sources.jax.module_run import RunRequest

        result = self._run(label, (), RunRequest(specs, runs, warmup, trace_dir))
        assert result.runs is not None
        return result.compilation, result.runs

    def compile(self, label: str, compiler_options: CompilerOptions) -> Compilation:
        self._custom_call_targets()  # read before the parsed module is let go
        self._prepared(label)
        return self._run(label, compiler_options, None).compilation

    def _run(
        self, label: str, compiler_options: CompilerOptions, run: RunRequest | None
    ) -> ModuleResult:
        from hloscope.sources import compile_cache
        from hloscope.sources.jax.module_run import ModuleRequest, run_module

        targets = self._custom_call_targets()
        request = ModuleRequest(
            label,
            self.partitions,
            self.replicas,
            compiler_options,
            tuple(sorted(targets)),
            run,
            self.compile_for.spec if self.compile_for is not None else None,
            compile_cache.enabled(),
        )
        result = run_module(self.bytecode, request)
        self.optimized = (result.compilation, result.optimized)
        return result

    def read_optimized(self, compilation: Compilation, label: str) -> ParsedModule:
        if self.optimized is not None and self.optimized[0] is compilation:
            optimized, self.optimized = self.optimized[1], None
            return optimized
        # What XLA made of a dump is read as any dump is: in the reader process.
        return parse.parse_hlo_proto(compilation.hlo_proto, label)


_WAITS_FOR = {
    "infeed": "nothing feeds its infeed",
    "outfeed": "nothing reads its outfeed",
    "send": "nothing receives what it sends",
    "recv": "nothing sends what it receives",
}


def _refuse_host_waits(module: Module, label: str) -> None:
    """Refuse, before it runs, a module that would wait for ever on the host program
    it was made for, or call back into that program's Python (`host_waits`)."""
    waits = host_waits(module)
    if waits:
        reasons = [_WAITS_FOR.get(w, f"its host callback ({w}) has no Python here") for w in waits]
        raise HloscopeError(
            "profiling a dump runs its module with no host program beside it, and this "
            f"one waits on the host: {'; '.join(reasons)}. Profile the Python function "
            "that runs it instead",
            where=label,
        )


def _parameter_specs(module: Module, label: str) -> tuple[str, ...]:
    """The entry parameters' shapes (`f32[8,128]`), for the inputs a dumped module is
    run on; a parameter no array can be made for (a token, a tuple, a dynamic
    dimension) is refused."""
    entry = module.entry
    if entry is None:
        raise HloscopeError("the module has no entry function to run", where=label)
    specs = []
    for argument in entry.arguments:
        (tensor, *more) = argument.arrays or (None,)
        if (
            tensor is None
            or more
            or tensor.dtype == "token"
            or tensor.shape is None
            or None in tensor.shape
        ):
            raise HloscopeError(
                f"cannot make an input for parameter {argument.index} ({argument.shape}): "
                "profiling a dump runs it on arrays made for its parameters' shapes",
                where=label,
            )
        specs.append(tensor.hlo)
    return tuple(specs)

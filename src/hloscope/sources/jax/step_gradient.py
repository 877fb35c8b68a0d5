"""The gradient a training step takes inside its body, found while the step is traced.

A step's jaxpr holds its backward already, transposed and inlined: the loss it
differentiates is no longer a function one can hand to JAX's `saved_residuals`. So
the step is traced once with the gradient transforms it may call (`jax.grad`,
`jax.value_and_grad`, `nnx.grad`, `nnx.value_and_grad`, `eqx.filter_grad`,
`eqx.filter_value_and_grad`) wrapped, for the length of that trace only: the first
gradient the step calls is read where it is called, the loss and the arguments it is
called on in hand (tracers of the step's trace, closures included), by the same path
as a loss given directly (`residuals.loss_facts`).

Found only where the step calls one of these by its module's attribute at trace time
(`jax.value_and_grad(loss)(...)` in the body); a step that uses a gradient made
before it was traced, or JAX's `vjp`, is refused with one line asking for the loss.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import inspect
import sys
from collections.abc import Callable, Iterator
from typing import Any

import jax

from hloscope.errors import HloscopeError, describe_exception, one_line
from hloscope.ir.locations import Frame, user_frame
from hloscope.remat_facts import RematFacts
from hloscope.sources.entrypoint import user_code
from hloscope.sources.jax.arguments import leaf_sharding

# (module, attribute, filtered as Equinox filters): the transforms wrapped.
_TRANSFORMS = (
    ("jax", "grad", False),
    ("jax", "value_and_grad", False),
    ("flax.nnx", "grad", False),
    ("flax.nnx", "value_and_grad", False),
    ("equinox", "filter_grad", True),
    ("equinox", "filter_value_and_grad", True),
)
_SHORT = {"jax": "jax", "flax.nnx": "nnx", "equinox": "eqx"}


@dataclasses.dataclass
class _Taken:
    """What the first gradient the step called gave, or why it gave nothing."""

    facts: RematFacts | None = None
    error: HloscopeError | None = None
    calls: int = 0
    inside: int = 0
    """How deep the trace is inside a gradient being read or run: a transform called
    there (`nnx.grad` calls `jax.grad`; `loss_facts` differentiates) is not wrapped."""
    shardings: dict[int, Any] = dataclasses.field(default_factory=dict)
    """The sharding of each of the step's arguments, by the id of its tracer: the trace
    keeps only its mesh, and the loss is often called on them as they came."""


Read = Callable[..., RematFacts]
"""How the loss is read (`residuals._step_loss_facts`): `read(fun, args, kwargs,
argnums=, filtered=, has_aux=, transform=, called_at=, shardings=)`, `transform` the
one called (`jax.value_and_grad`), `called_at` the user's frame that called its
gradient, `shardings` each argument leaf's sharding where it is one of the step's."""


def step_gradient_facts(
    step: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    label: str,
    read: Read,
) -> tuple[RematFacts | None, Any]:
    """The residuals of the gradient `step` takes inside (the first it calls), read by
    `read`, and the step's closed jaxpr; (None, jaxpr) where it called none of the
    transforms, (None, None) where it cannot be traced (its failure is said when it is
    differentiated). Reading the gradient failed: that error."""
    taken = _Taken()
    given = jax.tree_util.tree_leaves((args, kwargs))

    # A function of this trace's own: JAX keeps the jaxpr of a function it traced on
    # these arguments before (the browser lowers the step first), and a trace read from
    # that cache calls no gradient transform.
    def traced(*t_args: Any, **t_kwargs: Any) -> Any:
        tracers = jax.tree_util.tree_leaves((t_args, t_kwargs))
        taken.shardings = {
            id(tracer): leaf_sharding(leaf) for tracer, leaf in zip(tracers, given, strict=False)
        }
        return step(*t_args, **t_kwargs)

    try:
        with user_code(), _wrapped(taken, label, read):
            closed = jax.make_jaxpr(functools.wraps(step)(traced))(*args, **kwargs)
    except Exception:
        return taken.facts, None
    if taken.facts is None and taken.error is not None:
        raise taken.error
    return taken.facts, closed


@contextlib.contextmanager
def _wrapped(taken: _Taken, label: str, read: Read) -> Iterator[None]:
    """The gradient transforms of the modules imported already, wrapped; put back as
    they were when the block ends."""
    originals: list[tuple[Any, str, Any]] = []
    try:
        for module_name, attribute, filtered in _TRANSFORMS:
            module = sys.modules.get(module_name)
            original = getattr(module, attribute, None) if module is not None else None
            if original is None:
                continue
            originals.append((module, attribute, original))
            name = f"{_SHORT[module_name]}.{attribute}"
            setattr(module, attribute, _transform(original, name, filtered, taken, label, read))
        yield
    finally:
        for module, attribute, original in reversed(originals):
            setattr(module, attribute, original)


def _transform(
    original: Callable[..., Any],
    attribute: str,
    filtered: bool,
    taken: _Taken,
    label: str,
    read: Read,
) -> Callable[..., Any]:
    """`original` (a gradient transform), whose gradients read their loss's residuals
    when first called."""
    try:
        signature: inspect.Signature | None = inspect.signature(original)
    except (TypeError, ValueError):
        signature = None

    @functools.wraps(original)
    def transform(*t_args: Any, **t_kwargs: Any) -> Any:
        gradient = original(*t_args, **t_kwargs)
        if taken.inside or not t_args or not callable(t_args[0]):
            return gradient  # used inside a gradient, or as a decorator with options
        fun = t_args[0]
        options = _options(signature, t_args, t_kwargs)

        @functools.wraps(gradient)
        def called(*args: Any, **kwargs: Any) -> Any:
            if taken.inside:
                return gradient(*args, **kwargs)
            taken.calls += 1
            taken.inside += 1
            try:
                if taken.calls == 1:
                    _read(fun, args, kwargs, options, filtered, attribute, taken, label, read)
                return gradient(*args, **kwargs)
            finally:
                taken.inside -= 1

        return called

    return transform


def _options(
    signature: inspect.Signature | None, t_args: tuple[Any, ...], t_kwargs: dict[str, Any]
) -> dict[str, Any]:
    """The transform's `argnums` and `has_aux`, its defaults applied."""
    options: dict[str, Any] = {"argnums": 0, "has_aux": False}
    if signature is not None:
        try:
            bound = signature.bind(*t_args, **t_kwargs)
        except TypeError:
            return options
        bound.apply_defaults()
        for key in options:
            if key in bound.arguments:
                options[key] = bound.arguments[key]
    return options


def _read(
    fun: Any,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    options: dict[str, Any],
    filtered: bool,
    attribute: str,
    taken: _Taken,
    label: str,
    read: Read,
) -> None:
    """The residuals of `fun` on the arguments the step's gradient is called on, as
    of a loss given directly."""
    argnums = options["argnums"]
    argnums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    try:
        taken.facts = read(
            fun,
            args,
            kwargs,
            argnums=(0,) if filtered else argnums,
            filtered=filtered,
            has_aux=bool(options["has_aux"]),
            transform=attribute,
            called_at=_caller(),
            shardings=[
                taken.shardings.get(id(leaf)) for leaf in jax.tree_util.tree_leaves((args, kwargs))
            ],
        )
    except HloscopeError as exc:
        taken.error = exc
    except Exception as exc:
        taken.error = HloscopeError(
            f"reading the gradient it takes inside failed: {one_line(describe_exception(exc))}",
            where=label,
        )


def _caller() -> Frame | None:
    """The frame of the user's code that called the gradient."""
    stack = inspect.stack(context=0)
    return user_frame(tuple(Frame(f.function, f.filename, f.lineno, 0) for f in stack))

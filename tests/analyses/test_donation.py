"""Donation as the module does it, against JAX's and XLA's own answers: the donation
attributes of JAX's lowered module (`tf.aliasing_output`, `jax.buffer_donor`), the
aliases of XLA's compiled module (`memory_analysis().alias_size_in_bytes`) and the
arrays a call deletes. A donation the caller asked for and JAX dropped (no result
of its shape and dtype: JAX only warns) is not donated, and says why."""

import importlib.util
import warnings

import equinox as eqx
import jax
import jax.numpy as jnp
import jaxlib._hlo as xla_hlo
import optax
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P
from jaxlib.mlir import ir

import hloscope
from hloscope.analyses.params import NOT_ALIASED, PRUNED_DONATION, analyze_params
from hloscope.ir.hlo_native import build_hlo_native_model
from hloscope.render.json import params_json
from hloscope.render.text.common import describe_source
from hloscope.render.text.params import params_bytes_text
from hloscope.tui.views.params import params_lines

TARGETS = "tests/fixtures/collective_targets.py"

# ---------------------------------------------------------------- JAX's own answers


def jax_donations(lowered):
    """Per parameter of the lowered module's `main`: whether JAX put a donation
    attribute on it, read with MLIR's own API from the module JAX holds."""
    module = lowered.compiler_ir("stablehlo")
    with module.context:
        main = next(
            op
            for op in module.body.operations
            if op.operation.name == "func.func"
            and ir.StringAttr(op.attributes["sym_name"]).value == "main"
        )
        return [
            "tf.aliasing_output" in attributes or "jax.buffer_donor" in attributes
            for attributes in ir.ArrayAttr(main.attributes["arg_attrs"])
        ]


def lowered_with_warning(jitted, *args):
    """JAX's `Lowered`, and the donation warnings it gave lowering it (JAX warns only
    when it lowers, not when its cache serves the lowering)."""
    jax.clear_caches()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        lowered = jitted.lower(*args)
    messages = [str(w.message) for w in caught if "donated buffers" in str(w.message)]
    jax.clear_caches()  # so that hloscope lowers it afresh, and sees the warnings too
    return lowered, messages


def leaves(*trees):
    return [leaf for tree in trees for leaf in jax.tree_util.tree_leaves(tree)]


def by_hlo(usage):
    return {p.hlo_index: p for p in usage.parameters if p.hlo_index is not None}


# ---------------------------------------------------------------- jax.jit


def sgd(w, grads):
    return w - 0.1 * grads.sum(0)


def test_a_donation_jax_cannot_use_is_dropped_not_donated():
    # No result is f32[4,32]: JAX warns, gives `grads` no donation attribute and
    # keeps the array; hloscope said `donated` and counted 640 B donated.
    g = jax.jit(sgd, donate_argnums=(0, 1))
    w, grads = jnp.ones(32), jnp.ones((4, 32))
    lowered, [warning] = lowered_with_warning(g, w, grads)
    expected = jax_donations(lowered)
    assert expected == [True, False]

    inspection = hloscope.inspect(g, w, grads)
    report = inspection.params
    usage = report.usage
    assert [p.donated for p in usage.parameters] == expected
    assert [p.donation_requested for p in usage.parameters] == [True, True]
    w_row, grads_row = usage.parameters
    assert w_row.donation_dropped is None and w_row.aliases_output == 0
    # The reason is JAX's own warning.
    assert grads_row.donation_dropped is not None
    assert grads_row.donation_dropped.startswith(warning.splitlines()[0])
    compiled = lowered.compile()
    alias = compiled.memory_analysis().alias_size_in_bytes
    assert usage.totals.bytes_donated == alias == 128
    assert (usage.totals.donations_dropped, usage.totals.bytes_donation_dropped) == (1, 512)

    # Every view says the same: JSON, the bytes line, the browser's tab.
    doc = params_json(report)
    assert [(p["donated"], p["donation_requested"]) for p in doc["parameters"]] == [
        (True, True),
        (False, True),
    ]
    assert doc["parameters"][1]["donation_dropped"] == grads_row.donation_dropped
    assert doc["totals"]["bytes_donated"] == alias
    assert "128 B donated · 512 B donation dropped" in params_bytes_text(usage)
    text = "\n".join(line.text.plain for line in params_lines(report, inspection.module, False))
    assert "dropped" in text and warning.splitlines()[0] in text

    # The optimized module (--compile) aliases the same parameter, as XLA says.
    jax.clear_caches()  # lowered afresh, JAX warns again
    optimized = inspection.optimized().params.usage
    assert [p.donated for p in optimized.parameters] == [True, False]
    assert optimized.totals.bytes_donated == alias
    assert optimized.parameters[1].donation_dropped == grads_row.donation_dropped

    # And the runtime: the call deletes exactly the donated arrays.
    g(w, grads)
    assert [w.is_deleted(), grads.is_deleted()] == [p.donated for p in optimized.parameters]


def test_a_pruned_argument_donates_nothing():
    f = jax.jit(lambda a, b: a * 2, donate_argnums=(1,))
    a, b = jnp.ones(3), jnp.ones(5)
    usage = hloscope.inspect(f, a, b).params.usage
    row = usage.parameters[1]
    assert (row.status, row.donated, row.donation_requested) == ("pruned", False, True)
    assert row.donation_dropped == PRUNED_DONATION
    assert usage.totals.bytes_donated == 0
    f(a, b)
    assert not b.is_deleted()


# ---------------------------------------------------------------- Equinox + Optax


def test_an_equinox_training_step_donating_all_but_the_model():
    model = eqx.nn.MLP(8, 4, 16, 2, key=jax.random.PRNGKey(0))
    optimizer = optax.adamw(1e-3)
    state = optimizer.init(eqx.filter(model, eqx.is_array))

    @eqx.filter_jit(donate="all-except-first")
    def step(model, state, x, y):
        def loss(m):
            return jnp.mean((jax.vmap(m)(x) - y) ** 2)

        value, grads = eqx.filter_value_and_grad(loss)(model)
        updates, state = optimizer.update(grads, state, eqx.filter(model, eqx.is_array))
        return value, eqx.apply_updates(model, updates), state

    x, y = jnp.ones((30, 8)), jnp.ones((30, 4))
    lowered, [warning] = lowered_with_warning(step, model, state, x, y)
    expected = jax_donations(lowered.lowered)

    usage = hloscope.inspect(step, model, state, x, y).params.usage
    rows = by_hlo(usage)
    assert {i: rows[i].donated for i in rows} == dict(enumerate(expected))
    dropped = {p.path for p in usage.dropped_donations}
    assert dropped == {"x", "y"}
    assert all(
        p.donation_dropped.startswith(warning.splitlines()[0]) for p in usage.dropped_donations
    )
    # Every optimizer state leaf is requested and donated; the model is not requested.
    for p in usage.parameters:
        assert p.donation_requested == (not p.path.startswith("model"))
    compiled = lowered.lowered.compile()
    assert usage.totals.bytes_donated == compiled.memory_analysis().alias_size_in_bytes

    # The call deletes the state's arrays and keeps the batch's, as hloscope says.
    arrays = leaves(state, x, y)
    step(model, state, x, y)
    deleted = sum(a.nbytes for a in arrays if a.is_deleted())
    kept = sum(a.nbytes for a in arrays if not a.is_deleted())
    assert (deleted, kept) == (usage.totals.bytes_donated, usage.totals.bytes_donation_dropped)
    assert kept == 960 + 480


# ---------------------------------------------------------------- --compile, 8 devices


def test_a_buffer_donor_xla_does_not_alias_is_dropped_in_the_optimized_module():
    # Sharded, with output shardings left to XLA: JAX marks both arguments
    # `jax.buffer_donor` (no warning); XLA aliases only `x` (`y`'s result is f32[16]).
    mesh = jax.make_mesh((8,), ("d",), axis_types=(AxisType.Auto,))
    sharding = NamedSharding(mesh, P("d"))
    x = jax.device_put(jnp.ones((16, 4)), sharding)
    y = jax.device_put(jnp.ones((16, 4)), sharding)
    f = jax.jit(lambda x, y: (x * 2, y.sum(1)), donate_argnums=(0, 1))
    lowered, messages = lowered_with_warning(f, x, y)
    assert messages == [] and jax_donations(lowered) == [True, True]

    inspection = hloscope.inspect(f, x, y)
    usage = inspection.params.usage
    assert [p.donated for p in usage.parameters] == [True, True]
    assert usage.totals.bytes_donated == 2 * 256

    optimized = inspection.optimized().params.usage
    assert [p.donated for p in optimized.parameters] == [True, False]
    assert optimized.parameters[1].donation_dropped == NOT_ALIASED
    # XLA's alias bytes are per device: the global 256 B over 8 devices.
    alias = lowered.compile().memory_analysis().alias_size_in_bytes
    assert optimized.totals.bytes_donated == 8 * alias == 256
    f(x, y)
    assert [x.is_deleted(), y.is_deleted()] == [p.donated for p in optimized.parameters]


# ---------------------------------------------------------------- XLA's own form


def test_xla_own_form_of_an_optimized_module_keeps_its_aliases():
    # An FSDP step with a tuple all-to-all whose groups are `replica_groups=mesh[...]`
    # does not convert to MLIR; its optimized module is shown in XLA's own form,
    # whose model once had no `input_output_alias`: every donation read as dropped.
    spec = importlib.util.spec_from_file_location("collective_targets", TARGETS)
    targets = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(targets)
    step = jax.jit(targets.fsdp_step.__wrapped__, donate_argnums=(0,))
    params, x, y = targets.fsdp_step_args()
    lowered, messages = lowered_with_warning(step, params, x, y)
    assert messages == []
    alias = lowered.compile().memory_analysis().alias_size_in_bytes

    inspection = hloscope.inspect(step, params, x, y).optimized()
    assert "XLA's own form" in describe_source(inspection.source)
    usage = inspection.params.usage
    donated = {p.path for p in usage.parameters if p.donated}
    assert donated == {p.path for p in usage.parameters if p.path.startswith("params")}
    assert usage.dropped_donations == ()
    # Every weight is split evenly over the 8 devices: XLA's alias bytes are per device.
    assert usage.totals.bytes_donated == 8 * alias
    step(params, x, y)
    assert all(leaf.is_deleted() for leaf in leaves(params))
    assert not x.is_deleted() and not y.is_deleted()


def test_xla_own_form_of_a_single_device_module_reads_the_same_donation():
    g = jax.jit(sgd, donate_argnums=(0, 1))
    w, grads = jnp.ones(32), jnp.ones((4, 32))
    lowered, _ = lowered_with_warning(g, w, grads)
    text = lowered.compile().as_text()
    native = build_hlo_native_model(xla_hlo.hlo_module_from_text(text))
    usage = analyze_params(native)
    assert [(p.donated, p.aliases_output) for p in usage.parameters] == [(True, 0), (False, None)]
    assert usage.totals.bytes_donated == lowered.compile().memory_analysis().alias_size_in_bytes


def test_a_dropped_donation_keeps_jax_reason_when_jax_serves_a_cached_lowering():
    # JAX warns only when it lowers: the same function lowered on the same shapes
    # again comes from its cache, silently. The reason and the notes are what JAX
    # said of that lowering, whatever the process lowered before.
    jitted = jax.jit(lambda w, grads: w - 0.1 * grads.sum(0), donate_argnums=(0, 1))
    shapes = (jax.ShapeDtypeStruct((32,), jnp.float32), jax.ShapeDtypeStruct((4, 32), jnp.float32))
    _lowered, messages = lowered_with_warning(jitted, *shapes)
    warning = " ".join(messages[0].split())  # notes are one line each
    first = hloscope.inspect(jitted, *shapes).params
    again = hloscope.inspect(jitted, *shapes).params
    assert [p.donation_dropped for p in again.usage.parameters] == [None, warning]
    assert again.usage.parameters == first.usage.parameters
    assert again.notes == first.notes == (warning,)

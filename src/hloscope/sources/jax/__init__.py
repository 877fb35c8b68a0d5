"""The JAX adapter: the only package in hloscope that imports `jax`.

Everything that needs JAX lives here, so that the rest of hloscope (the IR, the
analyses, the renderers, the front ends) works on plain data
(`hloscope.stages`) and never imports JAX: reading a dump does not import
it at all, and what a JAX release changes touches only these modules. JAX's
private APIs are read in `private` alone.

- `arguments`: example arguments (`--arg` shapes, an `--args` factory, what a
  function requires), and the readable forms of argument avals and pytree paths;
- `lower`: what an entrypoint names (a function, a stage, an `Exported`) turned
  into a `Lowering`;
- `libraries`: what Flax NNX and Equinox wrap around JAX's jit and stages, and the
  argument paths as the user wrote them under their splits (and `jax.pmap`'s);
- `compile`: XLA's optimized module and its cost and memory analyses
  (`Compilation`);
- `aot`: the runs of `aot-check`, the call and the ahead-of-time path on the same
  inputs (`AotRuns`);
- `capture`: every compilation JAX performs while a program runs, with JAX's
  reasons and timings (`RecordedRun`, for `compiles` and `hloscope.watch()`);
  `explain_words`: JAX 0.8's explanations of a recompilation in today's words;
- `private`: every use of `jax._src` and of underscored JAX attributes, and
  `private_api_ok()`, which fails loudly when a JAX release changes them.

Nothing is re-exported here: import the modules themselves
(`from hloscope.sources.jax.lower import lower`).
"""

import os as _os

# Set before any module here imports JAX (and inherited by hloscope's child processes);
# a user's own setting stays. With libtpu installed (`hloscope[tpu]`), every process
# that starts JAX's backends loads it and holds /tmp/libtpu_lockfile until it exits,
# so that a second one could not make a TPU topology (`--for tpu:...`) while the first
# runs. With JAX's CUDA plugin installed (`hloscope[cuda12]`) on a machine without
# CUDA, the plugin refuses to start (logging a traceback) unless its check of the
# local CUDA libraries is skipped; compiling for a GPU spec needs none of them.
_os.environ.setdefault("ALLOW_MULTIPLE_LIBTPU_LOAD", "1")
_os.environ.setdefault("JAX_SKIP_CUDA_CONSTRAINTS_CHECK", "1")

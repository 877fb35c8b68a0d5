"""What is live at the memory peak? Two temporaries XLA cannot fuse away

`rank_scores` builds a 1024x1024 matrix of pairwise scores, sorts each row, and
weighs the sorted rows by the scores. A sort is not fused into its producer or
its consumer, so both matrices reach memory: the scores (the sort's input, still
needed after the sort) and the sorted rows (its output) are live together, 4 MiB
each, and make the peak. `logits` is donated: its buffer is reused for the
result (an alias), and `temperature` is an ordinary parameter.

    hloscope memory samples/memory_peak.py:rank_scores --args samples/memory_peak.py:example_args
"""

from functools import partial

import jax
import jax.numpy as jnp


@partial(jax.jit, donate_argnames="logits")
def rank_scores(logits, temperature):
    scores = jnp.exp((logits[:, None] - logits[None, :]) / temperature)
    ranked = jnp.sort(scores, axis=-1)
    return (ranked * scores).sum(axis=-1)


def example_args():
    return (
        jax.ShapeDtypeStruct((1024,), jnp.float32),
        jax.ShapeDtypeStruct((), jnp.float32),
    )

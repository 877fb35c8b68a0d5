"""A program that asks for its own host device count in XLA_FLAGS when it is imported
(as scripts written for CPU meshes do): under `--for`, a count other than the
platform's is refused, naming both."""

from __future__ import annotations

import os

os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"

import jax
import jax.numpy as jnp


@jax.jit
def double(x):
    return x * 2.0


def example_args():
    return (jax.ShapeDtypeStruct((8, 128), jnp.float32),)

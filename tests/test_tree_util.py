"""jaxmarl_accel.tree_util: the bytes of a pytree's leaves."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxmarl_accel.tree_util import tree_leaf_bytes


def test_tree_leaf_bytes_counts_arrays_and_abstract_leaves():
    spec = {"a": jax.ShapeDtypeStruct((3, 4), jnp.float32), "b": jnp.zeros((2,), jnp.int8)}
    assert tree_leaf_bytes(spec) == 3 * 4 * 4 + 2
    assert tree_leaf_bytes({"empty": jnp.zeros((0, 5)), "none": None}) == 0
    assert tree_leaf_bytes(jax.eval_shape(lambda: jnp.zeros((2**20, 2**12), jnp.bfloat16))
                           ) == 2**33  # past int32

"""Small measurements over pytrees, shared by the buffers, the command line's memory checks
and the experiments."""

from __future__ import annotations

import jax
import numpy as np

from jaxmarl_accel.types import PyTree


def tree_leaf_bytes(tree: PyTree) -> int:
    """Bytes of every leaf of ``tree`` together (leaves arrays or ``jax.ShapeDtypeStruct``
    of any shape: one transition, a whole replay state, a training state)."""
    return sum(
        int(np.prod(leaf.shape, dtype=np.int64)) * np.dtype(leaf.dtype).itemsize
        for leaf in jax.tree.leaves(tree)
    )

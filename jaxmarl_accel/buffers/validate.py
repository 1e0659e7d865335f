"""Trace-time checks of what a buffer is given: the example transition ``init`` takes and
the batches ``add`` takes (free under ``jit``: they read shapes and dtypes only)."""

from __future__ import annotations

import jax

from jaxmarl_accel.buffers.storage import StorageLayout
from jaxmarl_accel.types import PyTree


def _field(path: tuple) -> str:
    """A leaf's pytree path as a dotted field name, e.g. ``obs`` or ``info.state``."""
    parts = []
    for key in path:
        for attr in ("name", "key", "idx"):  # GetAttrKey, DictKey / FlattenedIndexKey, SequenceKey
            if hasattr(key, attr):
                parts.append(str(getattr(key, attr)))
                break
        else:
            parts.append(jax.tree_util.keystr((key,)))
    return ".".join(parts) or "<root>"


def _shape(shape: tuple) -> str:
    return "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


def check_example(example: PyTree) -> int:
    """One-line ValueErrors for an example transition without leaves, a leaf without the
    leading agent axis, or leaves that disagree on N; returns N."""
    leaves = jax.tree_util.tree_flatten_with_path(example)[0]
    if not leaves:
        raise ValueError("example_transition must have at least one array leaf")
    for path, leaf in leaves:
        if leaf.ndim < 1:
            raise ValueError(f"example_transition: field {_field(path)!r} has shape "
                             f"{_shape(leaf.shape)}, needs a leading agent axis [N, ...]")
    num_agents = {_field(path): leaf.shape[0] for path, leaf in leaves}
    if len(set(num_agents.values())) != 1:
        raise ValueError(f"example_transition: fields disagree on the agent axis N: {num_agents}")
    return leaves[0][1].shape[0]


def check_batch(experience: PyTree, batch: PyTree, capacity: int,
                layout: StorageLayout) -> int:
    """Trace-time checks of an ``add`` batch (free under jit); returns E."""
    stored = jax.tree.structure(experience)
    if jax.tree.structure(batch) != stored:
        raise ValueError(f"batch: pytree structure {jax.tree.structure(batch)} != {stored}")
    sizes = {}
    new_leaves = jax.tree_util.tree_flatten_with_path(batch)[0]
    for store, (path, new) in zip(jax.tree.leaves(experience), new_leaves, strict=True):
        item, name = layout.item_shape(store), _field(path)
        if new.ndim != len(item) + 1 or tuple(new.shape[1:]) != item:
            raise ValueError(f"add: batch field {name!r} has leaf shape {_shape(new.shape)}, "
                             f"expected {_shape(('E', *item))} (a leading env axis E)")
        if new.dtype != store.dtype:
            raise ValueError(f"add: batch field {name!r} has leaf dtype {new.dtype}, "
                             f"stored as {store.dtype}")
        sizes[name] = new.shape[0]
    if len(set(sizes.values())) != 1:
        raise ValueError(f"add: batch fields disagree on the env axis E: {sizes}")
    num_new = next(iter(sizes.values()))
    if not 1 <= num_new <= capacity:
        raise ValueError(f"batch: E={num_new} transitions per add must be in [1, {capacity}]")
    return num_new

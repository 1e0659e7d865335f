"""A sum tree over C non-negative priorities as one flat float32 array, in pure JAX.

Layout: ``tree`` has ``2P`` entries with ``P = 2**depth >= C``; node 1 is the root, node
``k`` has children ``2k`` and ``2k + 1``, and leaf ``i`` (slot i) is node ``P + i``.
Entry 0 and leaves ``C..P-1`` stay zero.

Robustness against float32 drift: updates never add deltas to ancestors (the source of
flashbax's late-training zero-priority samples). After leaves change, every ancestor on
their paths is *recomputed* as ``left + right`` from its two children, so each internal
node is always exactly the float32 sum of its children, whatever the history. The descent
in :func:`find` additionally never steps into a child whose sum is zero, so it returns a
leaf with positive priority whenever the root is positive.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp


def depth_for(capacity: int) -> int:
    """Tree depth (levels below the root) for ``capacity`` leaves."""
    return max(1, (capacity - 1).bit_length())


def init(capacity: int) -> jax.Array:
    """All-zero tree, float32 ``[2 * 2**depth]``."""
    return jnp.zeros(2 * 2 ** depth_for(capacity), jnp.float32)


def total(tree: jax.Array) -> jax.Array:
    """Sum of all priorities, float32 ``[]``."""
    return tree[1]


def leaves(tree: jax.Array, slots: jax.Array) -> jax.Array:
    """Priorities of ``slots`` (int32, any shape), float32 of the same shape."""
    return tree[tree.shape[0] // 2 + slots]


def set_leaves(tree: jax.Array, slots: jax.Array, values: jax.Array) -> jax.Array:
    """Set the priorities of ``slots`` (int32 ``[K]``) to ``values`` (float32 ``[K]``).

    Duplicate slots are allowed: the value at the *last* occurrence wins (deterministic).
    Negative slots are ignored. Ancestors are recomputed from their children level by level
    (no delta updates).
    """
    num_leaves = tree.shape[0] // 2
    order = jnp.argsort(slots, stable=True)
    sorted_slots = slots[order]
    # keep only the last occurrence of each slot; others are sent out of range and dropped
    is_last = jnp.append(sorted_slots[1:] != sorted_slots[:-1], True)
    nodes = num_leaves + sorted_slots
    targets = jnp.where(is_last & (sorted_slots >= 0), nodes, tree.shape[0])
    tree = tree.at[targets].set(values[order].astype(tree.dtype), mode="drop")

    def recompute_parents(level: int, carry: tuple[jax.Array, jax.Array]):
        tree, nodes = carry
        nodes = nodes // 2  # parents of the previous level; duplicates get identical values
        return tree.at[nodes].set(tree[2 * nodes] + tree[2 * nodes + 1]), nodes

    depth = num_leaves.bit_length() - 1
    return jax.lax.fori_loop(0, depth, recompute_parents, (tree, nodes))[0]


def rebuild(tree: jax.Array) -> jax.Array:
    """The tree recomputed bottom-up from its leaves (reference for drift checks)."""
    num_leaves = tree.shape[0] // 2
    level = tree[num_leaves:]
    levels = [level]
    while level.shape[0] > 1:
        level = level[0::2] + level[1::2]
        levels.append(level)
    return jnp.concatenate([jnp.zeros(1, tree.dtype), *reversed(levels)])


def find(tree: jax.Array, targets: jax.Array) -> jax.Array:
    """Leaf (slot) whose prefix-sum interval holds each target, int32 like ``targets``.

    ``targets`` are float32 values in ``[0, total)``. At each level the descent goes left
    when the target is below the left sum, right otherwise, and never into a zero child.
    """
    num_leaves = tree.shape[0] // 2

    def descend(level: int, carry: tuple[jax.Array, jax.Array]):
        node, targets = carry
        left = tree[2 * node]
        right = tree[2 * node + 1]
        go_right = ((targets >= left) & (right > 0)) | (left <= 0)
        targets = jnp.where(go_right, targets - left, targets)
        return 2 * node + go_right.astype(jnp.int32), targets

    start = (jnp.ones(targets.shape, jnp.int32), targets)
    node, _ = jax.lax.fori_loop(0, num_leaves.bit_length() - 1, descend, start)
    return node - num_leaves


def stratified_targets(tree: jax.Array, key: jax.Array, batch_size: int) -> jax.Array:
    """One uniform prefix-sum target in each of ``batch_size`` equal strata, float32 ``[B]``.

    Target ``i`` lies in stratum ``i``, ``[i, i + 1) * total / B``, so the targets ascend.
    """
    stratum = total(tree) / batch_size
    offsets = jax.random.uniform(key, (batch_size,), jnp.float32)
    return (jnp.arange(batch_size, dtype=jnp.float32) + offsets) * stratum


def stratified_sample(tree: jax.Array, key: jax.Array, batch_size: int) -> jax.Array:
    """Draw ``batch_size`` slots proportionally to priority, one per equal stratum, ``[B]``.

    Proportional prioritization with stratified targets (Schaul et al. 2016, appendix B.2.1).
    """
    return find(tree, stratified_targets(tree, key, batch_size))

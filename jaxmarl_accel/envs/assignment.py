"""Agent-to-target assignment for the scripted spread policy.

:func:`assign` gives each row of a cost matrix a distinct column. It is exact (minimum total
cost) when there are at most :data:`EXACT_MAX_COLS` columns, by dynamic programming over
subsets of columns (``O(2^B * B * A)``); above that it is greedy (repeatedly takes the
cheapest remaining row-column pair, ``O(A * A * B)``), which is not always optimal.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

EXACT_MAX_COLS = 8


def _subset_tables(num_cols: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Static ``prev [2^B, B]`` (mask without column c), ``has [2^B, B]`` and popcount ``[2^B]``."""
    masks = np.arange(2**num_cols)[:, None]
    bits = 1 << np.arange(num_cols)[None, :]
    has = (masks & bits) > 0
    return masks ^ bits, has, has.sum(axis=1)


def _assign_exact(cost: jax.Array) -> jax.Array:
    """Minimum-cost assignment of ``A <= B`` rows to distinct columns, by subset DP."""
    num_rows, num_cols = cost.shape
    prev, has, popcount = _subset_tables(num_cols)
    best = jnp.full((2**num_cols,), jnp.inf, cost.dtype).at[0].set(0.0)
    choices = []
    for row in range(num_rows):
        cand = jnp.where(has, best[prev] + cost[row][None, :], jnp.inf)  # [2^B, B]
        choices.append(jnp.argmin(cand, axis=1))
        best = jnp.where(popcount == row + 1, jnp.min(cand, axis=1), jnp.inf)
    mask = jnp.argmin(best)
    cols = []
    for row in reversed(range(num_rows)):
        col = choices[row][mask]
        cols.append(col)
        mask = mask ^ (1 << col)
    return jnp.stack(cols[::-1]).astype(jnp.int32)


def _assign_greedy(cost: jax.Array) -> jax.Array:
    """Greedy assignment of ``A <= B`` rows to distinct columns (cheapest pair first)."""
    num_rows, num_cols = cost.shape

    def pick(_, carry):
        remaining, cols = carry
        flat = jnp.argmin(remaining)
        row, col = flat // num_cols, flat % num_cols
        remaining = remaining.at[row, :].set(jnp.inf).at[:, col].set(jnp.inf)
        return remaining, cols.at[row].set(col)

    init = (cost, jnp.zeros((num_rows,), jnp.int32))
    return jax.lax.fori_loop(0, num_rows, pick, init)[1].astype(jnp.int32)


def assign(cost: jax.Array) -> jax.Array:
    """Target of each row: distinct columns when ``A <= B``.

    Args:
      cost: ``[A, B]`` finite costs (e.g. agent-to-landmark distances).

    Returns:
      ``[A]`` int32 column of each row. When ``A > B`` the columns pick distinct rows
      instead and every row that no column picked takes its cheapest column.
    """
    num_rows, num_cols = cost.shape
    if num_rows > num_cols:
        row_of_col = assign(cost.T)
        picked = jnp.full((num_rows,), -1, jnp.int32).at[row_of_col].set(
            jnp.arange(num_cols, dtype=jnp.int32))
        return jnp.where(picked >= 0, picked, jnp.argmin(cost, axis=1).astype(jnp.int32))
    if num_cols <= EXACT_MAX_COLS:
        return _assign_exact(cost)
    return _assign_greedy(cost)

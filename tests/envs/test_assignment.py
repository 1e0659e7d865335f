"""envs.assignment: optimal up to eight columns (against scipy), greedy beyond (against the
sequential cheapest-pair-first loop)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linear_sum_assignment

from jaxmarl_accel.envs.mpe.assignment import assign, assign_greedy


def _sequential_greedy(cost: np.ndarray) -> np.ndarray:
    """Reference: takes the cheapest remaining pair, one at a time (ties to the lowest flat
    index, i.e. the lower row, then the lower column)."""
    remaining = np.array(cost, np.float64)
    cols = np.zeros(cost.shape[0], np.int32)
    for _ in range(cost.shape[0]):
        row, col = np.unravel_index(np.argmin(remaining), remaining.shape)
        cols[row] = col
        remaining[row, :] = np.inf
        remaining[:, col] = np.inf
    return cols


def _distinct_costs(rng: np.random.Generator, rows: int, cols: int) -> np.ndarray:
    """Distinct float32 costs in ``[0, 2)`` (a random permutation of a grid)."""
    return (rng.permutation(rows * cols).reshape(rows, cols) * (2.0 / (rows * cols))).astype(
        np.float32)


@settings(max_examples=12, deadline=None)
@given(st.integers(1, 8), st.integers(0, 2), st.integers(0, 2**31 - 1))
def test_assignment_is_optimal_up_to_eight(rows, extra_cols, seed):
    cols = min(rows + extra_cols, 8)
    cost = np.random.default_rng(seed).uniform(0, 2, (rows, cols)).astype(np.float32)
    picked = np.asarray(jax.jit(assign)(jnp.asarray(cost)))
    assert len(set(picked.tolist())) == rows
    ref_rows, ref_cols = linear_sum_assignment(cost)
    assert cost[np.arange(rows), picked].sum() == pytest.approx(
        cost[ref_rows, ref_cols].sum(), abs=1e-5)


@settings(max_examples=8, deadline=None)  # each example compiles its own shape
@given(st.integers(1, 40), st.integers(0, 12), st.integers(1, 12), st.integers(1, 8),
       st.integers(0, 2**31 - 1))
@pytest.mark.slow
def test_greedy_equals_sequential_on_distinct_costs(rows, extra_cols, num_candidates,
                                                    refill_rows, seed):
    cost = _distinct_costs(np.random.default_rng(seed), rows, rows + extra_cols)
    result = jax.jit(assign_greedy, static_argnums=(1, 2))(
        jnp.asarray(cost), num_candidates, refill_rows)
    picked = np.asarray(result.col_of_row)
    np.testing.assert_array_equal(picked, _sequential_greedy(cost))
    assert len(set(picked.tolist())) == rows
    refill_bound = rows * (-(-rows // min(refill_rows, rows)) + 1)
    assert int(result.refills) <= refill_bound
    # every round matches a row, except the last one before each refill
    assert int(result.rounds) <= rows + 1 + int(result.refills)


@settings(max_examples=6, deadline=None)
@given(st.integers(9, 30), st.integers(0, 5), st.integers(1, 4), st.integers(1, 4),
       st.integers(0, 2**31 - 1))
def test_greedy_breaks_ties_as_the_flat_argmin(rows, extra_cols, num_candidates, refill_rows,
                                               seed):
    cost = np.random.default_rng(seed).integers(0, 3, (rows, rows + extra_cols)).astype(
        np.float32)
    picked = jax.jit(assign_greedy, static_argnums=(1, 2))(
        jnp.asarray(cost), num_candidates, refill_rows).col_of_row
    np.testing.assert_array_equal(np.asarray(picked), _sequential_greedy(cost))


def test_assign_is_greedy_above_eight_columns_and_transposes_tall_costs():
    rng = np.random.default_rng(0)
    big = rng.uniform(0, 1, (12, 15)).astype(np.float32)
    np.testing.assert_array_equal(np.asarray(jax.jit(assign)(jnp.asarray(big))),
                                  _sequential_greedy(big))
    tall = rng.uniform(0, 1, (5, 3)).astype(np.float32)
    picked = np.asarray(assign(jnp.asarray(tall)))
    assert set(picked.tolist()) == {0, 1, 2}
    wide_tall = rng.uniform(0, 1, (40, 25)).astype(np.float32)
    picked = np.asarray(jax.jit(assign)(jnp.asarray(wide_tall)))
    row_of_col = _sequential_greedy(wide_tall.T)  # each column picks a distinct row
    np.testing.assert_array_equal(picked[row_of_col], np.arange(25))
    unpicked = np.setdiff1d(np.arange(40), row_of_col)
    np.testing.assert_array_equal(picked[unpicked], wide_tall[unpicked].argmin(axis=1))


def test_greedy_on_agents_far_outside_the_landmarks():
    """Agents spread far around landmarks in [-1, 1]^2: long chains of proposals and
    many lists that run out."""
    rng = np.random.default_rng(1)
    agents = rng.normal(0, 8, (150, 2))
    landmarks = rng.uniform(-1, 1, (150, 2))
    cost = np.linalg.norm(agents[:, None] - landmarks[None], axis=-1).astype(np.float32)
    result = jax.jit(assign_greedy)(jnp.asarray(cost))
    np.testing.assert_array_equal(np.asarray(result.col_of_row), _sequential_greedy(cost))
    assert int(result.refills) > 0


def test_greedy_under_vmap_matches_each_matrix():
    costs = jax.random.uniform(jax.random.PRNGKey(0), (4, 30, 30))
    batched = jax.jit(jax.vmap(assign))(costs)
    for cost, picked in zip(costs, batched, strict=True):
        np.testing.assert_array_equal(np.asarray(picked), _sequential_greedy(np.asarray(cost)))


def test_greedy_refuses_more_rows_than_columns():
    with pytest.raises(ValueError, match="rows <= columns"):
        assign_greedy(jnp.zeros((4, 3)))

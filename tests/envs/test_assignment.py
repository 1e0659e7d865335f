"""envs.assignment: optimal up to eight agents (against scipy), greedy beyond."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linear_sum_assignment

from jaxmarl_accel.envs.assignment import assign


@settings(max_examples=12, deadline=None)
@given(st.integers(1, 8), st.integers(0, 2), st.integers(0, 2**31 - 1))
def test_assignment_is_optimal_up_to_eight(rows, extra_cols, seed):
    cols = min(rows + extra_cols, 8)
    cost = np.random.default_rng(seed).uniform(0, 2, (rows, cols)).astype(np.float32)
    picked = np.asarray(assign(jnp.asarray(cost)))
    assert len(set(picked.tolist())) == rows
    ref_rows, ref_cols = linear_sum_assignment(cost)
    assert cost[np.arange(rows), picked].sum() == pytest.approx(
        cost[ref_rows, ref_cols].sum(), abs=1e-5)


def test_assignment_greedy_and_transposed_cases():
    rng = np.random.default_rng(0)
    big = jnp.asarray(rng.uniform(0, 1, (12, 15)), jnp.float32)
    picked = np.asarray(jax.jit(assign)(big))
    assert len(set(picked.tolist())) == 12 and picked.max() < 15
    tall = jnp.asarray(rng.uniform(0, 1, (5, 3)), jnp.float32)
    picked = np.asarray(assign(tall))
    assert set(picked.tolist()) == {0, 1, 2}

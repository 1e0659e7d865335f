"""The minibatch order (:mod:`jaxmarl_accel.algos.shuffle`)."""

import jax
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxmarl_accel.algos.shuffle import PACKED_LIMIT, minibatch_order


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 5000), seed=st.integers(0, 2**31 - 1))
def test_an_order_is_a_permutation(n, seed):
    order = np.asarray(jax.jit(minibatch_order, static_argnums=1)(jax.random.PRNGKey(seed), n))
    assert order.dtype == np.int32
    np.testing.assert_array_equal(np.sort(order), np.arange(n))


def test_orders_are_uniform_and_differ_by_key():
    """Over 2,000 keys each row lands in each half of a 64-row order about half the time,
    and the first position is spread over the rows (a chi-square bound)."""
    keys = jax.random.split(jax.random.PRNGKey(0), 2000)
    orders = np.asarray(jax.jit(jax.vmap(lambda k: minibatch_order(k, 64)))(keys))
    assert len({tuple(o) for o in orders[:50]}) == 50
    positions = np.argsort(orders, axis=1)                      # [keys, row] -> position
    first_half = (positions < 32).mean(axis=0)
    assert np.all(np.abs(first_half - 0.5) < 0.06)
    counts = np.bincount(orders[:, 0], minlength=64)
    chi2 = np.sum((counts - 2000 / 64) ** 2 / (2000 / 64))
    assert chi2 < 120  # 63 degrees of freedom: p < 1e-4 above this


def test_long_orders_fall_back_to_jax_permutation():
    key = jax.random.PRNGKey(1)
    np.testing.assert_array_equal(minibatch_order(key, PACKED_LIMIT + 1),
                                  jax.random.permutation(key, PACKED_LIMIT + 1))

"""Q(lambda) returns against a step-by-step reference: the mixture of n-step returns
``(1 - lambda) sum_n lambda^(n-1) G^(n)_t``, the longest taking the remaining weight, with
episodes that terminate and episodes cut by their time limit inside the rollout."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from jaxmarl_accel.algos.pqn.returns import q_lambda_returns


def reference(reward, value, next_value, terminated, ended, gamma, lam):
    """Returns ``[T, E, ...]`` computed one step at a time in numpy: for each step the
    n-step returns up to the episode's end or the rollout's, bootstrapped from ``max Q``
    of the state reached (``value`` of the next row inside the episode, ``next_value`` at its
    end; none where it terminated), mixed with weights ``(1 - lam) lam^(n-1)``."""
    steps = reward.shape[0]
    out = np.zeros_like(reward, dtype=np.float64)
    for t in range(steps):
        for e in range(reward.shape[1]):
            horizon = 1  # steps until the episode's end or the rollout's, step t included
            while t + horizon - 1 < steps - 1 and not ended[t + horizon - 1, e]:
                horizon += 1
            total, discounted = 0.0, 0.0
            for n in range(1, horizon + 1):
                last = t + n - 1
                discounted = discounted + gamma ** (n - 1) * reward[last, e]
                if terminated[last, e]:
                    bootstrap = 0.0
                elif ended[last, e] or last == steps - 1:
                    bootstrap = next_value[last, e]
                else:
                    bootstrap = value[last + 1, e]
                n_step = discounted + gamma ** n * bootstrap
                weight = (1 - lam) * lam ** (n - 1) if n < horizon else lam ** (n - 1)
                total = total + weight * n_step
            out[t, e] = total
    return out


def rollout(agents: tuple[int, ...], seed: int = 0):
    """A rollout of 9 steps in 3 envs: env 0 terminates at step 2 and is truncated at step
    6, env 1 runs through, env 2 terminates at the last step; ``agents`` the trailing axes."""
    rng = np.random.default_rng(seed)
    shape = (9, 3, *agents)
    terminated = np.zeros((9, 3), np.float32)
    ended = np.zeros((9, 3), np.float32)
    terminated[2, 0] = ended[2, 0] = ended[6, 0] = 1.0
    terminated[8, 2] = ended[8, 2] = 1.0
    return (rng.normal(size=shape).astype(np.float32), rng.normal(size=shape).astype(np.float32),
            rng.normal(size=shape).astype(np.float32), terminated, ended)


@pytest.mark.parametrize("lam", [0.0, 0.3, 1.0])
@pytest.mark.parametrize("agents", [(), (2,)], ids=["team", "per_agent"])
def test_returns_match_the_n_step_mixture_under_jit(lam, agents):
    reward, value, next_value, terminated, ended = rollout(agents)
    gamma = 0.9
    got = jax.jit(q_lambda_returns)(reward, value, next_value, terminated, ended, gamma, lam)
    assert got.shape == reward.shape
    columns = [(reward, value, next_value)] if not agents else [
        tuple(x[..., i] for x in (reward, value, next_value)) for i in range(agents[0])]
    expected = np.stack([reference(*column, terminated, ended, gamma, lam)
                         for column in columns], axis=-1).reshape(reward.shape)
    np.testing.assert_allclose(np.asarray(got), expected, rtol=1e-5, atol=1e-5)


def test_lambda_zero_is_the_one_step_target_and_ends_cut_the_recursion():
    reward, value, next_value, terminated, ended = rollout(())
    got = np.asarray(q_lambda_returns(reward, value, next_value, terminated, ended, 0.5, 0.0))
    np.testing.assert_allclose(got[1, 1], reward[1, 1] + 0.5 * value[2, 1], rtol=1e-6)
    np.testing.assert_allclose(got[2, 0], reward[2, 0], rtol=1e-6)  # terminated
    np.testing.assert_allclose(got[6, 0], reward[6, 0] + 0.5 * next_value[6, 0], rtol=1e-6)
    np.testing.assert_allclose(got[8, 1], reward[8, 1] + 0.5 * next_value[8, 1], rtol=1e-6)
    lam_one = np.asarray(q_lambda_returns(reward, value, next_value, terminated, ended, 0.5, 1.0))
    # lambda 1 inside env 0's second episode (steps 3..6): the discounted sum to its cut
    expected = sum(0.5 ** k * reward[3 + k, 0] for k in range(4)) + 0.5 ** 4 * next_value[6, 0]
    np.testing.assert_allclose(lam_one[3, 0], expected, rtol=1e-5)

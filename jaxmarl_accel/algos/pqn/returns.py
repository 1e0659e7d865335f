"""Q(lambda) returns over a rollout (Gallici et al. 2024, Sec. 4 and Alg. 1; Peng and
Williams 1996): the targets PQN regresses ``Q(s_t, a_t)`` onto.

With ``m_{t+1}`` the greedy value ``max_a Q(s_{t+1}, a)`` of the state step ``t`` reached::

    G_t = r_t + gamma (1 - d_t) [(1 - lambda) m_{t+1} + lambda G_{t+1}]

where ``d_t`` is 1 when the episode terminated at ``t``. Where the rollout ends, or the
episode ended at ``t`` by its time limit (truncated: the next row belongs to a new
episode), ``G_{t+1}`` is not known and ``G_t = r_t + gamma (1 - d_t) m_{t+1}``: the
one-step target, bootstrapped from the observation reached before the auto-reset. The
return is a mixture of n-step returns ``(1 - lambda) sum_n lambda^(n-1) G^(n)_t``, the
longest taking the remaining weight (``tests/algos/pqn/test_returns.py`` checks it so).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp


def q_lambda_returns(reward: jax.Array, value: jax.Array, next_value: jax.Array,
                     terminated: jax.Array, ended: jax.Array, gamma: jax.Array | float,
                     lam: jax.Array | float) -> jax.Array:
    """The Q(lambda) returns of a rollout of ``T`` steps (module docstring).

    Args:
      reward: ``[T, E, ...]`` rewards (``...``: agents for independent learners, none for
        a team's).
      value: ``[T, E, ...]`` ``max_a Q(s_t, a)`` of each step's own state (over its
        available actions) when collected: ``m_{t+1}`` of the step before, where it stays in
        one episode.
      next_value: ``[T, E, ...]`` ``max_a Q`` of the state each step reached, before any
        auto-reset: ``m_{t+1}`` where the episode ended or the rollout ends.
      terminated: ``[T, E]`` float, 1 where the episode terminated (no bootstrap).
      ended: ``[T, E]`` float, 1 where it ended (terminated or truncated).
      gamma, lam: discount and lambda (scalars, possibly traced).

    Returns:
      ``[T, E, ...]`` float32 returns.
    """
    reward, value, next_value, terminated, ended = map(
        jnp.asarray, (reward, value, next_value, terminated, ended))
    extra = (1,) * (reward.ndim - terminated.ndim)
    terminated = terminated.reshape(terminated.shape + extra)
    ended = ended.reshape(ended.shape + extra)
    # 1 where the next row continues this step's episode inside the rollout
    goes_on = (1.0 - ended).at[-1].set(0.0)
    following = jnp.concatenate([value[1:], next_value[-1:]], axis=0)
    bootstrap = jnp.where(goes_on > 0, following, next_value)
    discount = gamma * (1.0 - terminated)

    def back(later: jax.Array, row: tuple[jax.Array, ...]) -> tuple[jax.Array, jax.Array]:
        r, m, disc, cont = row
        ret = r + disc * (m + lam * cont * (later - m))
        return ret, ret

    _, returns = jax.lax.scan(back, jnp.zeros_like(reward[0], jnp.float32),
                              (reward, bootstrap, discount, goes_on), reverse=True)
    return returns


__all__ = ["q_lambda_returns"]

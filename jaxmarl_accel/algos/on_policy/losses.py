"""Advantages and losses of the on-policy learners.

* :func:`gae`: generalized advantage estimation (Schulman et al. 2016, eq. 16), with the
  value of the true last observation at a time-limit truncation (the episode is cut, not
  over) and none after a termination. With ``lam = 1`` the advantage plus the value is the
  n-step return of A2C (Mnih et al. 2016, Alg. S3), bootstrapped at the rollout's end: the
  return paper 003's trainer regresses on (WarpDrive's ``A2C``).
* :func:`a2c_policy_loss`: ``-mean(log pi(a|o) A)`` (Mnih et al. 2016, eq. of Sec. 4).
* :func:`ppo_clip_loss`: ``-mean(min(r A, clip(r, 1 - eps, 1 + eps) A))`` with
  ``r = pi(a|o) / pi_old(a|o)`` (Schulman et al. 2017, eq. 7).
* :func:`value_loss`: ``mean((V(o) - G)^2)``, the squared error paper 003's trainer uses.

* :class:`ValueNorm`, :func:`value_norm_update`, :func:`value_norm_moments`: the running
  normalization of value targets of MAPPO (Yu et al. 2022, Sec. 4.1, App. C, "ValueNorm").

The total loss of one team is ``L_pi + c_v L_V - c_e H`` (Schulman et al. 2017, eq. 9 with
the signs of a loss; WarpDrive's trainer the same).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

_EPS = 1e-8


class Advantages(NamedTuple):
    """Advantage estimates and the value targets they imply.

    Attributes:
      advantages: ``[T, ...]`` advantage of each step's action.
      returns: ``[T, ...]`` value targets, ``advantages + values``.
    """

    advantages: jax.Array
    returns: jax.Array


def gae(reward: jax.Array, value: jax.Array, next_value: jax.Array, terminated: jax.Array,
        ended: jax.Array, gamma: float, lam: float) -> Advantages:
    """Generalized advantage estimates over a rollout (Schulman et al. 2016, eq. 16):
    ``A_t = delta_t + gamma lam (1 - ended_t) A_{t+1}``, ``A_T = 0``, with the TD error
    ``delta_t = r_t + gamma (1 - terminated_t) V(o'_t) - V(o_t)`` of the step's true next
    observation ``o'_t`` (before any auto-reset: a truncated episode is bootstrapped).

    Args:
      reward: ``[T, ...]`` rewards (``...``: e.g. envs and agents ``[E, N]``).
      value: ``[T, ...]`` values ``V(o_t)`` of the observations acted on.
      next_value: ``[T, ...]`` values ``V(o'_t)`` of the observations each step reached.
      terminated: ``[T, ...]`` (or broadcastable, e.g. ``[T, E, 1]``) 1 where the episode
        terminated at step t (no value after it).
      ended: like ``terminated``, 1 where the episode ended (terminated or truncated): the
        advantage does not run on into the next episode.
      gamma: discount factor.
      lam: GAE lambda; 1 gives n-step returns to the rollout's end.

    Returns:
      :class:`Advantages` with leaves ``[T, ...]``.
    """
    not_term = 1.0 - jnp.asarray(terminated, reward.dtype)
    carry_on = 1.0 - jnp.asarray(ended, reward.dtype)
    delta = reward + gamma * not_term * next_value - value

    def backward(later: jax.Array, step: tuple[jax.Array, jax.Array]
                 ) -> tuple[jax.Array, jax.Array]:
        delta_t, carry_t = step
        advantage = delta_t + gamma * lam * carry_t * later
        return advantage, advantage

    start = jnp.zeros(jnp.broadcast_shapes(delta.shape[1:], carry_on.shape[1:]), reward.dtype)
    _, advantages = jax.lax.scan(backward, start, (delta, jnp.broadcast_to(carry_on,
                                                                          delta.shape)),
                                 reverse=True)
    return Advantages(advantages, advantages + value)


def standardize(x: jax.Array) -> jax.Array:
    """``(x - mean(x)) / (std(x) + 1e-8)`` over every entry of ``x``."""
    return (x - jnp.mean(x)) / (jnp.std(x) + _EPS)


def a2c_policy_loss(log_prob: jax.Array, advantage: jax.Array) -> jax.Array:
    """The policy-gradient loss ``-mean(log pi(a|o) A)`` (Mnih et al. 2016, Sec. 4; paper
    003's A2C). ``log_prob`` and ``advantage``: any shape, the same; returns ``[]``."""
    return -jnp.mean(log_prob * jax.lax.stop_gradient(advantage))


class ClipLoss(NamedTuple):
    """PPO's clipped surrogate loss and its diagnostics (all ``[]``).

    Attributes:
      loss: ``-mean(min(r A, clip(r, 1 - eps, 1 + eps) A))``.
      clip_fraction: share of samples whose ratio lies outside ``[1 - eps, 1 + eps]``.
      approx_kl: ``mean((r - 1) - log r)``, an estimate of ``KL(pi_old || pi)``.
    """

    loss: jax.Array
    clip_fraction: jax.Array
    approx_kl: jax.Array


def ppo_clip_loss(log_prob: jax.Array, old_log_prob: jax.Array, advantage: jax.Array,
                  clip_eps: float) -> ClipLoss:
    """PPO's clipped surrogate objective as a loss (Schulman et al. 2017, eq. 7):
    ``-mean(min(r A, clip(r, 1 - eps, 1 + eps) A))``, ``r = exp(log pi - log pi_old)``.

    Args:
      log_prob: log-probabilities of the taken actions under the current policy, any shape.
      old_log_prob: the same under the policy that collected them (same shape).
      advantage: advantage estimates (same shape).
      clip_eps: epsilon.

    Returns:
      :class:`ClipLoss`.
    """
    advantage = jax.lax.stop_gradient(advantage)
    log_ratio = log_prob - old_log_prob
    ratio = jnp.exp(log_ratio)
    surrogate = jnp.minimum(ratio * advantage,
                            jnp.clip(ratio, 1.0 - clip_eps, 1.0 + clip_eps) * advantage)
    clipped = jnp.abs(ratio - 1.0) > clip_eps
    return ClipLoss(-jnp.mean(surrogate), jnp.mean(clipped.astype(jnp.float32)),
                    jax.lax.stop_gradient(jnp.mean((ratio - 1.0) - log_ratio)))


VALUE_NORM_BETA = 0.99999
"""MAPPO's ValueNorm decay (Yu et al. 2022, its code's ``beta``)."""
VALUE_NORM_MIN_VAR = 1e-2
"""Smallest variance the normalization divides by (MAPPO's clamp)."""


class ValueNorm(NamedTuple):
    """Debiased exponential running moments of one team's value targets (all ``[]``).

    Attributes:
      mean: running mean of the targets, not yet debiased.
      mean_sq: running mean of their squares, not yet debiased.
      debias: ``1 - beta^k`` after k updates (Adam-style bias correction).
    """

    mean: jax.Array
    mean_sq: jax.Array
    debias: jax.Array


def value_norm_init() -> ValueNorm:
    """No targets seen: zero moments (the first update sets them to its batch's)."""
    zero = jnp.zeros((), jnp.float32)
    return ValueNorm(zero, zero, zero)


def value_norm_update(norm: ValueNorm, targets: jax.Array,
                      beta: float = VALUE_NORM_BETA) -> ValueNorm:
    """Fold a batch of targets (any shape) into the moments:
    ``m <- beta m + (1 - beta) mean(x)``, the same for ``x^2`` and for the debias term."""
    return ValueNorm(beta * norm.mean + (1.0 - beta) * jnp.mean(targets),
                     beta * norm.mean_sq + (1.0 - beta) * jnp.mean(jnp.square(targets)),
                     beta * norm.debias + (1.0 - beta))


def value_norm_moments(norm: ValueNorm) -> tuple[jax.Array, jax.Array]:
    """``(mu, sigma)`` of the debiased moments (``mu = 0, sigma = 1`` before any update);
    the variance is clamped at :data:`VALUE_NORM_MIN_VAR`."""
    seen = norm.debias > 0
    debias = jnp.where(seen, norm.debias, 1.0)
    mean = jnp.where(seen, norm.mean / debias, 0.0)
    var = jnp.where(seen, norm.mean_sq / debias - jnp.square(mean), 1.0)
    return mean, jnp.sqrt(jnp.maximum(var, VALUE_NORM_MIN_VAR))


def value_loss(value: jax.Array, target: jax.Array) -> jax.Array:
    """``mean((V - G)^2)`` against fixed targets ``G`` (any shape, the same); ``[]``."""
    return jnp.mean((value - jax.lax.stop_gradient(target)) ** 2)


__all__ = ["VALUE_NORM_BETA", "VALUE_NORM_MIN_VAR", "Advantages", "ClipLoss", "ValueNorm",
           "a2c_policy_loss", "gae", "ppo_clip_loss", "standardize", "value_loss",
           "value_norm_init", "value_norm_moments", "value_norm_update"]
